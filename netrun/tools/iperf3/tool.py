"""iperf3 as a tool a test picks: its options, its metrics and one measurement.

The command and the parser live in tools/iperf3/command.py and parse.py; where the two ends run is
the mode's business, so ``measure`` runs through the ends it placed: on the hosts with the
round-trip savers the mode allows (onhost.py: bare metal), or through the ends alone (placed.py:
kubernetes), or against the server its end keeps for the whole test, the client run by the
mode each repeat (resident.py: the container modes); then it turns the parsed result into
the declared metrics.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from netrun.core.measurement import Measurement
from netrun.core.metrics import SCHEMA1_METRICS, Metric
from netrun.core.numeric import jain
from netrun.core.options import (
    Option,
    integer,
    matching,
    max_loss_option,
    number,
    seconds,
    show,
    size,
    size_value,
)
from netrun.hosts import cpustat
from netrun.results.flags import offered_bps
from netrun.tools.base import Tool
from netrun.tools.fan import AGGREGATE, Fan
from netrun.tools.iperf3 import ahead, loss, onhost, placed, resident, tcpinfo
from netrun.tools.iperf3 import command as iperf3_command
from netrun.tools.iperf3 import flows as iperf3_flows
from netrun.tools.iperf3 import measure as iperf3_measure
from netrun.tools.iperf3 import options as iperf3_options
from netrun.tools.savers.model import Saver

if TYPE_CHECKING:
    from netrun.core.spec import TestSpec
    from netrun.tools.base import Placement
    from netrun.tools.iperf3.result import Iperf3Result

# fmt: off
OPTIONS: tuple[Option, ...] = (
    Option("duration", (int, float), 10, "seconds of traffic per run (iperf3 -t)",
           check=seconds(1, 86400)),
    Option("protocol", str, "tcp", "tcp or udp (iperf3 -u)", choices=("tcp", "udp")),
    Option("streams", int, 1, "parallel streams (iperf3 -P)", check=integer(1, 128)),
    Option("reverse", bool, False, "the server sends and the client receives (iperf3 -R)"),
    Option("bidir", bool, False, "both send at once (iperf3 --bidir, 3.7+): Mbit/s is the "
           "sum of both directions, against twice one direction's ceiling"),
    Option("omit", (int, float), 0, "warm-up seconds left out of the result (iperf3 -O)",
           check=seconds(0, iperf3_options.MAX_OMIT)),
    Option("bitrate", (int, str), None, "target rate per stream, e.g. 800K or 1G (iperf3 -b; "
           "streams: 4 offers 4 times it)",
           check=size(0, "1000T"), nullable=True),
    Option("length", (int, str), None, "buffer or datagram length, e.g. 1400 (iperf3 -l)",
           check=size(1, "1M"), nullable=True),
    Option("port", int, None, "server port (iperf3 -p); null: the first free one from 5201",
           check=integer(1, 65535), nullable=True, from_inventory=True),
    Option("connect_timeout", (int, float), 5, "seconds to wait for the server to answer",
           check=number(0, strict=True, maximum=3600)),
    Option("window", (int, str), None, "socket buffer size (iperf3 -w)",
           check=size(1, "512M"), nullable=True),
    Option("busy_retries", int, 3, "retries when the server's port is busy with another iperf3",
           check=integer(0, 20)),
    Option("busy_backoff", (int, float), 0.5, "seconds before the first busy retry; doubles "
           "after each (at most 60 s a wait)", check=number(0, strict=False, maximum=60)),
    Option("tolerance", str, "5%", "throughput drop against the baseline that counts as a "
           "regression", check=matching(r"[0-9]{1,3}(\.[0-9]+)?%", "a percentage such as 5%")),
    Option("loss_tolerance", (int, float), None, "allowed rise in UDP loss, percentage points",
           check=number(0, strict=False), nullable=True),
    max_loss_option("iperf3"),
    Option("jitter_tolerance", (int, float), None, "allowed rise in UDP jitter, ms",
           check=number(0, strict=False), nullable=True),
    Option("retransmits_tolerance", int, None, "allowed rise in TCP retransmits",
           check=integer(0), nullable=True),
    Option("congestion", str, None, "TCP congestion control, e.g. bbr or cubic (iperf3 -C)",
           check=matching(r"[a-z0-9_]{1,16}", "a congestion control name such as bbr"),
           nullable=True),
    Option("zerocopy", bool, False, "send without copying (iperf3 -Z)"),
    Option("affinity", (int, str), None, "CPU affinity: n, or client,server CPUs such as 0,1 "
           "(iperf3 -A)", check=iperf3_options.check_affinity, nullable=True),
    Option("dscp", (int, str), None, "DSCP of the data packets: 0..63 or a name such as ef "
           "(iperf3 --dscp)", check=iperf3_options.check_dscp, nullable=True),
    Option("mss", int, None, "TCP maximum segment size (iperf3 -M)", check=integer(88, 9216),
           nullable=True),
    Option("no_delay", bool, False, "TCP_NODELAY: no Nagle (iperf3 -N)"),
    Option("fq_rate", (int, str), None, "fair-queue pacing rate per stream, e.g. 100M "
           "(iperf3 --fq-rate)", check=size(1, "1000T"), nullable=True),
    Option("skip_rx_copy", bool, False, "receive without copying the data (iperf3 "
           "--skip-rx-copy, 3.19+)"),
    Option("ipv6", bool, False, "IPv6 only (iperf3 -6): the data addresses "
           "(netrun_data_ip) are IPv6 ones"),
    Option("extra_args", list, None, "more iperf3 client arguments, each a list item "
           "(e.g. [-C, bbr]); not an option netrun sets itself (-P, -R, -t, ...)",
           check=iperf3_options.check_extra_args, nullable=True),
)
# fmt: on

#: Default tolerances of the metrics schema 1 declared without one, absolute: loss in
#: percentage points, jitter in ms, and retransmits in segments (a relative limit cannot
#: judge a baseline of 0, the usual one, and calls 3 -> 40 a regression: a healthy link's
#: noise; 1000 more is not noise). None for the sender's rate: for TCP it restates the
#: headline (a breach of its own would bypass the headline's confidence-interval and noise
#: rules), and a UDP sender that fell short earns the sender-below-target flag. None for CPU
#: use: it is the whole host's (anything else it runs counts) and 90% already earns the
#: cpu-bound flag. A scenario judges either with
#: ``tolerances: {sender_bps: 5%, cpu_client_pct: 20}``.
TOLERANCES: dict[str, str | float] = {
    "retransmits": 1000,
    "jitter_ms": 1.0,
    "lost_percent": 1.0,
}
# fmt: off
METRICS: tuple[Metric, ...] = (
    *(replace(m, tolerance=TOLERANCES.get(m.name, m.tolerance)) for m in SCHEMA1_METRICS),
    # what the test asked for, and the receiver's share of it: no default tolerance (the
    # first is an input; the second restates the loss and the sender's flag)
    Metric("offered_bps", "bit/s", "higher", "the rate the test asked for: bitrate x streams "
           "(UDP: iperf3's 1M default)", scale=1e6, shown_unit="Mbit/s", digits=1),
    Metric("received_pct", "%", "higher", "received / offered: the receiver's rate as a "
           "share of the offered one", digits=1),
    Metric("fairness_jain", "", "higher", "Jain's fairness index of the streams' receiver "
           "rates (-P N, TCP): 1 when each got the same, 1/N when one took all",
           tolerance=0.05, digits=3),
    *cpustat.CPU_METRICS,
    *tcpinfo.TCP_METRICS,
)
# fmt: on

#: Schema 1's per-metric tolerance options, still accepted: option -> metric.
TOLERANCE_OPTIONS = {
    "tolerance": "throughput_bps",
    "loss_tolerance": "lost_percent",
    "jitter_tolerance": "jitter_ms",
    "retransmits_tolerance": "retransmits",
}


def values(r: Iperf3Result, offered: float | None = None) -> dict[str, float | None]:
    """The declared metrics of one parsed run; ``offered``: the rate the test asked for."""
    return {
        "offered_bps": offered,
        "received_pct": (
            100 * r.receiver_bps / offered if offered and r.receiver_bps is not None else None
        ),
        "throughput_bps": r.receiver_bps,
        "sender_bps": r.sender_bps,
        "retransmits": r.retransmits,
        "cpu_client_pct": r.cpu_client_pct,
        "cpu_server_pct": r.cpu_server_pct,
        "jitter_ms": r.jitter_ms,
        "lost_percent": r.lost_percent,
        "fairness_jain": jain(list(r.stream_bps)) if r.stream_bps else None,
        **{name: r.tcp_info.get(name) for name in tcpinfo.NAMES},
    }


def unavailable(r: Iperf3Result, offered: float | None = None) -> dict[str, str]:
    """Why each metric iperf3 did not report is null: each its own reason (received_pct
    of a UDP test with no receiver figure is missing for that figure's reason, not for
    a bitrate it had)."""
    out = dict(r.unavailable)  # what this iperf3 version does not report (its reason)
    if offered is None:
        no_rate = (
            "no bitrate: an unlimited TCP test offers whatever the path takes"
            if r.protocol == "tcp"
            else "the bitrate is not one netrun reads as bits/s"
        )
        out.update(offered_bps=no_rate, received_pct=no_rate)
    elif r.receiver_bps is None:
        why = r.unavailable.get("throughput_bps") or "iperf3 reported no receiver figure"
        out["received_pct"] = f"no receiver figure: {why}"
    if not r.stream_bps:
        out["fairness_jain"] = (
            "one stream: nothing to share" if r.streams < 2
            else "per-stream receiver rates are TCP's only" if r.protocol != "tcp"
            else "this iperf3 did not report each stream's receiver rate"
        )  # fmt: skip
    if r.protocol == "udp":
        out["retransmits"] = "not applicable to udp"
    else:
        out.update(jitter_ms="not applicable to tcp", lost_percent="not applicable to tcp")
    return {k: v for k, v in out.items() if values(r, offered).get(k) is None}


def moved(r: Iperf3Result) -> dict[str, int]:
    """What one run moved (Tool.moved): its sender -> the bytes its receiver got; none
    where iperf3 reported no receiver figure."""
    return {} if r.bytes_received is None else {r.sender: r.bytes_received}


#: What iperf3 reads on the socket it made (getsockopt TCP_INFO: its TCP internals and
#: retransmits), not on the data.
SOCKET_FIGURES = ("retransmits", *tcpinfo.NAMES)


def idle_socket(m: Measurement) -> None:
    """Where the mode says the socket a tool makes idles while another carries its data
    (``details.idle_socket``, its reason: FreeFlow's overlay socket beside its router's
    host socket), what iperf3 read on it is unavailable with that reason; and where the
    data left that socket's path (``details.accelerated``), the MSS it read is that idle
    socket's, not the one the goodput ceiling takes (null: full-size packets at the
    host's MTU)."""
    why = m.details.pop("idle_socket", None)
    if not why:
        return
    m.details["unavailable"] = {
        **dict.fromkeys(SOCKET_FIGURES, str(why)),
        **(m.details.get("unavailable") or {}),
    }
    if m.details.get("accelerated"):
        m.result = replace(m.result, tcp_mss=None)


