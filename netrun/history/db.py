"""The run history: every results.json kept in one SQLite file, for trends and baselines.

A nightly cron job compares tonight's run with earlier ones; results folders get cleaned up,
moved or live on other machines, so each run is stored whole (the results document as JSON,
to render it again) plus one row per sample and per host, for queries without parsing JSON.
The schema is versioned (PRAGMA user_version, mirrored in ``meta``) and only migrated
forward, inside one transaction; a file that is not ours is never written, moved or deleted.
Runs at once (on different hosts: netrun.hosts.lease) store themselves at once: the file is
in write-ahead-log mode (readers never wait for a writer), and each writer waits its turn
(``BUSY_TIMEOUT``) for one short transaction.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from netrun.core import metrics
from netrun.core.spec import DEFAULT_TOOL as DEFAULT
from netrun.errors import InputError, NetrunError
from netrun.history import tables as historyschema
from netrun.history.tables import (
    MIGRATIONS,
    SCHEMA_VERSION,
    create_v1,
)
from netrun.results import store as results
from netrun.results.stats import Summary, ok_values, summarize
from netrun.tools import form, get_tool

METRIC_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
#: Seconds a writer waits for another one (runs of several controllers or labs ending
#: at once each store themselves) before saying "locked": each write is one short
#: transaction, so this is only reached when something holds the file far longer.
BUSY_TIMEOUT = 10.0

RUN_FIELDS = ("run_id", "scenario", "started", "finished", "status", "netrun_version", "run_dir")


class HistoryError(NetrunError):
    """The history database cannot be used (corrupt, locked, too new, unwritable)."""


class HistoryLockedError(HistoryError):
    """Another process holds a lock on the database: passing, unlike a corrupt file."""


class UnknownRunError(HistoryError, InputError):
    """A run id (or prefix) that matches no stored run, or more than one."""


def default_path() -> Path:
    """$XDG_DATA_HOME/netrun/history.sqlite, else ~/.local/share/netrun/history.sqlite."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "netrun" / "history.sqlite"


@dataclass(frozen=True)
class RunRow:
    """One stored run, as ``netrun history`` lists it."""

    run_id: str
    scenario: str
    started: str | None
    finished: str | None
    status: str | None
    netrun_version: str | None
    run_dir: str | None
    samples: int
    failed: int
    tests: tuple[str, ...]


