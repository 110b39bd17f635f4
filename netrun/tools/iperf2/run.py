"""One iperf2 measurement on hosts: a UDP server for one run, the client, the parsed report.

The server runs in the background with its pid kept as an undo record, so a SIGKILLed run's
server is stopped by the next run's sweep or ``netrun cleanup``. iperf2 sets SO_REUSEADDR,
so a second server on a busy UDP port starts fine and then steals the traffic: the port is
checked free first. The server prints each flow's whole-test report when the flow ends;
netrun waits for that line, then stops the server (SIGTERM: a background job of a
non-interactive shell ignores SIGINT) and parses what it wrote.
"""

from __future__ import annotations

import contextlib
import re
import shlex
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from netrun.errors import Cancelled, HostError, NetrunError
from netrun.hosts import proc
from netrun.tools import ports
from netrun.tools.iperf2 import command as iperf2_command
from netrun.tools.iperf2 import parse as iperf2

if TYPE_CHECKING:
    from netrun.hosts.command import CommandResult
    from netrun.tools.base import Placement
    from netrun.tools.ends import End

#: How long the server may take to print its first line, and a flow's final report.
START_WAIT = 5.0
REPORT_WAIT = 5.0
#: How long an iperf2 may outlive netrun's deadline for it (``timeout`` on the host).
REMOTE_MARGIN = 10.0
#: A report line from 0 s: with ``-i 1`` the first per-second line, then the whole test's.
FROM_ZERO = re.compile(r"^\[\s*\d+\]\s+0\.0+-[0-9.]+\s+sec\b", re.MULTILINE)


@dataclass(frozen=True)
class Server:
    """A started iperf2 server: where it listens and where its output and pid are."""

    end: End
    address: str
    port: int
    output: str
    pidfile: str


def start_server(mode: Placement, end: End, port: int, tag: str) -> Server:
    """The iperf2 UDP server at ``end`` on its bind address and ``port``; HostError
    naming the port and the fix."""
    host, address = end.host, end.bind
    held = end.run(end.at(ports.holder_script(port, "udp")), timeout=15).stdout
    users = ports.holder(held)
    if users is not None:
        raise HostError(
            host.name,
            f"UDP port {port} on {host.name} is in use by {users}: stop it or set "
            "port: to a free one (iperf2 would share it and lose the traffic)",
        )
    argv = [
        end.program("netrun_iperf2", "iperf"),
        *iperf2_command.server_command(port, address)[1:],
    ]
    lifetime = float(mode.test.deadline) + REMOTE_MARGIN
    started = end.start(
        argv, f"iperf2-{tag}", lifetime=lifetime, what=f"stop iperf2 server :{port}"
    )
    out, pidfile = started.output, started.pidfile
    q = shlex.quote
    listening = (
        f"grep -q {q(iperf2_command.LISTENING)} {q(out)} 2>/dev/null && echo NETRUN_READY && exit 0"
    )
    wait = proc.until_ready(pidfile, listening, START_WAIT) + (
        f"echo NETRUN_NOT_READY; tail -c 2000 {q(out)}"
    )
    res = end.run(wait, timeout=START_WAIT + 15, check=False)
    if "NETRUN_READY" not in res.stdout:
        text = res.stdout.split("NETRUN_NOT_READY", 1)[-1].strip()
        if "not found" in text or "No such file" in text:
            why = f"{argv[0]} not found: install iperf (apt-get install iperf) or set netrun_iperf2"
        else:
            why = f"it did not start: {text[-200:] or 'no output'}"
        raise HostError(host.name, f"iperf2 server on {address}:{port}: {why}")
    return Server(end, address, port, out, pidfile)


def run_client(mode: Placement, end: End, target: str, port: int, tag: str) -> CommandResult:
    """The iperf2 client at ``end``, at the test's rate to ``target:port``, bounded on
    the host too.

    Its pid is an undo record: a UDP client sends on whether anyone listens, so a run
    killed mid-test must stop it by pid (the sweep) rather than leave it to its deadline.
    """
    t = mode.test
    argv = iperf2_command.client_command(
        target, length=int(t.value("length")), bitrate=t.value("bitrate"),
        duration=float(t.duration), port=port,
    )  # fmt: skip
    argv[0] = end.program("netrun_iperf2", "iperf")
    deadline = float(t.deadline)
    recorded, pidfile = end.recording(argv, client_name(tag))
    bounded = ["timeout", "-k", "5", f"{deadline:g}", *recorded]
    stop = end.stop_script(pidfile)
    what = "stop the iperf2 client"
    return mode.change(
        end.host, shlex.join(bounded), stop, what=what, timeout=deadline + 15, check=False
    )


