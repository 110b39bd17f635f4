"""The sending end's TCP internals (its kernel's TCP_INFO) that iperf3's JSON already carries.

iperf3 reads ``getsockopt(TCP_INFO)`` on each stream's socket once a stats tick, only where
that end sends (``iperf_stats_callback``: ``sender_has_retransmits``, i.e. not a receiver),
and reports (evidence: iperf3's source and RELNOTES.md in ../shared/third_party/iperf.bundle,
and every capture in tests/fixtures/iperf3/<version>/):

- ``end.streams[].sender``: ``max_rtt``, ``min_rtt``, ``mean_rtt`` (microseconds) and
  ``max_snd_cwnd`` (bytes) in every release here, 3.5 to 3.21 (RTT since commit 432ef7e,
  min and mean since 29dbc41, both 2014). ``mean_rtt`` is the mean of the per-tick samples
  (``stream_sum_rtt / stream_count_rtt``), warm-up (-O) ticks included: iperf_reset_stats
  does not reset them.
- ``max_snd_wnd`` (the peer's advertised window as the sender saw it) from 3.10 (RELNOTES
  3.10: "Added tcp_info.snd_wnd to JSON output (#1148)", commit 47985d7): absent in the 3.5,
  3.7 and 3.9 captures, present from 3.12.
- the path MTU only per interval (``intervals[].streams[].pmtu``, ``tcpi_pmtu``, Linux only)
  since 3.2 (commit 52375c1, #578, 2017): in every capture from 3.5. No end figure: the
  smallest interval's is the path's.

Whose figures: a receiving end's sender block is zeros and its intervals carry no ``rtt``
(every ``-R`` capture). So without ``-R`` they are the client's; with ``-R`` they are the
server's, in ``server_output_json`` (the client's --get-server-output, the server run with
-J), else unavailable. With ``--bidir`` the client's JSON holds both directions' sockets;
the streams it received on carry its receiving socket's (the ack path: 12-32 us, a 15928-byte
cwnd in the 3.7-3.21 captures), so only the client's sending streams are read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from netrun.core.metrics import Metric
from netrun.core.numeric import finite
from netrun.tools.iperf3 import versions

#: The first release whose JSON has ``max_snd_wnd`` (RELNOTES 3.10, #1148).
SND_WND = (3, 10)

#: Default tolerances: the path MTU 0 (any drop is a changed path); none for the RTTs and
#: the windows. A bulk flow's RTT is the queue it fills at the bottleneck by design (on the
#: lab it moved 1.1 -> 2.5 ms between two runs at the same 942 Mbit/s), so a nightly baseline
#: judging it would call noise a regression; ping and netperf measure latency, and a
#: ``tolerance:`` for these metrics judges them where a lab wants it. The windows follow the
#: bandwidth-delay product (throughput x RTT).
#: Whose figures every one of these is (the metric's description ends with it).
SIDE = "the sender's TCP_INFO: the client's; under -R the server's (its --get-server-output JSON)"
# fmt: off
TCP_METRICS: tuple[Metric, ...] = (
    Metric("rtt_mean_ms", "ms", "lower", f"mean smoothed RTT over the test, the streams' mean; "
           f"{SIDE}", digits=3),
    Metric("rtt_max_ms", "ms", "lower", f"largest smoothed RTT of any stream; {SIDE}",
           digits=3),
    Metric("snd_cwnd_max_bytes", "bytes", "higher", f"largest congestion window of any "
           f"stream; {SIDE}", scale=1024, shown_unit="KByte", digits=0),
    Metric("snd_wnd_max_bytes", "bytes", "higher", f"largest send window (the receiver's "
           f"advertised window) of any stream, iperf3 3.10+; {SIDE}", scale=1024,
           shown_unit="KByte", digits=0),
    Metric("pmtu_bytes", "bytes", "higher", f"path MTU, the smallest of any stream and "
           f"interval; {SIDE}", tolerance=0, digits=0),
)
# fmt: on
#: Why a reversed test without the server's JSON has none of them.
REVERSE = (
    "reverse (-R): the sender is the server, whose TCP_INFO iperf3 reports only in the "
    "server's own JSON (server -J and --get-server-output)"
)
#: Each metric's field in iperf3's JSON (``pmtu``: per interval; the others: the end's).
FIELDS = {
    "rtt_mean_ms": "mean_rtt",
    "rtt_max_ms": "max_rtt",
    "snd_cwnd_max_bytes": "max_snd_cwnd",
    "snd_wnd_max_bytes": "max_snd_wnd",
    "pmtu_bytes": "pmtu",
}
NAMES = tuple(m.name for m in TCP_METRICS)


def _streams(end: Mapping[str, Any], bidir: bool) -> list[Mapping[str, Any]]:
    """The sending streams' ``sender`` blocks (with --bidir: those the client sent on)."""
    out = []
    for stream in end.get("streams") or ():
        block = stream.get("sender") if isinstance(stream, Mapping) else None
        if not isinstance(block, Mapping):
            continue
        if bidir and block.get("sender") is False:
            continue  # the client's receiving socket: the ack path's figures
        out.append(block)
    return out


