"""The run's one cleanup ledger: every undo record it holds, in scopes, each run journaled.

A run records how to undo a change on the host before making it (netrun.cleanup.undo: the
record's file in the run folder, and a line in the controller's run journal). The ledger
is where the controller holds those records until they run: one stack, oldest first,
each record in a scope (``Scope``):

- a test's (``Ledger.scope()``: a mode's ``undo_stack``), run newest first at the test's
  teardown;
- kept for the next test: ``Scope.pop_all`` moves a scope's records into a new scope,
  as ``contextlib.ExitStack.pop_all`` does, which a later test adopts (``Scope.absorb``:
  containers kept for the next test of the same pair, netrun.modes.docker.savers.keep) or runs;
- the run's (``Ledger.run``): records left for the run's final sweep (a ``per_run``
  change), and the run's MTU settings, which outlive their test (netrun.run.mtu).

Every path that runs a record journals it as undone (the journal's ``drop_undo``):
``Scope.run`` once the record's script worked on its host; ``Scope.defer`` (the record
rides on the host's next command: Host.defer) once that command has run; ``Ledger.swept``
once a host's sweep (netrun.cleanup.scripts.cleanup_script, which runs every record left
in the run folder, then removes the folder) has run there. A record whose script fails
stays on its host and in the journal, for the sweep; nothing else runs a record.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from netrun.cleanup import undo
from netrun.cleanup.journal import Journal
from netrun.cleanup.undo import Record
from netrun.errors import NetrunError
from netrun.hosts.group import in_parallel
from netrun.hosts.host import Host, folder_key, remote_tmp


@dataclass(eq=False)
class _Held:
    """One record on the ledger's stack, and the scope it is in now."""

    scope: Scope
    host: Host
    record: Record


class Ledger:
    """A run's undo records, oldest first, each in a scope; journaled as they are written
    and as they run (``journal`` None: a caller without a journal, e.g. a unit test)."""

    def __init__(self, run_id: str, journal: Journal | None = None) -> None:
        self.run_id = run_id
        self.journal = journal
        self._held: list[_Held] = []
        self._lock = threading.Lock()  # a run's parallel tests record and run at once
        #: The run's scope: records left for the final sweep, and the run's MTU settings.
        self.run = Scope(self, "run")

    def workdir(self, host: Host) -> str:
        """The run's private folder on a host (``netrun-<run id>-<folder key>``, one per
        host even where hosts share a remote tmp); removed at the end of the run."""
        return f"{remote_tmp(host).rstrip('/')}/netrun-{self.run_id}-{folder_key(host.name)}"

    def scope(self, name: str = "test") -> Scope:
        """A new, empty scope (a test's, or one kept for the next test)."""
        return Scope(self, name)

    def held(self, scope: Scope | None = None) -> list[tuple[str, Host, Record]]:
        """(scope name, host, record) of every record held (in ``scope``), oldest first."""
        with self._lock:
            return [
                (h.scope.name, h.host, h.record)
                for h in self._held
                if scope is None or h.scope is scope
            ]

    def swept(self, hosts: Iterable[str]) -> None:
        """The sweep of these hosts (by name) ran: it ran every record left in their run
        folders, whatever scope held it; each is journaled as undone and held no more."""
        names = set(hosts)
        with self._lock:
            going = [h for h in self._held if h.host.name in names]
            self._held = [h for h in self._held if h.host.name not in names]
        for item in going:
            self.undone(item.host, item.record)

    def recorded(self, host: Host, record: Record) -> None:
        if self.journal is not None:
            self.journal.note_undo(self.run_id, host, record.path, record.what)

    def undone(self, host: Host, record: Record) -> None:
        if self.journal is not None:
            self.journal.drop_undo(self.run_id, host, record.path)

    # -- the stack, for Scope ------------------------------------------------------------
    def _push(self, item: _Held) -> None:
        with self._lock:
            self._held.append(item)

    def _take(self, scope: Scope, only: Collection[Record] | None = None) -> list[_Held]:
        """Remove ``scope``'s records (``only`` these) from the stack; oldest first."""
        with self._lock:
            going = [
                h for h in self._held if h.scope is scope and (only is None or h.record in only)
            ]
            gone = {id(g) for g in going}
            self._held = [h for h in self._held if id(h) not in gone]
        return going

    def _move(self, source: Scope, target: Scope) -> None:
        with self._lock:
            for item in self._held:
                if item.scope is source:
                    item.scope = target