def client_name(tag: str) -> str:
    """The name of the client of measurement ``tag`` (TEST-TAG r REPEAT): its pid file is
    End.path(NAME.pid)."""
    return f"iperf2-{tag}.client"


def stop_client(end: End, tag: str) -> None:
    """Kill the running client of measurement ``tag`` by its pid file at its end (its
    identity checked: netrun.hosts.proc.kill_recorded), so a fan flow ends when another
    failed (netrun.run.flows); its server's report wait then ends it as after any failure."""
    pidfile = end.path(f"{client_name(tag)}.pid")
    with contextlib.suppress(NetrunError):
        end.run(end.stop_script(pidfile), timeout=15, check=False)


def with_resident(
    mode: Placement, server: End, client: End, target: str, port: int, tag: str
) -> tuple[iperf2.Iperf2Result, str]:
    """One run against the server the server end keeps for the whole test (End.resident:
    a container's PID 1, Tool.resident): the client, then the part of the server's output
    written since the run began, once it holds the flow's whole-test report."""
    duration = float(mode.test.duration)
    before = len(server.resident_output().splitlines())
    res = run_client(mode, client, target, port, tag)
    want = 1 if duration <= 1 else 2
    stopping = getattr(mode.ctx, "stopping", None)  # the run's (RunContext.stopping)
    deadline = time.monotonic() + REPORT_WAIT
    text = "\n".join(server.resident_output().splitlines()[before:])
    while len(FROM_ZERO.findall(text)) < want and time.monotonic() < deadline:
        if stopping is not None and stopping.wait(0.1):
            raise Cancelled(server.host.name)
        text = "\n".join(server.resident_output().splitlines()[before:])
    return result_of(mode, text, res, duration)


def stop_server(server: Server, duration: float) -> str:
    """Wait for the flow's whole-test report, stop the server, and return its output.

    With ``-i 1`` the first per-second line starts at 0 too: the whole-test one is the
    second line from 0 s (the only one in a test of a second or less).
    """
    q = shlex.quote
    want = 1 if duration <= 1 else 2
    script = (
        f"i=0; while [ $i -lt {int(REPORT_WAIT * 20)} ]; do "
        f"n=$(grep -Ec '\\] +0\\.0+-[0-9.]+ sec' {q(server.output)} 2>/dev/null); "
        f'[ "${{n:-0}}" -ge {want} ] && break; sleep 0.05; i=$((i+1)); done; '
        # in a subshell: the undo's "exit 0" for a spared pid must not skip the cat
        f"({proc.kill_recorded(server.pidfile)}); cat {q(server.output)}"
    )
    return server.end.run(script, timeout=REPORT_WAIT + 20, check=False).stdout


def parse_run(server_text: str, client: CommandResult, duration: float) -> iperf2.Iperf2Result:
    """The server's report; a client that could not reach it says why (refused, no ack)."""
    try:
        return iperf2.parse(server_text, expect_seconds=duration)
    except iperf2.Iperf2Error as exc:
        if exc.kind != "no-output":
            raise
        client_text = f"{client.stdout}\n{client.stderr}"
        try:
            return iperf2.parse(client_text, side="client", expect_seconds=duration)
        except iperf2.Iperf2Error as again:
            if again.kind in ("refused", "no-ack"):
                raise iperf2.Iperf2Error(
                    again.kind, again.message, f"{server_text}\n--- client ---\n{client_text}"
                ) from None
        raise iperf2.Iperf2Error(
            exc.kind, exc.message, f"{server_text}\n--- client ---\n{client_text}"
        ) from None


def result_of(
    mode: Placement, server_text: str, client: CommandResult, duration: float
) -> tuple[iperf2.Iperf2Result, str]:
    """A run's result and its raw proof (the server's report, then the client's output),
    on hosts or in containers; a run that failed names the host whose side did (the
    client's when it never reached the server)."""
    raw = f"{server_text}\n--- client on {mode.client.name} ---\n{client.stdout}{client.stderr}"
    try:
        result = parse_run(server_text, client, duration)
    except iperf2.Iperf2Error as exc:
        where = mode.client.name if exc.kind in ("refused", "no-ack") else mode.server.name
        raise iperf2.Iperf2Error(exc.kind, f"{where}: {exc.message}", raw) from None
    return result, raw


def metrics_of(result: iperf2.Iperf2Result) -> tuple[dict[str, float | None], dict[str, Any]]:
    """The declared metrics and the details results.json keeps beside them."""
    values = {name: result.metrics.get(name) for name in iperf2.METRIC_NAMES}
    return dict(values), result.details()  # counts stay whole numbers
