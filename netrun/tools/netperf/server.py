"""netserver for one repeat: its port checked free, started with an undo record, stopped.

netserver forks a child per test, and the child serves on when its parent is killed: so it
runs under ``timeout`` (which leads its own process group) and is stopped by group
(netrun.hosts.proc.kill_recorded, after its identity checks: pid, start
time, boot, network namespace). The record is written before the start, so a SIGKILLed
run's netserver is stopped by the next run's sweep or ``netrun cleanup``; the ``timeout``
ends it anyway once the test's deadline is past.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING

from netrun.hosts import proc
from netrun.tools import ports
from netrun.tools.netperf.parse import NetperfError

if TYPE_CHECKING:
    from netrun.tools.base import Placement
    from netrun.tools.ends import End

START_WAIT = 5.0
#: What netserver prints when it cannot bind its port (tests/fixtures/netperf/netserver_busy).
BUSY = "Unable to start netserver"
#: How long a netserver may outlive the test's deadline (``timeout`` on the host).
REMOTE_MARGIN = 10.0
#: Where netperf comes from where the host's distribution has no package.
SOURCE = "https://github.com/HewlettPackard/netperf"
INSTALL = (
    "install netperf (Ubuntu multiverse, RHEL/Fedora EPEL: netperf; Debian 12 has none: "
    f"build it from {SOURCE} with ./configure --enable-histogram)"
)


@dataclass(frozen=True)
class Server:
    """A started netserver: where it listens and where its log and pid are."""

    end: End
    address: str
    port: int
    log: str
    pidfile: str


def start(mode: Placement, end: End, port: int, tag: str) -> Server:
    """netserver at ``end`` on its bind address and ``port`` until stopped; NetperfError
    naming the fix otherwise."""
    host, address = end.host, end.bind
    binary = end.program("netrun_netserver", "netserver")
    q = shlex.quote
    look = f"command -v {q(binary)} >/dev/null 2>&1 || echo NETRUN_MISSING; "
    found = end.run(end.at(look + ports.holder_script(port, "tcp")), timeout=15).stdout
    if "NETRUN_MISSING" in found:
        raise NetperfError(
            "missing", f"{host.name}: netserver not found ({binary!r}): {INSTALL}, "
            "or set netrun_netserver to its path",
        )  # fmt: skip
    users = ports.holder(found)
    if users is not None:
        raise NetperfError(
            "busy", f"{host.name}: TCP port {port} (netserver's) is in use by {users}: "
            "stop it or set port: to a free one",
        )  # fmt: skip
    lifetime = float(mode.test.deadline) + REMOTE_MARGIN
    argv = [binary, "-D", "-L", address, "-p", str(port)]
    started = end.start(argv, f"netserver-{tag}", lifetime=lifetime, what=f"stop netserver :{port}")
    listens = f"[ -n \"$(ss -Hltn 'sport = :{int(port)}' 2>/dev/null)\" ]"
    listening = f"{end.at(listens)} && echo NETRUN_READY && exit 0"  # where it runs
    wait = proc.until_ready(started.pidfile, listening, START_WAIT) + (
        f"echo NETRUN_NOT_READY; tail -c 2000 {q(started.output)}"
    )
    res = end.run(wait, timeout=START_WAIT + 15, check=False)
    if "NETRUN_READY" not in res.stdout:
        text = res.stdout.split("NETRUN_NOT_READY", 1)[-1].strip()
        started.stop(timeout=15)
        if BUSY in text:
            raise NetperfError(
                "busy", f"{host.name}: netserver could not listen on {address}:{port} "
                "(in use?): stop what holds it or set port: to a free one", text,
            )  # fmt: skip
        raise NetperfError(
            "failed", f"{host.name}: netserver on {address}:{port} did not start: "
            f"{text[-200:] or 'no output'}", text,
        )  # fmt: skip
    return Server(end, address, port, started.output, started.pidfile)


def stop(server: Server) -> None:
    """Stop the netserver and its children now (its undo record stays, harmless, for teardown)."""
    server.end.run(proc.kill_recorded(server.pidfile), timeout=20, check=False)