def _pmtu(intervals: Any, bidir: bool) -> float | None:
    """The smallest path MTU any sending stream reported in any interval."""
    found = []
    for item in intervals if isinstance(intervals, list) else ():
        for stream in (item.get("streams") if isinstance(item, Mapping) else None) or ():
            if not isinstance(stream, Mapping) or (bidir and stream.get("sender") is False):
                continue
            pmtu = finite(stream.get("pmtu"))
            if pmtu is not None and pmtu > 0:
                found.append(pmtu)
    return min(found) if found else None


def _max(blocks: Sequence[Mapping[str, Any]], key: str) -> float | None:
    found = [v for b in blocks if (v := finite(b.get(key))) is not None and v > 0]
    return max(found) if found else None


def read(
    obj: Mapping[str, Any], protocol: str, reverse: bool, bidir: bool, version: str | None
) -> tuple[dict[str, float], dict[str, str], str | None]:
    """(metric -> value, metric -> why it is null, whose figures: "client"/"server"/None)
    of one iperf3 client JSON."""
    if protocol != "tcp":
        return {}, dict.fromkeys(NAMES, "UDP: TCP internals do not apply"), None
    side, source = "client", obj
    if reverse and not bidir:
        side, source = "server", _mapping(obj.get("server_output_json"))
        if not source:
            return {}, dict.fromkeys(NAMES, REVERSE), None
    blocks = _streams(_mapping(source.get("end")), bidir)
    rtts = [v for b in blocks if (v := finite(b.get("mean_rtt"))) is not None and v > 0]
    values: dict[str, float | None] = {
        # each stream's mean is over the same ticks (one a stats tick): their plain mean
        # is the mean of every sample
        "rtt_mean_ms": sum(rtts) / len(rtts) / 1000 if rtts else None,
        "rtt_max_ms": m / 1000 if (m := _max(blocks, "max_rtt")) is not None else None,
        "snd_cwnd_max_bytes": _max(blocks, "max_snd_cwnd"),
        "snd_wnd_max_bytes": _max(blocks, "max_snd_wnd"),
        "pmtu_bytes": _pmtu(source.get("intervals"), bidir),
    }
    shown = f"iperf3 {version}" if version else "this iperf3"
    why: dict[str, str] = {}
    for name, value in values.items():
        if value is not None:
            continue
        if name == "snd_wnd_max_bytes" and versions.at_least(version, SND_WND) is False:
            why[name] = f"{shown} reports no snd_wnd (iperf3 3.10+)"
        else:
            why[name] = (f"{shown} reported no {FIELDS[name]} for the {side}'s sending "
                         "streams (zeros: no TCP_INFO on its system)")  # fmt: skip
    return {k: v for k, v in values.items() if v is not None}, why, side


def pooled(infos: Sequence[Mapping[str, float]], streams: Sequence[int]) -> dict[str, float]:
    """Several runs' figures as one (a fan-in's flows, each with ``streams`` streams): the
    mean RTT over every stream, the largest RTT and windows, the smallest path MTU. A figure
    some run lacks is left out: the others' alone are not the whole's."""
    out: dict[str, float] = {}
    for name in NAMES:
        found = [info.get(name) for info in infos]
        known = [v for v in found if v is not None]
        if not infos or len(known) < len(found):
            continue
        if name == "rtt_mean_ms":  # each run's is its streams' mean: weigh by streams
            weights = [max(n, 1) for n in streams]
            out[name] = sum(v * w for v, w in zip(known, weights, strict=True)) / sum(weights)
        else:
            out[name] = min(known) if name == "pmtu_bytes" else max(known)
    return out


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
