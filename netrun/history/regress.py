"""Regression verdicts: tonight's run against a baseline run, test by test.

Repeats are noisy, so a verdict is not a bare threshold on one number. With at least three
samples on both sides (stats.MIN_CI_SAMPLES: fewer give no CI), throughput counts as
regressed only when the median dropped by more than the tolerance AND the current 95%
confidence interval lies wholly below the baseline's (improved is the mirror image). A
change beyond the tolerance whose intervals overlap is "noisy": worth a look, not an alarm.
With fewer on either side only the threshold is left. Every other declared metric has a
limit (its tool's default tolerance, or the scenario's ``tolerances:``): a change of the
median for the worse beyond it is a regression; loss is judged on each side's worst repeat
(a repeat that lost 27% is not hidden by its siblings' median).

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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from netrun.core import metrics
from netrun.core.metrics import Metric, finite, legacy
from netrun.core.metrics import parse_tolerance as parse_metric_tolerance
from netrun.errors import InputError, NetrunError
from netrun.history import baseline as baselines
from netrun.history import release
from netrun.history.db import History, UnknownRunError
from netrun.results import context
from netrun.results import store as results
from netrun.results.stats import MIN_CI_SAMPLES, Summary, ok_values, samples_by_test, summarize
from netrun.tools import get_tool
from netrun.tools.base import Tool
from netrun.tools.load.tool import sample_tool

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
    absolute rises (schema 1's options), and ``metrics``: (metric, "relative"|"absolute",
    value) from ``tolerances:``, which win. A metric named nowhere takes its tool's default."""

    throughput: float = 0.05
    loss: float | None = None  # percentage points of UDP loss
    jitter_ms: float | None = None
    retransmits: float | None = None
    metrics: tuple[tuple[str, str, float], ...] = ()

    def limits(self, tool: Tool | None) -> dict[str, tuple[str, float]]:
        """Metric -> (kind, value): the tool's defaults, then the old options, then ``metrics``."""
        found: dict[str, tuple[str, float]] = {}
        for metric in tool.metrics if tool else ():
            if metric.tolerance is not None:
                found[metric.name] = parse_metric_tolerance(metric.tolerance)
        if tool is None or tool.name == "iperf3":
            found["throughput_bps"] = ("relative", self.throughput)
        for name, value in (
            ("lost_percent", self.loss),
            ("jitter_ms", self.jitter_ms),
            ("retransmits", self.retransmits),
        ):
            if value is not None:
                found[name] = ("absolute", float(value))
        found.update((name, (kind, value)) for name, kind, value in self.metrics)
        return found


def _metric_tolerances(value: Any) -> tuple[tuple[str, str, float], ...]:
    """A recorded ``tolerances:`` mapping as Tolerances.metrics; odd entries are skipped."""
    out = []
    for name, each in (value if isinstance(value, dict) else {}).items():
        try:
            out.append((str(name), *parse_metric_tolerance(each)))
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
    """The verdict on one test; ``delta_pct`` is the change of its headline metric's median
    in % (throughput for iperf3, rtt_avg_ms for ping); ``metrics`` names what regressed."""

    test: str
    verdict: str
    delta_pct: float | None
    detail: str
    metrics: tuple[str, ...] = ()
    #: The figure that decided the verdict (the headline's, else the first metric beyond its
    #: limit): its name, baseline and current values (in the metric's declared unit), the
    #: limit as text ("5%", "1 points") and, when known, the cause; the reports show these.
    metric: str | None = None
    before: float | None = None
    after: float | None = None
    limit: str | None = None
    cause: str | None = None


#: How schema 1 worded the iperf3 limits (kept: people grep nightly logs for them).
WORDS = {
    "throughput_bps": ("throughput", ""),
    "lost_percent": ("UDP loss", "points"),
    "jitter_ms": ("jitter", "ms"),
    "retransmits": ("retransmits", ""),
}
FORMATS = {"lost_percent": "{:.2f}", "jitter_ms": "{:.3f}", "retransmits": "{:g}"}


def _tool(samples: Sequence[dict[str, Any]]) -> Tool | None:
    if not samples:
        return get_tool("iperf3")
    try:
        return sample_tool(samples[0])  # a load: test's idle/loaded metrics
    except KeyError:
        return None  # a run of a tool this netrun does not know: only declared metrics


def _worse(metric: Metric, change: float) -> bool:
    return change < 0 if metric.better == "higher" else change > 0


