"""Regression verdicts: tonight's run against a baseline run, test by test.

Every judged metric of a test (its tool's default tolerance, or the scenario's
``tolerances:``) goes through one rule (netrun.history.judge): beyond its tolerance and its
tool's floor, a change is ``regressed`` or ``improved``; noise (overlapping confidence
intervals, the run-to-run spread of the stored runs, a CPU-bound side) can widen the
tolerance to at most WIDEN_MAX times, and a change within that is ``noisy``, named. Loss is
judged on each side's worst repeat. A verdict carries the metric it is about, both
figures, the limit, what noise widened it and its cause (the network path, the sender,
the receiver's CPU or buffers, a host context change): ``Verdict.record`` is what
results.json and the history keep.

Verdicts, worst first:
- ``failed``: the current run has a failed sample of this test (the runner already reports
  it; the verdict says so rather than guessing a delta from the samples that passed);
- ``regressed``, ``noisy``, ``improved``, ``ok``: as above;
- ``incomparable``: the baseline's test ran with other options, mode or hosts (named in
  the detail; see netrun.history.baseline): never an alarm;
- ``new``: the baseline has no successful sample of this test, so there is nothing to
  compare. Tests only in the baseline are not listed (the run skipped them, e.g. --limit).
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from netrun.core import metrics
from netrun.core.metrics import Limit, Metric, finite, legacy, parse_limit
from netrun.errors import InputError, NetrunError
from netrun.history import baseline as baselines
from netrun.history import judge, release
from netrun.history.db import History, UnknownRunError
from netrun.history.judge import Finding
from netrun.results import context
from netrun.results import store as results
from netrun.results.stats import MIN_CI_SAMPLES, ok_values, samples_by_test
from netrun.tools import form, get_tool
from netrun.tools.base import Tool

VERDICTS = ("failed", "regressed", "noisy", "improved", "ok", "incomparable", "new")  # worst 1st
DEFAULT_TOLERANCE = "5%"
PERCENT_RE = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*%\s*")


def parse_tolerance(value: object) -> float:
    """ "5%" -> 0.05. Only a percentage is accepted: a bare 5 is ambiguous (5% or 500%?)."""
    match = PERCENT_RE.fullmatch(value) if isinstance(value, str) else None
    fraction = float(match.group(1)) / 100 if match else -1.0
    if not 0.0 <= fraction <= 1.0:
        raise InputError(f"tolerance must be a percentage such as 5%, got {value!r}")
    return fraction


@dataclass(frozen=True)
class Tolerances:
    """How much change is accepted: throughput as a fraction, loss/jitter/retransmits as
    absolute rises (schema 1's options), and ``metrics``: (metric, Limit or None: not
    judged) from ``tolerances:``, which win. A metric named nowhere takes its tool's default."""

    throughput: float = 0.05
    loss: float | None = None  # percentage points of UDP loss
    jitter_ms: float | None = None
    retransmits: float | None = None
    metrics: tuple[tuple[str, Limit | None], ...] = ()

    def limits(self, tool: Tool | None) -> dict[str, Limit]:
        """Metric -> Limit: the tool's defaults, then the old options, then ``metrics``
        (a null there drops the metric: not judged)."""
        found: dict[str, Limit] = {}
        for metric in tool.metrics if tool else ():
            if (limit := _limit(metric.tolerance)) is not None:
                found[metric.name] = limit
        if tool is None or tool.name == "iperf3":
            found["throughput_bps"] = Limit(relative=self.throughput)
        for name, value in (
            ("lost_percent", self.loss),
            ("jitter_ms", self.jitter_ms),
            ("retransmits", self.retransmits),
        ):
            if value is not None:
                found[name] = Limit(absolute=float(value))
        for name, each in self.metrics:
            if each is None:
                found.pop(name, None)
            else:
                found[name] = each
        return found


def _limit(value: object) -> Limit | None:
    try:
        return parse_limit(value)
    except ValueError:
        return None


