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
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from netrun.core.options import size_value

ETHERNET_OVERHEAD = 38
#: What a shaping qdisc counts of a frame besides its IP packet: the 14-byte Ethernet
#: header of the kernel's packet (skb->len), not the preamble, FCS or gap the wire adds.
QDISC_OVERHEAD = 14
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
    #: Mbit/s of goodput a test of its duration may read above ``mbps``: a token bucket's
    #: burst (tbf) lets burst bytes through at once, so over T seconds up to burst / T more.
    slack_mbps: float = 0.0


def _frames(payload_bytes: int, mtu: int) -> int:
    """IPv4 packets a UDP datagram of this payload needs (fragments when it exceeds the MTU)."""
    return max(1, math.ceil((payload_bytes + UDP_HEADER) / (mtu - IPV4_HEADER)))


@dataclass(frozen=True)
class Shaper:
    """A rate-limiting root qdisc on a sending end's data NIC: what it lets through."""

    kind: str  # tbf, cake, htb
    mbps: float
    #: where it sits, e.g. "bravo's data0 egress (the sender)"
    where: str
    #: tbf's bucket (tc's ``burst 262095b``): bytes it lets through above the rate at once
    burst_bytes: int | None = None

    def text(self) -> str:
        return f"{self.kind} root rate {self.mbps:g} Mbit/s on {self.where}"


_RATE = re.compile(r"^([0-9]+(?:\.[0-9]+)?)([KMGT]?)(bit|bps)$", re.I)
_SIZE = re.compile(r"^([0-9]+(?:\.[0-9]+)?)([KMG]?)b$")
_ROOT = re.compile(r"^(tbf|cake|htb) root\b(.*)$")


def tc_rate_mbps(text: str) -> float | None:
    """Mbit/s of a rate as tc prints it: ``393760Kbit``, ``400Mbit``, ``1Gbit`` (powers of
    1000), ``50Mbps`` (bytes/s); None for anything else (cake's ``unlimited``)."""
    found = _RATE.match(text.strip())
    if not found:
        return None
    value = float(found[1]) * 1000 ** " KMGT".index(found[2].upper() or " ") / 1e6
    return value * 8 if found[3].lower() == "bps" else value


def tc_size_bytes(text: str) -> int | None:
    """Bytes of a size as tc prints it: ``262095b``, ``256Kb``, ``1Mb`` (powers of 1024)."""
    found = _SIZE.match(text.strip())
    if not found:
        return None
    return round(float(found[1]) * 1024 ** " KMG".index(found[2] or " "))


def shaper_of(qdisc: str | None, classes: str | None, where: str) -> Shaper | None:
    """The rate-limiting root qdisc in a host context's ``qdisc`` (netrun.tools.context:
    "tbf root rate 393760Kbit burst 262095b lat 20ms | ..."): tbf's ``rate``, cake's
    ``bandwidth``, or htb's highest root class ``ceil`` (``classes``: ``tc class show``);
    None when the root does not limit the rate (noqueue, mq, fq_codel, pfifo_fast...)."""
    root = next((p.strip() for p in (qdisc or "").split("|") if _ROOT.match(p.strip())), None)
    found = _ROOT.match(root) if root else None
    if found is None:
        return None
    kind, words = found[1], found[2].split()
    rates: list[float] = []
    if kind == "htb":
        for line in (classes or "").splitlines():
            parts = line.split()
            if parts[:2] == ["class", "htb"] and "root" in parts and "ceil" in parts[:-1]:
                rate = tc_rate_mbps(parts[parts.index("ceil") + 1])
                rates += [rate] if rate else []
        top = max(rates) if rates else None
    else:
        key = "bandwidth" if kind == "cake" else "rate"
        at = words.index(key) + 1 if key in words[:-1] else None
        top = tc_rate_mbps(words[at]) if at is not None else None
    burst = None
    if kind == "tbf" and "burst" in words[:-1]:
        burst = tc_size_bytes(words[words.index("burst") + 1])
    return Shaper(kind, top, where, burst) if top else None


def per_test_ceiling(
    speed_mbps: float | None,
    mtu: int | None,
    protocol: str,
    inner_mtu: int | None = None,
    *,
    length: int | None = None,
    mss: int | None = None,
    shaper: Shaper | None = None,
) -> Ceiling | None:
    """The ceiling of one test: UDP from its datagram ``length``, TCP from its ``mss``.

    Each datagram or segment costs its IPv4/UDP or IPv4/TCP(+timestamps) headers, the
    overlay's encapsulation (``mtu - inner_mtu``) and Ethernet's 38 bytes. Without the
    length or MSS it falls back to full-size packets. With a ``shaper`` (a rate-limiting
    qdisc) the rate is the qdisc's, and each frame costs what the qdisc counts of it
    (QDISC_OVERHEAD instead of the wire's 38 bytes).
    """
    rate = shaper.mbps if shaper else speed_mbps
    if not rate or not mtu or mtu <= TCP_OVERHEAD:
        return None
    frame = QDISC_OVERHEAD if shaper else ETHERNET_OVERHEAD
    encap = mtu - inner_mtu if inner_mtu and inner_mtu < mtu else 0
    path = mtu - encap
    link = shaper.text() if shaper else f"{rate:g} Mbit/s line"
    where = f"{link}, MTU {mtu}" + (f", overlay MTU {path}" if encap else "")
    if protocol == "udp" and length and length > 0:
        n = _frames(length, path)
        wire = length + UDP_HEADER + n * (IPV4_HEADER + encap + frame)
        return Ceiling(rate * length / wire, f"UDP datagram {length} B, {where}")
    if protocol == "tcp" and mss and 0 < mss <= path - TCP_NO_OPTIONS:
        # Linux's MSS (TCP_MAXSEG) already leaves room for the 12-byte timestamp option;
        # a peer without timestamps gets segments of path - 40 bytes
        headers = max(TCP_NO_OPTIONS, min(TCP_OVERHEAD, path - mss))
        wire = mss + headers + encap + frame
        return Ceiling(rate * mss / wire, f"TCP MSS {mss} B, {where}")
    payload = min(inner_mtu, mtu) if inner_mtu else mtu
    overhead = TCP_OVERHEAD if protocol == "tcp" else UDP_OVERHEAD
    if payload <= overhead:
        return None
    found = rate * (payload - overhead) / (mtu + frame)
    return Ceiling(found, f"{protocol.upper()} full-size packets, {where}")


