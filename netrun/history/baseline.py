"""Honest baselines: which earlier runs a test may be compared with, and how much they vary.

A figure compared with a run of other options (a 200M test against a 300M baseline) is not
a regression; a nightly job compared with tonight's ad-hoc ``-e duration=2`` check is not
either. So a test is compared only with baseline samples of the same mode, hosts and
measuring options; otherwise its verdict is ``incomparable`` and names what differs.
``--baseline last`` takes, test by test, the newest run of the same scenario and tag whose
test matches and is usable (``usable``: not from an interrupted run, not failed, not
flagged where tonight's is not, not regressed unless a person accepted the run), or the
run pinned for the scenario and tag (netrun.history.marks); ``median:N`` the median of the
last N such runs. The spread of those runs is the run-to-run noise (``spreads``) that may
widen a tolerance (netrun.history.judge).
"""

from __future__ import annotations

import collections
import functools
import json
import re
import statistics
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from netrun.core.metrics import of_sample
from netrun.errors import InputError
from netrun.history import marks
from netrun.history.db import History
from netrun.history.release import release_notes, released, told, tool_version_change
from netrun.modes import all_options
from netrun.results import context, flags
from netrun.results.stats import samples_by_test
from netrun.scenario.validator import COMMON_OPTIONS
from netrun.tools import form, tools

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
#: Stored runs a baseline search reads at most (a long broken spell, a busy tag).
MAX_SCANNED = 200
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


def usable(
    doc: Mapping[str, Any], test: str, samples: Sequence[Mapping[str, Any]], wanted: Any = ()
) -> str | None:
    """Why a stored run's test cannot be a baseline ("run interrupted", "failed", "flagged
    above-ceiling", "regressed"), or None when it can. Failed and flagged are the test's
    own (a flag tonight's test, ``wanted``'s samples, carries too is like for like, not a
    reason); a regression anywhere in the run (unless accepted) rules out all its tests:
    a broken night's other figures are not a baseline either."""
    status = doc.get("status")
    if status not in (None, "finished"):
        return f"run {status}"
    if any(s.get("status") != "ok" for s in samples):
        return "failed"
    mine = set(flags.not_as_asked(flags.of_test(wanted))) if wanted else set()
    if extra := [f for f in flags.not_as_asked(flags.of_test(samples)) if f not in mine]:
        return "flagged " + ",".join(extra)
    base = doc.get("baseline")
    verdicts = base.get("verdicts") if isinstance(base, Mapping) else None
    bad = [
        str(v.get("test"))
        for v in (verdicts if isinstance(verdicts, list) else ())
        if isinstance(v, Mapping) and v.get("verdict") == "regressed"
    ]
    if bad and not doc.get(marks.ACCEPTED):  # a broken night: none of its tests is a baseline
        return "regressed" if bad == [test] else f"in a regressed run ({', '.join(bad[:3])})"
    return None


def last(
    history: History, current: dict[str, Any], before: str | None = None
) -> dict[str, Any] | None:
    """The baseline of ``--baseline last``: the pinned run of the scenario and tag, else
    per test the newest stored run whose test matches and is ``usable`` (one document when
    one run gives them all; else the newest, its other tests taken from older runs and
    named in ``tests_from``); a test none matches is left out (``new``), and why in
    ``unusable``. None when no stored run gives any test."""
    scenario, tag = current["scenario"], current.get("tag")
    if (pin := marks.pinned(history, scenario, tag)) is not None and pin != before:
        return history.get_run(pin)
    wanted = samples_by_test(current)
    if not wanted:  # no tests to match (a check before the run): the newest finished run
        return next(
            (d for d in stored(history, scenario, tag, before) if not usable(d, "", [])), None
        )
    picked: dict[str, tuple[dict[str, Any], list[dict[str, Any]]]] = {}
    skipped: dict[str, list[str]] = {}
    other: dict[str, tuple[dict[str, Any], list[dict[str, Any]]]] = {}
    for scanned, doc in enumerate(stored(history, scenario, tag, before)):
        for name, samples in samples_by_test(doc).items():
            if name not in wanted or name in picked:
                continue
            if differences(wanted[name], samples):
                other.setdefault(name, (doc, samples))  # incomparable, and says why
            elif why := usable(doc, name, samples, wanted[name]):
                skipped.setdefault(name, []).append(f"{doc.get('run_id')} {why}")
            else:
                picked[name] = (doc, samples)
        if len(picked) == len(wanted) or scanned >= MAX_SCANNED:
            break
    picked |= {n: found for n, found in other.items() if n not in picked and n not in skipped}
    if not picked:
        return None
    runs = {str(doc.get("run_id")): doc for doc, _ in picked.values()}
    newest = max(runs.values(), key=lambda d: str(d.get("started") or ""))
    out = dict(newest)
    out["tests"] = [s for name in wanted if name in picked for s in picked[name][1]]
    if len(runs) > 1:
        out["tests_from"] = {
            name: str(doc.get("run_id")) for name, (doc, _) in picked.items() if doc is not newest
        }
    unusable = {n: why for n, why in skipped.items() if n not in picked}
    if unusable:
        out["unusable"] = {n: "; ".join(why[:3]) for n, why in unusable.items()}
    return out