def _headline(
    metric: Metric, cur: Summary, base: Summary, limit: tuple[str, float] | None
) -> tuple[str, float | None, str]:
    """Verdict, delta % and detail for the headline metric's medians of one test."""
    label = (
        WORDS.get(metric.name, (metric.name, ""))[0]
        if metric.name == "throughput_bps"
        else metric.name
    )
    unit = metric.shown_unit or metric.unit
    if base.median == 0 and (limit is None or limit[0] == "relative"):
        return "new", None, f"baseline {label} is 0; nothing to compare"
    delta = (cur.median - base.median) / base.median if base.median else None
    pct = None if delta is None else delta * 100
    shown = f"{label} {metric.show(cur.median)} vs {metric.show(base.median)} {unit}".rstrip()
    if limit is None:
        return "ok", pct, f"{shown} ({pct:+.1f}%, no tolerance)" if pct is not None else shown
    kind, value = limit
    change = delta if kind == "relative" else cur.median - base.median
    assert change is not None
    tol_text = f"{value * 100:g}%" if kind == "relative" else f"{value:g} {metric.unit}".rstrip()
    text = f"{shown} ({pct:+.1f}%, tolerance {tol_text})" if pct is not None else shown
    if abs(change) <= value:
        return "ok", pct, text
    bad = "regressed" if _worse(metric, change) else "improved"
    if cur.ci_low is None or cur.ci_high is None or base.ci_low is None or base.ci_high is None:
        few = f"fewer than {MIN_CI_SAMPLES} samples (n={cur.n} vs {base.n}), no CI"
        return bad, pct, f"{text}; {few}"
    cis = (
        f"95% CI [{metric.show(cur.ci_low)}, {metric.show(cur.ci_high)}] vs "
        f"[{metric.show(base.ci_low)}, {metric.show(base.ci_high)}]"
    )
    apart = cur.ci_high < base.ci_low if change < 0 else cur.ci_low > base.ci_high
    if apart:
        return bad, pct, f"{text}; {cis} do not overlap"
    return "noisy", pct, f"{text}; {cis} overlap"


def _shower(metric: Metric) -> Callable[[float], str]:
    fmt = FORMATS.get(metric.name)
    return fmt.format if fmt else metric.show


def shown_limit(metric: Metric, limit: tuple[str, float]) -> str:
    """A limit as the reports show it: "5%" (relative), "1 points", "0.5 ms" (absolute)."""
    kind, value = limit
    if kind == "relative":
        return f"{value * 100:g}%"
    return f"{value:g} {'points' if metric.unit == '%' else metric.unit}".rstrip()


@dataclass(frozen=True)
class Breach:
    """A metric that changed for the worse beyond its limit: the values and the message."""

    metric: str
    text: str
    before: float
    after: float
    limit: str


def _limits(
    cur: Sequence[dict[str, Any]],
    base: Sequence[dict[str, Any]],
    limits: dict[str, tuple[str, float]],
    declared: dict[str, Metric],
    skip: str,
    words: dict[str, tuple[str, str]],
) -> list[Breach]:
    """Each metric that changed for the worse beyond its limit."""
    breaches: list[Breach] = []
    for name, (kind, limit) in limits.items():
        metric = declared.get(name)
        if name == skip or metric is None:
            continue
        values, earlier = ok_values(cur, name), ok_values(base, name)
        if not values or not earlier:
            continue  # unavailable on either side: nothing to compare, never a 0
        now, before, which = judged(metric, values, earlier)
        change = now - before
        if kind == "relative":
            if before == 0:
                continue
            change /= abs(before)
        if not _worse(metric, change) or abs(change) <= limit:
            continue
        label, unit = words.get(name, (name, metric.shown_unit or metric.unit))
        show = _shower(metric)
        verb = "rose" if change > 0 else "fell"
        if kind == "relative":
            size, limit_text = f"{abs(change) * 100:.1f}%", f"{limit * 100:g}%"
        else:
            size, limit_text = " ".join(x for x in (show(abs(change)), unit) if x), f"{limit:g}"
        text = f"{label} {verb} by {size} ({show(before)} -> {show(now)}), limit {limit_text}"
        if which is not None and len(values) > 1:  # the repeat a median would have hidden
            text += f", worst repeat: {_repeat_of(cur, name, now)} of {len(values)}"
        breaches.append(Breach(name, text, before, now, shown_limit(metric, (kind, limit))))
    return breaches