def _metric_tolerances(value: Any) -> tuple[tuple[str, Limit | None], ...]:
    """A recorded ``tolerances:`` mapping as Tolerances.metrics; odd entries are skipped."""
    out: list[tuple[str, Limit | None]] = []
    for name, each in (value if isinstance(value, dict) else {}).items():
        try:
            out.append((str(name), parse_limit(each)))
        except ValueError:
            continue
    return tuple(out)


def tolerances_from_doc(
    doc: dict[str, Any], throughput: float | None = None
) -> Callable[[str], Tolerances]:
    """Per test tolerances from the options the run recorded (tolerances, tolerance, ...).

    ``throughput`` (a fraction, e.g. from a CLI flag) overrides every test's tolerance.
    """
    per_test: dict[str, Tolerances] = {}
    for name, samples in samples_by_test(doc).items():
        opts = samples[0].get("options") or {}
        per_test[name] = Tolerances(
            throughput=parse_tolerance(opts.get("tolerance") or DEFAULT_TOLERANCE),
            loss=finite(opts.get("loss_tolerance")),
            jitter_ms=finite(opts.get("jitter_tolerance")),
            retransmits=finite(opts.get("retransmits_tolerance")),
            metrics=_metric_tolerances(opts.get("tolerances")),
        )

    def lookup(test: str) -> Tolerances:
        found = per_test.get(test, Tolerances())
        return found if throughput is None else replace(found, throughput=throughput)

    return lookup


@dataclass(frozen=True)
class Verdict:
    """The verdict on one test. ``delta_pct``: the change of its headline metric's median
    in %; ``metrics``: what regressed. Why, for every report: ``metric`` (the first that
    regressed, else the headline), its ``before`` and ``after`` figures (in the metric's
    unit, the medians or the worst repeats), ``limit`` (its tolerance: "5%", "1 point",
    "20% and 0.05 ms"), ``noise`` (what widened the tolerance, "" if nothing), ``cause``
    (a judge.CAUSES key) with ``cause_detail``, ``pages``: whether it exits 3, and
    ``confirmation``: what a second measurement said of a paging regression
    (netrun.history.confirm) and ``again``: the second's figure of ``metric``, as
    ``after``. results.json keeps them (netrun.report.why.record)."""

    test: str
    verdict: str
    delta_pct: float | None
    detail: str
    metrics: tuple[str, ...] = ()
    metric: str | None = None
    before: float | None = None
    after: float | None = None
    limit: str | None = None
    noise: str = ""
    cause: str | None = None
    cause_detail: str = ""
    pages: bool = False
    confirmation: str = ""
    again: float | None = None


def _tool(samples: Sequence[dict[str, Any]]) -> Tool | None:
    if not samples:
        return get_tool("iperf3")
    try:
        return form.of_sample(samples[0])  # a load: test's idle/loaded metrics
    except KeyError:
        return None  # a run of a tool this netrun does not know: only declared metrics


def figure(doc: dict[str, Any], test: str, name: str | None) -> float | None:
    """A test's figure of one metric in a run, as its verdict's ``after`` reads it (the
    median, or the worst repeat for loss); None when the run has no such figure."""
    samples = samples_by_test(doc).get(test) or []
    if not samples or name is None:
        return None
    tool = _tool(samples)
    found = metrics.declared(doc, str(samples[0].get("tool") or "iperf3"))
    found |= {m.name: m for m in (tool.metrics if tool else ())}
    values = ok_values(samples, name)
    if name not in found or not values:
        return None
    return judge.sides(found[name], values, values)[0]


