"""Saver.ARMED_CLIENT for containers: a container test's client, its command started
before the containers are up.

Each repeat's client is a ``docker exec`` in the client container; as its own command it
paid the host's login cost after the containers were ready. Here the command starts at
once (during the host's probe for the run's first test, netrun.tools.savers.prestart; during
the container start otherwise) and waits on its stdin for what it needs from the start: the
server container's address, the client container's PID 1 (for the path-bytes readings,
netrun.modes.docker.pathbytes) and whether to sweep the host after it: on the host's last
measurement the client's command ends with the host's sweep (netrun.modes.docker.savers.serverend's
``host_sweep``), so the run's end has nothing left to do there (netrun.tools.savers.sweep), as a
bare-metal client's does (the tool's armed client, Tool.server_ahead). Abandoned, or when netrun
vanishes, its stdin ends and it exits without running anything.
"""

from __future__ import annotations

import ipaddress
import time
from typing import TYPE_CHECKING

from netrun.cleanup.scripts import SWEPT_LINE
from netrun.errors import NetrunError
from netrun.hosts.command import CommandResult
from netrun.modes.docker import launch, pathbytes
from netrun.modes.docker.savers.serverend import host_sweep
from netrun.tools.savers.model import Saver

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from netrun.hosts.transport import Started
    from netrun.modes.docker.base import ContainerMode

#: Stands for the server container's address in the client's argv ($ip on the host).
IP_TOKEN = "@@netrun-server-ip@@"
#: The line the command waits for: address, client PID 1 (0: unknown), "sweep" or "-",
#: then the pid of each of the mode's own processes on the host (``own_read``).
_READ = (
    'read -r ip pid then{own} || exit 0; case "$ip" in ""|*[!0-9A-Fa-f.:]*) exit 0 ;; esac; '
    'case "$pid" in ""|*[!0-9]*) exit 0 ;; esac'
)


def own_read(names: Sequence[str]) -> str:
    """The line's read: its last words are the pids of the mode's own processes (the
    FreeFlow router, found in the container start this command may be armed before), each
    into the variable the readings take it from (pathbytes.own_var); not a number: unset."""
    vars_ = [pathbytes.own_var(n) for n in names]
    checks = "".join(f'; case "${v}" in ""|*[!0-9]*) unset {v} ;; esac' for v in vars_)
    return _READ.format(own="".join(f" {v}" for v in vars_)) + checks


def body(mode: ContainerMode, argv: list[str]) -> str:
    """sh running the client's ``docker exec`` (``argv`` with IP_TOKEN for the address),
    with the counter readings around it (pathbytes.wrap's sections)."""
    exec_argv = mode.end("client").wrap(argv)
    line = launch.shell_words(exec_argv, {IP_TOKEN: "ip"})
    nic = pathbytes.host_nic(mode, mode.client)
    inside = pathbytes.shell_reading(nic=nic, own=mode.own_procs(mode.client))
    reading = f'if [ "$pid" -gt 0 ]; then {inside}; else cat /proc/net/dev; fi'
    return pathbytes.wrap_line(line, reading)


def command(client: str, sweep: str, own: Sequence[str] = ()) -> str:
    """sh that waits for its line (``own_read``), runs ``client`` (sh using ``$ip`` and
    ``$pid``), then ``sweep`` if the line says so (its output on stderr), and exits
    with the client's status."""
    script = f"{own_read(own)}\n( {client}\n); r=$?\n"
    if sweep:
        script += f'[ "$then" != sweep ] || {{ {sweep}; }} >&2\n'
    return script + "exit $r"


