"""The load's bulk iperf3 flow, placed on the hosts themselves (bare metal), and what every
placement of it is to the load measurement (``Flow``).

At ends with ports of their own (a container's network namespace: End.own_ports) the same
flow is ``EndFlow``: the server's port is fixed (``PORT``), and both ends are the ends'
own starts and runs (netrun.tools.ends: in a container, ``docker exec`` with the pids
recorded inside it). Either way the server end starts first and answers when it listens;
the client runs in a thread while the latency tool measures, and its iperf3 JSON is the
load's figure and proof.

On the hosts the server is netrun's usual one-off ``iperf3 -s -1`` (Iperf3Server: a free
port from the run's range, a lifetime bound, its pid file in the run's folder) and the
client is ``run_client``'s, its pid file there too: ``stop`` kills both by pid on a
failure, and the run's folder sweep kills whatever a killed run left.
"""

from __future__ import annotations

import contextlib
import math
import shlex
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from netrun.errors import NetrunError, ToolError
from netrun.hosts.proc import kill_script
from netrun.tools.iperf3 import command as iperf3_command
from netrun.tools.iperf3 import parse as iperf3_parse
from netrun.tools.iperf3.result import Iperf3Error, Iperf3Result
from netrun.tools.iperf3.run import (
    BASE_PORT,
    PORT_SPAN,
    Iperf3Server,
    client_pidfile,
    run_client,
)
from netrun.tools.load.spec import Load

if TYPE_CHECKING:
    from netrun.hosts.command import CommandResult
    from netrun.tools.base import Placement
    from netrun.tools.ends import Started

#: Seconds a flow may outlast its own -t before netrun gives up on it.
SLACK = 15.0
#: The load server's port at ends with ports of their own (apart from the iperf3, iperf2
#: and netperf servers a container may hold).
PORT = 5301
#: Seconds the server end has to listen there.
LISTEN_WAIT = 10.0


def listening(port: int, seconds: float) -> str:
    """sh until TCP ``port`` listens, failing after ``seconds`` (looks 0.05 s apart, in
    /proc/net/tcp: no ss needed where it runs)."""
    return (
        f"h=:{int(port):04X}; i=0; "
        'while ! grep -Eq "$h [0-9A-F]+:0000 0A" /proc/net/tcp /proc/net/tcp6 2>/dev/null; do '
        f'i=$((i + 1)); [ "$i" -gt {int(seconds / 0.05)} ] && exit 1; sleep 0.05; done'
    )


class Flow(Protocol):
    """One repeat's load flow as the load measurement drives it."""

    def start(self) -> None:
        """Start the server end, then the client in the background; raise a ToolError
        naming the flow and host when the server does not start."""

    def finish(self) -> tuple[Iperf3Result, str]:
        """Wait for the client; its parsed result and raw JSON, or a ToolError naming the
        flow and host."""

    def stop(self) -> None:
        """Stop both ends now (after a failure or an interrupt); quiet if already gone."""

    def preview(self) -> list[tuple[str, str]]:
        """(role, command line) of both ends, built from the files alone (``--check-only``)."""


def argv(load: Load, target: str, port: int, seconds: int, binary: str) -> list[str]:
    """The load's iperf3 client argv: up sends from the client, down is -R, both --bidir."""
    return iperf3_command.client_command(
        target,
        port,
        duration=seconds,
        protocol=load.protocol,
        streams=load.streams,
        reverse=load.direction == "down",
        bidir=load.direction == "both",
        bitrate=load.bitrate,
        binary=binary,
    )


def parsed(res: CommandResult, where: str) -> tuple[Iperf3Result, str]:
    """The client's JSON read, or one line naming the load flow and its host."""
    try:
        return iperf3_parse.parse(res.stdout, res.exited, stderr=res.stderr), res.stdout
    except Iperf3Error as exc:
        raise ToolError(f"load flow on {where}: {exc.message}", res.stdout + res.stderr) from None


class Background:
    """One call in a thread, its result or its error handed back by ``join``."""

    def __init__(self, call: Callable[[], CommandResult]) -> None:
        self._call = call
        self._result: CommandResult | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="netrun-load", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._result = self._call()
        except BaseException as exc:  # handed to the joining thread
            self._error = exc

    def join(self, timeout: float) -> CommandResult:
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise ToolError(f"load flow did not end within {timeout:g}s")
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result


class Placed:
    """What every placement of the flow keeps: its test's ends, the load, its seconds,
    its tag, and its client running in a thread once started."""

    def __init__(self, mode: Placement, load: Load, seconds: float, tag: str) -> None:
        self.mode = mode
        self.load = load
        self.seconds = math.ceil(seconds)
        self.tag = tag
        self.ends = mode.end("server"), mode.end("client")
        self.client: Background | None = None
        self.where = f"{mode.client.name} -> {mode.server.name}"

    def joined(self) -> tuple[Iperf3Result, str]:
        """The client's result once it ended, or one line naming the flow."""
        assert self.client is not None
        try:
            res = self.client.join(self.seconds + 2 * SLACK)
        except NetrunError as exc:
            raise ToolError(f"load flow {self.where}: {exc}") from None
        return parsed(res, self.where)


