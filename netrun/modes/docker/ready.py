"""A container end's readiness: until its PID 1, the tool's server, listens.

The launch's own round trip waits up to 2 s on the host (netrun.modes.docker.launch);
a container still starting after that is polled here, a slice of up to 2 s per round
trip, until the test's start_timeout.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from netrun.errors import Cancelled, ModeError
from netrun.tools import docker as dk

if TYPE_CHECKING:
    from netrun.hosts.host import Host
    from netrun.modes.docker.base import ContainerMode


def wait(
    mode: ContainerMode, role: str, host: Host, found: dk.Readiness | None = None
) -> dk.ContainerInfo:
    """Until the container runs and the tool's server in it listens
    (Tool.resident_ready); a dead one reports its logs.

    ``found`` is what the launch's own wait saw; after it, the host polls
    (``ready_script``), and reads the container's MTU in the same round trip once it
    listens (into ``mode.mtus``)."""
    docker = mode.docker(host)
    name = mode.names[role]
    deadline = time.monotonic() + float(mode.test.value("start_timeout"))
    while True:
        if found is None:
            wait_s = max(0.05, min(2.0, deadline - time.monotonic()))
            ready = mode.tool.resident_ready
            script = dk.ready_script(name, docker, wait_s, ready=ready)
            res = host.run(script, timeout=wait_s + 30, check=False)
            found = dk.parse_ready(res.stdout, ready=ready)
        info, text = found.info, found.logs
        if info is not None and not info.running:
            raise ModeError(
                f"{host.name}: {role} container {name} exited at once (status "
                f"{info.status}, exit {info.exit_code}): "
                f"{' | '.join(text.strip().splitlines()[-3:]) or info.error or 'no output'}"
            )
        if info is not None and found.listening:
            mode.mtus[role] = found.mtu
            return info
        if time.monotonic() > deadline:
            raise ModeError(
                f"{host.name}: {role} container {name} not ready after "
                f"{mode.test.value('start_timeout')}s"
            )
        found = None
        if mode.ctx.stopping.wait(0.05):  # an interrupted parallel run: stop polling
            raise Cancelled(host.name)
