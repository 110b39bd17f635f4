"""The next test's server and client, started while this test's client runs
(Saver.START_AHEAD; bare metal's).

In a bare-metal run, each test began with a round trip to start its server (and its
client's login) after the previous test ended (in a parallel run: after its hosts'
tests of the previous round ended). Now, late in each test's run,
the next test's server start script runs on its host and the next client is armed
(netrun.tools.iperf3.run.ArmedClient), as the run's first test has them ride on the probes
(netrun.tools.savers.prestart): the next test only has to give its client the port. In a
parallel run (netrun.run.rounds), a test of round k starts ahead the test of round k+1 whose server
is one of its hosts; that test still starts when both its hosts are free, and its
server lives until the longest test of round k could end, and its own. The early server
is idle (it listens, and takes a free port: the running one holds its own) and lives
long enough for both tests; it is started near the end of the running test, so its start
does not share the host's CPU with the measurement's first seconds. Its pid file is in
the run folder like any other: a test that never runs (a failure, an interrupt) leaves
it to the final sweep, and its armed client is abandoned.

Where the running test has a process on the next server's host (its server, or its
client), the start then waits for that process to end and reads the host's counters: the
running test's reading after on that host and the next test's reading before, in a
command sent anyway (netrun.tools.iperf3.readings). The running test collects it
(``reading_after``); its command ends with the running test, before the next one starts.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from netrun.errors import NetrunError
from netrun.hosts.shield import cleaning
from netrun.tools.savers import prestart

if TYPE_CHECKING:
    from netrun.core.spec import TestSpec
    from netrun.inventory.model import Inventory
    from netrun.tools.savers.state import Shares, Specced

#: How long before the running test's end the next server starts (its start round trip
#: and the host's login cost fit in it).
LEAD_S = 0.6


class Pipeline:
    """Which test comes next, and the background starts of the next servers."""

    def __init__(
        self,
        tests: Sequence[Specced],
        inventory: Inventory,
        ctx: Shares,
        rounds: Sequence[Sequence[Specced]] | None = None,
        *,
        plan: Callable[..., prestart.Prestart | None],
    ) -> None:
        """``tests`` in the order a sequential run runs them; or the ``rounds`` of a
        parallel run whose rounds run whole (each test at once with its round's); ``plan``
        gives a test's server start from its plan (netrun.modes.base.server_ahead: its
        tool's Tool.server_ahead)."""
        self.plan = plan
        self.inventory = inventory
        self.ctx = ctx
        #: test name -> the tests to start ahead while it runs
        self.next: dict[str, list[Specced]] = {}
        #: test name -> how long a server started ahead must wait for its test
        self.wait_s: dict[str, float] = {}
        if rounds is None:
            self.next = {t.spec.name: [n] for t, n in itertools.pairwise(tests)}
        else:
            for now, then in itertools.pairwise(rounds):
                # A test of the next round starts ahead with the test its server is in now
                # (no host is in two tests of a round: one test per server host).
                by_server = {t.spec.server: t for t in then}
                longest = max(t.spec.deadline for t in now)  # its client host may end last
                for test in (t.spec for t in now):
                    self.next[test.name] = [by_server[h] for h in test.hosts if h in by_server]
                    self.wait_s[test.name] = longest
        #: (server host, tag) -> the thread starting that server
        self._starting: dict[tuple[str, str], tuple[threading.Thread, threading.Event]] = {}
        #: names of the tests whose start was planned (once each)
        self._planned: set[str] = set()
        #: (running test, host) -> the start there that reads after it (its key in
        #: ``_starting``) and how long it may take (``reading_after``)
        self._after: dict[tuple[str, str], tuple[tuple[str, str], float]] = {}
        self._lock = threading.Lock()

    def ahead(
        self,
        test: TestSpec,
        repeat: int,
        deadline: float,
        running: Mapping[str, str] | None = None,
    ) -> set[str]:
        """The client of ``test`` (repeat ``repeat``, which may run ``deadline`` s) just
        started: start the next test's server and client in the background. ``running``:
        host name -> the pid file of ``test``'s process there; a start on such a host
        waits for it and reads the host's counters (``reading_after``). Returns the hosts
        whose start does."""
        covered: set[str] = set()
        if repeat != test.repeat:
            return covered
        for nxt in self.next.get(test.name, []):
            if not nxt.spec.value("port"):  # a fixed port is this test's until it ends
                after = running.get(nxt.spec.server) if running else None
                if self._ahead(test, nxt, self.wait_s.get(test.name, deadline), after):
                    covered.add(nxt.spec.server)
        return covered

    def _ahead(self, test: TestSpec, nxt: Specced, wait_s: float, after: str | None) -> bool:
        with self._lock:  # before any plan work: a busy-port retry of this test
            if nxt.spec.name in self._planned:
                return False
            self._planned.add(nxt.spec.name)
        pre = self.plan(nxt, self.inventory, self.ctx, lifetime=wait_s, after=after)
        if pre is None:
            return False
        delay = max(0.0, float(test.duration) - LEAD_S)
        cancel = threading.Event()
        thread = threading.Thread(
            target=self._start, args=(pre, delay, cancel), daemon=True, name="pipeline"
        )
        with self._lock:
            self._starting[(pre.host, pre.tag)] = (thread, cancel)
            if after is not None and pre.wait_s:
                self._after[(test.name, pre.host)] = ((pre.host, pre.tag), delay + 30 + pre.wait_s)
        thread.start()
        return after is not None and bool(pre.wait_s)

    def reading_after(self, test: TestSpec, host: str) -> str | None:
        """What the start that waited for ``test``'s process on ``host`` printed (the
        host's counters once that process ended; ``ahead`` said it would); None when it
        did not run."""
        with self._lock:
            planned = self._after.pop((test.name, host), None)
            found = self._starting.get(planned[0]) if planned is not None else None
        if planned is None:
            return None
        key, timeout = planned
        if found is not None:
            found[0].join(timeout)
        return self.ctx.ahead.prestarted.get(key)

    def _start(self, pre: prestart.Prestart, delay: float, cancel: threading.Event) -> None:
        # Not yet begun when its test starts (the test before it failed early), or the
        # run is interrupted: the test starts its own server.
        if cancel.wait(delay) or self.ctx.stopping.is_set():
            return
        try:
            pre.arm()
            # Never cut short by an interrupt (as cleanup is not): the script would go on
            # on the host and could start its server after the sweep looked for it;
            # run whole, it ends before the sweep (join_all), which then finds the server.
            with cleaning():
                host = self.inventory.get(pre.host)
                res = host.run(pre.script, timeout=30 + pre.wait_s, check=False)
        except NetrunError:  # the test starts its own, which reports what is wrong
            return
        pre.take(prestart.MARK + "\n" + res.stdout)

    def wait(self, host: str, tag: str, timeout: float = 40) -> None:
        """Let a server start already under way for (host, tag) finish first (one not
        begun yet is called off)."""
        with self._lock:
            found = self._starting.pop((host, tag), None)
        if found is not None:
            thread, cancel = found
            cancel.set()
            thread.join(timeout)

    def join_all(self, timeout: float = 40) -> None:
        """Wait for every start under way: the final sweep must come after them, or a
        server started after it would be left behind."""
        with self._lock:
            found, self._starting = list(self._starting.values()), {}
        for _thread, cancel in found:
            cancel.set()
        for thread, _cancel in found:
            thread.join(timeout)
