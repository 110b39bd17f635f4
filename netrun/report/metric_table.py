"""The metrics table: each declared metric of a test, as a row, for tools other than iperf3.

The main table's columns are iperf3's (Mbit/s, % of line rate, retransmits...). A test of
another tool (ping's RTTs) shows its metrics here instead, one row per test and metric,
read from the declarations the run saved, so a new tool needs no change in the renderers.
A metric the tool could not know is "unavailable" with its reason, never 0.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from netrun.core import metrics
from netrun.core.metrics import UNAVAILABLE
from netrun.core.numeric import finite
from netrun.results import stats

HEADERS = ["test", "metric", "unit", "better", "n", "median", "mean±sd", "min-max", "95% CI"]
#: The tool whose metrics are the main table's own columns.
MAIN_TOOL = "iperf3"


def groups(doc: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The samples of each test whose tool is not the main table's."""
    return {
        name: samples
        for name, samples in stats.samples_by_test(doc).items()
        if (samples[0].get("tool") or MAIN_TOOL) != MAIN_TOOL
    }


def tool_of(samples: list[dict[str, Any]]) -> str:
    """The tool a test's samples measured with (a schema 1 run's: iperf3)."""
    return str((samples[0].get("tool") if samples else None) or MAIN_TOOL)


def summaries(
    doc: dict[str, Any],
    samples: list[dict[str, Any]],
    declared: dict[str, metrics.Metric] | None = None,
) -> dict[str, dict[str, Any]]:
    """Each metric a test's samples carry: its summary (None: unavailable) and the reason.
    ``declared``: the run's metrics as the test's tool declared them, when the caller read
    them once for many tests."""
    out: dict[str, dict[str, Any]] = {}
    names: dict[str, None] = {}
    for sample in samples:
        names.update(dict.fromkeys(metrics.of_sample(sample)))
    declared = metrics.declared(doc, tool_of(samples)) if declared is None else declared
    for name in names:
        summary = stats.summarize(stats.ok_values(samples, name))
        reasons = {
            str(((s.get("details") or {}).get("unavailable") or {}).get(name) or "")
            for s in samples
            if s.get("status") == "ok"
        } - {""}
        out[name] = {
            "metric": declared.get(name) or metrics.Metric(name, "", "higher", ""),
            "summary": summary,
            "reason": "; ".join(sorted(reasons)) or None,
        }
    return out


def _edges(details: Any, name: str) -> Any:
    """A figure's bucket in ``details.bucket_us``; a load test's phase figure
    (``latency_p50_us_idle``) in that phase's details (``details.idle.bucket_us``)."""
    for phase in ("idle", "loaded"):
        if name.endswith(f"_{phase}") and isinstance(details, dict):
            details, name = details.get(phase), name.removesuffix(f"_{phase}")
            break
    buckets = details.get("bucket_us") if isinstance(details, dict) else None
    return buckets.get(name) if isinstance(buckets, dict) else None


def bucket_note(samples: list[dict[str, Any]], name: str, unit: str) -> str:
    """ " (bucket 20-30 us)" for a figure read from a histogram (netperf's percentiles,
    ``details.bucket_us``): the value is the bucket's low edge, known no finer than the
    bucket. The repeats' buckets when they differ; "" for an exact figure."""
    found: dict[tuple[float, float], None] = {}
    for s in samples:
        edges = _edges(s.get("details"), name)
        if s.get("status") == "ok" and isinstance(edges, list) and len(edges) == 2:
            lo, hi = (finite(e) for e in edges)
            if lo is not None and hi is not None:
                found[(lo, hi)] = None
    if not found:
        return ""
    said = ", ".join(f"{lo:g}-{hi:g}" for lo, hi in sorted(found))
    return f" (bucket{'s' if len(found) > 1 else ''} {said} {unit})"


def _bucketed_median(values: tuple[float, ...], show: Callable[[float], str]) -> str:
    """The median of bucketed figures: the middle one, or the middle two as a range (their
    mean would be a figure no repeat could give, finer than the buckets)."""
    ordered = sorted(values)
    low, high = ordered[(len(ordered) - 1) // 2], ordered[len(ordered) // 2]
    return show(low) if low == high else f"{show(low)}-{show(high)}"


def median_text(
    summary: stats.Summary,
    samples: list[dict[str, Any]],
    name: str,
    unit: str,
    show: Callable[[float], str],
) -> str:
    """The median as shown: a histogram's figure as whole buckets, with the bucket named."""
    note = bucket_note(samples, name, unit)
    return _bucketed_median(summary.values, show) + note if note else show(summary.median)


def rows(doc: dict[str, Any]) -> list[list[str]]:
    """Text cells, one row per test and metric."""
    out = []
    for test, samples in groups(doc).items():
        for name, found in summaries(doc, samples).items():
            metric, summary = found["metric"], found["summary"]
            unit = metric.shown_unit or metric.unit
            if summary is None:
                why = f" ({found['reason']})" if found["reason"] else ""
                out.append([test, name, unit, metric.better, "0", UNAVAILABLE + why, "", "", ""])
                continue
            show = metric.show
            spread = "-" if summary.stdev is None else f"{show(summary.mean)}±{show(summary.stdev)}"
            ci = "-"
            if summary.ci_low is not None and summary.ci_high is not None:
                ci = f"{show(summary.ci_low)}-{show(summary.ci_high)}"
            median = median_text(summary, samples, name, unit, show)
            out.append(
                [test, name, unit, metric.better, str(summary.n), median, spread,
                 f"{show(summary.min)}-{show(summary.max)}", ci]
            )  # fmt: skip
    return out


def json_rows(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Test -> metric -> its summary with unit and direction, for the JSON report."""
    out: dict[str, dict[str, Any]] = {}
    by_tool: dict[str, dict[str, metrics.Metric]] = {}  # once a tool, not once a test
    for test, samples in stats.samples_by_test(doc).items():
        tool = tool_of(samples)
        if tool not in by_tool:
            by_tool[tool] = metrics.declared(doc, tool)
        declared = by_tool[tool]
        out[test] = {
            name: {
                "unit": found["metric"].unit,
                "better": found["metric"].better,
                **(found["summary"].to_dict() if found["summary"] else {"median": None}),
                **(
                    {"buckets": note.strip(" ()")}
                    if (note := bucket_note(samples, name, found["metric"].unit))
                    else {}
                ),
                **(
                    {"unavailable": found["reason"] or "not measured"}
                    if not found["summary"]
                    else {}
                ),
            }
            for name, found in summaries(doc, samples, declared).items()
        }
    return out


def csv_fields(doc: dict[str, Any]) -> list[str]:
    """Metric columns the CSV adds beyond its schema 1 ones (e.g. ping's rtt_avg_ms)."""
    legacy = {m.name for m in metrics.legacy()}
    names: dict[str, None] = {}
    for samples in groups(doc).values():
        names.update(dict.fromkeys(summaries(doc, samples)))
    return [n for n in names if n not in legacy]
