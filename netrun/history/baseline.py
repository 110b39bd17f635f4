"""Honest baselines: which earlier runs a test may be compared with, and how much they vary.

A figure compared with a run of other options (a 200M test against a 300M baseline) is not
a regression; a nightly job compared with tonight's ad-hoc ``-e duration=2`` check is not
either. So a test is compared only with baseline samples of the same mode, hosts and
measuring options; otherwise its verdict is ``incomparable`` and names what differs.
``--baseline last`` takes the newest run of the same scenario and tag whose tests match;
``median:N`` the median of the last N matching runs, test by test. The spread of the
stored runs is the run-to-run noise a verdict must also exceed.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import json
import re
import statistics
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from netrun.core.metrics import of_sample
from netrun.errors import InputError
from netrun.history.db import History
from netrun.history.release import release_notes, released, told, tool_version_change
from netrun.modes import all_options
from netrun.results import context, flags
from netrun.results.stats import samples_by_test
from netrun.scenario.validator import COMMON_OPTIONS
from netrun.tools import tools
from netrun.tools.load.tool import sample_tool

#: Options that say how a test is judged or run, not what it measures.
NOT_MEASURING = frozenset(
    {
        "repeat", "timeout", "connect_timeout", "busy_retries", "busy_backoff", "port",
        "tolerance", "tolerances", "loss_tolerance", "jitter_tolerance",
        "retransmits_tolerance", "max_loss", "keep_router", "router_timeout", "start_timeout",
        "pull",
        "image_archive",
    }
)  # fmt: skip
MEDIAN_RE = re.compile(r"median:([0-9]{1,4})")
MAX_MEDIAN_RUNS = 1000
NOISE_RUNS = 10  # stored runs whose spread is the run-to-run noise
NOISE_SIGMAS = 2.0
#: Metrics judged on their worst repeat, not the median: one repeat of five that lost 27%
#: is a problem however well its siblings did (a run's median would hide it).
WORST_REPEAT = frozenset({"lost_percent"})


def worst(values: Sequence[float], better: str) -> float:
    """The worst of ``values`` for a metric where ``better`` ("higher"/"lower") is better."""
    return min(values) if better == "higher" else max(values)


def signature(samples: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """What a test measured: its mode, tool, hosts by role and measuring options."""
    first = samples[0] if samples else {}
    options = first.get("options") if isinstance(first.get("options"), Mapping) else {}
    hosts = first.get("hosts") or {"server": first.get("server"), "client": first.get("client")}
    sig: dict[str, Any] = {
        "mode": first.get("mode"),
        "tool": first.get("tool") or "iperf3",
        **{f"{role} host": host for role, host in hosts.items()},
    }
    sig |= {k: v for k, v in (options or {}).items() if k not in NOT_MEASURING}
    return sig


def differences(
    current: Sequence[Mapping[str, Any]], baseline: Sequence[Mapping[str, Any]]
) -> list[str]:
    """What differs between two tests' signatures, as "bitrate 200M (baseline 300M)".

    An option only one side recorded (a run from before the option existed) counts as
    its default there, so upgrading netrun does not make every stored run incomparable.
    """
    now, before = signature(current), signature(baseline)
    known = defaults()
    out = []
    for key in dict.fromkeys([*now, *before]):
        a = now.get(key, known.get(key))
        b = before.get(key, known.get(key))
        if a != b and ((key in now and key in before) or key in known):
            out.append(f"{key} {_show(a)} (baseline {_show(b)})")
    threads, _ = tool_version_change(current, baseline)
    return out + ([threads] if threads else [])


@functools.cache
def defaults() -> dict[str, Any]:
    """Every test option's default (of any tool and mode)."""

    found: dict[str, Any] = {}
    for option in (
        *COMMON_OPTIONS,
        *all_options(),
        *(o for t in tools().values() for o in t.options),
    ):
        found.setdefault(option.name, option.default)
    return found


def _show(value: Any) -> str:
    if value is None:
        return "unset"
    return json.dumps(value) if isinstance(value, dict) else str(value)


def parse_spec(spec: str) -> int | None:
    """N of ``median:N`` (None for any other spec); a bad N is an InputError."""
    match = MEDIAN_RE.fullmatch(spec.strip())
    if spec.strip().startswith("median:") and not match:
        raise InputError(f"--baseline {spec!r}: use median:N, N a number of runs, e.g. median:5")
    if match and not 1 <= int(match[1]) <= MAX_MEDIAN_RUNS:
        raise InputError(f"--baseline {spec!r}: N must be 1..{MAX_MEDIAN_RUNS}")
    return int(match[1]) if match else None


