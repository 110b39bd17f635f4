"""Saver.EARLY_SWEEP: each host's last measurement sweeps the host: the run's final sweep,
sent while the host's last test still runs (bare metal and container modes; the run sets
it up: netrun.tools.savers.choice).

A run ends by sweeping every host it used (its run folder, recorded servers, undo
records): one more round trip on each host after the last test, on the critical path.
When the run is bare metal only (no MTU change, no container: nothing to undo or
remove but iperf3's pid and log files and the run folder), each host's last
measurement ends with a sweep of its own: on the client host it follows the client in
the same command; on the server host it is sent as the client starts and waits
(bounded) for the one-shot server to exit, then kills it if it did not and removes its
files. Either then removes the run folder, which works only if nothing else is left in
it. The run's end skips the hosts whose early sweep worked and that ran nothing after
it; any other host (a failure, an interrupt, a folder with something left in it) gets
the usual final sweep. Two inventory names of one host (one kernel, one network
namespace: the probe tells) are never swept early: each one's sweep acts on the folders
and the lease of that host (netrun.cleanup.owner.mine_test, netrun.hosts.lease), so the
first name's would end the second's while its tests run. Hosts that only share a folder
(a lab's namespaces in one machine's /tmp, NFS homes) are swept early like any other:
each has a run folder of its own, and a sweep acts only on its own host's. A host whose
probe could not tell is left to the final sweep. The next run's sweep still finds what a
killed run left. Sweeping twice is harmless: the scripts remove only what exists.
"""

from __future__ import annotations

import shlex
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from netrun.cleanup import owner
from netrun.errors import NetrunError
from netrun.hosts import proc

if TYPE_CHECKING:
    from netrun.core.spec import TestSpec
    from netrun.hosts.host import Host
    from netrun.hosts.transport import Started

#: Marks the probe's line that says which host it is: boot id and network namespace (``note``).
IDENTITY = "==netrun:host-id=="
#: Follows the reading in the server host's early sweep: the measurement reads up to it.
READ = "==netrun:read=="
#: How often the server host's early sweep looks whether the server has exited.
POLL_S = 0.02


