"""A run in one line, for a cron mail's first line and an appended log.

``nightly: 9 ok, 1 regressed (tcp-fwd -49% on alpha→bravo, cause: network, confirmed)``:
the run's tag (else its scenario), how many tests ended each way, and what regressed or
failed (with what a second measurement said of it: netrun.history.confirm).
Read from the saved results alone, like every other report.
"""

from __future__ import annotations

import collections
from collections.abc import Sequence
from typing import Any

from netrun.history.regress import VERDICTS
from netrun.report import why
from netrun.report.summary import group_samples
from netrun.results import flags

#: How a test's outcome is counted, in the line's order.
ORDER = ("ok", *(v for v in VERDICTS if v != "ok"), "not run")
NAMED = ("failed", "regressed")


def _outcome(samples: list[dict[str, Any]], verdict: Any) -> str:
    if any(s.get("status") != "ok" for s in samples):
        return "failed"
    found = str(getattr(verdict, "verdict", "") or "ok")
    return found if found in VERDICTS else "ok"


def _named(name: str, samples: list[dict[str, Any]], verdict: Any) -> str:
    """``tcp-fwd -49% on alpha→bravo``: the regressed test's change and path, or its failure."""
    path = flags.direction(samples[0])
    if any(s.get("status") != "ok" for s in samples):
        return f"{name} failed on {path}"
    before, after = getattr(verdict, "before", None), getattr(verdict, "after", None)
    metric = getattr(verdict, "metric", None)
    # "20% and 0.05 ms": a relative limit with the tool's floor beside it (judge.Limit.text)
    relative = str(getattr(verdict, "limit", None) or "%").split(" and ")[0].endswith("%")
    change = getattr(verdict, "delta_pct", None)
    if before and after is not None and relative:
        change = (after - before) / abs(before) * 100
    if metric and before is not None and after is not None and not relative:
        text = f"{name} {metric} {before:.3g} -> {after:.3g}"  # an absolute limit: the values
    else:
        text = name + (f" {change:+.0f}%" if change is not None else " regressed")
        text += f" {metric}" if metric and metric != "throughput_bps" else ""
    text += f" on {path}"
    if cause := getattr(verdict, "cause", None):
        text += f", cause: {cause}"
    if said := getattr(verdict, "confirmation", None):  # measured again before it paged
        text += f", {said}"
    return text


def summary_line(doc: dict[str, Any], verdicts: Sequence[Any] | None = None) -> str:
    """The run in one line (see the module docstring)."""
    if verdicts is None:
        verdicts = why.stored(doc)
    by_test = {v.test: v for v in verdicts or ()}
    counts: collections.Counter[str] = collections.Counter()
    named = []
    for name, samples in group_samples(doc.get("tests", [])).items():
        outcome = _outcome(samples, by_test.get(name))
        counts[outcome] += 1
        if outcome in NAMED:
            named.append(_named(name, samples, by_test.get(name)))
    counts["not run"] += len(doc.get("not_run") or [])
    label = doc.get("tag") or doc.get("scenario") or "netrun"
    said = ", ".join(f"{counts[k]} {k}" for k in ORDER if counts[k]) or "no test ran"
    if doc.get("status") not in (None, "finished"):
        said += f", run {doc.get('status')}"
    return f"{label}: {said}" + (f" ({'; '.join(named)})" if named else "")
