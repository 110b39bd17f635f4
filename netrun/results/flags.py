"""Sanity flags: what makes a figure doubtful, computed from the saved sample alone.

A number in a table looks equally sure whether it beat the physics of the link, measured
loopback, or was limited by a CPU; a flag says which, with a one-line footnote. Flags are
computed from results.json (never only at run time), so ``netrun report`` and the history
give the same flags for any saved run, including runs saved before flags existed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from netrun.core.options import MAX_LOSS_DEFAULTS, SIZE_RE
from netrun.results.fanin import ends, pair_label

#: Every flag, in the order shown, with its footnote.
FLAGS: dict[str, str] = {
    "above-ceiling": "measured above the goodput ceiling the line rate and packet size allow: "
    "the link or its shaping is not what the inventory says (a tbf's burst over the test's "
    "duration is allowed: ceiling_slack_mbps)",
    "same-host": "server and client are one host: loopback, not a network result "
    "(allowed by allow_same_host: true)",
    "target-not-reached": "below 95% of the offered rate (UDP or bitrate-limited test)",
    "cpu-bound": "a side's tool used 90% CPU or more, or a core on either end was saturated "
    "(95% or more, whatever ran there): the figure may be the CPU's, not the network's",
    "stand-in": "measured through the lab's FreeFlow stand-in, which does not accelerate",
    "not-accelerated": "FreeFlow's bytes did not bypass the overlay",
    "unreliable-clock": "the hosts' clocks disagree: one-way latency cannot be trusted",
    # added later: at the end, so the numbers of the ones above stay what they were
    "sender-below-target": "the sender sent below 90% of the offered rate: the figure is "
    "not what the test asked for (its socket, CPU or a shaper's back-pressure held it)",
    "receiver-overrun": "the receiver could not keep up: its host counted the lost datagrams "
    "as UDP receive-buffer (or input) errors",
    "dropped-on-path": "the network or a queue dropped datagrams: a qdisc or NIC counted "
    "drops, or they were sent and neither received nor counted by the receiving host",
    "pmtu-mismatch": "the sender's kernel used another path MTU (iperf3's pmtu) than the MTU "
    "netrun set and checked, or the sending NIC's: a smaller hop (ICMP-learned) or a route's MTU",
    "loss-above-max": "lost more datagrams than the test's max_loss allows (default 1% for "
    "iperf3 and iperf2 UDP): a lossy or overrun path, not the rate the test asked for",
    "cpu-stolen": "the hypervisor took 5% or more of a host's CPU time during the test "
    "(steal in /proc/stat): the figure may have moved with another guest's load",
}
#: Flags that say the figure is not what the test asked for: above what the link allows,
#: loopback, or a sender that never offered the asked rate (sender-below-target, with the
#: UDP loss work). They show in the status column and JUnit, and ``--fail-on-flags`` makes
#: them a failing exit. Others (cpu-bound, target-not-reached: a lossy link is a result)
#: stay footnotes.
NOT_AS_ASKED = ("above-ceiling", "same-host", "sender-below-target", "loss-above-max")
#: The status of a passing test whose figure is not what it asked for (status_cell).
FLAGGED = "flagged"
FLAGGED_NOTE = " (status flagged; --fail-on-flags makes it a failure)"
#: iperf3's interval timing lets a healthy link read a hair above its ceiling.
CEILING_MARGIN = 0.005
TARGET_SHARE = 0.95
#: sender-below-target: the sender's rate under this share of the offered one (and
#: netrun.tools.iperf3.loss then names the sender as a place of loss).
SENDER_SHARE = 0.9
#: Where a UDP test lost datagrams (details.loss.places) -> its flag.
LOSS_FLAGS = {
    "receiver could not keep up": "receiver-overrun",
    "network or a queue dropped": "dropped-on-path",
}
CPU_BOUND_PCT = 90.0
#: cpu-stolen: this share (%) of a host's CPU time over a test went to other guests (a
#: busy neighbour on a shared VM host slowed a 941 Mbit/s lab link's sender by 6-10%).
STOLEN_PCT = 5.0
#: A core this busy over a test is saturated (netrun.hosts.cpustat's busiest_core_pct_*).
CORE_SATURATED_PCT = 95.0
UDP_DEFAULT_BPS = 1e6  # iperf3's -b default for UDP


def _details(sample: Mapping[str, Any]) -> Mapping[str, Any]:
    details = sample.get("details")
    return details if isinstance(details, Mapping) else {}


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def rate_value(value: Any) -> float | None:
    """bit/s of an iperf -b rate: its K/M/G are powers of 1000 (unit_atof_rate), unlike
    the powers of 1024 of a length or a window."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    match = SIZE_RE.fullmatch(value) if isinstance(value, str) else None
    if not match:
        return None
    return float(match[1]) * 1000 ** " KMGT".index(match[2].upper() or " ")


