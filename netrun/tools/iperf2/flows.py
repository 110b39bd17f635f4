"""Several iperf2 runs measured at once (a fan-in or fan-out's flows) as one result.

A test of ``pairs: {fanin: HOST}`` in iperf2 (bare metal, or mode turn through one shared
relay) runs each flow's own server, on its own port, and client over the same window
(netrun.run.flows). The sample is the sum, pooled as one run's ``-P`` streams are
(netrun.tools.iperf2.parse.pool): the receivers' rates and datagram counts add up, the
latency pools over every datagram, the jitter is the worst flow's. Each flow keeps its own
figures and its proof (which address the server saw, the relay the traffic crossed) in
``details.flows``, and Jain's index is over the flows' receiver rates.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from netrun.core.measurement import Measurement
from netrun.tools.fan import AGGREGATE, FAIRNESS, Fan, fairness, total
from netrun.tools.iperf2 import parse as iperf2

#: What each flow's record carries of its measurement's details: a relay mode's proof.
PROOF = ("peer_seen", "relayed_address", "relay_counters", "latency_unreliable")


def record(client: str, server: str, m: Measurement, raw: str | None) -> dict[str, Any]:
    """One flow's figures as ``details.flows`` keeps them, with its raw output's file."""
    r: iperf2.Iperf2Result = m.result
    out: dict[str, Any] = {
        "client": client,
        "server": server,
        "throughput_bps": r.metrics.get("throughput_bps"),
        "jitter_ms": r.metrics.get("jitter_ms"),
        "lost": r.metrics.get("lost"),
        "total": r.metrics.get("total"),
        "lost_percent": r.metrics.get("lost_percent"),
        "latency_avg_ms": r.metrics.get("latency_avg_ms"),
        "peers": list(r.peers),
    }
    out.update((k, m.details[k]) for k in PROOF if k in m.details)
    out["raw"] = raw
    return out


def combine(found: Sequence[Measurement], options: Mapping[str, Any]) -> Measurement:
    """The flows' runs as one: pooled metrics, the aggregate and the flows' fairness."""
    runs: list[iperf2.Iperf2Result] = [m.result for m in found]
    finals = [f for r in runs for f in r.flows]
    metrics, why = iperf2.pool(finals, [])
    metrics["out_of_order"] = total([r.metrics.get("out_of_order") for r in runs])
    rates = [r.metrics.get("throughput_bps") for r in runs]
    metrics[AGGREGATE.name] = total(rates)
    metrics[FAIRNESS.name] = fairness(rates)
    if metrics[FAIRNESS.name] is None:
        why[FAIRNESS.name] = "a flow's receiver rate is unknown or every flow's is zero"
    for r in runs:  # what one flow could not report, the sum cannot either
        why.update((k, v) for k, v in r.unavailable.items() if metrics.get(k) is None)
    sent = [r.sent for r in runs]
    result = replace(
        runs[0],
        metrics=metrics,
        unavailable=why,
        intervals=(),  # each flow's own series is in its raw file
        flows=tuple(finals),
        peers=tuple(p for r in runs for p in r.peers),
        peer_seen=None,  # each flow's is in details.flows
        sent=None if None in sent else sum(s for s in sent if s is not None),
        warnings=tuple(w for r in runs for w in r.warnings),
    )
    details: dict[str, Any] = {"source": result.source, "sent": result.sent}
    unreliable = [
        f"{i + 1}: {m.details['latency_unreliable']}"
        for i, m in enumerate(found)
        if m.details.get("latency_unreliable")
    ]
    if unreliable:  # a pooled mean is as good as its worst flow's clocks
        details["latency_unreliable"] = "flow " + "; flow ".join(unreliable)
    return Measurement("", result, details, dict(metrics), dict(why))


FAN = Fan(metrics=(AGGREGATE, FAIRNESS), record=record, combine=combine)
