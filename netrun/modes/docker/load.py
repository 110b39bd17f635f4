"""The load's bulk iperf3 flow in a container test's own containers (netrun.tools.load).

The load must cross the path the test's probes cross, so it runs where they run: the
server end is a ``docker exec -d`` of ``iperf3 -s -1`` in the server container, on its own
port (``PORT``, apart from the iperf3, iperf2 and netperf servers a container may hold as
PID 1); the client end is a ``docker exec`` of the client in the client container towards
the server container's address. Both record their pid in the container's /tmp, so
``stop`` kills exactly them; the server's start is a recorded change whose undo kills it
(run in the test's teardown, quiet once the container is gone), and removing the
containers ends both in any case. A FreeFlow container's exec inherits its LD_PRELOAD.
The image needs iperf3, sh, grep and sleep (the lab's image has them).
"""

from __future__ import annotations

import contextlib
import shlex
from typing import TYPE_CHECKING

from netrun.errors import NetrunError, ToolError
from netrun.hosts import proc
from netrun.modes.docker.preview import CONTAINER_IP
from netrun.tools import docker as dk
from netrun.tools.iperf3.result import Iperf3Result
from netrun.tools.load import flow as load_flow
from netrun.tools.load.spec import Load

if TYPE_CHECKING:
    from netrun.modes.docker.base import ContainerMode

PORT = 5301
#: Seconds the server end has to listen.
LISTEN_WAIT = 10.0

#: In the server container: iperf3 -s -1 in the background with its pid recorded ($0 the
#: pid file, $1 the port, then the argv), in the one format (netrun.hosts.proc.save_pid).
_SERVER = proc.save_pid('"$0"', "$$") + '; shift; exec "$@" >/dev/null 2>&1'
#: In the client container: the client with its pid recorded ($0 the pid file).
_CLIENT = proc.save_pid('"$0"', "$$") + '; exec "$@"'
#: Until the port listens in the container (the same /proc/net/tcp test as netperf's).
_LISTENING = (
    'h=$(printf ":%04X" "$0"); i=0; '
    'while ! grep -Eq "$h [0-9A-F]+:0000 0A" /proc/net/tcp /proc/net/tcp6 2>/dev/null; do '
    'i=$((i + 1)); [ "$i" -gt "$1" ] && exit 1; sleep 0.05; done'
)


def _kill(pidfile: str) -> list[str]:
    """Stop the recorded process if it is still the one started (netrun.hosts.proc.kill_script)."""
    return ["sh", "-c", proc.kill_script(pidfile) + " >/dev/null"]


class ContainerFlow:
    """The load between the test's two containers."""

    def __init__(self, mode: ContainerMode, load: Load, seconds: float, tag: str) -> None:
        self.mode = mode
        self.load = load
        self.seconds = int(-(-seconds // 1))
        self.server_pid = f"/tmp/netrun-load-{tag}.server.pid"
        self.client_pid = f"/tmp/netrun-load-{tag}.client.pid"
        self.client: load_flow.Background | None = None
        self.where = f"{mode.client.name} -> {mode.server.name} (containers)"

    def _exec(self, role: str, argv: list[str], detach: bool = False) -> str:
        host = self.mode.hosts[role]
        cmd = dk.exec_command(self.mode.names[role], argv, self.mode.docker(host))
        if detach:
            cmd.insert(2, "-d")
        return shlex.join(cmd)

    def start(self) -> None:
        mode, server = self.mode, self.mode.server
        self.mode.healthy = False  # a failed load leaves the containers to the sweep
        serve = ["iperf3", "-s", "-1", "-p", str(PORT)]
        start = self._exec("server", ["sh", "-c", _SERVER, self.server_pid, str(PORT), *serve],
                           detach=True)  # fmt: skip
        steps = str(int(LISTEN_WAIT / 0.05))
        wait = self._exec("server", ["sh", "-c", _LISTENING, str(PORT), steps])
        undo = self._exec("server", _kill(self.server_pid)) + " 2>/dev/null; true"
        script = f"{start} && {wait} || {{ echo NETRUN_FAIL; exit 1; }}"
        res = mode.change(server, script, undo, what="load iperf3 server", check=False,
                          timeout=LISTEN_WAIT + 20)  # fmt: skip
        if res.exited != 0:
            raise ToolError(
                f"load flow {self.where}: the iperf3 server in {mode.names['server']} on "
                f"{server.name} did not listen on port {PORT} within {LISTEN_WAIT:g}s "
                "(the image needs iperf3, sh and grep)",
                res.stdout + res.stderr,
            )
        assert mode.server_ip is not None
        argv = load_flow.argv(self.load, mode.server_ip, PORT, self.seconds, "iperf3")
        line = self._exec("client", ["sh", "-c", _CLIENT, self.client_pid, *argv])
        timeout = self.seconds + load_flow.SLACK
        self.client = load_flow.Background(
            lambda: mode.client.run(line, timeout=timeout, check=False)
        )

    def preview(self) -> list[tuple[str, str]]:
        """Both ends' ``docker exec`` (the server container's address is known once it
        runs), from the files alone (``--check-only``)."""
        target = self.mode.server_ip or CONTAINER_IP
        serve = ["iperf3", "-s", "-1", "-p", str(PORT)]
        argv = load_flow.argv(self.load, target, PORT, self.seconds, "iperf3")
        return [
            ("load server", self._exec("server", serve, detach=True)),
            ("load client", self._exec("client", argv)),
        ]

    def finish(self) -> tuple[Iperf3Result, str]:
        assert self.client is not None
        try:
            res = self.client.join(self.seconds + 2 * load_flow.SLACK)
        except NetrunError as exc:
            raise ToolError(f"load flow {self.where}: {exc}") from None
        found = load_flow.parsed(res, self.where)
        self.mode.healthy = True
        return found

    def stop(self) -> None:
        for role, pidfile in (("client", self.client_pid), ("server", self.server_pid)):
            with contextlib.suppress(NetrunError):
                self.mode.hosts[role].run(self._exec(role, _kill(pidfile)), timeout=15,
                                          check=False)  # fmt: skip