class Scope:
    """The records of one scope of a ledger (a test's, one kept for the next test, the
    run's): written and journaled through ``record``; ``run`` runs them newest first on
    each host, the hosts at once.

    A record is written on its host (and noted in the journal) before its change is made:
    ``undo.guarded`` is the sh of both in one round trip, the change only if the record was
    written. A record that fails or does not finish stays on its host, for the run's final
    sweep (or the next run's, or ``netrun cleanup``) to run again.
    """

    def __init__(self, ledger: Ledger, name: str) -> None:
        self.ledger = ledger
        self.name = name

    def record(self, host: Host, command: str, *, what: str, sudo: bool = False) -> Record:
        """A new record of ``command`` on ``host``, noted in the journal, held here."""
        record = Record(host.name, undo.new_path(self.ledger.workdir(host)), command, what, sudo)
        self.ledger.recorded(host, record)
        self.ledger._push(_Held(self, host, record))
        return record

    def records(self) -> list[tuple[Host, Record]]:
        """(host, record) held in this scope, oldest first."""
        return [(host, record) for name, host, record in self.ledger.held(self)]

    def __len__(self) -> int:
        return len(self.records())

    def pop_all(self, name: str | None = None) -> Scope:
        """A new scope holding every record of this one, which is left empty
        (contextlib.ExitStack.pop_all): records kept for the next test."""
        kept = Scope(self.ledger, name or self.name)
        self.ledger._move(self, kept)
        return kept

    def absorb(self, other: Scope) -> None:
        """Take every record of ``other`` (left empty) into this scope: a test adopting
        what an earlier one kept. The stack's order (the order they were written) stays."""
        self.ledger._move(other, self)

    def run(self, only: Collection[Record] | None = None) -> list[str]:
        """Run the records (``only`` these), newest first on each host, the hosts at
        once; none is held here after (one that failed or did not finish is the run's
        scope's: the final sweep runs it again). The problems, one line each."""
        by_host: dict[str, list[_Held]] = {}
        for item in reversed(self.ledger._take(self, only)):
            by_host.setdefault(item.host.name, []).append(item)
        problems: dict[str, list[str]] = {name: [] for name in by_host}

        ran: set[int] = set()

        def run(items: list[_Held]) -> None:
            for item in items:
                problem = self._run_one(item.host, item.record)
                if problem:
                    problems[item.host.name].append(problem)
                else:
                    ran.add(id(item))

        tasks = {name: functools.partial(run, items) for name, items in by_host.items()}
        most = max((len(r) for r in by_host.values()), default=1)
        late = in_parallel(tasks, deadline=60 * most + 5).failed
        for name, err in late.items():
            problems[name].append(f"{name}: undo did not finish: {err}")
        # what failed or did not finish stays on its host, for the run's final sweep
        for items in by_host.values():
            for item in reversed(items):
                if id(item) not in ran:
                    self.ledger._push(_Held(self.ledger.run, item.host, item.record))
        return [p for name in by_host for p in problems[name]]

    def _run_one(self, host: Host, record: Record) -> str | None:
        try:
            res = host.run(undo.run_script(record), timeout=60, sudo=record.sudo, check=False)
        except NetrunError as exc:  # the record stays on the host for the sweep
            return f"{host.name}: undo of {record.what} failed: {exc}"
        if res.ok:
            self.ledger.undone(host, record)
            return None
        return (
            f"{host.name}: undo of {record.what} failed (exit {res.exited}): "
            f"{(res.stderr or res.stdout).strip()[-200:]}"
        )

    def defer(self, then: Iterable[tuple[Host, str]] = ()) -> None:
        """Run the records on each host's next command (Host.defer), newest first, after
        ``then`` ((host, sh): e.g. removing the containers the records bound), rather
        than in a round trip of their own; none is held after. Each is journaled as undone
        once that command has run (one that failed stays on its host for the sweep)."""
        by_host: dict[str, tuple[Host, list[str], list[Record]]] = {}
        for host, script in then:
            by_host.setdefault(host.name, (host, [], []))[1].append(script)
        for item in reversed(self.ledger._take(self)):
            by_host.setdefault(item.host.name, (item.host, [], []))[2].append(item.record)
        for host, scripts, records in by_host.values():
            script = "; ".join([*scripts, *map(undo.run_script, records)])
            host.defer(script, sent=functools.partial(self._deferred_ran, host, records))

    def _deferred_ran(self, host: Host, records: list[Record]) -> None:
        for record in records:
            self.ledger.undone(host, record)
