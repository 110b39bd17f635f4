"""The kernel's drop counters on both ends of an iperf3 measurement, at no extra wait.

netrun.hosts.counters builds the reading. The client end's two readings ride on the
client's own command (netrun.tools.iperf3.run: just before iperf3 starts, just after it
ends, printed after its JSON behind ``MARK``). The server end's ride on a command armed
with the client (``ServerReadings``): its host's login is paid while the previous test
runs; it takes its first reading when it is told the server's pid file, which is sent
just before the client is given the port (the client still has to connect and exchange
parameters before a datagram flows), then waits for that one-shot server to exit and
takes the second. ``analysis`` (netrun.tools.iperf3.loss) says where datagrams were lost.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from netrun.errors import NetrunError
from netrun.hosts import counters, proc
from netrun.hosts.command import CommandResult

if TYPE_CHECKING:
    from netrun.hosts.host import Host
    from netrun.hosts.transport import Started

#: Printed after the client's output, before its readings.
MARK = "==netrun:readings=="
#: How often the server end's second reading looks whether the server exited.
POLL_S = 0.02


def split(res: CommandResult) -> tuple[CommandResult, list[counters.Reading]]:
    """The client's own result, and the readings its command printed after it."""
    out, found, rest = res.stdout.rpartition("\n" + MARK + "\n")
    if not found:
        return res, []
    return dataclasses.replace(res, stdout=out), readings(rest)


def readings(text: str) -> list[counters.Reading]:
    """Every whole reading in ``text``, in order."""
    found = []
    for part in text.split(counters.MARK)[1:]:
        reading = counters.parse(counters.MARK + part)
        if reading is not None:
            found.append(reading)
    return found


class ServerReadings:
    """The server end's readings: started now (on the server's host), fired with the
    server's pid file just before the client, collected after the client."""

    def __init__(self, host: Host, read: str, bound: float) -> None:
        """``read``: sh printing one reading (counters.script); ``bound``: the longest
        it waits for the server to exit (the client's deadline and margin)."""
        self.host = host
        wait = proc.wait_gone(bound, POLL_S)
        script = (
            'read -r pidfile || exit 0; [ -n "$pidfile" ] || exit 0; '
            f'{read}; p=$(cat "$pidfile" 2>/dev/null); {wait}{read}'
        )
        self.script = script
        #: None when the host could not start it yet (armed before the server host was
        #: connected: the run's first test); ``fire`` then starts it
        self.started: Started | None = host.start(script)
        self.fired = False

    def fire(self, pidfile: str) -> None:
        """Take the first reading now; the second once the server in ``pidfile`` exits."""
        if self.started is None:
            self.started = self.host.start(self.script)
        started = self.started
        if started is None:
            return
        try:
            started.send(pidfile + "\n")
            self.fired = True
        except NetrunError:
            self.abandon()

    def collect(self, timeout: float = 10.0) -> list[counters.Reading]:
        """Its readings (none when it could not run or did not finish in ``timeout``)."""
        started, self.started = self.started, None
        if started is None or not self.fired:
            if started is not None:
                started.abandon()
            return []
        try:
            _exited, out, _err = started.wait(timeout)
        except NetrunError:
            started.abandon()
            return []
        return readings(out)

    def abandon(self) -> None:
        """Not needed (the client could not be fired): its stdin ends, it exits."""
        started, self.started = self.started, None
        if started is not None:
            started.abandon()