def stored(
    history: History, scenario: str, tag: str | None, before: str | None = None
) -> Iterator[dict[str, Any]]:
    """Stored documents of ``scenario`` with the same ``tag`` (None: untagged), newest
    first, leaving out run ``before`` and anything stored after it."""
    with history._errors():
        ids = [
            row[0]
            for row in history.db.execute(
                "SELECT run_id FROM runs WHERE scenario = ? "
                "AND COALESCE(json_extract(document, '$.tag'), '') = ? "
                "ORDER BY started DESC, rowid DESC",
                (scenario, tag or ""),
            )
        ]
    start = ids.index(before) + 1 if before in ids else 0
    for run_id in ids[start:]:  # one document at a time: a history may hold thousands
        if run_id != before:
            yield history.get_run(run_id)


def _matching_tests(current: dict[str, Any], other: dict[str, Any]) -> tuple[int, int]:
    """(tests both runs have, of them the ones with the same signature)."""
    mine, theirs = samples_by_test(current), samples_by_test(other)
    common = [name for name in mine if name in theirs]
    same = [n for n in common if not differences(mine[n], theirs[n])]
    return len(common), len(same)


def last(
    history: History, current: dict[str, Any], before: str | None = None
) -> dict[str, Any] | None:
    """The newest stored run of the scenario and tag whose common tests all match; else
    the newest with any match; else the newest of that scenario and tag at all."""
    newest = partial = None
    for doc in stored(history, current["scenario"], current.get("tag"), before):
        common, same = _matching_tests(current, doc)
        if common and same == common:
            return doc
        newest = newest or doc
        partial = partial or (doc if same else None)
    return partial or newest


def median_of(
    history: History, current: dict[str, Any], runs: int, before: str | None = None
) -> dict[str, Any] | None:
    """A synthetic baseline: per test, one sample per each of the last ``runs`` stored runs
    with a matching test, holding that run's median of every metric (so the spread of
    these samples is the run-to-run noise)."""
    wanted = samples_by_test(current)
    picked: dict[str, list[dict[str, Any]]] = {}
    used: list[dict[str, Any]] = []
    for doc in stored(history, current["scenario"], current.get("tag"), before):
        took = False
        for name, samples in samples_by_test(doc).items():
            got = picked.setdefault(name, [])
            if name not in wanted or len(got) >= runs or differences(wanted[name], samples):
                continue
            if (one := _run_median(samples)) is not None:
                got.append(one)
                took = True
        used += [doc] if took else []
        if all(len(picked.get(n, [])) >= runs for n in wanted):
            break
    if not used:
        return None
    return {
        "run_id": ",".join(str(d.get("run_id")) for d in used),
        "started": used[-1].get("started"),
        "finished": used[0].get("finished"),
        "scenario": current["scenario"],
        "median_of": [{"run_id": d.get("run_id"), "started": d.get("started")} for d in used],
        "tests": [s for samples in picked.values() for s in samples],
    }


