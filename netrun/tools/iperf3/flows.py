"""Several iperf3 runs measured at once (a fan-in or fan-out's flows) as one result.

A test of several flows (``pairs: {fanin: HOST}``, netrun.run.flows) measures each flow
with its own iperf3 client and server over the same window. Its sample is the sum: the
receivers' rates add up to the aggregate (what the fan-in host took in), the senders'
and the counters likewise; each flow's own figure stays in ``details.flows``, and the
flows' receiver rates stand where a ``-P N`` test's streams would, so Jain's index is the
flows' fairness. The tool's ``Fan`` (netrun.tools.iperf3.tool.FAN) adds the metrics.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from netrun.core.measurement import Measurement
from netrun.tools import fan
from netrun.tools.fan import total
from netrun.tools.iperf3 import tcpinfo
from netrun.tools.iperf3.result import Interval, Iperf3Result

#: Seconds of each flow's start its figure leaves out (iperf3 -O) when the test sets no
#: ``omit:``: the flows' processes start some ms apart on busy hosts and each ramps up
#: (slow start, a shaper's burst), so a sum over their first second overstated the
#: aggregate by 2% on the emulated lab; over the steady state it is the link's.
FAN_OMIT_S = 1


def _intervals(runs: Sequence[Iperf3Result]) -> tuple[Interval, ...]:
    """Each interval's rates summed over the flows, as far as every flow reported."""
    count = min(len(r.intervals) for r in runs)
    out = []
    for i in range(count):
        each = [r.intervals[i] for r in runs]
        out.append(
            Interval(
                each[0].start,
                each[0].end,
                sum(x.bits_per_second for x in each),
                retransmits=total([x.retransmits for x in each]),
            )
        )
    return tuple(out)


def combine(runs: Sequence[Iperf3Result]) -> Iperf3Result:
    """The flows' runs as one result: sums of the rates, bytes, retransmits and losses;
    each flow's receiver rate in ``stream_bps`` (the fairness index's shares); the TCP
    internals pooled over every flow's sender (not the first flow's alone)."""
    first = runs[0]
    packets = total([r.packets for r in runs])
    lost = total([r.lost_packets for r in runs])
    jitters = [r.jitter_ms for r in runs if r.jitter_ms is not None]
    receivers = [r.receiver_bps for r in runs]
    return replace(
        first,
        duration=max(r.duration for r in runs),
        streams=sum(r.streams for r in runs),
        sender_bps=sum(r.sender_bps for r in runs),
        receiver_bps=total(receivers),
        bytes_sent=sum(r.bytes_sent for r in runs),
        bytes_received=total([r.bytes_received for r in runs]),
        retransmits=total([r.retransmits for r in runs]),
        cpu_client_pct=None,
        cpu_server_pct=None,
        jitter_ms=max(jitters) if jitters else None,
        lost_packets=lost,
        packets=packets,
        lost_percent=100 * lost / packets if packets and lost is not None else None,
        intervals=_intervals(runs),
        warnings=tuple(w for r in runs for w in r.warnings),
        server_output=None,
        bidir_bps=None,
        stream_bps=tuple(v for v in receivers if v is not None) if None not in receivers else (),
        tcp_info=tcpinfo.pooled([r.tcp_info for r in runs], [r.streams for r in runs]),
    )


def fairness(runs: Sequence[Iperf3Result]) -> float | None:
    """Jain's index of the flows' receiver rates (None when any flow's is unknown)."""
    return fan.fairness([r.receiver_bps for r in runs])


def record(client: str, server: str, m: Measurement, raw: str | None) -> dict[str, Any]:
    """One flow's figures as ``details.flows`` keeps them, with its raw output's file."""
    run: Iperf3Result = m.result
    return {
        "client": client,
        "server": server,
        "throughput_bps": run.receiver_bps,
        "sender_bps": run.sender_bps,
        "retransmits": run.retransmits,
        "jitter_ms": run.jitter_ms,
        "lost_percent": run.lost_percent,
        "raw": raw,
    }
