"""Which of a test's declared metrics a report leads with, and which it can draw as latency.

Every sample carries ``metrics`` with each metric its tool declares, in the tool's order
(null where unknown), and results.json keeps the declarations: so a report knows, from the
saved run alone, what a test's tool produces (a ping test has no throughput, so no Mbit/s
cell), its headline (the first declared: ping's mean RTT, iperf3's throughput) and its
latency family (``rtt_*_ms``, ``latency_*_ms``), which the latency plot draws. Runs saved
before schema 2 have no ``metrics`` and are iperf3's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from netrun.core import metrics
from netrun.core.metrics import Metric
from netrun.results import stats

THROUGHPUT = "throughput_bps"
#: A latency family's members: ``<prefix>_<part>_ms``; the spread is mdev (ping) or stdev.
PARTS = ("min", "avg", "max")
SPREADS = ("mdev", "stdev")
#: A ``load:`` test's added latency: a difference of two latencies, not a latency family.
ADDED = "latency_added_"


def produced(samples: Iterable[Mapping[str, Any]]) -> list[str]:
    """The metric names the test's tool declares (every sample of a schema 2 run carries
    them all, null or not), in the tool's order; a schema 1 run's are iperf3's."""
    names: dict[str, None] = {}
    for sample in samples:
        found = sample.get("metrics")
        keys = found if isinstance(found, dict) else [m.name for m in metrics.legacy()]
        names.update(dict.fromkeys(str(k) for k in keys))
    return list(names)


def headline(doc: Mapping[str, Any], samples: Sequence[Mapping[str, Any]]) -> Metric:
    """The test's main metric: its tool's first declared one (the verdict's, the trend's)."""
    names = produced(samples) or [THROUGHPUT]
    tool = samples[0].get("tool") if samples else None
    declared = metrics.declared(doc, str(tool) if tool else None)
    return declared.get(names[0]) or Metric(names[0], "", "higher", "")


def says(doc: Mapping[str, Any], tool: str, metric: str) -> str:
    """What a latency figure is, in words: "<tool>'s <the metric's declared description>"
    (ping's mean round-trip time of the replies), read from the run's own declarations,
    so a tool added later is described as it describes itself."""
    found = metrics.declared(doc, tool or None).get(metric)
    what = found.description if found and found.description else metric
    return f"{tool}'s {what}" if tool else what


@dataclass(frozen=True)
class Latency:
    """One test's latency as its samples carry it: each part's median over the ok repeats
    (ms; None where unknown), the repeats each comes from, and the metric names used."""

    prefix: str
    low: float | None
    mid: float | None
    high: float | None
    spread: float | None
    n: int
    names: tuple[str, ...]
    #: percentile -> ms, where the tool reports percentiles (netperf's latency_p50_us...).
    percentiles: tuple[tuple[float, float], ...] = ()
    #: The metric the headline cell shows (``P_avg_ms``, or netperf's ``P_mean_us``).
    metric: str = ""


#: A percentile family's members: ``<prefix>_p<N>_<unit>`` (netperf: latency_p50_us), with
#: ``<prefix>_mean_<unit>``, ``_stddev_`` and ``_max_``; p999 is the 99.9th.
PERCENTILE_NAMES = {"p50": 50.0, "p90": 90.0, "p99": 99.0, "p999": 99.9}
TO_MS = {"ms": 1.0, "us": 1e-3}


def latency_prefix(names: Iterable[str]) -> str | None:
    """The first family ``P`` with ``P_avg_ms`` among ``names`` (rtt, latency), or with
    ``P_p50_us``/``P_p50_ms`` (a percentile family), else None."""
    for name in names:
        if name.startswith(ADDED):  # a load test's differences (netrun.report.load_table)
            continue
        if name.endswith("_avg_ms"):
            return name.removesuffix("_avg_ms")
        for unit in TO_MS:
            if name.endswith(f"_p50_{unit}"):
                return name.removesuffix(f"_p50_{unit}")
    return None


def _percentile_family(samples: Sequence[dict[str, Any]], prefix: str) -> Latency | None:
    """A tool that reports percentiles (netperf): dot the mean, spread the stddev, the
    percentiles as they are; every value in ms."""
    names = produced(samples)
    unit = next((u for u in TO_MS if f"{prefix}_p50_{u}" in names), "us")
    scale = TO_MS[unit]
    used: list[str] = []
    n = 0

    def median(part: str) -> float | None:
        nonlocal n
        summary = stats.summarize(stats.ok_values(samples, f"{prefix}_{part}_{unit}"))
        if summary is None:
            return None
        used.append(f"{prefix}_{part}_{unit}")
        n = max(n, summary.n)
        return summary.median * scale

    cuts = tuple((q, v) for part, q in PERCENTILE_NAMES.items() if (v := median(part)) is not None)
    mean = median("mean")
    mid = mean if mean is not None else dict(cuts).get(50.0)
    if mid is None:
        return None
    metric = f"{prefix}_mean_{unit}" if mean is not None else f"{prefix}_p50_{unit}"
    return Latency(prefix, None, mid, median("max"), median("stddev"), n, tuple(used), cuts,
                   metric)  # fmt: skip


def latency(samples: Sequence[dict[str, Any]]) -> Latency | None:
    """The test's latency family's medians, or None when its tool declares none or no ok
    repeat measured it (a failed test has no latency to draw)."""
    names = produced(samples)
    prefix = latency_prefix(names)
    if prefix is None:
        return None
    if f"{prefix}_avg_ms" not in names:
        return _percentile_family(samples, prefix)
    used: list[str] = []

    def median(part: str) -> tuple[float | None, int]:
        name = f"{prefix}_{part}_ms"
        if name not in names:
            return None, 0
        summary = stats.summarize(stats.ok_values(samples, name))
        if summary is None:
            return None, 0
        used.append(name)
        return summary.median, summary.n

    mid, n = median("avg")
    if mid is None:
        return None
    low, _ = median("min")
    high, _ = median("max")
    spread = next((v for v, _ in (median(p) for p in SPREADS) if v is not None), None)
    return Latency(prefix, low, mid, high, spread, n, tuple(used), metric=f"{prefix}_avg_ms")