def offered_bps(sample: Mapping[str, Any]) -> float | None:
    """The rate a test asked for: iperf3's -b per stream times the streams, both ways for
    bidir (UDP: 1M default).

    None for an unlimited TCP test, or a rate netrun cannot read (iperf2's ``1000pps``).
    """
    options = sample.get("options")
    options = options if isinstance(options, Mapping) else {}
    bitrate = options.get("bitrate")
    if bitrate in (None, "", 0, "0"):
        per_stream = UDP_DEFAULT_BPS if sample.get("protocol") == "udp" else None
    else:
        per_stream = rate_value(bitrate)
    if per_stream is None or per_stream <= 0:
        return None
    streams = _number(options.get("streams")) or 1
    return float(per_stream) * streams * (2 if options.get("bidir") else 1)


def same_host(sample: Mapping[str, Any]) -> bool:
    """True when the server and the client are one host (the data never left it)."""
    return sample.get("server") is not None and sample.get("server") == sample.get("client")


def same_host_problem(roles: Mapping[str, str], options: Mapping[str, Any]) -> str | None:
    """Why a scenario test is refused when its server and client are one host, or None."""
    host = roles.get("server")
    if host is None or host != roles.get("client") or options.get("allow_same_host"):
        return None
    return (
        f"server and client are both host {host!r}: that measures loopback, not the network; "
        "name two hosts, or set allow_same_host: true to measure loopback on purpose"
    )


def of_sample(sample: Mapping[str, Any]) -> list[str]:
    """The flags one sample earns (a failed sample earns none: it has no figure)."""
    details = _details(sample)
    found: set[str] = set()
    if same_host(sample):
        found.add("same-host")
    if details.get("standin") or details.get("stand_in"):
        found.add("stand-in")
    if details.get("accelerated") is False:
        found.add("not-accelerated")
    if details.get("latency_unreliable"):
        found.add("unreliable-clock")
    if sample.get("status") == "ok":
        bps = _number(sample.get("throughput_bps"))
        ceiling = _number(sample.get("goodput_ceiling_mbps"))
        slack = _number(sample.get("ceiling_slack_mbps")) or 0.0  # a tbf's burst
        if bps is not None and ceiling and bps / 1e6 > ceiling * (1 + CEILING_MARGIN) + slack:
            found.add("above-ceiling")
        offered = offered_bps(sample)
        if bps is not None and offered and bps < TARGET_SHARE * offered:
            found.add("target-not-reached")
        sent = _number(sample.get("sender_bps"))
        if sent is not None and offered and sent < SENDER_SHARE * offered:
            found.add("sender-below-target")
        found.update(LOSS_FLAGS[p] for p in loss_places(sample) if p in LOSS_FLAGS)
        lost, most = _number(sample.get("lost_percent")), max_loss(sample)
        if lost is not None and most is not None and lost > most:
            found.add("loss-above-max")
        cpus = [_number(sample.get(k)) for k in ("cpu_client_pct", "cpu_server_pct")]
        measured = sample.get("metrics")
        figures = measured if isinstance(measured, Mapping) else {}
        cores = [_number(figures.get(f"busiest_core_pct_{end}")) for end in ("client", "server")]
        if any(c is not None and c >= CPU_BOUND_PCT for c in cpus) or any(
            c is not None and c >= CORE_SATURATED_PCT for c in cores
        ):
            found.add("cpu-bound")
        if any(pct >= STOLEN_PCT for pct in stolen_pcts(sample).values()):
            found.add("cpu-stolen")
        pmtu, want = _number(figures.get("pmtu_bytes")), expected_mtu(sample)
        if pmtu is not None and want is not None and pmtu != want:
            found.add("pmtu-mismatch")
    return [name for name in FLAGS if name in found]


def stolen_pcts(sample: Mapping[str, Any]) -> dict[str, float]:
    """Each end's share (%) of its host's CPU time the hypervisor took over the test
    (netrun.hosts.cpustat.Usage.steal_pct), where its counters were read."""
    found = _details(sample).get("counters")
    out = {}
    for end, entry in found.items() if isinstance(found, Mapping) else ():
        cpu = entry.get("cpu") if isinstance(entry, Mapping) else None
        pct = _number(cpu.get("steal_pct")) if isinstance(cpu, Mapping) else None
        if pct is not None:
            out[str(end)] = pct
    return out


def max_loss(sample: Mapping[str, Any]) -> float | None:
    """The most UDP loss (%) the test allows: its ``max_loss`` option, else (a run saved
    before the option existed) its tool's default; None: no limit."""
    options = sample.get("options")
    options = options if isinstance(options, Mapping) else {}
    if "max_loss" in options:
        return _number(options["max_loss"])
    return MAX_LOSS_DEFAULTS.get(str(sample.get("tool") or "iperf3"))


def expected_mtu(sample: Mapping[str, Any]) -> float | None:
    """The MTU the sending socket should see: the one netrun set and checked for the test
    (details.mtu: the sender's container's, else the hosts'), else a bare-metal sender's
    NIC's; None where netrun knows neither (a container's interface it did not set)."""
    options = sample.get("options")
    reverse = isinstance(options, Mapping) and bool(options.get("reverse"))
    sender = "server" if reverse else "client"
    plan = _details(sample).get("mtu")
    if isinstance(plan, Mapping):
        containers = plan.get("container")
        if isinstance(containers, Mapping) and sender in containers:
            return _number(containers[sender])
        return _number(plan.get("underlay"))
    nic = sample.get("nic")
    side = nic.get(sender) if isinstance(nic, Mapping) else None
    if sample.get("mode") == "baremetal" and isinstance(side, Mapping):
        return _number(side.get("mtu"))
    return None


