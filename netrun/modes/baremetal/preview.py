"""What a bare-metal test will run on each host, built as the run builds it (no host is
contacted): ``--check-only`` and ``--list-tests`` show it (netrun.run.preview)."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

from netrun.tools.iperf2 import parse as iperf2
from netrun.tools.iperf2 import run as iperf2_run
from netrun.tools.iperf3 import command as iperf3
from netrun.tools.iperf3.run import BASE_PORT, PORT_SPAN
from netrun.tools.netperf import server as netserver
from netrun.tools.netperf import tool as netperf
from netrun.tools.ping import tool as ping

if TYPE_CHECKING:
    from netrun.tools.base import Placement


def port_note(port: Any, first: int) -> str:
    """What a null port becomes when the test starts."""
    return "" if port else f"  (port: the first free of {first}-{first + PORT_SPAN - 1})"


def commands(mode: Placement) -> list[tuple[str, str]]:
    """(role, command line) of each host's part of the test."""
    test, server, client = mode.test, mode.server, mode.client
    if test.tool == "ping":
        argv = ping.command(
            server.data_ip, test.value("count"), test.value("interval"), test.value("size")
        )
        return [("server", "(none: its kernel answers)"), ("client", shlex.join(argv))]
    if test.tool == "iperf2":
        port = int(mode.value("port"))
        srv = [iperf2_run.binary(server), *iperf2.server_command(port, server.data_ip)[1:]]
        cli = iperf2.client_command(
            server.data_ip,
            length=int(test.value("length")),
            bitrate=test.value("bitrate"),
            duration=float(test.duration),
            port=port,
        )
        cli[0] = iperf2_run.binary(client)
        return [("server", shlex.join(srv)), ("client", shlex.join(cli))]
    if test.tool == "netperf":
        port = int(mode.value("port"))
        srv = [netserver.netserver(server), "-D", "-L", server.data_ip, "-p", str(port)]
        cli = netperf.client_argv(mode, server.data_ip, port, netperf.netperf(client))
        count = int(test.value("instances"))
        times = f"  (x {count} at once)" if count > 1 else ""
        return [("server", shlex.join(srv)), ("client", shlex.join(cli) + times)]
    port = mode.value("port")
    srv = iperf3.server_command(server.data_ip, port or BASE_PORT, binary=iperf3.binary(server))
    cli = iperf3.test_client_argv(
        test, server.data_ip, port or BASE_PORT, program=iperf3.binary(client)
    )
    return [
        ("server", shlex.join(srv) + port_note(port, BASE_PORT)),
        ("client", shlex.join(cli)),
    ]
