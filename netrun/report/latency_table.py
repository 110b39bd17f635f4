"""The latency table of the one-screen report: each latency test's percentiles as its tool
measured them, in the tool's unit, with the samples they come from and, for a
request/response tool, its transactions per second.

A latency is read from the test's declared metrics (``<prefix>_p50_<unit>``,
``<prefix>_avg_<unit>``...: ping's RTTs in ms, netperf's transaction times in µs), so a new
latency tool needs no change here. Every figure is the median over the test's ok repeats; a
percentile the tool could not give (ping's p99 needs 100 replies) is "-".
"""

from __future__ import annotations

import statistics
from typing import Any

from netrun.report import headline
from netrun.report.summary import group_samples
from netrun.results import flags, stats

#: Columns: the percentiles, then the mean; the unit is each row's own (the tool's).
PARTS = (("p50", "p50"), ("p90", "p90"), ("p99", "p99"), ("mean", "mean"))
UNITS = {"us": "µs", "ms": "ms"}
#: Per tool, its mean's metric part when not ``mean`` (ping: ``rtt_avg_ms``).
MEAN_PARTS = ("mean", "avg")
HEADERS = ["test", "mode", "sender→receiver", "tool", "unit", "p50", "p90", "p99", "mean",
           "samples", "trans/s"]  # fmt: skip


def _unit(names: list[str], prefix: str) -> str:
    for unit in UNITS:
        if any(n.startswith(f"{prefix}_") and n.endswith(f"_{unit}") for n in names):
            return unit
    return "ms"


def _median(samples: list[dict[str, Any]], name: str) -> float | None:
    found = stats.summarize(stats.ok_values(samples, name))
    return None if found is None else found.median


def sample_count(samples: list[dict[str, Any]], phase: str | None = None) -> int | None:
    """How many probes or transactions the percentiles come from (median over the ok
    repeats): netperf's histogram ``samples``, ping's ``rtt_count``; None when unsaid."""
    counts = []
    for s in samples:
        if s.get("status") != "ok":
            continue
        details: dict[str, Any] = s["details"] if isinstance(s.get("details"), dict) else {}
        if phase is not None:
            details = details[phase] if isinstance(details.get(phase), dict) else {}
        value = details.get("samples", details.get("rtt_count"))
        if isinstance(value, int | float):
            counts.append(value)
    return round(statistics.median(counts)) if counts else None


def is_latency(samples: list[dict[str, Any]]) -> bool:
    """A test whose tool leads with a latency family (not iperf2's throughput, which keeps
    its latency column in the throughput table) and has no ``load:`` (load_table's)."""
    names = headline.produced(samples)
    if not names or names[0] == headline.THROUGHPUT:
        return False
    if any(n.startswith(headline.ADDED) for n in names):
        return False
    return headline.latency_prefix(names) is not None


def _show(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    return f"{value:.1f}" if unit == "us" else f"{value:.3f}"


def row(name: str, samples: list[dict[str, Any]]) -> list[str]:
    """One test's cells (HEADERS)."""
    names = headline.produced(samples)
    prefix = headline.latency_prefix(names) or ""
    unit = _unit(names, prefix)
    first = samples[0]
    cells = [name, str(first.get("mode")), flags.direction(first), str(first.get("tool") or "")]
    cells.append(UNITS.get(unit, unit))
    for part, _ in PARTS[:3]:
        cells.append(_show(_median(samples, f"{prefix}_{part}_{unit}"), unit))
    mean = next(
        (v for p in MEAN_PARTS if (v := _median(samples, f"{prefix}_{p}_{unit}")) is not None),
        None,
    )
    cells.append(_show(mean, unit))
    count = sample_count(samples)
    cells.append("-" if count is None else str(count))
    rate = _median(samples, "transactions_per_s")
    cells.append("" if "transactions_per_s" not in names else _show(rate, "us").split(".")[0])
    return cells


def rows(doc: dict[str, Any], only: set[str] | None = None) -> list[list[str]]:
    """The table's rows, one per latency test (``only``: of these tests); [] if none."""
    return [
        row(name, samples)
        for name, samples in group_samples(doc.get("tests", [])).items()
        if is_latency(samples) and (only is None or name in only)
    ]


TITLE = (
    "latency (median of the ok repeats; samples: the probes or transactions each repeat's "
    "percentiles come from)"
)
