"""iperf2 as a tool a test picks: latency, jitter and loss at a fixed packet rate.

The command and the parser live in tools/iperf2/parse.py, the processes on the hosts in
tools/iperf2/run.py. Both run at the placement's ends (netrun.tools.ends); the client's
leg is carried the mode's way (Placement.carry: on bare metal straight to the server end's
address, through ``mode: turn``'s relay there).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from netrun.core.measurement import Measurement
from netrun.core.options import Option, expecting, integer, max_loss_option, seconds
from netrun.core.programs import Program
from netrun.hosts import clock_reading
from netrun.tools.base import Latency, Tool
from netrun.tools.iperf2 import command as iperf2_command
from netrun.tools.iperf2 import flows as iperf2_flows
from netrun.tools.iperf2 import parse as iperf2
from netrun.tools.iperf2 import run as iperf2_run
from netrun.tools.load import spec as load_spec

if TYPE_CHECKING:
    from netrun.core.spec import TestSpec
    from netrun.tools.base import Placement

DEFAULT_PORT = 5001


def _bitrate_ok(value: Any) -> bool:
    try:
        iperf2_command.check_bitrate(value)
    except ValueError:
        return False
    return True


# fmt: off
OPTIONS: tuple[Option, ...] = (
    Option("duration", (int, float), 10, "seconds of traffic per run (iperf -t)",
           check=seconds(1, 86400)),
    Option("bitrate", (int, str), "1000pps", "rate: bits/s (800000, 8M) or packets/s "
           "(1000pps) (iperf -b)", check=expecting(
               "bits/s like 800000 or 8M, or packets/s like 1000pps", _bitrate_ok)),
    Option("length", int, 100, "UDP datagram bytes (iperf -l)", check=integer(16, 65507)),
    Option("port", int, DEFAULT_PORT, "the iperf2 server's UDP port (iperf -p)",
           check=integer(1, 65535), from_inventory=True),
    max_loss_option("iperf2"),
    load_spec.OPTION,  # latency under load (netrun.tools.load)
)
# fmt: on

#: What a leg of the test runs: the client to ``target:port``; the server's result.
Run = Callable[[str, int], tuple[iperf2.Iperf2Result, str]]


def clocks(mode: Placement) -> dict[str, Any]:
    """Each host's clock offset (read once per test, kept in the mode's details)."""
    found = mode.details.get("clock")
    if not isinstance(found, dict):
        hosts = {mode.client.name: mode.client, mode.server.name: mode.server}
        found = {name: clock_reading.read_host(host) for name, host in hosts.items()}
        mode.details["clock"] = found
    return found


def leg(mode: Placement, tag: str) -> Run:
    """A function running one iperf2 test whose client sends to a given address and port."""

    def run(target: str, port: int) -> tuple[iperf2.Iperf2Result, str]:
        server, client_end = mode.end("server"), mode.end("client")
        if server.resident:  # the end keeps iperf2's server for the test (Tool.resident)
            return iperf2_run.with_resident(mode, server, client_end, target, port, tag)
        server_port = int(mode.value("port"))
        srv = iperf2_run.start_server(mode, server, server_port, tag)
        client = iperf2_run.run_client(mode, client_end, target, port, tag)
        text = iperf2_run.stop_server(srv, float(mode.test.duration))
        return iperf2_run.result_of(mode, text, client, float(mode.test.duration))

    return run


def measure(mode: Placement, repeat: int) -> Measurement:
    """One repeat: the client's leg carried the mode's way (on bare metal to the server
    end's address, in containers to the server container's, through a relay its own)."""
    found = clocks(mode)
    run = leg(mode, f"{mode.test.tag}r{repeat}")  # a fan flow's own (its tag)
    carried = mode.carry(repeat, int(mode.value("port")), run)
    (result, raw), extra = carried.value, carried.details
    raw += carried.note
    metrics, details = iperf2_run.metrics_of(result)
    details = {**details, **extra, "clock": found}
    why = clock_reading.latency_verdict(
        metrics.get("latency_avg_ms"), found[mode.client.name], found[mode.server.name]
    )
    if why is not None and metrics.get("latency_avg_ms") is not None:
        details["latency_unreliable"] = why
    fixed = clock_reading.corrected_ms(
        metrics.get("latency_avg_ms"), found[mode.client.name], found[mode.server.name]
    )
    if fixed is not None:  # two clocks: the mean with their estimated offsets taken out
        details["latency_avg_corrected_ms"] = fixed
    unavailable = dict(result.unavailable)
    return Measurement(raw, result, details, metrics, unavailable)


def preview(mode: Placement) -> list[tuple[str, str]]:
    """Both ends' iperf2, through the placement's ends, the client dialling what the mode
    gives it (Placement.dialled: a relay mode's tunnel)."""
    port = int(mode.value("port"))
    server, client = mode.end("server"), mode.end("client")
    srv = [
        server.program("netrun_iperf2", "iperf"),
        *iperf2_command.server_command(port, server.bind)[1:],
    ]
    t = mode.test
    target, to, note = mode.dialled(port)
    cli = iperf2_command.client_command(
        target, length=int(t.value("length")), bitrate=t.value("bitrate"),
        duration=float(t.duration), port=to,
    )  # fmt: skip
    cli[0] = client.program("netrun_iperf2", "iperf")
    return [
        ("server", shlex.join(server.wrap(srv))),
        ("client", shlex.join(client.wrap(cli)) + note),
    ]


def stop(mode: Placement, tag: str) -> None:
    """Kill the client of measurement ``tag`` by its pid file (Tool.stop)."""
    iperf2_run.stop_client(mode.end("client"), tag)


def resident(port: int) -> list[str]:
    """iperf2's UDP server for a whole test (Tool.resident): ``iperf -s -u -e -i 1``, the
    report of each repeat's flow read from its output. It says it listens once, at start,
    and nothing once per test (Tool.resident_served: None)."""
    return iperf2_command.server_command(port)


#: Options that shape only each repeat's client (Tool.client_only).
CLIENT_ONLY = frozenset({"duration", "bitrate", "length"})


def describe(test: TestSpec) -> str:
    return f"sending {test.value('bitrate')} x {test.value('length')} B for {test.duration:g}s"


TOOL = Tool(
    name="iperf2",
    live_nic=True,
    options=OPTIONS,
    metrics=iperf2.METRICS,
    measure=measure,
    describe=describe,
    protocol="udp",
    needs={"server": ("iperf",), "client": ("iperf",)},
    installs=(Program("iperf", "netrun_iperf2", "iperf", "iperf", version_flag="-v"),),
    fan=iperf2_flows.FAN,
    preview=preview,
    stop=stop,
    resident=resident,
    resident_ready=iperf2_command.LISTENING,
    client_only=CLIENT_ONLY,
    # one-way mean/min/max only (its _idle and _loaded forms): the mean stands in
    latency=Latency(None, None, mean="latency_avg_ms"),
)
