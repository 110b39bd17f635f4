"""Undo records: what a run changed on a host, written down on that host before the change.

Whatever a run changes (a mode's sysctl, file or process, a test's MTU) it first records
how to undo, as one small sh file in the run's folder on the host (``<workdir>/undo/``),
and in the controller's run journal, through one UndoStack: each test's mode holds one for
its changes, the run's MTU settings one for the MTUs (they outlive a test). Teardown runs a
stack's records in reverse and deletes each one it ran; a record still there when the run
ends (the run was SIGKILLed, the controller lost power) is run by the next run's stale
sweep or by ``netrun cleanup``,
newest first, before the folder is removed. The record is written first, so there is no
moment when a change exists that nothing knows how to undo.
"""

from __future__ import annotations

import functools
import itertools
import shlex
import threading
import time
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from typing import Protocol

from netrun.errors import NetrunError
from netrun.hosts import proc
from netrun.hosts.group import in_parallel
from netrun.hosts.host import Host

FOLDER = "undo"
_counter = itertools.count()
_lock = threading.Lock()


@dataclass(frozen=True)
class Record:
    """One undo step on one host: where its file is, and the command it runs."""

    host: str
    path: str
    command: str
    what: str
    #: Run with sudo (as the change was); a sweep runs it with the sweep's privilege.
    sudo: bool = False


class Journaled(Protocol):
    """What an undo stack needs of its run (netrun.modes.base.RunContext is one): where the
    run keeps its files on a host, and the journal's hooks, told of each record before its
    change is made and once it has run."""

    @property
    def recorded(self) -> Callable[[Host, Record], None]: ...
    @property
    def undone(self) -> Callable[[Host, Record], None]: ...

    def workdir(self, host: Host) -> str: ...


class UndoStack:
    """Undo records of changes, oldest first; ``run`` runs them newest first on each host.

    A record is written on its host (and noted in the journal) before its change is made:
    ``guarded`` is the sh of both in one round trip, the change only if the record was
    written. A record that fails or does not finish stays on its host, for the run's final
    sweep (or the next run's, or ``netrun cleanup``) to run again.
    """

    def __init__(self, ctx: Journaled) -> None:
        self.ctx = ctx
        self._held: list[tuple[Host, Record]] = []
        self._lock = threading.Lock()  # a run's stack serves its parallel tests

    def record(
        self, host: Host, undo: str, *, what: str, sudo: bool = False, hold: bool = True
    ) -> Record:
        """A new record of ``undo`` on ``host``, noted in the journal; held by this stack
        unless ``hold`` is False (left to the run's final sweep)."""
        record = Record(host.name, new_path(self.ctx.workdir(host)), undo, what, sudo)
        self.ctx.recorded(host, record)
        if hold:
            self.push(host, record)
        return record

    @staticmethod
    def guarded(record: Record, command: str) -> str:
        """sh writing ``record``, then running ``command`` only if the record was written."""
        return write_script(record) + " && {\n" + command + "\n}"

    def push(self, host: Host, record: Record) -> None:
        with self._lock:
            self._held.append((host, record))

    def extend(self, items: Iterable[tuple[Host, Record]]) -> None:
        with self._lock:
            self._held.extend(items)

    def pop(self) -> tuple[Host, Record]:
        """The newest record, no longer held here (its owner runs it: a kept container's)."""
        with self._lock:
            return self._held.pop()

    def __len__(self) -> int:
        return len(self._held)

    def run(self, only: Collection[Record] | None = None) -> list[str]:
        """Run the held records (``only`` these), newest first on each host, the hosts at
        once; none is held after. The problems, one line each."""
        going: list[tuple[Host, Record]] = []
        kept: list[tuple[Host, Record]] = []
        with self._lock:
            for item in self._held:
                (going if only is None or item[1] in only else kept).append(item)
            self._held = kept
        by_host: dict[str, list[tuple[Host, Record]]] = {}
        for host, record in reversed(going):
            by_host.setdefault(host.name, []).append((host, record))
        problems: dict[str, list[str]] = {name: [] for name in by_host}

        def run(records: list[tuple[Host, Record]]) -> None:
            for host, record in records:
                problem = self._run_one(host, record)
                if problem:
                    problems[host.name].append(problem)

        tasks = {name: functools.partial(run, records) for name, records in by_host.items()}
        most = max((len(r) for r in by_host.values()), default=1)
        late = in_parallel(tasks, deadline=60 * most + 5).failed
        for name, err in late.items():  # the records stay on the host for the sweep
            problems[name].append(f"{name}: undo did not finish: {err}")
        return [p for name in by_host for p in problems[name]]

    def _run_one(self, host: Host, record: Record) -> str | None:
        try:
            res = host.run(run_script(record), timeout=60, sudo=record.sudo, check=False)
        except NetrunError as exc:  # the record stays on the host for the sweep
            return f"{host.name}: undo of {record.what} failed: {exc}"
        if res.ok:
            self.ctx.undone(host, record)
            return None
        return (
            f"{host.name}: undo of {record.what} failed (exit {res.exited}): "
            f"{(res.stderr or res.stdout).strip()[-200:]}"
        )


