"""The physical limit of a link: line rate and the goodput ceiling an MTU allows.

On Ethernet every frame costs 38 bytes the application never sees (preamble 8, header 14,
FCS 4, inter-frame gap 12). Inside the frame TCP loses 52 bytes to IPv4 (20), TCP (20) and
its timestamp option (12); UDP loses 28 (IPv4 20, UDP 8). At MTU 1500 on 1 GbE that gives
the 941 Mbit/s iperf3 reports on a healthy link.
"""

from __future__ import annotations

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