def measure(mode: Placement, repeat: int) -> Measurement:
    """One repeat, through the mode's ends: against the server its end keeps (End.resident:
    netrun.tools.iperf3.resident), or with the round-trip savers the mode allows (its ends
    are its hosts: netrun.tools.iperf3.onhost), or alone (netrun.tools.iperf3.placed),
    the mode's proof around it; the metrics come from the parsed result."""
    if mode.end("server").resident:  # the server its end keeps (a container's PID 1)
        mode.repeat = repeat
        m = mode.proving(lambda: resident.measure(mode, repeat))
    elif mode.savers.allows(Saver.ARMED_CLIENT):
        m = onhost.measure(mode, repeat)
    else:  # with the mode's proof around it (Placement.proving)
        m = mode.proving(lambda: placed.measure(mode, repeat))
    idle_socket(m)
    if m.result.bidir_bps:  # the sum's two halves, receiver rates in bit/s
        forward, back = m.result.bidir_bps
        m.details["bidir_bps"] = {"client_to_server": forward, "server_to_client": back}
    r: Iperf3Result = m.result
    test = mode.test
    offered = offered_bps({"options": test.options, "protocol": r.protocol})
    m.metrics = values(r, offered)
    m.unavailable = {**unavailable(r, offered), **m.unavailable}
    m.details["intervals_of"] = r.intervals_of
    if r.tcp_info_of:  # whose kernel the TCP internals are (tcpinfo: the sender's)
        m.details["tcp_info_of"] = r.tcp_info_of
    if r.stream_bps:  # each stream's share, kept beside the fairness index
        m.details["stream_bps"] = list(r.stream_bps)
    ends = m.details.get("counters")
    cpu, why, shared = cpustat.metrics_of(ends if isinstance(ends, dict) else {},
                                          r.bytes_received or r.bytes_sent)  # fmt: skip
    m.metrics.update(cpu)
    m.unavailable = {**why, **m.unavailable}
    if shared:  # the lab's namespaces: one kernel, its cores seen from both ends
        m.details["cpu_shared_kernel"] = True
    # what the mode knows iperf3 could not (FreeFlow: the overlay socket's TCP_INFO) is
    # null, with the mode's reason, whatever the JSON said
    for name in m.details.get("unavailable") or {}:
        if name in m.metrics:
            m.metrics[name] = None
    if all(m.metrics.get(name) is None for name in tcpinfo.NAMES):
        m.details.pop("tcp_info_of", None)
    if r.protocol == "udp" and isinstance(ends, dict) and not r.bidir_bps:
        receiver = "client" if r.reverse else "server"
        sender = "server" if r.reverse else "client"
        m.details["loss"] = loss.attribute(
            offered_bps=offered,
            sender_bps=r.sender_bps,
            lost=r.lost_packets,
            sender=ends.get(sender),
            receiver=ends.get(receiver),
        )
    return m


