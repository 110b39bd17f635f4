"""What a container test will run: both containers' ``docker run``, then each repeat's
``docker exec`` in the client container (no host is contacted; netrun.run.preview)."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from netrun.tools import docker as dk
from netrun.tools.iperf2 import parse as iperf2
from netrun.tools.iperf3 import command as iperf3
from netrun.tools.iperf3.run import BASE_PORT
from netrun.tools.netperf import tool as netperf

if TYPE_CHECKING:
    from netrun.tools.base import Placement

#: The server address of a container test: the server container's, known once it runs.
CONTAINER_IP = "<server container IP>"


def commands(mode: Placement) -> list[tuple[str, str]] | None:
    """(role, command line) of each host's part; None for a mode that starts no containers
    the usual way (the caller then says it is built when the test starts)."""
    app_argv = getattr(mode, "app_argv", None)
    names = getattr(mode, "names", None)
    if app_argv is None or names is None:
        return None
    docker = str(mode.value("docker", mode.client))
    test = mode.test
    if test.tool == "iperf2":
        argv = iperf2.client_command(
            CONTAINER_IP,
            length=int(test.value("length")),
            bitrate=test.value("bitrate"),
            duration=float(test.duration),
            port=int(mode.value("port")),
        )
    elif test.tool == "netperf":
        argv = netperf.client_argv(mode, CONTAINER_IP, int(mode.value("port")), "netperf")
    else:
        # the container's iperf3 on its default port, as the mode runs it
        argv = iperf3.test_client_argv(test, CONTAINER_IP, BASE_PORT, program="iperf3")
    return [
        ("server", shlex.join(app_argv("server", mode.server))),
        ("client", shlex.join(app_argv("client", mode.client))),
        ("client, each repeat", shlex.join(dk.exec_command(names["client"], argv, docker))),
    ]