def compare_test(
    name: str,
    cur: Sequence[dict[str, Any]],
    base: Sequence[dict[str, Any]],
    tol: Tolerances,
    declared: dict[str, Metric] | None = None,
    spreads: Mapping[str, tuple[float, int]] | None = None,
) -> Verdict:
    """The verdict on one test from its current and baseline samples; ``spreads``: the
    run-to-run noise of each metric (netrun.history.baseline.spreads)."""
    tool = _tool(cur)
    declared = {**(declared or {}), **{m.name: m for m in (tool.metrics if tool else ())}}
    if not declared:
        declared = {m.name: m for m in legacy()}
    head = tool.headline() if tool else next(iter(declared.values()))
    limits = tol.limits(tool)
    failed = [s for s in cur if s.get("status") != "ok"]
    now, before = ok_values(cur, head.name), ok_values(base, head.name)
    cpu = judge.cpu_reasons(cur, base)
    spreads = spreads or {}
    findings: list[Finding] = []
    if not before:
        verdict, delta, detail = "new", None, "no successful baseline sample to compare with"
    elif not now:
        verdict, delta, detail = "failed", None, "no successful sample"
    else:
        med_now, med_before = statistics.median(now), statistics.median(before)
        delta = (med_now - med_before) / med_before * 100 if med_before else None
        found = judge.judge(
            head, now, before, limits.get(head.name) or Limit(), spreads.get(head.name), cpu
        )
        if head.name not in limits:
            verdict = "ok"
            unit = head.shown_unit or head.unit
            detail = f"{head.name} {head.show(med_now)} vs {head.show(med_before)} {unit}"
            detail += f" ({delta:+.1f}%, no tolerance)" if delta is not None else ""
        elif found is None:
            verdict, detail = "new", f"baseline {head.name} is 0; nothing to compare"
        else:
            verdict, detail = found.verdict, judge.headline_text(head, found, delta)
            findings.append(found)
            if verdict != "ok" and min(len(now), len(before)) < MIN_CI_SAMPLES:
                detail += (
                    f"; fewer than {MIN_CI_SAMPLES} samples (n={len(now)} vs {len(before)}), no CI"
                )
            if found.noise:
                detail += f"; {found.noise}"
    words = judge.WORDS if tool is None or tool.name == "iperf3" else {}
    breaches = []
    for metric_name, limit in limits.items() if before else ():
        metric = declared.get(metric_name)
        if metric_name == head.name or metric is None:
            continue
        found = judge.judge(
            metric, ok_values(cur, metric_name), ok_values(base, metric_name), limit,
            spreads.get(metric_name), cpu,
        )  # fmt: skip
        if found is None or not judge.worse(metric, found.change) or found.verdict == "ok":
            continue
        findings.append(found)
        text = judge.breach_text(metric, found, cur, words)
        if found.verdict == "noisy":
            text += f" ({found.noise})"
        else:
            breaches.append(metric_name)
        detail += f"; {text}"
    if breaches and verdict in ("ok", "improved", "noisy"):
        verdict = "regressed"
    elif verdict == "ok" and any(f.verdict == "noisy" for f in findings):
        verdict = "noisy"
    bad = [f.metric for f in findings if f.verdict == "regressed"]
    if failed:
        error = failed[0].get("error") or "failed"
        detail = f"{len(failed)} of {len(cur)} samples failed ({error}); {detail}"
        verdict = "failed"
    # the verdict is about the first metric that decided it, else the headline
    about = next((f for f in findings if f.verdict == verdict), None)
    about = about or next((f for f in findings if f.metric == head.name), None)
    out = Verdict(name, verdict, delta, detail, tuple(bad), metric=head.name)
    if verdict == "failed":  # no figure decided it: its reason is the failure
        return replace(out, metric=None)
    if about is not None:
        out = replace(
            out, metric=about.metric, before=about.before, after=about.after,
            limit=about.limit, noise=about.noise,
        )  # fmt: skip
    return out


