"""iperf2 in the container modes: the server container's command, and one measurement.

The docker modes keep both containers for the whole test, running the tool's server as
PID 1 (the client container's idles). For ``tool: iperf2`` that is ``iperf -s -u -e -i 1``
(netrun.tools.iperf2.tool.resident);
each repeat is a ``docker exec`` of the client, and the server's report is read from the
server container's log: the part written since the repeat began, once it holds the flow's
whole-test line. The image must have ``iperf`` (the lab's image does; set ``image:``).
"""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING

from netrun.errors import Cancelled
from netrun.tools import docker as dk
from netrun.tools.iperf2 import parse as iperf2
from netrun.tools.iperf2 import run as iperf2_run

if TYPE_CHECKING:
    from netrun.hosts.command import CommandResult
    from netrun.modes.docker.base import ContainerMode

#: Seconds to wait for the server's whole-test report after the client ended.
REPORT_WAIT = 5.0
_FROM_ZERO = re.compile(r"^\[\s*\d+\]\s+0\.0+-[0-9.]+\s+sec\b", re.MULTILINE)


def _log(mode: ContainerMode) -> list[str]:
    """The server container's report lines so far (iperf2 reports on stdout; stderr is
    another stream, so joining the two would move the cut between repeats)."""
    host, name = mode.server, mode.names["server"]
    argv = dk.logs_command(name, mode.docker(host), tail=100_000)
    res = host.run(argv, timeout=60, check=False)
    return res.stdout.splitlines()


def measure(mode: ContainerMode, port: int) -> tuple[iperf2.Iperf2Result, str]:
    """One iperf2 run from the client container to the server container."""
    assert mode.server_ip is not None
    t = mode.test
    duration = float(t.duration)
    before = len(_log(mode))
    argv = iperf2.client_command(
        mode.server_ip, length=int(t.value("length")), bitrate=t.value("bitrate"),
        duration=duration, port=port,
    )  # fmt: skip
    cmd = dk.exec_command(mode.names["client"], argv, mode.docker(mode.client))
    client: CommandResult = mode.client.run(cmd, timeout=float(t.deadline), check=False)
    want = 1 if duration <= 1 else 2
    deadline = time.monotonic() + REPORT_WAIT
    text = "\n".join(_log(mode)[before:])
    while len(_FROM_ZERO.findall(text)) < want and time.monotonic() < deadline:
        if mode.ctx.stopping.wait(0.1):
            raise Cancelled(mode.server.name)
        text = "\n".join(_log(mode)[before:])
    return iperf2_run.result_of(mode, text, client, duration)