def judged(
    metric: Metric, values: Sequence[float], earlier: Sequence[float]
) -> tuple[float, float, str | None]:
    """(now, before, "worst" or None): the medians, or for a WORST_REPEAT metric each
    side's worst repeat."""
    if metric.name in baselines.WORST_REPEAT:
        now = baselines.worst(values, metric.better)
        return now, baselines.worst(earlier, metric.better), "worst"
    return statistics.median(values), statistics.median(earlier), None


def _repeat_of(samples: Sequence[dict[str, Any]], name: str, value: float) -> str:
    """The repeat number of the ok sample whose ``name`` is ``value`` (else its place)."""
    for place, sample in enumerate(samples, start=1):
        if sample.get("status") == "ok" and ok_values([sample], name) == [value]:
            return str(sample.get("repeat") or place)
    return "?"


def compare_test(
    name: str,
    cur: Sequence[dict[str, Any]],
    base: Sequence[dict[str, Any]],
    tol: Tolerances,
    declared: dict[str, Metric] | None = None,
) -> Verdict:
    """The verdict on one test from its current and baseline samples."""
    tool = _tool(cur)
    declared = {**(declared or {}), **{m.name: m for m in (tool.metrics if tool else ())}}
    if not declared:
        declared = {m.name: m for m in legacy()}
    head = tool.headline() if tool else next(iter(declared.values()))
    limits = tol.limits(tool)
    failed = [s for s in cur if s.get("status") != "ok"]
    now = summarize(ok_values(cur, head.name))
    before = summarize(ok_values(base, head.name))
    bad: list[str] = []
    why: dict[str, Any] = {}
    if before is None:
        verdict, delta, detail = "new", None, "no successful baseline sample to compare with"
    elif now is None:
        verdict, delta, detail = "failed", None, "no successful sample"
    else:
        verdict, delta, detail = _headline(head, now, before, limits.get(head.name))
        bad += [head.name] if verdict == "regressed" else []
        if verdict in ("regressed", "noisy", "improved"):
            limit = limits.get(head.name)
            why = {"metric": head.name, "before": before.median, "after": now.median}
            why["limit"] = shown_limit(head, limit) if limit else None
    words = WORDS if tool is None or tool.name == "iperf3" else {}
    breaches = _limits(cur, base, limits, declared, head.name, words) if before else []
    if breaches and verdict in ("ok", "improved", "noisy"):
        verdict = "regressed"
        first = breaches[0]
        why = {"metric": first.metric, "before": first.before, "after": first.after}
        why["limit"] = first.limit
    bad += [b.metric for b in breaches]
    detail = "; ".join([detail, *(b.text for b in breaches)])
    if failed:
        error = failed[0].get("error") or "failed"
        detail = f"{len(failed)} of {len(cur)} samples failed ({error}); {detail}"
        verdict, why = "failed", {}
    return Verdict(name, verdict, delta, detail, tuple(bad), **why)


def compare(
    current_doc: dict[str, Any],
    baseline_doc: dict[str, Any],
    tolerances: Callable[[str], Tolerances] | Tolerances | None = None,
) -> list[Verdict]:
    """Verdicts for every test of the current run, in its order (see the module docstring).

    ``tolerances`` defaults to what each test recorded in the current run's options.
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
            out.append(Verdict(name, "new", None, "not in the baseline run"))
            continue
        said[name] = release.told(release.release_change(samples, baseline[name]))
        if differs := baselines.differences(samples, baseline[name]):
            detail = "not compared: " + "; ".join(differs)
            out.append(Verdict(name, "incomparable", None, detail))
            continue
        tool = str(samples[0].get("tool") or "iperf3")
        if tool not in by_tool:
            by_tool[tool] = metrics.declared(current_doc, tool)
        verdict = compare_test(name, samples, baseline[name], tol, by_tool[tool])
        if note := release.tool_version_change(samples, baseline[name])[1]:
            verdict = replace(verdict, detail=f"{verdict.detail}; {note}")
        out.append(verdict)
    # each verdict names what changed on its hosts since the baseline (kernel, sysctls...),
    # but not an iperf3 release change its own note (or incomparability) names already
    return [
        replace(
            v,
            detail=v.detail
            + context.verdict_note(current_doc, baseline_doc, v.test, said.get(v.test, ())),
        )
        for v in out
    ]


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