class ArmedExec:
    """One repeat's client command, started now; ``fire`` gives it what it waits for."""

    def __init__(self, mode: ContainerMode, argv: list[str], sweep: str) -> None:
        """``argv``: the client's argv (IP_TOKEN for the server's address);
        ``sweep``: the host's sweep, run after it if ``fire`` says so."""
        self.host = mode.client
        #: The client container it runs in: mode.names's when it was armed, which the test's
        #: keep decision set (netrun.modes.docker.savers.keep), as its key in ctx.ahead.armed
        #: (``tag``).
        self.container = mode.names["client"]
        #: The mode's own processes whose pids ``fire`` sends (mode.own_procs's names).
        self.own = list(mode.own_procs(self.host))
        self.started: Started | None = self.host.start(command(body(mode, argv), sweep, self.own))
        self.can_sweep = bool(sweep)
        #: Whether the host was swept after the client.
        self.swept = False

    def fire(
        self,
        ip: str,
        pid: int | None,
        timeout: float,
        *,
        sweep: bool = False,
        own: Mapping[str, int | None] | None = None,
    ) -> CommandResult | None:
        """Run the client against ``ip`` and wait for it; None if it could not be started
        (the caller then runs the client as a command of its own). ``own``: the pids of
        the mode's own processes, as known now (the router's, read in the start)."""
        started, self.started = self.started, None
        if started is None:
            return None
        ipaddress.ip_address(ip)  # an address, never anything else, goes to the host's sh
        sweep = sweep and self.can_sweep
        try:
            pids = "".join(f" {int((own or {}).get(n) or 0)}" for n in self.own)
            started.send(f"{ip} {int(pid or 0)} {'sweep' if sweep else '-'}{pids}\n")
        except NetrunError:  # gone meanwhile: a command of its own says why, or works
            started.abandon()
            return None
        exited, out, err = started.wait(timeout + (60 if sweep else 0))
        if sweep and err.endswith(SWEPT_LINE):
            err = err[: -len(SWEPT_LINE)]
            self.swept = True
        seconds = time.monotonic() - started.started
        return CommandResult(self.host.name, started.line, exited, out, err, seconds)

    def abandon(self) -> None:
        """Not needed after all (a failed start, a test that never measured)."""
        started, self.started = self.started, None
        if started is not None:
            started.abandon()


def tag(mode: ContainerMode, repeat: int) -> str:
    """The key of a repeat's armed client in ctx.ahead.armed (with the client's host name).
    It names the client container, as the test's keep decision does (mode.names: its own,
    or those of the test whose containers it adopted, netrun.modes.docker.savers.keep), so
    a command started for other containers is never the one fired."""
    return f"{mode.test.tag}c{repeat}:{mode.names['client']}"


def arm(mode: ContainerMode, repeat: int) -> ArmedExec:
    """A repeat's client, started now (its sweep included where it may be the host's
    last measurement: the probes may not have told yet whether it can sweep)."""
    argv = mode.tool_client(IP_TOKEN)  # the tool's client (Tool.resident_client)
    last = mode.last_on(mode.client, repeat, probed=False)
    return ArmedExec(mode, argv, host_sweep(mode, mode.client) if last else "")


def arm_next(mode: ContainerMode, repeat: int) -> None:
    """Start ``repeat``'s client unless it already is (by the probe, or before)."""
    key = (mode.client.name, tag(mode, repeat))
    allowed = mode.savers.allows(Saver.ARMED_CLIENT) and mode.tool.resident_client is not None
    if allowed and repeat <= mode.test.repeat and key not in mode.ctx.ahead.armed:
        mode.ctx.ahead.armed[key] = arm(mode, repeat)


def run_client(
    mode: ContainerMode, repeat: int, plain: Callable[[], CommandResult]
) -> CommandResult:
    """The repeat's client: its armed command fired (sweeping the client's host on its
    last measurement), else ``plain``, a command of its own."""
    armed = mode.ctx.ahead.armed.pop((mode.client.name, tag(mode, repeat)), None)
    res = None
    if isinstance(armed, ArmedExec):
        sweep = mode.last_on(mode.client, repeat)
        try:
            assert mode.server_ip is not None
            res = armed.fire(
                mode.server_ip,
                mode.pids.get("client"),
                float(mode.test.deadline),
                sweep=sweep,
                own=mode.own_procs(mode.client),
            )
        finally:
            armed.abandon()
        if armed.swept and mode.ctx.ahead.early_sweep is not None:
            mode.ctx.ahead.early_sweep.sent(mode.client, lambda: True)
    return res if res is not None else plain()


def forget(mode: ContainerMode) -> None:
    """Abandon the test's armed clients that never ran (a failed or interrupted test)."""
    for repeat in range(1, mode.test.repeat + 1):
        armed = mode.ctx.ahead.armed.pop((mode.client.name, tag(mode, repeat)), None)
        if armed is not None:
            armed.abandon()