def compare(
    current_doc: dict[str, Any],
    baseline_doc: dict[str, Any],
    tolerances: Callable[[str], Tolerances] | Tolerances | None = None,
    spreads: Mapping[str, Mapping[str, tuple[float, int]]] | None = None,
    page_on: Sequence[str] = judge.DEFAULT_PAGE_ON,
) -> list[Verdict]:
    """Verdicts for every test of the current run, in its order (see the module docstring).

    ``tolerances`` defaults to what each test recorded in the current run's options;
    ``spreads``: test -> metric -> run-to-run noise (netrun.history.baseline.spreads);
    ``page_on``: the causes whose regressions page (Verdict.pages).
    """
    if tolerances is None:
        tolerances = tolerances_from_doc(current_doc)
    baseline = samples_by_test(baseline_doc)
    by_tool: dict[str, dict[str, Metric]] = {}  # each tool's declarations, read once
    out: list[Verdict] = []
    said: dict[str, set[context.Told]] = {}  # test -> what its verdict names of its hosts
    for name, samples in samples_by_test(current_doc).items():
        tol = tolerances if isinstance(tolerances, Tolerances) else tolerances(name)
        if name not in baseline:
            why = (baseline_doc.get("unusable") or {}).get(name)
            detail = f"no usable baseline ({why})" if why else "not in the baseline run"
            out.append(Verdict(name, "new", None, detail))
            continue
        said[name] = release.told(release.release_change(samples, baseline[name]))
        if differs := baselines.differences(samples, baseline[name]):
            detail = "not compared: " + "; ".join(differs)
            out.append(Verdict(name, "incomparable", None, detail))
            continue
        tool = str(samples[0].get("tool") or "iperf3")
        if tool not in by_tool:
            by_tool[tool] = metrics.declared(current_doc, tool)
        verdict = compare_test(
            name, samples, baseline[name], tol, by_tool[tool], (spreads or {}).get(name)
        )
        if note := release.tool_version_change(samples, baseline[name])[1]:
            verdict = replace(verdict, detail=f"{verdict.detail}; {note}")
        out.append(verdict)
    # each verdict names what changed on its hosts since the baseline (kernel, sysctls...),
    # but not an iperf3 release change its own note (or incomparability) names already;
    # and the cause of a change (judge.cause), which decides whether it pages
    judged, mine = [], samples_by_test(current_doc)
    for v in out:
        note = context.verdict_note(current_doc, baseline_doc, v.test, said.get(v.test, ()))
        v = replace(v, detail=v.detail + note)
        if v.verdict in ("regressed", "improved", "noisy") and v.metric is not None:
            found, why = judge.cause(v.metric, mine[v.test], baseline[v.test], note)
            v = replace(v, cause=found, cause_detail=why)
            v = replace(v, pages=v.verdict == "regressed" and found in page_on)
        judged.append(v)
    return judged


def worst(verdicts: Sequence[Verdict]) -> str | None:
    """The worst verdict of a list (``failed`` > ``regressed`` > ... > ``new``), or None."""
    found = {v.verdict for v in verdicts}
    return next((v for v in VERDICTS if v in found), None)


def resolve_baseline(
    spec: str,
    history: History | None,
    scenario: str,
    current_run_id: str | None = None,
    current: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The baseline results document for ``spec``: "last" (the newest matching run of the
    scenario and tag, see netrun.history.baseline), "median:N", a stored run id (or prefix), or a
    path to a results.json or run folder. A baseline that does not exist is an InputError.
    """
    spec = spec.strip()
    hint = "list stored runs with `netrun history`"
    runs = baselines.parse_spec(spec)
    if spec == "last" or runs is not None:
        if history is None:
            raise InputError(f"baseline '{spec}' needs the history database; pass a results path")
        current = current or {"scenario": scenario, "tests": []}  # no tests: the newest
        tag = f" with tag '{current['tag']}'" if current.get("tag") else " without a tag"
        if runs is None:
            found = baselines.last(history, current, before=current_run_id)
        else:
            found = baselines.median_of(history, current, runs, before=current_run_id)
        if found is None:
            raise InputError(
                f"baseline '{spec}': no earlier stored run of scenario '{scenario}'{tag}; "
                f"run it once first, or {hint}"
            )
        return found
    path = Path(spec).expanduser()
    if path.exists():
        try:
            return results.load(path)
        except NetrunError as exc:
            raise InputError(f"baseline {spec!r}: {exc}") from None
    looks_like_path = "/" in spec or spec.endswith(".json") or spec.startswith((".", "~"))
    if history is None or looks_like_path:
        raise InputError(f"baseline {spec!r}: no such results file or run folder; {hint}")
    try:
        doc = history.get_run(spec)
    except UnknownRunError as exc:
        raise InputError(f"baseline {spec!r}: {exc}") from None
    if current_run_id is not None and doc.get("run_id") == current_run_id:
        raise InputError(f"baseline {spec!r} is the current run itself; {hint}")
    return doc