def _run_median(samples: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """One sample standing for a run: the median of each metric over its ok samples (the
    worst repeat of a WORST_REPEAT metric, as a verdict judges it)."""
    ok = [s for s in samples if s.get("status") == "ok"]
    if not ok:
        return None
    values: dict[str, list[float]] = {}
    for sample in ok:
        for metric, value in of_sample(sample).items():
            if value is not None:
                values.setdefault(metric, []).append(value)
    medians = {k: max(v) if k in WORST_REPEAT else statistics.median(v) for k, v in values.items()}
    out = {k: v for k, v in ok[0].items() if k not in medians}
    return out | medians | {"metrics": medians, "repeat": 1, "status": "ok"}


def noise(
    history: History,
    current: dict[str, Any],
    test: str,
    metric: str,
    before: str | None = None,
) -> tuple[float, int] | None:
    """The run-to-run noise of one test's metric, relative to its median: NOISE_SIGMAS
    standard deviations of the per-run medians of the last NOISE_RUNS matching runs
    (at least 3), and how many runs that was."""
    wanted = samples_by_test(current).get(test)
    if not wanted:
        return None
    medians: list[float] = []
    for doc in stored(history, current["scenario"], current.get("tag"), before):
        samples = samples_by_test(doc).get(test)
        if samples and not differences(wanted, samples):
            one = _run_median(samples)
            if one is not None and one["metrics"].get(metric) is not None:
                medians.append(float(one["metrics"][metric]))
        if len(medians) >= NOISE_RUNS:
            break
    if len(medians) < 3 or not statistics.median(medians):
        return None
    spread = statistics.stdev(medians) / abs(statistics.median(medians))
    return NOISE_SIGMAS * spread, len(medians)


def beyond_noise(
    verdicts: list[Any],
    history: History | None,
    doc: dict[str, Any],
    base: dict[str, Any] | None = None,
) -> list[Any]:
    """A headline regressed or improved by less than the stored runs' noise becomes
    ``noisy``: a verdict must exceed both the tolerance and the run-to-run noise (single
    samples too, which have no confidence interval of their own). So does a test that was
    CPU-bound on either side: its figure moved with the CPU, not the network."""
    mine, theirs = samples_by_test(doc), samples_by_test(base or {})
    out = []
    for v in verdicts:
        head = headline_name(doc, v.test)
        moved = v.verdict in ("regressed", "improved") and v.delta_pct is not None
        if not moved or not set(v.metrics) <= {head}:  # another metric's breach stays
            out.append(v)
            continue
        cpu = [
            side
            for side, samples in (
                ("this run", mine.get(v.test)),
                ("the baseline", theirs.get(v.test)),
            )
            if samples and "cpu-bound" in flags.of_test(samples)
        ]
        found = noise(history, doc, v.test, head, doc.get("run_id")) if history else None
        why = None
        if cpu:
            why = f"cpu-bound in {' and '.join(cpu)}: the change may be the CPU's"
        elif found is not None and abs(v.delta_pct) <= 100 * found[0]:
            why = (
                f"within the run-to-run noise of the last {found[1]} runs (±{100 * found[0]:.1f}%)"
            )
        out.append(
            dataclasses.replace(v, verdict="noisy", detail=f"{v.detail}; {why}") if why else v
        )
    return out


def headline_name(doc: Mapping[str, Any], test: str) -> str:
    """The metric a test's verdict is about (its tool's headline)."""

    found: Mapping[str, Any] = next((t for t in doc.get("tests", []) if t.get("name") == test), {})
    try:
        return sample_tool(found).headline().name  # a load: test's: the added latency
    except KeyError:
        return "throughput_bps"


def describe(doc: Mapping[str, Any]) -> list[str]:
    """The report lines naming the baseline: its run id(s) and date, or why there is none."""
    base = doc.get("baseline")
    if not isinstance(base, Mapping):
        return []
    spec = f" ({base['spec']})" if base.get("spec") else ""
    runs = base.get("median_of")
    if isinstance(runs, list) and runs:
        shown = ", ".join(f"{r.get('run_id')} ({r.get('started')})" for r in runs[:10])
        more = f" and {len(runs) - 10} more" if len(runs) > 10 else ""
        return [f"baseline{spec}: median of {len(runs)} run(s): {shown}{more}"]
    tag = f", tag {doc['tag']}" if doc.get("tag") else ""
    line = f"baseline{spec}: run {base.get('run_id')} of {base.get('started')}{tag}"
    # what the verdicts were measured with: an iperf3 release change, the hosts' context
    # (less the release change, named once)
    said = {test: told(change) for test, change in released(base).items()}
    return [line, *release_notes(base), *context.baseline_lines(doc, told=said)]


def identity(doc: Mapping[str, Any]) -> dict[str, Any]:
    """A run's tag and its baseline's run id(s), date and spec, for a summary document."""
    out: dict[str, Any] = {"tag": doc["tag"]} if doc.get("tag") else {}
    if isinstance(base := doc.get("baseline"), Mapping):
        keys = ("run_id", "started", "spec", "median_of")
        out["baseline"] = {k: base[k] for k in keys if k in base}
    return out


def verdict_counts(doc: Mapping[str, Any], test: str | None = None) -> str:
    """A run's stored verdicts in a few words ("2 ok, 1 regressed"), or one test's
    verdict and change ("regressed -8.1%"); "-" when none."""
    base = doc.get("baseline")
    verdicts = base.get("verdicts") if isinstance(base, Mapping) else None
    found = [v for v in verdicts or () if isinstance(v, Mapping)]
    if test is not None:
        mine = next((v for v in found if v.get("test") == test), None)
        if mine is None:
            return "-"
        delta = mine.get("delta_pct")
        shown = f" {delta:+.1f}%" if isinstance(delta, int | float) else ""
        return f"{mine.get('verdict')}{shown}"
    counts = collections.Counter(str(v.get("verdict")) for v in found)
    return ", ".join(f"{n} {v}" for v, n in counts.items()) or "-"


def verdicts_by_run(
    history: History, run_ids: Sequence[str], test: str | None = None
) -> dict[str, tuple[str, str]]:
    """(tag, verdict_counts) of each stored run, for `netrun history` (--test: that test's)."""
    out: dict[str, tuple[str, str]] = {}
    with history._errors():
        for run_id in run_ids:
            row = history.db.execute(
                "SELECT json_extract(document, '$.tag'), json_extract(document, '$.baseline') "
                "FROM runs WHERE run_id = ?",
                (run_id,),
            ).fetchone()
            base = json.loads(row[1]) if row and row[1] else None
            tag = str(row[0]) if row and row[0] else "-"
            out[run_id] = (tag, verdict_counts({"baseline": base}, test))
    return out
