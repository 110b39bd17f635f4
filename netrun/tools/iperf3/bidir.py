"""iperf3 --bidir: both directions at once, read into one result.

iperf3 (3.7+) reports the client-to-server half as usual (``sum_sent``/``sum_received``,
UDP ``sum``) and the server-to-client half beside it (``*_bidir_reverse``). A test's
figure is then the sum of both halves, held against twice one direction's ceiling (full
duplex); each half is kept in ``bidir_bps`` so the table's sum can be taken apart.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from netrun.tools.iperf3.result import Iperf3Result

REVERSE = "_bidir_reverse"


def is_bidir(end: Mapping[str, Any]) -> bool:
    return isinstance(end.get("sum_sent" + REVERSE), Mapping)


def _num(summary: Any, key: str) -> float | None:
    """A finite number from a summary that may be anything (hostile or broken output)."""
    value = summary.get(key) if isinstance(summary, Mapping) else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value) if abs(value) < 1e300 else math.inf
    return number if math.isfinite(number) else None


def _add(a: float | None, b: float | None) -> float | None:
    return None if a is None and b is None else (a or 0) + (b or 0)


def merge(result: Iperf3Result, end: Mapping[str, Any], intervals: Sequence[Any]) -> Iperf3Result:
    """``result`` (the client-to-server half) with the server-to-client half added."""
    if result.receiver_bps is None or result.bytes_received is None:
        return result  # a version without the forward receiver's figure: nothing to add to
    sent = end.get("sum_sent" + REVERSE)
    received = end.get("sum_received" + REVERSE)
    sent = sent if isinstance(sent, Mapping) else {}
    received = received if isinstance(received, Mapping) else {}
    udp = result.protocol == "udp"
    loss = end.get("sum" + REVERSE) if udp else None
    loss = loss if isinstance(loss, Mapping) else None
    back = _num(received, "bits_per_second") or 0.0
    lost = _add(result.lost_packets, _num(loss, "lost_packets")) if udp else None
    packets = _add(result.packets, _num(loss, "packets")) if udp else None
    jitters = [j for j in (result.jitter_ms, _num(loss, "jitter_ms")) if j is not None]
    retrans = _add(result.retransmits, _num(sent, "retransmits")) if not udp else None
    return dataclasses.replace(
        result,
        sender_bps=result.sender_bps + (_num(sent, "bits_per_second") or 0.0),
        receiver_bps=result.receiver_bps + back,
        bytes_sent=result.bytes_sent + int(_num(sent, "bytes") or 0),
        bytes_received=result.bytes_received + int(_num(received, "bytes") or 0),
        retransmits=None if retrans is None else int(retrans),
        lost_packets=None if lost is None else int(lost),
        packets=None if packets is None else int(packets),
        lost_percent=100 * lost / packets if lost is not None and packets else result.lost_percent,
        jitter_ms=max(jitters) if jitters else None,  # the worse direction's
        intervals=_intervals(result, intervals),
        bidir_bps=(result.receiver_bps, back),
    )


def _intervals(result: Iperf3Result, raw: Sequence[Any]) -> tuple[Any, ...]:
    """Each interval's rate as the sum of both directions (same order as the forward ones)."""
    back = [
        _num(item.get("sum" + REVERSE), "bits_per_second") or 0.0
        for item in raw
        if isinstance(item, Mapping)
        and isinstance(item.get("sum"), Mapping)
        and not item["sum"].get("omitted")
    ]
    if len(back) != len(result.intervals):
        return result.intervals
    return tuple(
        dataclasses.replace(i, bits_per_second=i.bits_per_second + b)
        for i, b in zip(result.intervals, back, strict=True)
    )