def median_of(
    history: History, current: dict[str, Any], runs: int, before: str | None = None
) -> dict[str, Any] | None:
    """A synthetic baseline: per test, one sample per each of the last ``runs`` stored runs
    with a matching, ``usable`` test, holding that run's median of every metric (so the
    spread of these samples is the run-to-run noise)."""
    wanted = samples_by_test(current)
    picked: dict[str, list[dict[str, Any]]] = {}
    used: list[dict[str, Any]] = []
    for scanned, doc in enumerate(stored(history, current["scenario"], current.get("tag"), before)):
        took = False
        for name, samples in samples_by_test(doc).items():
            got = picked.setdefault(name, [])
            if name not in wanted or len(got) >= runs or differences(wanted[name], samples):
                continue
            if usable(doc, name, samples, wanted[name]):
                continue
            if (one := _run_median(samples)) is not None:
                got.append(one)
                took = True
        used += [doc] if took else []
        if all(len(picked.get(n, [])) >= runs for n in wanted) or scanned >= MAX_SCANNED + runs:
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


def spreads(
    history: History, current: dict[str, Any], before: str | None = None
) -> dict[str, dict[str, tuple[float, int]]]:
    """The run-to-run noise of every test's metrics, in the metric's unit: NOISE_SIGMAS
    standard deviations of the per-run medians of the last NOISE_RUNS stored runs whose
    test matches and is ``usable`` (at least 3), and how many runs that was. A broken
    night is not usable, so it never widens the noise of the nights after it."""
    wanted = samples_by_test(current)
    medians: dict[str, dict[str, list[float]]] = {name: {} for name in wanted}
    runs = dict.fromkeys(wanted, 0)
    for scanned, doc in enumerate(stored(history, current["scenario"], current.get("tag"), before)):
        for name, samples in samples_by_test(doc).items():
            if name not in wanted or runs[name] >= NOISE_RUNS:
                continue
            if differences(wanted[name], samples) or usable(doc, name, samples, wanted[name]):
                continue
            one = _run_median(samples)
            if one is None:
                continue
            runs[name] += 1
            for metric, value in one["metrics"].items():
                if value is not None:
                    medians[name].setdefault(metric, []).append(float(value))
        if all(n >= NOISE_RUNS for n in runs.values()) or scanned >= MAX_SCANNED:
            break
    return {
        name: {
            metric: (NOISE_SIGMAS * statistics.stdev(values), len(values))
            for metric, values in found.items()
            if len(values) >= 3
        }
        for name, found in medians.items()
    }


def headline_name(doc: Mapping[str, Any], test: str) -> str:
    """The metric a test's verdict is about (its tool's headline)."""

    found: Mapping[str, Any] = next((t for t in doc.get("tests", []) if t.get("name") == test), {})
    try:
        return form.of_sample(found).headline().name  # a load: test's: the added latency
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
    others = base.get("tests_from")
    mixed = [
        f"baseline of {test}: run {run} (the newer runs' {test} was not usable)"
        for test, run in (others.items() if isinstance(others, Mapping) else ())
    ]
    return [line, *mixed, *release_notes(base), *context.baseline_lines(doc, told=said)]


def identity(doc: Mapping[str, Any]) -> dict[str, Any]:
    """A run's tag and its baseline's run id(s), date and spec, for a summary document."""
    out: dict[str, Any] = {"tag": doc["tag"]} if doc.get("tag") else {}
    if isinstance(base := doc.get("baseline"), Mapping):
        keys = ("run_id", "started", "spec", "median_of", "tests_from")
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
