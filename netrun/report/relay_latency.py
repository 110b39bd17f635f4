"""Notes under the table for one-way latency: what a relay added, and how far to trust it.

A TURN test's latency means little alone; beside the direct path between the same two
hosts (``baremetal`` with ``tool: iperf2`` in the same scenario) the difference is what the
relay (tunnel, TURN server, extra hops) added. Medians of the ok repeats are compared.
One-way latency needs the two clocks to agree: the notes say when the hosts share one clock
(lab namespaces of one machine) and repeat each ``details.latency_unreliable`` reason.
"""

from __future__ import annotations

from typing import Any

from netrun.results import stats

METRIC = "latency_avg_ms"
TOOL = "iperf2"


def _median(samples: list[dict[str, Any]]) -> float | None:
    summary = stats.summarize(stats.ok_values(samples, METRIC))
    return None if summary is None else summary.median


def notes(doc: dict[str, Any]) -> list[str]:
    """Lines for the report: relay-added latency per relayed test, clocks, unreliable ones."""
    groups = {
        name: samples
        for name, samples in stats.samples_by_test(doc).items()
        if samples[0].get("tool") == TOOL
    }
    if not groups:
        return []
    direct: dict[tuple[str, str], tuple[str, float]] = {}
    for name, samples in groups.items():
        median = _median(samples)
        first = samples[0]
        if first.get("mode") == "baremetal" and median is not None:
            direct.setdefault((str(first.get("client")), str(first.get("server"))), (name, median))
    lines = []
    for name, samples in groups.items():
        first = samples[0]
        base = direct.get((str(first.get("client")), str(first.get("server"))))
        median = _median(samples)
        if first.get("mode") == "baremetal" or base is None or median is None:
            continue
        lines.append(
            f"{name}: the relay added {median - base[1]:.3f} ms of one-way latency "
            f"({median:.3f} ms against {base[1]:.3f} ms direct, {base[0]})"
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