class HostFlow(Placed):
    """The load on the hosts themselves: server on the server host's data address."""

    def __init__(self, mode: Placement, load: Load, seconds: float, tag: str) -> None:
        super().__init__(mode, load, seconds, tag)
        server = self.ends[0].host
        self.server = Iperf3Server(
            server,
            bind_ip=self.ends[0].bind,
            workdir=mode.ctx.workdir(server),
            tag=tag,
            binary=iperf3_command.binary(server),
            lifetime=self.seconds + SLACK,
        )

    def start(self) -> None:
        try:
            self.server.start()
        except Iperf3Error as exc:
            raise ToolError(f"load flow {self.where}: {exc.message}", exc.output) from None
        assert self.server.port is not None
        client = self.ends[1].host
        command = argv(
            self.load,
            self.ends[0].address,
            self.server.port,
            self.seconds,
            iperf3_command.binary(client),
        )
        workdir = self.ends[1].workdir
        timeout = self.seconds + SLACK
        self.client = Background(
            lambda: run_client(client, command, workdir=workdir, tag=self.tag, timeout=timeout)
        )

    def finish(self) -> tuple[Iperf3Result, str]:
        found = self.joined()
        self.server.stop(lazy=True)  # -1: it ended with its client; its files go
        return found

    def preview(self) -> list[tuple[str, str]]:
        server, client = self.ends
        binary = iperf3_command.binary(server.host)
        srv = iperf3_command.server_command(server.bind, BASE_PORT, binary=binary)
        cli = argv(self.load, server.address, BASE_PORT, self.seconds,
                   iperf3_command.binary(client.host))  # fmt: skip
        free = f"  (port: the first free of {BASE_PORT}-{BASE_PORT + PORT_SPAN - 1})"
        return [("load server", shlex.join(srv) + free), ("load client", shlex.join(cli))]

    def stop(self) -> None:
        client = self.ends[1]
        with contextlib.suppress(NetrunError):
            pidfile = client_pidfile(client.workdir, self.tag)
            client.run(kill_script(pidfile), timeout=10, check=False)
        with contextlib.suppress(NetrunError):
            self.server.stop()


class EndFlow(Placed):
    """The load at ends with ports of their own (End.own_ports: a container): the server
    on ``PORT``, both ends started and stopped through the ends (their pids recorded
    where they run). The image needs iperf3, sh, grep and sleep."""

    def __init__(self, mode: Placement, load: Load, seconds: float, tag: str) -> None:
        super().__init__(mode, load, seconds, tag)
        self.server: Started | None = None
        self.client_pid = ""
        self.where += " (containers)"

    def _commands(self, program: str = "iperf3") -> tuple[list[str], list[str]]:
        server, _ = self.ends
        serve = [program, "-s", "-1", "-p", str(PORT)]
        return serve, argv(self.load, server.address, PORT, self.seconds, program)

    def start(self) -> None:
        server, client = self.ends
        serve, cli = self._commands()
        self.server = server.start(
            serve, f"load-{self.tag}-server", lifetime=self.seconds + SLACK,
            what="load iperf3 server", ready=listening(PORT, LISTEN_WAIT),
        )  # fmt: skip
        answer = self.server.answer
        if answer is not None and answer.exited != 0:
            raise ToolError(
                f"load flow {self.where}: the iperf3 server on {server.host.name} did not "
                f"listen on port {PORT} within {LISTEN_WAIT:g}s (the image needs iperf3, sh "
                "and grep)",
                answer.stdout + answer.stderr,
            )
        recorded, self.client_pid = client.recording(cli, f"load-{self.tag}.client")
        line = shlex.join(recorded)
        timeout = self.seconds + SLACK
        self.client = Background(lambda: client.run(line, timeout=timeout, check=False))

    def preview(self) -> list[tuple[str, str]]:
        """Both ends' commands (the server container's address is known once it runs),
        from the files alone (``--check-only``)."""
        server, client = self.ends
        serve, cli = self._commands()
        return [
            ("load server", shlex.join(server.wrap(serve))),
            ("load client", shlex.join(client.wrap(cli))),
        ]

    def finish(self) -> tuple[Iperf3Result, str]:
        return self.joined()

    def stop(self) -> None:
        client = self.ends[1]
        if self.client_pid:
            with contextlib.suppress(NetrunError):
                client.run(client.stop_script(self.client_pid), timeout=15, check=False)
        if self.server is not None:
            with contextlib.suppress(NetrunError):
                self.server.stop(timeout=15)