def effective_ceiling(
    speed_mbps: float | None,
    mtu: int | None,
    protocol: str,
    inner_mtu: int | None,
    shaper: Shaper | None,
    *,
    length: int | None = None,
    mss: int | None = None,
    duration: float | None = None,
) -> Ceiling | None:
    """One direction's ceiling: the NIC's line rate or the sender's shaping qdisc,
    whichever allows less, its basis naming the evidence (the other one beside it). A
    test of ``duration`` seconds under a tbf also gets its burst's slack (burst_slack_mbps)."""
    line = per_test_ceiling(speed_mbps, mtu, protocol, inner_mtu, length=length, mss=mss)
    shaped = per_test_ceiling(
        speed_mbps, mtu, protocol, inner_mtu, length=length, mss=mss, shaper=shaper
    )
    if shaper is None or shaped is None:
        return line
    if line is None:
        return _with_burst(shaped, shaper, duration, f"{shaped.basis} (line rate unknown)", None)
    if shaped.mbps < line.mbps:
        basis = f"{shaped.basis}, below the {speed_mbps:g} Mbit/s line"
        return _with_burst(shaped, shaper, duration, basis, line.mbps)
    return Ceiling(line.mbps, f"{line.basis}, below the {shaper.text()}")


def burst_slack_mbps(shaper: Shaper, duration: float | None, share: float) -> float:
    """Goodput a test of ``duration`` seconds may read above a tbf's rate: its bucket's burst
    bytes pass at once, so any window of T seconds carries at most rate x T + burst; of
    that, ``share`` (the ceiling over the qdisc's rate) is payload. 0 when not known."""
    if not shaper.burst_bytes or not duration or duration <= 0:
        return 0.0
    return shaper.burst_bytes * 8 / duration / 1e6 * share


def _with_burst(
    shaped: Ceiling, shaper: Shaper, duration: float | None, basis: str, limit: float | None
) -> Ceiling:
    """The shaped ceiling with its burst's slack (never past the line's ``limit``) named."""
    slack = burst_slack_mbps(shaper, duration, shaped.mbps / shaper.mbps)
    if limit is not None:
        slack = max(0.0, min(slack, limit - shaped.mbps))
    if slack <= 0:
        return Ceiling(shaped.mbps, basis)
    said = (
        f"; its {shaper.burst_bytes} B burst lets a {duration:g} s test read up to "
        f"{slack:.1f} Mbit/s more"
    )
    return Ceiling(shaped.mbps, basis + said, slack)


def ceiling_of(
    options: Mapping[str, Any],
    result: Any,
    speed_mbps: float | None,
    mtu: int | None,
    inner_mtu: Any,
    protocol: str,
    shapers: Sequence[Shaper | None] = (),
) -> Ceiling | None:
    """A test's own ceiling from its options and what its tool reported (an iperf3
    result's ``blksize`` and ``tcp_mss``; a tool without them: the ``length`` option).

    ``shapers``: the rate-limiting qdisc on the egress of each sending end's data NIC, one
    per direction the data flows (the sender; bidir: the client's, then the server's),
    None where there is none or it was not read."""
    length = getattr(result, "blksize", None) or size_value(options.get("length"))
    size = int(length) if length and protocol == "udp" else None
    mss = getattr(result, "tcp_mss", None)
    inner = inner_mtu if isinstance(inner_mtu, int) else None
    ways = 2 if options.get("bidir") else 1
    given = [*shapers, None, None][:ways]
    duration = options.get("duration")
    seconds = float(duration) if isinstance(duration, int | float) else None
    found = [
        effective_ceiling(
            speed_mbps, mtu, protocol, inner, s, length=size, mss=mss, duration=seconds
        )
        for s in given
    ]
    if any(c is None for c in found):
        return None
    done = [c for c in found if c is not None]
    if ways == 1:
        return done[0]
    if done[0].basis == done[1].basis:  # full duplex: each direction has it all
        return Ceiling(
            2 * done[0].mbps, f"{done[0].basis}, both directions (bidir)", 2 * done[0].slack_mbps
        )
    return Ceiling(
        done[0].mbps + done[1].mbps,
        f"bidir: client to server {done[0].mbps:.1f} ({done[0].basis}) + server to client "
        f"{done[1].mbps:.1f} ({done[1].basis})",
        done[0].slack_mbps + done[1].slack_mbps,
    )
