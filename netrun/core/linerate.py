"""The physical limit of a link: line rate and the goodput ceiling an MTU allows.

On Ethernet every frame costs 38 bytes the application never sees (preamble 8, header 14,
FCS 4, inter-frame gap 12). Inside the frame TCP loses 52 bytes to IPv4 (20), TCP (20) and
its timestamp option (12); UDP loses 28 (IPv4 20, UDP 8). At MTU 1500 on 1 GbE that gives
the 941 Mbit/s iperf3 reports on a healthy link.

A test's own ceiling depends on what it sent: a UDP test of 200-byte datagrams pays 66
bytes of headers per 200 (about 750 Mbit/s on 1 GbE), and a TCP test pays its headers per
segment of the MSS the connection negotiated, which iperf3 reports.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from netrun.core.options import size_value

ETHERNET_OVERHEAD = 38
TCP_OVERHEAD = 52
UDP_OVERHEAD = 28


def line_rate_mbps(*speeds: float | None) -> float | None:
    """The link's rate: the slowest known end."""
    known = [s for s in speeds if s]
    return min(known) if known else None


def goodput_ceiling_mbps(
    speed_mbps: float | None, mtu: int | None, protocol: str, inner_mtu: int | None = None
) -> float | None:
    """Best payload rate a link of this speed and MTU can carry.

    ``inner_mtu`` is an overlay's MTU (VXLAN: 50 bytes less): each inner packet still costs
    a full outer frame on the wire, which is why Flannel tops out near 909 Mbit/s on 1 GbE.
    """
    if not speed_mbps or not mtu or mtu <= TCP_OVERHEAD:
        return None
    payload_mtu = min(inner_mtu, mtu) if inner_mtu else mtu
    overhead = TCP_OVERHEAD if protocol == "tcp" else UDP_OVERHEAD
    if payload_mtu <= overhead:
        return None
    return speed_mbps * (payload_mtu - overhead) / (mtu + ETHERNET_OVERHEAD)


IPV4_HEADER = 20
UDP_HEADER = 8
TCP_NO_OPTIONS = 40  # IPv4 20 + TCP 20


@dataclass(frozen=True)
class Ceiling:
    """A test's goodput ceiling and what it was computed from (the figure's proof)."""

    mbps: float
    basis: str


def _frames(payload_bytes: int, mtu: int) -> int:
    """IPv4 packets a UDP datagram of this payload needs (fragments when it exceeds the MTU)."""
    return max(1, math.ceil((payload_bytes + UDP_HEADER) / (mtu - IPV4_HEADER)))


def per_test_ceiling(
    speed_mbps: float | None,
    mtu: int | None,
    protocol: str,
    inner_mtu: int | None = None,
    *,
    length: int | None = None,
    mss: int | None = None,
) -> Ceiling | None:
    """The ceiling of one test: UDP from its datagram ``length``, TCP from its ``mss``.

    Each datagram or segment costs its IPv4/UDP or IPv4/TCP(+timestamps) headers, the
    overlay's encapsulation (``mtu - inner_mtu``) and Ethernet's 38 bytes. Without the
    length or MSS it falls back to full-size packets (``goodput_ceiling_mbps``).
    """
    if not speed_mbps or not mtu or mtu <= TCP_OVERHEAD:
        return None
    encap = mtu - inner_mtu if inner_mtu and inner_mtu < mtu else 0
    path = mtu - encap
    where = f"{speed_mbps:g} Mbit/s line, MTU {mtu}" + (f", overlay MTU {path}" if encap else "")
    if protocol == "udp" and length and length > 0:
        n = _frames(length, path)
        wire = length + UDP_HEADER + n * (IPV4_HEADER + encap + ETHERNET_OVERHEAD)
        return Ceiling(speed_mbps * length / wire, f"UDP datagram {length} B, {where}")
    if protocol == "tcp" and mss and 0 < mss <= path - TCP_NO_OPTIONS:
        # Linux's MSS (TCP_MAXSEG) already leaves room for the 12-byte timestamp option;
        # a peer without timestamps gets segments of path - 40 bytes
        headers = max(TCP_NO_OPTIONS, min(TCP_OVERHEAD, path - mss))
        wire = mss + headers + encap + ETHERNET_OVERHEAD
        return Ceiling(speed_mbps * mss / wire, f"TCP MSS {mss} B, {where}")
    found = goodput_ceiling_mbps(speed_mbps, mtu, protocol, inner_mtu)
    if found is None:
        return None
    return Ceiling(found, f"{protocol.upper()} full-size packets, {where}")


def ceiling_of(
    options: Mapping[str, Any],
    result: Any,
    speed_mbps: float | None,
    mtu: int | None,
    inner_mtu: Any,
    protocol: str,
) -> Ceiling | None:
    """A test's own ceiling from its options and what its tool reported (an iperf3
    result's ``blksize`` and ``tcp_mss``; a tool without them: the ``length`` option)."""
    length = getattr(result, "blksize", None) or size_value(options.get("length"))
    found = per_test_ceiling(
        speed_mbps,
        mtu,
        protocol,
        inner_mtu if isinstance(inner_mtu, int) else None,
        length=int(length) if length and protocol == "udp" else None,
        mss=getattr(result, "tcp_mss", None),
    )
    if found is not None and options.get("bidir"):  # full duplex: each direction has it all
        return Ceiling(2 * found.mbps, f"{found.basis}, both directions (bidir)")
    return found
