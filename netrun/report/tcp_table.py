"""The TCP internals table: each TCP test's sender RTT, windows and path MTU, beside the main one.

iperf3's JSON carries its sending end's TCP_INFO (netrun.tools.iperf3.tcpinfo declares the
metrics). The main table stays about throughput; these sit in a small table of their own,
one row per test that has any of them (the median over its ok repeats). A UDP test (TCP
internals do not apply) or one whose figures are all unavailable (a reversed container test,
FreeFlow's overlay socket) has no row: the notes under the tables give each reason, and a run
without a row has no table. A test of several flows (``pairs: fanin/fanout``) pools its
flows' senders (netrun.tools.iperf3.tcpinfo.pooled): its row says whose they are.
"""

from __future__ import annotations

from typing import Any

from netrun.core import metrics
from netrun.results import stats

#: The metrics shown, in column order (their labels and units come from the run's
#: declarations).
NAMES = ("rtt_mean_ms", "rtt_max_ms", "snd_cwnd_max_bytes", "snd_wnd_max_bytes", "pmtu_bytes")
#: The tool whose declarations these are (ping declares an ``rtt_max_ms`` of its own).
TOOL = "iperf3"
#: A fan test's "TCP_INFO of" names up to this many sending hosts, then counts them.
MANY = 3


def headers(doc: dict[str, Any]) -> list[str]:
    declared = metrics.declared(doc, TOOL)
    return ["test", "TCP_INFO of", *(declared[n].label if n in declared else n for n in NAMES)]


def _fan(sample: dict[str, Any]) -> str | None:
    """Whose figures a test of several flows pools: each flow's sender (its client; under
    -R without --bidir its server), with their hosts (a count past MANY)."""
    flows = [f for f in sample.get("flows") or () if isinstance(f, list) and len(f) == 2]
    if not flows:
        return None
    options = sample.get("options") if isinstance(sample.get("options"), dict) else {}
    server = bool((options or {}).get("reverse")) and not (options or {}).get("bidir")
    hosts = sorted({str(f[1] if server else f[0]) for f in flows})
    named = ", ".join(hosts) if len(hosts) <= MANY else f"{len(hosts)} hosts"
    return f"each flow's {'server' if server else 'client'}: {named}"


def _whose(samples: list[dict[str, Any]]) -> str:
    """Which end's kernel the figures are (details.tcp_info_of), with its host; of a test of
    several flows, the flows' senders."""
    for s in samples:
        details = s.get("details") if isinstance(s.get("details"), dict) else {}
        if (details or {}).get("fan") and (fan := _fan(s)):
            return fan
        side = (details or {}).get("tcp_info_of")
        if side in ("client", "server"):
            return f"{side} {s.get(side) or ''}".rstrip()
    return "-"


def rows(doc: dict[str, Any]) -> list[list[str]]:
    """Text cells, one row per test with at least one of the figures."""
    declared = metrics.declared(doc, TOOL)
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
