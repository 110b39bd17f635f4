"""The iperf3 release behind a baseline comparison: when two runs ran different releases.

A ``-P`` figure across iperf3 3.15 and 3.16 is of another kind (its streams run in threads
from 3.16), so that change makes a verdict incomparable; any other release change is named
once, beside the verdict and in the report's notes, not again among the host-context
changes (``told``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from netrun.results import context
from netrun.tools.iperf3 import versions as iperf3_versions


def _tool_version(samples: Sequence[Mapping[str, Any]]) -> str | None:
    """The iperf3 release a test ran (tool_version; the client's probed iperf3_version in
    runs from before it was recorded)."""
    for sample in samples:
        if isinstance(found := sample.get("tool_version"), str) and found:
            return found
        probed = sample.get("iperf3_version")
        if isinstance(probed, Mapping) and isinstance(probed.get("client"), str):
            return str(probed["client"])
    return None


def release_change(
    current: Sequence[Mapping[str, Any]], baseline: Sequence[Mapping[str, Any]]
) -> tuple[str, str] | None:
    """(the baseline's, the current) iperf3 release, when two tests ran different ones."""
    now, before = _tool_version(current), _tool_version(baseline)
    if now is None or before is None or now == before:
        return None
    return before, now


def told(change: tuple[str, str] | None) -> set[context.Told]:
    """The host-context change a release note names already (each host's "iperf3 version"
    from the same release to the same one): a verdict or a report says it once."""
    if change is None:
        return set()
    return {(context.version_label("iperf3"), *change)}


def tool_version_change(
    current: Sequence[Mapping[str, Any]], baseline: Sequence[Mapping[str, Any]]
) -> tuple[str | None, str | None]:
    """(why the two are incomparable, a note to show beside the verdict) for the iperf3
    releases two tests ran: ``-P`` above 1 across 3.15 and 3.16 (its streams run in threads
    from 3.16, netrun.tools.iperf3.versions) is incomparable; any other change is a note."""
    change = release_change(current, baseline)
    if change is None:
        return None, None
    before, now = change
    first = current[0] if current else {}
    options = first.get("options") if isinstance(first.get("options"), Mapping) else {}
    streams = (options or {}).get("streams") or 1
    threaded = {iperf3_versions.threaded(now), iperf3_versions.threaded(before)}
    parallel = isinstance(streams, int) and streams > 1
    if first.get("tool", "iperf3") == "iperf3" and parallel and threaded == {True, False}:
        return (
            f"iperf3 {now} (baseline {before}) with streams {streams}: -P streams run in "
            "threads from 3.16, a figure of another kind",
            None,
        )
    return None, RELEASE_NOTE.format(now=now, before=before)


RELEASE_NOTE = "iperf3 {now} (baseline {before})"
_RELEASE_NOTE = re.compile(r"iperf3 (\S+) \(baseline (\S+)\)")


def released(base: Mapping[str, Any]) -> dict[str, tuple[str, str]]:
    """test -> (the baseline's, the current) iperf3 release its stored verdict names."""
    out: dict[str, tuple[str, str]] = {}
    for v in base.get("verdicts") or ():
        found = _RELEASE_NOTE.search(str(v.get("detail") or "")) if isinstance(v, Mapping) else None
        if found:
            out[str(v.get("test"))] = (found[2], found[1])
    return out


def release_notes(base: Mapping[str, Any]) -> list[str]:
    """A line per iperf3 release change the stored verdicts name (tool_version_change),
    with the tests it concerns: what the table's verdicts were measured with."""
    tests: dict[tuple[str, str], list[str]] = {}
    for test, change in released(base).items():
        tests.setdefault(change, []).append(test)
    return [
        f"iperf3 changed since the baseline: {before} -> {now} ({', '.join(names)})"
        for (before, now), names in tests.items()
    ]
