"""The container modes' ends: a test's end is its container on its host (netrun.tools.ends).

A tool runs at a container end through ``docker exec`` (``wrap``); peers dial the
container's address on its network (the server container's is known once it runs: before,
a preview shows ``CONTAINER_IP``). A process ``start`` puts in the background runs inside
the container, and its pid is recorded there, in the one pid-file format
(netrun.hosts.proc.save_pid): killing the ``docker exec`` client on the host would not
stop it, and a pid read inside the container names nothing on the host. Its undo record,
written on the host before the start, is a ``docker exec`` that stops it by that record
(quiet once the container is gone; removing the container ends it in any case, and the
container's own time bound removes the container when the controller vanishes).

FreeFlow's end runs every argv with its socket library preloaded: the container's
environment carries LD_PRELOAD (and a ``docker exec`` inherits it); the wrap names it
again, so what a tool runs there is visibly FreeFlow's, whatever the image's entrypoint.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from netrun.hosts import proc
from netrun.tools import docker as dk
from netrun.tools.ends import Recorder, Started, recording

if TYPE_CHECKING:
    from netrun.hosts.command import CommandResult
    from netrun.hosts.host import Host

#: The server address of a container test: the server container's, known once it runs.
CONTAINER_IP = "<server container IP>"
#: Where a process started at a container end keeps its output and pid, in the container.
CONTAINER_TMP = "/tmp"


class Containers(Recorder, Protocol):
    """What a container end needs of its mode (netrun.modes.docker.base.ContainerMode)."""

    @property
    def hosts(self) -> Mapping[str, Host]: ...
    @property
    def names(self) -> Mapping[str, str]: ...
    @property
    def server_ip(self) -> str | None: ...

    def docker(self, host: Host) -> str: ...

    def ride(self, role: str, script: str) -> tuple[str, Callable[[Any], Any]] | None: ...


class ContainerEnd:
    """One end in its container (see the module docstring)."""

    #: A container has a network namespace of its own: a fixed port is free there.
    own_ports = True
    #: A listening socket here is carried whether or not it was bound.
    needs_bind = False
    #: Its PID 1 is the test's tool's server for the whole test (Tool.resident):
    #: netrun.modes.docker.mode.DockerMode.app_argv.
    resident = True

    def __init__(self, mode: Containers, role: str) -> None:
        self.mode = mode
        self.role = role
        self.host = mode.hosts[role]

    @property
    def name(self) -> str:
        return self.mode.names[self.role]

    @property
    def address(self) -> str:
        """What a peer dials: the server container's address (CONTAINER_IP until it runs);
        the client end is never dialled."""
        return self.mode.server_ip or CONTAINER_IP

    @property
    def bind(self) -> str:
        """A server here listens on every address of the container: its namespace holds
        the container's own alone (and FreeFlow's library binds the router's host socket
        on a ``bind``)."""
        return "0.0.0.0"

    @property
    def workdir(self) -> str:
        return self.mode.ctx.workdir(self.host)

    def program(self, var: str, default: str) -> str:
        """The image's own program (a host's netrun_* paths name nothing in it)."""
        return default

    def exec_flags(self) -> list[str]:
        """``docker exec`` flags every argv here runs with (FreeFlow's: its library)."""
        return []

    def wrap(self, argv: Sequence[str], *, detach: bool = False) -> list[str]:
        docker = self.mode.docker(self.host)
        flags = [*self.exec_flags(), *(["-d"] if detach else [])]
        cmd = dk.exec_command(self.name, argv, docker)
        return [*cmd[:2], *flags, *cmd[2:]]

    def run(self, script: str, *, timeout: float, check: bool = False) -> CommandResult:
        """``script`` on the end's host (made of ``wrap``-ped argvs, it runs in the
        container); a path-counted leg's first command here carries the end's counter
        readings (Containers.ride)."""
        riding = self.mode.ride(self.role, script)
        if riding is None:
            return self.host.run(script, timeout=timeout, check=check)
        sent, done = riding
        return done(self.host.run(sent, timeout=timeout, check=check))

    def at(self, script: str) -> str:
        """sh on the host running ``script`` in the container (it needs sh there)."""
        return shlex.join(self.wrap(["sh", "-c", script]))

    def start(
        self,
        argv: Sequence[str],
        name: str,
        *,
        lifetime: float,
        what: str,
        ready: str = "",
    ) -> Started:
        """``argv`` in the background in the container (``docker exec -d``), its output
        and pid in the container's CONTAINER_TMP, after the undo record on the host that
        stops it there; then ``ready`` in the container, in the same round trip. The
        container's time bound stands for ``lifetime``; removing the container ends
        whatever the process forked."""
        out, pidfile = self.path(f"{name}.out"), self.path(f"{name}.pid")
        keep = f'{proc.save_pid(pidfile, "$$")} && exec "$@" > {shlex.quote(out)} 2>&1'
        started = shlex.join(self.wrap(["sh", "-c", keep, "sh", *argv], detach=True))
        script = f"{started} && {self.at(ready)}" if ready else started
        undo = f"{self.stop_script(pidfile)}; true"
        res = self.mode.change(self.host, script, undo, what=what, check=not ready)
        return Started(self, out, pidfile, res if ready else None)

    def path(self, name: str) -> str:
        """Where a file named ``name`` lives in the container."""
        return f"{CONTAINER_TMP}/netrun-{name}"

    def recording(self, argv: Sequence[str], name: str) -> tuple[list[str], str]:
        """``argv`` recording its pid inside the container as it starts (exec keeps it)."""
        return recording(self, argv, name)

    def resident_output(self, *, timeout: float = 60) -> str:
        """What the container's PID 1 (the tool's resident server) wrote on its stdout so
        far (its stderr is another stream: joined, the cut between repeats would move)."""
        argv = dk.logs_command(self.name, self.mode.docker(self.host), tail=100_000)
        return self.host.run(argv, timeout=timeout, check=False).stdout

    def stop_script(self, pidfile: str) -> str:
        """sh on the host stopping the process recorded in ``pidfile`` in the container,
        with shell builtins alone there (an image with sh and no sed or cut)."""
        kill = proc.kill_recorded(pidfile, builtins=True)
        return f"{self.at(kill + ' >/dev/null')} 2>/dev/null"

    def put(self, path: str, text: str, *, timeout: float = 15) -> CommandResult:
        q = shlex.quote
        return self.run(self.at(f"printf %s {q(text)} > {q(path)}"), timeout=timeout, check=True)


class FreeFlowEnd(ContainerEnd):
    """A container end whose every argv runs with FreeFlow's socket library preloaded."""

    #: Its library's listen() listens on the host socket the router made without binding
    #: it; only a bind() has the router bind it (netrun.modes.freeflow.netperf).
    needs_bind = True

    def __init__(self, mode: Containers, role: str, library: str) -> None:
        super().__init__(mode, role)
        self.library = library

    def exec_flags(self) -> list[str]:
        return ["-e", f"LD_PRELOAD={self.library}"]