#: iperf3's own bounds on a UDP datagram (-l with -u; src/iperf.h MIN_UDP_BLOCKSIZE and
#: MAX_UDP_BLOCKSIZE): two 32-bit counters and a 64-bit one, and 65535 less the IP and UDP
#: headers. Outside them iperf3 exits with its usage text once the run has started.
MIN_UDP_LENGTH = 16
MAX_UDP_LENGTH = 65535 - 20 - 8


def check(options: Mapping[str, Any]) -> list[str]:
    """What iperf3 refuses between options: a UDP datagram (``length`` with protocol udp)
    outside 16..65507 bytes (TCP's -l limit, 1M, is the option's own check)."""
    length = options.get("length")
    if options.get("protocol") != "udp" or length is None:
        return []
    n = size_value(length)
    if n is None or MIN_UDP_LENGTH <= n <= MAX_UDP_LENGTH:
        return []
    return [
        f"length must be {MIN_UDP_LENGTH}..{MAX_UDP_LENGTH} bytes with protocol: udp (iperf3's"
        f" UDP datagram limits; 65507 is 65535 less the IP and UDP headers), got {show(length)}"
    ]


def describe(test: TestSpec) -> str:
    return f"running {test.duration:g}s"


def fan_sum(found: Sequence[Measurement], options: Mapping[str, Any]) -> Measurement:
    """A fan test's flows as one sample: the summed run's metrics (offered: each flow's
    rate times the flows), the aggregate, and the flows' fairness in place of the streams'."""
    runs: list[Iperf3Result] = [m.result for m in found]
    total = iperf3_flows.combine(runs)
    offered = offered_bps({"options": options, "protocol": total.protocol})
    asked = offered * len(runs) if offered else None
    metrics = values(total, asked)
    metrics["fairness_jain"] = iperf3_flows.fairness(runs)
    metrics[AGGREGATE.name] = total.receiver_bps
    why = {k: v for k, v in unavailable(total, asked).items() if metrics.get(k) is None}
    return Measurement("", total, {"intervals_of": total.intervals_of}, metrics, why)


TOOL = Tool(
    name="iperf3",
    installs=(iperf3_command.PROGRAM,),
    live_nic=True,
    options=OPTIONS,
    metrics=METRICS,
    measure=measure,
    describe=describe,
    protocol="tcp",
    raw_suffix=".json",  # iperf3 -J
    check=check,
    refuse=iperf3_options.refuse,
    fan=Fan(metrics=(AGGREGATE,), record=iperf3_flows.record, combine=fan_sum),
    preview=iperf3_measure.preview,
    stop=iperf3_measure.stop,
    server_ahead=ahead.server_ahead,
    moved=moved,
    resident_client=resident.client,
    resident_port=resident.PORT,
    resident=resident.server,
    resident_ready=resident.LISTENING,
    resident_served=resident.LISTENING,
    client_only=resident.CLIENT_ONLY,
    releases=iperf3_options.releases_needed,
    flow_defaults={"omit": iperf3_flows.FAN_OMIT_S},
)