def new_path(workdir: str) -> str:
    """A record file name that sorts after every earlier one of this run (newest last)."""
    with _lock:
        seq = next(_counter)
    return f"{workdir}/{FOLDER}/{time.time_ns():020d}-{seq:06d}.sh"


def write_script(record: Record) -> str:
    """sh that writes the record (atomically: a half-written undo must never run)."""
    q = shlex.quote
    folder = record.path.rsplit("/", 1)[0]
    what = " ".join(record.what.split())  # one comment line: a newline would start a command
    body = f"# {what}\n{record.command}\n"
    return (
        f"mkdir -p {q(folder)} && printf %s {q(body)} > {q(record.path + '.new')} && "
        f"mv {q(record.path + '.new')} {q(record.path)}"
    )


def run_script(record: Record) -> str:
    """sh that runs one record and deletes it once it worked (a record that is gone has
    already run; one that failed stays for the run's final sweep to try again)."""
    p = shlex.quote(record.path)
    return f"if [ -f {p} ]; then sh {p} && rm -f {p}; fi"


def sweep_script(folder_var: str = '"$d"') -> str:
    """sh (for cleanup_script's loop over run folders) running every record left, newest
    first, each echoed as "undone: <what>" (or "undo failed: <what>": the folder, and so
    the record, is removed next whatever happens)."""
    return (
        f"for u in $(ls -r {folder_var}/{FOLDER} 2>/dev/null); do "
        f'u={folder_var}/{FOLDER}/"$u"; case "$u" in *.sh) ;; *) continue;; esac; '
        'w=$(sed -n "1s/^# //p" "$u"); '
        'if sh "$u" >/dev/null 2>&1; then echo "undone: $w"; else echo "undo failed: $w"; fi; '
        'rm -f "$u"; done; '
    )


def kill_recorded(pidfile: str, grace: float = 2, *, group: bool = False) -> str:
    """An undo that stops the process whose pid, kernel start time and boot id were saved
    in ``pidfile`` (``pid start boot``; files of older versions lack the boot): a pid
    reused by another process, one of another boot, or one in another network namespace
    (another host on this kernel: netrun.hosts.proc.here) is left alone.

    With ``group``, the whole process group that pid leads is stopped too (a server whose
    forked children serve on when it is killed, started under ``timeout``, which leads its
    own group): signalled with it, and killed after the grace if anything of it is left.
    The group is named as ``kill -s SIG -- -PGID``, the form dash's kill also takes (it
    refuses ``kill -TERM -- -PGID``, and a record runs under ``sh``)."""
    f = shlex.quote(pidfile)
    signal = 'kill -s TERM -- "-$p" 2>/dev/null; ' if group else ""
    signal += 'kill -TERM "$p" 2>/dev/null; kill -CONT "$p" 2>/dev/null; '
    last = 'kill -s KILL -- "-$p" 2>/dev/null; ' if group else ""
    return (
        f"set -- $(cat {f} 2>/dev/null); p=$1; st=$2; nrb=$3; "
        '[ -n "$p" ] && [ -n "$st" ] || exit 0; '
        f'[ -z "$nrb" ] || [ "$nrb" = "$({proc.READ_BOOT_ID})" ] || exit 0; '
        f"{proc.here()} || exit 0; "
        f'[ "$({proc.start_time()})" = "$st" ] || exit 0; '
        + signal
        + proc.wait_gone(grace, then_kill="-KILL")
        + last
        + "true"
    )


def save_pid(pidfile: str, pid_expr: str = "$!") -> str:
    """sh saving a started process's pid, kernel start time and boot id, for
    ``kill_recorded``."""
    f = shlex.quote(pidfile)
    return f'p={pid_expr}; echo "$p $({proc.start_time()}) $({proc.READ_BOOT_ID})" > {f}'
