"""Notes under the table for one-way latency: what a relay added, and how far to trust it.

A TURN test's latency means little alone; beside the direct path between the same two
hosts (``baremetal`` with ``tool: iperf2`` in the same scenario) the difference is what the
relay (tunnel, TURN server, extra hops) added: the means over every packet of the ok
repeats are compared (each repeat's mean, stdev and packet count pooled), with the packet
counts and a 95% interval of the difference (normal approximation; packets are not fully
independent, so read it as a lower bound on the uncertainty). Without packet counts the
repeats' means are the samples.
One-way latency needs the two clocks to agree: the notes say when the hosts share one clock
(lab namespaces of one machine) and repeat each ``details.latency_unreliable`` reason.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass
from typing import Any

from netrun.core import metrics
from netrun.results import stats
from netrun.results.fanin import flow_pairs

METRIC = "latency_avg_ms"
SPREAD = "latency_stdev_ms"
TOOL = "iperf2"


#: The normal distribution's two-sided 95% quantile: the packets number in thousands.
Z95 = 1.96


@dataclass(frozen=True)
class Added:
    """What a relay added to one test's one-way latency, against the direct path: the
    difference of the pooled means, the packets behind each and a 95% interval."""

    test: str
    transport: str | None
    direct: str
    relayed_ms: float
    direct_ms: float
    relayed_n: int
    direct_n: int
    low_ms: float | None
    high_ms: float | None

    @property
    def added_ms(self) -> float:
        return self.relayed_ms - self.direct_ms

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "added_ms": self.added_ms}


@dataclass(frozen=True)
class _Pooled:
    mean: float
    var: float | None
    n: int


def _pooled(samples: list[dict[str, Any]]) -> _Pooled | None:
    """The mean and variance over every packet of the ok repeats (each repeat's mean,
    standard deviation and received count pooled exactly), or None without a mean."""
    parts: list[tuple[int, float, float | None]] = []
    for s in samples:
        if s.get("status") != "ok":
            continue
        values = metrics.of_sample(s)
        mean = values.get(METRIC)
        if mean is None:
            continue
        total, lost = values.get("total"), values.get("lost") or 0.0
        count = int(total - lost) if total is not None and total > lost else 0
        parts.append((count, mean, values.get(SPREAD)))
    if not parts:
        return None
    n = sum(c for c, _, _ in parts)
    if n < 2 or any(c < 2 or sd is None for c, _, sd in parts):  # no counts: repeats only
        means = [m for _, m, _ in parts]
        summary = stats.summarize(means)
        var = summary.stdev**2 * len(means) if summary and summary.stdev is not None else None
        return _Pooled(statistics.median(means), var, len(means) if var is not None else 0)
    mean = sum(c * m for c, m, _ in parts) / n
    within = sum((c - 1) * (sd or 0.0) ** 2 for c, _, sd in parts)
    between = sum(c * (m - mean) ** 2 for c, m, _ in parts)
    return _Pooled(mean, (within + between) / (n - 1), n)


def _transport(sample: dict[str, Any]) -> str | None:
    relay = (sample.get("details") or {}).get("relay")
    options = sample.get("options") if isinstance(sample.get("options"), dict) else {}
    found = (relay.get("transport") if isinstance(relay, dict) else None) or (options or {}).get(
        "turn_transport"
    )
    return f"TURN-{str(found).upper()}" if found else None


def _groups(doc: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    return {
        name: samples
        for name, samples in stats.samples_by_test(doc).items()
        if samples[0].get("tool") == TOOL
    }


def _flows(sample: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """Every flow's ends: a relayed fan meets a direct fan of the same flows, not the
    direct test of its first flow."""
    return tuple(sorted(flow_pairs(sample)))


def added(doc: dict[str, Any]) -> list[Added]:
    """Each relayed test's added latency against the direct test between the same hosts."""
    groups = _groups(doc)
    direct: dict[tuple[tuple[str, str], ...], tuple[str, _Pooled]] = {}
    for name, samples in groups.items():
        first = samples[0]
        pooled = _pooled(samples)
        if first.get("mode") == "baremetal" and pooled is not None:
            direct.setdefault(_flows(first), (name, pooled))
    out = []
    for name, samples in groups.items():
        first = samples[0]
        base = direct.get(_flows(first))
        pooled = _pooled(samples)
        if first.get("mode") == "baremetal" or base is None or pooled is None:
            continue
        low = high = None
        if pooled.var is not None and base[1].var is not None and pooled.n and base[1].n:
            half = Z95 * math.sqrt(pooled.var / pooled.n + base[1].var / base[1].n)
            low, high = pooled.mean - base[1].mean - half, pooled.mean - base[1].mean + half
        delta = (name, _transport(first), base[0], pooled.mean, base[1].mean)
        out.append(Added(*delta, pooled.n, base[1].n, low, high))
    return out


def notes(doc: dict[str, Any]) -> list[str]:
    """Lines for the report: relay-added latency per relayed test, clocks, unreliable ones."""
    groups = _groups(doc)
    if not groups:
        return []
    lines = []
    for a in added(doc):
        via = f" over {a.transport}" if a.transport else ""
        interval = (
            f"95% interval {a.low_ms:.3f} to {a.high_ms:.3f} ms, "
            if a.low_ms is not None and a.high_ms is not None
            else ""
        )
        lines.append(
            f"{a.test}: the relay added {a.added_ms:.3f} ms of one-way latency{via} "
            f"({interval}n = {a.relayed_n} relayed and {a.direct_n} direct packets; "
            f"{a.relayed_ms:.3f} ms against {a.direct_ms:.3f} ms direct, {a.direct})"
        )
    shared = sorted(
        {
            host
            for samples in groups.values()
            for s in samples
            for host, c in ((s.get("details") or {}).get("clock") or {}).items()
            if isinstance(c, dict) and c.get("shared_clock")
        }
    )
    if shared:
        lines.append(
            f"clocks: {', '.join(shared)} share the controller's clock (one machine: "
            "lab namespaces), so one-way latency needs no offset correction"
        )
    for name, samples in groups.items():
        why = {
            str((s.get("details") or {}).get("latency_unreliable"))
            for s in samples
            if (s.get("details") or {}).get("latency_unreliable")
        }
        if why:
            lines.append(f"{name}: one-way latency unreliable: {'; '.join(sorted(why))}")
    return lines
