"""iperf3 through a mode's placed ends alone (netrun.tools.ends.End), for a mode that
allows no round-trip savers and keeps no server at its ends (kubernetes): nothing here
asks where the ends are.

The server end starts a one-off ``iperf3 -s -1`` on its bind address (End.start: its pid
file and its undo record); its port is checked listening at that end (its own
/proc/net/tcp, read through ``wrap``); the client end runs the client to the server end's
address, its pid recorded for ``stop``, and the server's JSON rides on the client's
(``--get-server-output``) where the test needs it, so nothing is read back from the
server end.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from netrun.core.measurement import Measurement
from netrun.hosts import proc
from netrun.tools.iperf3 import command as iperf3_command
from netrun.tools.iperf3 import measure as iperf3_measure
from netrun.tools.iperf3 import parse as iperf3_parse
from netrun.tools.iperf3.result import Iperf3Error
from netrun.tools.iperf3.run import BASE_PORT, REMOTE_MARGIN, client_pidfile

if TYPE_CHECKING:
    from netrun.hosts.command import CommandResult
    from netrun.tools.base import Placement
    from netrun.tools.ends import End, Started

#: How long the server may take to listen.
LISTEN_WAIT = 15.0
#: How often its end is asked.
LISTEN_POLL = 0.2


def listening(end: End, port: int) -> str:
    """sh condition at ``end``'s host: a TCP socket of ``end`` listens on ``port`` (its
    /proc/net/tcp and tcp6, state 0A, read where the end is)."""
    pattern = f":{port:04X} [0-9A-F]+:0000 0A"
    argv = end.wrap(["grep", "-Eq", pattern, "/proc/net/tcp", "/proc/net/tcp6"])
    return f"{shlex.join(argv)} 2>/dev/null"


def start_server(mode: Placement, end: End, port: int, tag: str) -> Started:
    """A one-off server at ``end`` on ``port``, once it listens; Iperf3Error ``busy`` when
    another process holds the port, ``server`` when it did not start."""
    argv = iperf3_command.server_command(end.bind, port, binary=iperf3_command.binary(end.host))
    lifetime = float(mode.test.deadline) + REMOTE_MARGIN
    started = end.start(
        argv, f"iperf3-{tag}", lifetime=lifetime, what=f"stop iperf3 server :{port}"
    )
    ready = f"if {listening(end, port)}; then echo NETRUN_READY; exit 0; fi"
    script = proc.until_ready(started.pidfile, ready, LISTEN_WAIT, LISTEN_POLL) + (
        f"echo NETRUN_NOT_READY; tail -c 1500 {shlex.quote(started.output)}"
    )
    res = end.run(script, timeout=LISTEN_WAIT + 30, check=False)
    if "NETRUN_READY" in res.stdout:
        return started
    started.stop()
    said = res.stdout.split("NETRUN_NOT_READY", 1)[-1].strip()
    if "Address already in use" in said:
        err = Iperf3Error("busy", f"port {port} is in use at the server end", said)
        err.busy = {port: None}
        raise err
    raise Iperf3Error(
        "server",
        f"{end.host.name}: iperf3 server on {end.bind}:{port} did not start: "
        f"{said[-300:] or 'no output'}",
        said,
    )


def measure(mode: Placement, repeat: int) -> Measurement:
    """One repeat: ``once``, retried as iperf3's loop says (a busy port, a lost setup)."""
    return iperf3_measure.retrying(mode, repeat, lambda tag: once(mode, tag), mode.ctx.stopping)


def once(mode: Placement, tag: str) -> Measurement:
    """One attempt of measurement ``tag``: server, client, the parsed client JSON."""
    server_end, client_end = mode.end("server"), mode.end("client")
    port = int(mode.value("port") or BASE_PORT)
    server = start_server(mode, server_end, port, tag)
    try:
        res = run_client(mode, client_end, server_end.address, port, tag)
    finally:
        server.stop()
    try:
        result = iperf3_parse.parse(res.stdout, res.exited, stderr=res.stderr)
    except Iperf3Error as exc:
        if exc.kind == "busy":
            exc.busy = {port: None}
            raise
        raise exc.on(client_end.host.name) from None
    details = dict(mode.details)
    details["server_port"] = port
    details["server_address"] = server_end.address
    if result.warnings:
        details["warnings"] = list(result.warnings)
    return Measurement(res.stdout, result, details)


def run_client(mode: Placement, end: End, address: str, port: int, tag: str) -> CommandResult:
    """The client at ``end`` to ``address:port``, bounded on its host too, its pid in the
    file iperf3's ``stop`` kills (netrun.tools.iperf3.measure.stop)."""
    json = iperf3_measure.server_json(mode)
    argv = iperf3_measure.client_argv(mode, address, port, server_output=json)
    deadline = float(mode.test.deadline)
    workdir = end.workdir
    pidfile = client_pidfile(workdir, tag)
    inner = f'{proc.save_pid(pidfile, "$$")} && exec "$@"'
    bounded = ["timeout", "-k", "5", f"{deadline:g}", "sh", "-c", inner, "sh", *end.wrap(argv)]
    q = shlex.quote
    script = f"mkdir -p {q(workdir)} && chmod 700 {q(workdir)} || exit 1\n{shlex.join(bounded)}"
    return mode.change(
        end.host, script, proc.kill_recorded(pidfile), what="stop the iperf3 client",
        timeout=deadline + 15, check=False,
    )  # fmt: skip
