"""The kernel's counters on both ends of an iperf3 measurement, at no extra round trip.

netrun.hosts.counters builds the reading. The client end's two readings ride on the
client's own command (netrun.tools.iperf3.run: just before iperf3 starts, just after it
ends, printed after its JSON behind ``MARK``). The server end's ride on the commands the
server host gets anyway (netrun.tools.iperf3.onhost): the reading before on its server's
start (the probe's, netrun.tools.savers.prestart; the test's own; or a start ahead,
netrun.tools.savers.pipeline, that waits for the test before on that host to end there,
so that test's reading after is this one's before), the reading after on the next test's
start ahead on that host or on the host's early sweep (netrun.tools.savers.sweep), each of
which waits for the server to exit. Where neither rides (the next test's server is on
another host, a start ahead with nothing to wait for), ``ServerReadings`` is a command of
its own beside the client, as every test had before. ``analysis``
(netrun.tools.iperf3.loss) says where datagrams were lost.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
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
    """The server end's readings where no command rides them: started now (on the
    server's host), fired with the server's pid file, collected after the client."""

    def __init__(self, host: Host, read: str, bound: float, *, before: bool = True) -> None:
        """``read``: sh printing one reading (counters.script); ``bound``: the longest
        it waits for the server to exit (the client's deadline and margin); ``before``:
        take a reading when fired, too (else only the one after)."""
        self.host = host
        wait = proc.wait_gone(bound, POLL_S)
        first = f"{read}; " if before else ""
        pid = proc.read_pid('"$pidfile"')
        script = f'read -r pidfile || exit 0; [ -n "$pidfile" ] || exit 0; {first}{pid}{wait}{read}'
        self.script = script
        #: None when the host could not start it (``fire`` tries again)
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


class ServerEnd:
    """Where one measurement's server-end readings come from: the one before from its
    server's start (``said``: what that start printed), the one after from whatever
    waits for the server on its host (``after_from``), and a ServerReadings command for
    whichever of them nothing carries."""

    def __init__(self, host: Host, read: str, bound: float, pidfile: str, said: str) -> None:
        """``read``: sh printing one reading; ``bound``: the longest a wait for the
        server to exit takes; ``pidfile``: the server's."""
        self.host = host
        self.read = read
        self.bound = bound
        self.pidfile = pidfile
        self.before = counters.parse(said) if said else None
        self._after: Callable[[], str] | None = None
        self._own: ServerReadings | None = None

    def before_client(self) -> None:
        """Just before the client: where the start carried no reading, take one now."""
        if self.before is None:
            self._own = self._start(before=True)

    def after_from(self, source: Callable[[], str]) -> None:
        """The reading after rides on a command under way; ``source`` waits for its
        output."""
        self._after = source

    def otherwise(self) -> None:
        """While the client runs: where nothing carries the reading after, a command of
        its own takes it."""
        if self._after is None and self._own is None:
            self._own = self._start(before=False)

    def _start(self, *, before: bool) -> ServerReadings:
        own = ServerReadings(self.host, self.read, self.bound, before=before)
        own.fire(self.pidfile)
        return own

    def collect(self) -> tuple[counters.Reading | None, counters.Reading | None]:
        """(before, after) once the test ended; None for a reading that was not taken."""
        before = self.before
        if self._own is not None:
            found = self._own.collect()
            if before is None:
                return (found[0] if found else None), (found[1] if len(found) > 1 else None)
            return before, (found[-1] if found else None)
        text = self._after() if self._after is not None else ""
        return before, counters.parse(text)

    def abandon(self) -> None:
        if self._own is not None:
            self._own.abandon()


def pair(found: list[counters.Reading]) -> tuple[counters.Reading | None, counters.Reading | None]:
    """(before, after) of the readings a command printed (``split``)."""
    return (found[0] if found else None), (found[1] if len(found) > 1 else None)