class History:
    """An open history database; use ``History.open(path)`` and ``close()`` (or ``with``)."""

    def __init__(self, path: Path, db: sqlite3.Connection) -> None:
        self.path = path
        self.db = db

    # -- opening ----------------------------------------------------------------------------
    @classmethod
    def open(cls, path: Path | str | None = None, timeout: float = BUSY_TIMEOUT) -> History:
        """Open (creating or migrating) the database at ``path`` (default: ``default_path``)."""
        path = Path(path) if path is not None else default_path()
        if path.is_dir():
            raise HistoryError(f"{path}: is a folder; pass the database file with --db")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(path, timeout=timeout, isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            raise HistoryError(f"{path}: cannot open the history database ({exc})") from None
        history = cls(path, db)
        try:
            with history._errors():
                db.execute("PRAGMA foreign_keys = ON")
                history._prepare()
                history._wal()
        except BaseException:
            db.close()
            raise
        return history

    def _prepare(self) -> None:
        """Check the file is ours; create or migrate it in one write transaction if needed."""
        if self._check(self.db) == SCHEMA_VERSION:
            return  # the common case takes no write lock, so readers never wait for writers

        def upgrade(db: sqlite3.Connection) -> None:
            version = self._check(db)  # again: another process may have migrated meanwhile
            if version == 0:
                create_v1(db)
                version = 1
            for target in range(version + 1, SCHEMA_VERSION + 1):
                MIGRATIONS[target](db)
                self.set_version(db, target)

        self._transaction(upgrade)

    def _check(self, db: sqlite3.Connection) -> int:
        """The schema version (0 for a new, empty file); raise if the file is not ours.

        Both reads are one read transaction: read apart, another process creating the file
        could commit between them (version 0, then its tables), a file "not ours"."""
        own = not db.in_transaction
        if own:
            db.execute("BEGIN")
        try:
            version = int(db.execute("PRAGMA user_version").fetchone()[0])
            tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master")}
        finally:
            if own:
                db.execute("COMMIT")
        if version == 0 and not tables:
            return 0
        if version == 0 or not {"meta", "runs", "samples", "hosts"} <= tables:
            raise self._not_ours()
        if version > SCHEMA_VERSION:
            raise HistoryError(
                f"{self.path}: history schema v{version} is newer than this netrun knows "
                f"(v{SCHEMA_VERSION}); upgrade netrun or pick another database with --db"
            )
        return version

    set_version = staticmethod(historyschema.set_version)

    def _wal(self) -> None:
        """Put the file in write-ahead-log mode once (it stays so), for readers and a
        writer at once. Best effort: a file another process holds, or on a read-only
        folder, keeps its rollback journal, where writers still take turns."""
        mode = str(self.db.execute("PRAGMA journal_mode").fetchone()[0])
        if mode.lower() in ("wal", "memory"):
            return
        with contextlib.suppress(sqlite3.OperationalError):
            self.db.execute("PRAGMA journal_mode = WAL")

    def _not_ours(self) -> HistoryError:
        return HistoryError(
            f"{self.path}: not a netrun history database (corrupt or another file); "
            "move it away or pick another with --db"
        )

    def _transaction(self, work: Callable[[sqlite3.Connection], object]) -> None:
        """Run ``work`` in one write transaction (BEGIN IMMEDIATE: fail fast when locked)."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            work(self.db)
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        """Turn sqlite3 errors into one-line HistoryErrors naming the file and the fix."""
        try:
            yield
        except sqlite3.Error as exc:
            text = str(exc)
            if "locked" in text or "busy" in text:
                raise HistoryLockedError(
                    f"{self.path}: database is locked by another process; retry later"
                ) from None
            not_db = not isinstance(exc, sqlite3.OperationalError)
            if not_db or "no such table" in text or "no such column" in text:
                raise self._not_ours() from None
            raise HistoryError(f"{self.path}: history database error: {text}") from None

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> History:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing ----------------------------------------------------------------------------
    def add_run(self, doc: dict[str, Any], run_dir: Path | str | None = None) -> None:
        """Store one run; storing the same run_id again replaces it (so it is idempotent)."""
        run_id, scenario = doc.get("run_id"), doc.get("scenario")
        if not isinstance(run_id, str) or not run_id or not isinstance(scenario, str):
            where = run_dir or "results document"
            raise HistoryError(f"{where}: not a netrun results document (no run_id or scenario)")

        with self._errors():
            self._transaction(
                lambda db: historyschema.write_run(db, run_id, scenario, doc, run_dir)
            )

    def has_run(self, run_id: str) -> bool:
        with self._errors():
            row = self.db.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        return row is not None

    def import_dir(self, path: Path | str, problems: list[str] | None = None) -> list[str]:
        """Store every results.json under ``path`` not stored yet; return the new run ids.

        Unreadable files are skipped and described in ``problems`` when a list is given.
        """
        root = Path(path)
        if not root.is_dir():
            raise InputError(f"{root}: no such folder to import results from")
        added: list[str] = []
        for found in sorted(root.rglob(results.RESULTS)):
            try:
                doc = results.load(found)
            except NetrunError as exc:
                if problems is not None:
                    problems.append(str(exc))
                continue
            run_id = doc.get("run_id")
            if not isinstance(run_id, str) or self.has_run(run_id):
                continue
            self.add_run(doc, found.parent)
            added.append(run_id)
        return added

    # -- reading ----------------------------------------------------------------------------
    def runs(
        self, scenario: str | None = None, test: str | None = None, last: int | None = None
    ) -> list[RunRow]:
        """Stored runs, oldest first; ``last`` keeps only the newest N."""
        where: list[str] = []
        args: list[Any] = []
        if scenario is not None:
            where.append("r.scenario = ?")
            args.append(scenario)
        if test is not None:
            where.append(
                "EXISTS (SELECT 1 FROM samples t WHERE t.run_id = r.run_id AND t.test = ?)"
            )
            args.append(test)
        sql = (
            f"SELECT {', '.join('r.' + f for f in RUN_FIELDS)} FROM runs r"
            + (" WHERE " + " AND ".join(where) if where else "")
            + " ORDER BY r.started DESC, r.rowid DESC"
            + (" LIMIT ?" if last is not None else "")
        )
        if last is not None:
            args.append(max(0, int(last)))
        with self._errors():
            rows = self.db.execute(sql, args).fetchall()
            out = [self._row(r) for r in rows]
        out.reverse()
        return out

    def _row(self, r: tuple[Any, ...]) -> RunRow:
        counts = self.db.execute(
            "SELECT COUNT(*), COALESCE(SUM(status != 'ok'), 0) FROM samples WHERE run_id = ?",
            (r[0],),
        ).fetchone()
        names = self.db.execute(
            "SELECT test FROM samples WHERE run_id = ? GROUP BY test ORDER BY MIN(rowid)", (r[0],)
        ).fetchall()
        base = dict(zip(RUN_FIELDS, r, strict=False))
        return RunRow(**base, samples=counts[0], failed=counts[1], tests=tuple(n[0] for n in names))

    def resolve_id(self, run_id_or_prefix: str) -> str:
        """The full run id for an id or a unique prefix of one."""
        key = run_id_or_prefix.strip()
        with self._errors():
            rows = self.db.execute(
                "SELECT run_id FROM runs WHERE run_id = ? OR substr(run_id, 1, ?) = ? "
                "ORDER BY run_id = ? DESC, started",
                (key, len(key), key, key),
            ).fetchall()
        if key and rows and (rows[0][0] == key or len(rows) == 1):
            return str(rows[0][0])
        if not key or not rows:
            raise UnknownRunError(
                f"{self.path}: no stored run matches '{key}'; list runs with `netrun history`"
            )
        shown = ", ".join(r[0] for r in rows[:5])
        raise UnknownRunError(
            f"{self.path}: run id prefix '{key}' matches {len(rows)} runs ({shown}); "
            "give more characters"
        )

    def get_run(self, run_id_or_prefix: str) -> dict[str, Any]:
        """The stored results document of one run (an id or a unique prefix)."""
        run_id = self.resolve_id(run_id_or_prefix)
        with self._errors():
            row = self.db.execute("SELECT document FROM runs WHERE run_id = ?", (run_id,))
            document = row.fetchone()[0]
        doc: dict[str, Any] = json.loads(document)
        return doc

    def last_run(self, scenario: str, before: str | None = None) -> RunRow | None:
        """The newest stored run of ``scenario``, or the newest one before run ``before``.

        ``before`` is a run id; that run is never returned. When it is stored, only runs
        stored earlier (by start time, then insertion order) count.
        """
        rows = self.runs(scenario=scenario)
        if before is not None:
            ids = [r.run_id for r in rows]
            if before in ids:
                rows = rows[: ids.index(before)]
            rows = [r for r in rows if r.run_id != before]
        return rows[-1] if rows else None

    def series(
        self, scenario: str, test: str, last: int | None = None, metric: str = "throughput_bps"
    ) -> list[tuple[str, Summary]]:
        """(started, Summary of ``metric``) per stored run of one test, oldest first.

        Runs where the test has no OK sample are left out: a trend of failures is a gap.
        """
        if not isinstance(metric, str) or not METRIC_RE.fullmatch(metric):
            raise InputError(f"unknown metric {metric[:40]!r}: a metric name is a word such as "
                             "throughput_bps or rtt_avg_ms")  # fmt: skip
        out: list[tuple[str, Summary]] = []
        for row in self.runs(scenario=scenario, test=test, last=last):
            summary = self.series_of(row.run_id, test, metric)
            if summary is not None:
                out.append((row.started or "", summary))
        return out

    def series_of(self, run_id: str, test: str, metric: str) -> Summary | None:
        """The Summary of ``metric`` over one run's ok samples of ``test``; None: none."""
        with self._errors():
            samples = [
                {"status": status, metric: value}
                for status, value in self.db.execute(
                    "SELECT status, value FROM metrics "
                    "WHERE run_id = ? AND test = ? AND metric = ? ORDER BY sample",
                    (run_id, test, metric),
                )
            ]
        return summarize(ok_values(samples, metric))

    def signatures(self, run_id: str) -> dict[str, dict[str, Any]]:
        """Per test of run ``run_id``, what its first sample says it measured (mode, tool,
        hosts, options): one pass over the stored document, its samples' series left in it."""
        out: dict[str, dict[str, Any]] = {}
        with self._errors():
            rows = self.db.execute(
                "SELECT json_extract(t.value, '$.name'), json_extract(t.value, '$.mode'), "
                "json_extract(t.value, '$.tool'), json_extract(t.value, '$.server'), "
                "json_extract(t.value, '$.client'), json_extract(t.value, '$.hosts'), "
                "json_extract(t.value, '$.options') "
                "FROM runs r, json_each(r.document, '$.tests') t WHERE r.run_id = ? "
                "AND json_type(t.value) = 'object' ORDER BY t.key",
                (run_id,),
            ).fetchall()
        for name, mode, tool, server, client, hosts, options in rows:
            if name is None or str(name) in out:
                continue
            sample = {"mode": mode, "tool": tool, "server": server, "client": client}
            for key, text in (("hosts", hosts), ("options", options)):
                found = json.loads(text) if isinstance(text, str) else None
                if isinstance(found, dict):
                    sample[key] = found
            out[str(name)] = sample
        return out

    def headline(self, scenario: str, test: str) -> metrics.Metric:
        """The metric a trend of ``test`` follows: its tool's headline (throughput for
        iperf3, rtt_avg_ms for ping), from the newest stored sample."""

        with self._errors():
            row = self.db.execute(
                "SELECT s.tool, s.run_id FROM samples s JOIN runs r ON r.run_id = s.run_id "
                "WHERE r.scenario = ? AND s.test = ? ORDER BY r.started DESC LIMIT 1",
                (scenario, test),
            ).fetchone()
        try:
            if row and (found := self.signatures(str(row[1])).get(test)):  # its load: form
                return form.of_sample({**found, "tool": row[0] or DEFAULT}).headline()
            return get_tool(str(row[0] if row and row[0] else DEFAULT)).headline()
        except KeyError:  # a tool this netrun does not know
            return get_tool(DEFAULT).headline()

    def environment(self, run_id: str) -> list[dict[str, Any]]:
        """Per host facts of one run: kernel, iperf3 version, NIC speed/MTU/driver."""
        with self._errors():
            cur = self.db.execute("SELECT * FROM hosts WHERE run_id = ? ORDER BY host", (run_id,))
            names = [d[0] for d in cur.description]
            rows = cur.fetchall()
        return [dict(zip(names, r, strict=True)) for r in rows]

    def context(self, run_id: str) -> dict[str, dict[str, str]]:
        """host -> field -> text of one run's host context (netrun.results.context.flat);
        empty for runs stored before netrun read it."""
        found: dict[str, dict[str, str]] = {}
        with self._errors():
            for host, label, value in self.db.execute(
                "SELECT host, field, value FROM host_context WHERE run_id = ? ORDER BY host, rowid",
                (run_id,),
            ):
                found.setdefault(host, {})[label] = value
        return found
