"""What a TURN test will run: iperf2's server as on bare metal, its client sending into
netrun's tunnel on its own host (no host is contacted; netrun.run.preview)."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from netrun.tools.iperf2 import parse as iperf2
from netrun.tools.iperf2 import run as iperf2_run

if TYPE_CHECKING:
    from netrun.tools.base import Placement


def commands(mode: Placement) -> list[tuple[str, str]]:
    """(role, command line) of the server's and the client's part."""
    test, server, client = mode.test, mode.server, mode.client
    port = int(mode.value("port"))
    srv = [iperf2_run.binary(server), *iperf2.server_command(port, server.data_ip)[1:]]
    cli = iperf2.client_command(
        "127.0.0.1",
        length=int(test.value("length")),
        bitrate=test.value("bitrate"),
        duration=float(test.duration),
        port=None,
    )
    cli[0] = iperf2_run.binary(client)
    relay = getattr(mode, "hosts", {})["relay"]
    via = (
        f"  (-p: the port of netrun's TURN tunnel on {client.name}, through relay {relay.name}"
        f" {relay.data_ip}:{mode.value('turn_port')} over {mode.value('turn_transport')})"
    )
    return [("server", shlex.join(srv)), ("client", shlex.join(cli) + via)]
