"""How iperf3's JSON differs by release, read into one shape: 3.11's and later ones'.

Real labs run what their distribution ships, 3.5 (RHEL 8) to 3.16 (Ubuntu 24.04) and newer,
and the fields a figure comes from moved between them (iperf3's RELNOTES.md; every case is
captured in tests/fixtures/iperf3/<version>/). Each difference is one function here that
rewrites an older ``end`` into the newer shape where the figure can be worked out exactly,
and otherwise says why it is missing, so the parser reads one shape and never takes the
sender's figure for the receiver's:

- UDP before 3.11 has no ``end.sum_sent``/``sum_received``: ``end.sum`` holds the sender's
  bytes (and a rate of those over the receiver's time) beside the receiver's loss. With
  ``-R`` the client is the receiver and its intervals are its own received bytes (3.11+'s
  ``sum_received`` is exactly their sum): the receiver's figure is computed from them.
  Without ``-R`` the receiver's bytes never reach the client: they come from the server's
  own JSON (netrun asks for it), else from the counters it hands back (packets - lost,
  times the datagram length, over its time); null with the reason only when neither is
  there.
- ``--bidir`` in 3.7 to 3.10 has no ``*_bidir_reverse`` sums: ``end.sum_sent`` and
  ``sum_received`` hold the last stream's direction only (one direction as both). Each
  stream says whether the client sent on it, so both directions are summed from
  ``end.streams`` as iperf3 itself sums them (bytes over the receiver's seconds).
- ``-P`` streams run in threads from 3.16 (``THREADED``): a figure with ``-P`` above 1 is
  not comparable across that line (netrun.history.baseline).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

#: The first release with each behaviour (iperf3's RELNOTES.md).
BIDIR = (3, 7)
UDP_SUMS = (3, 11)
THREADED = (3, 16)
JSON_STREAM = (3, 17)

_RELEASE = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


def release(version: str | None) -> tuple[int, ...] | None:
    """ "3.19.1" -> (3, 19, 1); None for a version that cannot be read."""
    found = _RELEASE.search(version or "")
    if not found:
        return None
    return tuple(int(part) for part in found.groups() if part is not None)


def at_least(version: str | None, first: tuple[int, ...]) -> bool | None:
    """Whether ``version`` is ``first`` or newer; None when the version is unknown."""
    got = release(version)
    return None if got is None else got >= first


def threaded(version: str | None) -> bool | None:
    """Whether this iperf3 runs its ``-P`` streams in threads (3.16+)."""
    return at_least(version, THREADED)


def _num(summary: Mapping[str, Any], key: str) -> float | None:
    value = summary.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _sum(parts: Sequence[Mapping[str, Any]], sender: bool) -> dict[str, Any] | None:
    """iperf3's own end sum of some streams' summaries: bytes added, over the longest
    of their seconds (its ``sender_time``/``receiver_time``)."""
    if not parts:
        return None
    size = sum(_num(p, "bytes") or 0.0 for p in parts)
    seconds = max(_num(p, "seconds") or 0.0 for p in parts)
    out: dict[str, Any] = {"start": 0, "end": seconds, "seconds": seconds, "bytes": int(size)}
    out["bits_per_second"] = size * 8 / seconds if seconds else None
    retrans = [r for p in parts if (r := _num(p, "retransmits")) is not None]
    if sender and retrans:
        out["retransmits"] = int(sum(retrans))
    return out


# -- UDP before 3.11 ------------------------------------------------------------------------
#: Where a pre-3.11 forward UDP test's receiver figure came from (Iperf3Result warnings).
FROM_SERVER = "the server's own intervals (its JSON, --get-server-output)"
FROM_COUNTERS = "iperf3's counters: (packets - lost) x datagram length over the receiver's time"


def udp_receiver(
    end: Mapping[str, Any],
    intervals: Sequence[Any],
    reverse: bool,
    version: str | None,
    server: Mapping[str, Any] | None = None,
    length: int | None = None,
) -> tuple[dict[str, Any], str | None, str | None]:
    """``end`` with a UDP ``sum_sent`` and ``sum_received`` as 3.11+ gives them, the
    reason the receiver's one is missing if it is, and where it came from when it was
    worked out (FROM_SERVER, FROM_COUNTERS; None: the client's own received intervals).

    Before 3.11 the client of a forward test (the sender) gets no receiver bytes, but the
    receiver's figure is still there, never the sender's: in the server's own JSON
    (``server``: its intervals hold the bytes it received; its end.sum's bytes read 0 in
    3.5), else in the counters the server hands back (``end.sum``'s packets and
    lost_packets, over its seconds: the receiver's time) times the datagram ``length``."""
    if isinstance(end.get("sum_received"), Mapping) or not isinstance(end.get("sum"), Mapping):
        return dict(end), None, None
    whole = end["sum"]
    sent = {k: whole[k] for k in ("start", "end", "seconds", "bytes", "packets") if k in whole}
    if _num(whole, "bytes") is not None and _num(whole, "seconds"):
        # its rate is the sender's bytes over the receiver's time: the sender's own is
        # the same bytes over the sender's time, which only the stream knows
        sent["bits_per_second"] = _sender_udp_rate(end) or whole.get("bits_per_second")
    out = {**end, "sum_sent": sent}
    if reverse:
        received = _interval_sum(intervals)
        if received is None:
            return out, "the receiver's intervals carry no bytes (UDP, iperf3 before 3.11)", None
        return {**out, "sum_received": received}, None, None
    theirs = server.get("intervals") if isinstance(server, Mapping) else None
    received = _interval_sum(theirs) if isinstance(theirs, list) else None
    if received is not None and received["bytes"] > 0:
        return {**out, "sum_received": received}, None, FROM_SERVER
    received = _counted(whole, length)
    if received is not None:
        return {**out, "sum_received": received}, None, FROM_COUNTERS
    shown = f"iperf3 {version}" if version else "this iperf3"
    return (
        out,
        (
            f"{shown} reports no UDP receiver bytes to the client (before 3.11), the server's "
            "JSON was not handed back, and its counters lack packets, lost_packets or the "
            "datagram length: run with reverse (-R), or iperf3 3.11+"
        ),
        None,
    )


def _counted(whole: Mapping[str, Any], length: int | None) -> dict[str, Any] | None:
    """The receiver's bytes from the counters it reports: the datagrams sent less the ones
    it counted lost, each ``length`` bytes, over end.sum's seconds (the receiver's)."""
    packets, lost = _num(whole, "packets"), _num(whole, "lost_packets")
    seconds = _num(whole, "seconds")
    if packets is None or lost is None or not seconds or not length or lost > packets:
        return None
    size = (packets - lost) * length
    return {"start": 0, "end": seconds, "seconds": seconds, "bytes": int(size),
            "bits_per_second": size * 8 / seconds}  # fmt: skip


def _sender_udp_rate(end: Mapping[str, Any]) -> float | None:
    streams = [s.get("udp") for s in end.get("streams") or () if isinstance(s, Mapping)]
    total = _sum([s for s in streams if isinstance(s, Mapping)], sender=True)
    return total["bits_per_second"] if total else None


def _interval_sum(intervals: Sequence[Any]) -> dict[str, Any] | None:
    """The measured (not omitted) intervals' bytes over their seconds."""
    kept = [
        item["sum"]
        for item in intervals
        if isinstance(item, Mapping)
        and isinstance(item.get("sum"), Mapping)
        and not item["sum"].get("omitted")
    ]
    seconds = sum(_num(s, "seconds") or 0.0 for s in kept)
    if not kept or not seconds:
        return None
    size = sum(_num(s, "bytes") or 0.0 for s in kept)
    return {"start": 0, "end": seconds, "seconds": seconds, "bytes": int(size),
            "bits_per_second": size * 8 / seconds}  # fmt: skip


# -- --bidir in 3.7 to 3.10 -----------------------------------------------------------------
def old_bidir(end: Mapping[str, Any]) -> bool:
    """A 3.7-3.10 --bidir end: streams of both directions, no ``*_bidir_reverse`` sums."""
    if isinstance(end.get("sum_sent_bidir_reverse"), Mapping):
        return False
    flags = {_client_sends(s) for s in end.get("streams") or ()}
    return {True, False} <= flags


def _client_sends(stream: Any) -> bool | None:
    """Whether the client sent on this end.streams entry (its ``sender`` flag, 3.7+)."""
    if not isinstance(stream, Mapping):
        return None
    for key in ("sender", "udp"):
        part = stream.get(key)
        if isinstance(part, Mapping) and isinstance(part.get("sender"), bool):
            return bool(part["sender"])
    return None


def bidir_sums(end: Mapping[str, Any], udp: bool) -> tuple[dict[str, Any], str | None]:
    """A 3.7-3.10 --bidir ``end`` with its four sums worked out from its streams, as 3.11+
    reports them; UDP's receiver halves are not in the streams: the reason instead."""
    if udp:
        return dict(end), (
            "iperf3 before 3.11 reports UDP --bidir as one direction's sum only, and no "
            "receiver bytes per stream: use iperf3 3.11+"
        )
    out = dict(end)
    for suffix, client_sends in (("", True), ("_bidir_reverse", False)):
        streams = [s for s in end.get("streams") or () if _client_sends(s) is client_sends]
        for side in ("sender", "receiver"):
            parts = [s[side] for s in streams if isinstance(s.get(side), Mapping)]
            total = _sum(parts, sender=side == "sender")
            if total is not None:
                out[f"sum_{'sent' if side == 'sender' else 'received'}{suffix}"] = total
    return out, None


def bidir_intervals(raw: Sequence[Any]) -> list[Any]:
    """3.7-3.10 --bidir intervals: each ``sum`` is the last stream's; rebuilt as the sum
    of every stream (both directions), with no ``sum_bidir_reverse``."""
    out: list[Any] = []
    for item in raw:
        streams = item.get("streams") if isinstance(item, Mapping) else None
        if not isinstance(streams, list) or not isinstance(item.get("sum"), Mapping):
            out.append(item)
            continue
        rates = [_num(s, "bits_per_second") for s in streams if isinstance(s, Mapping)]
        total = sum(r for r in rates if r is not None)
        out.append({**item, "sum": {**item["sum"], "bits_per_second": total}})
    return out