def loss_places(sample: Mapping[str, Any]) -> list[str]:
    """Where the sample's UDP datagrams were lost (details.loss, netrun.tools.iperf3.loss)."""
    found = _details(sample).get("loss")
    places = found.get("places") if isinstance(found, Mapping) else None
    return [p for p in places if isinstance(p, str)] if isinstance(places, list) else []


def loss_notes(samples: Iterable[Mapping[str, Any]]) -> list[str]:
    """One line per UDP sample that fell short: where, and the counters that say so."""
    lines = []
    for sample in samples:
        found = _details(sample).get("loss")
        if not isinstance(found, Mapping) or not found.get("places"):
            continue
        repeat = sample.get("repeat")
        which = f"{sample.get('name')}" + (f" #{repeat}" if repeat not in (None, 1) else "")
        places = ", ".join(loss_places(sample))
        why = found.get("why")
        lines.append(f"loss {which}: {places}" + (f" ({why})" if isinstance(why, str) else ""))
    return lines


def of_test(samples: Iterable[Mapping[str, Any]]) -> list[str]:
    """A test's flags: every flag any of its samples earned, in FLAGS order."""
    found = {flag for sample in samples for flag in of_sample(sample)}
    return [name for name in FLAGS if name in found]


def not_as_asked(names: Iterable[str]) -> list[str]:
    """Of a test's flags, the ones that make its figure not what it asked for."""
    found = set(names)
    return [name for name in FLAGS if name in found and name in NOT_AS_ASKED]


def status_cell(status: str, names: Iterable[str]) -> str:
    """The status column: an ok test whose figure is not what it asked for is "flagged"
    (the column stays narrow: the flags column, CSV and JSON name the flags, and the
    notes give one "test NAME: flagged FLAG" line each, flagged_lines)."""
    return FLAGGED if status == "ok" and not_as_asked(names) else status


def flagged_lines(samples_by_test: Mapping[str, Iterable[Mapping[str, Any]]]) -> list[str]:
    """One line per passing test with a NOT_AS_ASKED flag, for cron mail and --fail-on-flags."""
    out = []
    for name, samples in samples_by_test.items():
        group = list(samples)
        if any(s.get("status") != "ok" for s in group):
            continue  # failed already: its error says more
        for flag in not_as_asked(of_test(group)):
            out.append(f"test {name}: flagged {flag}: {FLAGS[flag]}")
    return out


def flagged_note(name: str, samples: Iterable[Mapping[str, Any]]) -> str | None:
    """The line under a table naming why a passing test's status is flagged, with the
    loss against its max_loss when that is one of the reasons; None when it is not."""
    group = list(samples)
    wrong = not_as_asked(of_test(group))
    if not wrong or any(s.get("status") != "ok" for s in group):
        return None
    said = []
    for flag in wrong:
        if flag == "loss-above-max":
            lost = [v for s in group if (v := _number(s.get("lost_percent"))) is not None]
            most = max_loss(group[0])
            flag += f" (lost up to {max(lost):.2f}%, max_loss {most:g}%)" if lost and most else ""
        said.append(flag)
    return f"{name}: status flagged: {', '.join(said)}"


def marker(names: Iterable[str]) -> str:
    """A table cell: each flag's fixed number (its place in FLAGS), so the cell stays
    narrow and the same flag has the same number in every report; "-" for none."""
    order = list(FLAGS)
    return ",".join(str(order.index(n) + 1) for n in names if n in FLAGS) or "-"


def footnotes(flags: Iterable[str]) -> list[str]:
    """One line per flag used, for under a table: its number, name and meaning."""
    used = set(flags)
    return [
        f"flag {i} {name}: {text}" + (FLAGGED_NOTE if name in NOT_AS_ASKED else "")
        for i, (name, text) in enumerate(FLAGS.items(), start=1)
        if name in used
    ]


def direction(sample: Mapping[str, Any]) -> str:
    """Where the data flowed, sender -> receiver: a reverse (-R) test's server sends, and a
    bidirectional one sends both ways; one host is loopback."""
    client, server = ends(sample)  # a fan-in's every client, a fan-out's every server
    options = sample.get("options")
    options = options if isinstance(options, Mapping) else {}
    if "," in client and "," in server:  # flows sharing no end: each flow by name
        return pair_label(sample)
    if same_host(sample):
        return f"{client} (loopback)"
    if options.get("bidir"):
        return f"{client}⇄{server}"
    if options.get("reverse"):
        return f"{server}→{client}"
    return f"{client}→{server}"


def pct_of_ceiling(sample_mbps: float | None, ceiling_mbps: float | None) -> float | None:
    """The figure as a share of what the link allows, in %."""
    if sample_mbps is None or not ceiling_mbps:
        return None
    return 100 * sample_mbps / ceiling_mbps