class EarlySweep:
    """Which measurement is each host's last, and which hosts' early sweep worked."""

    def __init__(
        self, tests: Sequence[TestSpec], workdir: Callable[[Host], str], release: str = ""
    ) -> None:
        """``tests`` in the order they run; ``workdir`` a host's run folder; ``release``
        the sh that ends the run's lease on a host (netrun.hosts.lease), once it is swept."""
        self.workdir = workdir
        self.release = release
        #: host name -> (test name, repeat) of its last measurement
        self.last: dict[str, tuple[str, int]] = {}
        for test in tests:
            for name in test.hosts:
                self.last[name] = (test.name, test.repeat)
        #: host name -> its early sweep: the host's command count when it was sent, and
        #: how to learn whether it worked
        self._sent: dict[str, tuple[int, Callable[[], bool]]] = {}
        #: host name -> "boot id, network namespace" of the host ("": the probe could
        #: not tell)
        self.identities: dict[str, str] = {}
        self._lock = threading.Lock()

    def probe_script(self, host: Host) -> str:
        """What the host's probe adds: which host it is (its kernel's boot id and its
        network namespace), to find two inventory names of one host."""
        return f"echo {IDENTITY}; {proc.READ_HOST_ID}"

    def note(self, host: Host, output: str) -> None:
        """Keep what ``probe_script`` printed (nothing usable: the host is not swept early)."""
        _, found, rest = output.partition(IDENTITY + "\n")
        line = rest.splitlines()[0].strip() if found and rest.strip() else ""
        self.identities[host.name] = line if len(line.split()) == 2 else ""

    def is_last(self, host: Host, test: TestSpec, repeat: int, *, probed: bool = True) -> bool:
        """Whether this is the host's last measurement and the host can sweep itself:
        the probe told which host it is and no other name of the run is that host (its
        sweep would end that name's folders and lease too). With ``probed`` False
        (before the probes answered), only the first part."""
        if self.last.get(host.name) != (test.name, repeat):
            return False
        if not probed:
            return True
        me = self.identities.get(host.name)
        return bool(me) and sum(i == me for i in self.identities.values()) == 1

    def folder_gone(self, host: Host) -> str:
        """Remove the host's run folder if nothing but its marks (netrun.cleanup.owner: owner and
        host) is left in it, then end the run's lease there; fails if it stays (the marks
        and the lease stay too, so a cleanup spares it and the final sweep ends both)."""
        d = shlex.quote(self.workdir(host))
        marks = " ".join(
            shlex.quote(f"{self.workdir(host)}/{f}") for f in (owner.HOST_FILE, owner.FILE)
        )
        left = f"$(ls -A {d} 2>/dev/null | tr '\\n' ' ')"
        only = f'"{owner.HOST_FILE} {owner.FILE} "|"{owner.FILE} "'
        gone = (
            f'[ ! -e {d} ] || {{ case "{left}" in {only}) '
            f"rm -f {marks} && rmdir {d};; *) false;; esac; }}"
        )
        return f"{gone} && {{ {self.release}; }}" if self.release else gone

    def sent(self, host: Host, worked: Callable[[], bool]) -> None:
        """Note the host's early sweep; ``worked`` (may wait for it) says if it ran."""
        with self._lock:
            self._sent[host.name] = (host.commands, worked)

    def server_sweep(
        self, host: Host, pidfile: str, logfile: str | None, lifetime: float, read: str = ""
    ) -> SweepWait | None:
        """Start the server host's sweep: it waits up to ``lifetime`` s for the server in
        ``pidfile`` to exit, runs ``read`` (sh printing the host's counters: the server
        end's reading after, netrun.tools.iperf3.readings), kills the server if it did not
        exit, then sweeps. None: not started."""
        wait = proc.read_pid(pidfile) + proc.wait_gone(lifetime, POLL_S)
        stop = proc.kill_script(pidfile) + (f"; rm -f {shlex.quote(logfile)}" if logfile else "")
        reading = f"{{ {read}; }} 2>/dev/null; echo {READ}; " if read else ""
        # Host.start runs what waits on the host's next command (earlier servers' stops)
        # first: then nothing of this run but this server is left on the host.
        script = f"{wait}{reading}{{ {stop}; }} >/dev/null 2>&1; {self.folder_gone(host)}"
        started = host.start(script)
        if started is None:
            return None
        try:
            started.send("")
        except NetrunError:
            started.abandon()
            return None
        waiting = SweepWait(started, lifetime + 60)
        self.sent(host, waiting.worked)
        return waiting

    def done(self, host: Host) -> bool:
        """True when the host's early sweep worked and nothing ran there after it."""
        with self._lock:
            found = self._sent.pop(host.name, None)
        if found is None:
            return False
        count, worked = found
        # A later command (a failed test's stop, a diagnosis) means a final sweep anyway.
        return host.commands == count and worked()


class SweepWait:
    """The server host's early sweep under way: waited for once, by whoever asks first
    (the measurement for its reading, the run's end for whether it worked)."""

    def __init__(self, started: Started, timeout: float) -> None:
        self.started = started
        self.timeout = timeout
        self._lock = threading.Lock()
        self._result: tuple[int, str] | None = None

    def result(self) -> tuple[int, str]:
        """(exit status, stdout); status -1 when it could not be read."""
        with self._lock:
            if self._result is None:
                try:
                    exited, out, _err = self.started.wait(self.timeout)
                    self._result = (exited, out)
                except NetrunError:
                    self._result = (-1, "")
            return self._result

    def worked(self) -> bool:
        return self.result()[0] == 0

    def output(self) -> str:
        """Its stdout up to the reading's end (READ): the sweep's own tail, after it, is
        left to ``result``."""
        with self._lock:
            if self._result is not None:
                return self._result[1]
            try:
                return self.started.read_until(READ, self.timeout)
            except NetrunError:
                return ""
