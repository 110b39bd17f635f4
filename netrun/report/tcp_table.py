"""The TCP internals table: each TCP test's sender RTT, windows and path MTU, beside the main one.

iperf3's JSON carries its sending end's TCP_INFO (netrun.tools.iperf3.tcpinfo declares the
metrics). The main table stays about throughput; these sit in a small table of their own,
one row per test that has any of them (the median over its ok repeats). A UDP test (TCP
internals do not apply) or one whose figures are all unavailable (a reversed container test,
FreeFlow's overlay socket) has no row: the notes under the tables give each reason, and a run
without a row has no table.
"""

from __future__ import annotations

from typing import Any

from netrun.core import metrics
from netrun.results import stats

#: The metrics shown, in column order (their labels and units come from the run's
#: declarations).
NAMES = ("rtt_mean_ms", "rtt_max_ms", "snd_cwnd_max_bytes", "snd_wnd_max_bytes", "pmtu_bytes")


def headers(doc: dict[str, Any]) -> list[str]:
    declared = metrics.declared(doc)
    return ["test", "TCP_INFO of", *(declared[n].label if n in declared else n for n in NAMES)]


def _whose(samples: list[dict[str, Any]]) -> str:
    """Which end's kernel the figures are (details.tcp_info_of), with its host."""
    for s in samples:
        details = s.get("details") if isinstance(s.get("details"), dict) else {}
        side = (details or {}).get("tcp_info_of")
        if side in ("client", "server"):
            return f"{side} {s.get(side) or ''}".rstrip()
    return "-"


def rows(doc: dict[str, Any]) -> list[list[str]]:
    """Text cells, one row per test with at least one of the figures."""
    declared = metrics.declared(doc)
    out = []
    for test, samples in stats.samples_by_test(doc).items():
        cells = []
        for name in NAMES:
            summary = stats.summarize(stats.ok_values(samples, name))
            metric = declared.get(name) or metrics.Metric(name, "", "lower", "")
            cells.append(metric.show(summary.median) if summary else "-")
        if any(c != "-" for c in cells):
            out.append([test, _whose(samples), *cells])
    return out
