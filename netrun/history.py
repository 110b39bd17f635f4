"""The run history: every results.json kept in one SQLite file, for trends and baselines.

A nightly cron job compares tonight's run with earlier ones; results folders get cleaned up,
moved or live on other machines, so each run is stored whole (the results document as JSON,
to render it again) plus one row per sample and per host, for queries without parsing JSON.
The schema is versioned (PRAGMA user_version, mirrored in ``meta``) and only migrated
forward, inside one transaction; a file that is not ours is never written, moved or deleted.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from netrun import metrics, results
from netrun.errors import InputError, NetrunError
from netrun.stats import Summary, ok_values, summarize

SCHEMA_VERSION = 3
METRIC_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
BUSY_TIMEOUT = 2.0  # seconds to wait for another writer before saying "locked"

# The first layout, kept verbatim: migrations start from it and tests build v1 files with it.
V1_DDL = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE runs (
    run_id TEXT PRIMARY KEY, scenario TEXT NOT NULL, started TEXT, finished TEXT,
    status TEXT, netrun_version TEXT, run_dir TEXT, document TEXT NOT NULL
);
CREATE TABLE hosts (
    run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE, host TEXT NOT NULL,
    kernel TEXT, iperf3_version TEXT, nic_iface TEXT, nic_speed_mbps REAL, nic_mtu INTEGER,
    nic_driver TEXT, PRIMARY KEY (run_id, host)
);
CREATE TABLE samples (
    run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE, test TEXT NOT NULL,
    mode TEXT, server TEXT, client TEXT, protocol TEXT, repeat INTEGER, status TEXT,
    error TEXT, throughput_bps REAL, sender_bps REAL, retransmits INTEGER, jitter_ms REAL,
    lost_percent REAL, lost_packets INTEGER, packets INTEGER, cpu_client_pct REAL,
    cpu_server_pct REAL, started TEXT, finished TEXT
);
"""


def _migrate_v2(db: sqlite3.Connection) -> None:
    """v2: container image ids and the time a run was stored; indexes for trend queries."""
    db.execute("ALTER TABLE runs ADD COLUMN image_ids TEXT")
    db.execute("ALTER TABLE runs ADD COLUMN stored_at TEXT")
    db.execute("CREATE INDEX runs_scenario_started ON runs(scenario, started)")
    db.execute("CREATE INDEX samples_run_test ON samples(run_id, test)")
    rows = db.execute("SELECT run_id, document FROM runs").fetchall()
    for run_id, document in rows:
        ids = image_ids(json.loads(document))
        db.execute("UPDATE runs SET image_ids = ? WHERE run_id = ?", (json.dumps(ids), run_id))


METRICS_DDL = """
CREATE TABLE metrics (
    run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE, test TEXT NOT NULL,
    sample INTEGER NOT NULL, repeat INTEGER, status TEXT, metric TEXT NOT NULL, value REAL
);
CREATE INDEX metrics_run_test ON metrics(run_id, test, metric)
"""


def _migrate_v3(db: sqlite3.Connection) -> None:
    """v3: one row per sample and metric (a long table: any tool's metrics, no new column
    per metric), filled from the samples table's iperf3 columns, which trends read until
    now; the samples table and the documents stay as they were."""
    for statement in METRICS_DDL.split(";"):
        db.execute(statement)
    db.execute("ALTER TABLE samples ADD COLUMN tool TEXT")
    db.execute("UPDATE samples SET tool = 'iperf3'")
    for metric in (m.name for m in metrics.legacy()):
        db.execute(
            "INSERT INTO metrics SELECT run_id, test, "
            "ROW_NUMBER() OVER (PARTITION BY run_id ORDER BY rowid) - 1, repeat, status, ?, "
            f"{metric} FROM samples",  # a name from our own list, not from input
            (metric,),
        )


def _write_metrics(db: sqlite3.Connection, run_id: str, doc: dict[str, Any]) -> None:
    """The long rows of one run: (run, test, sample index, repeat, status, metric, value)."""
    rows = []
    for index, sample in enumerate(doc.get("tests") or []):
        if not isinstance(sample, dict):
            continue
        for metric, value in metrics.of_sample(sample).items():
            rows.append(
                (run_id, str(sample.get("name")), index, sample.get("repeat"),
                 sample.get("status"), metric, value)
            )  # fmt: skip
    db.executemany("INSERT INTO metrics VALUES (?, ?, ?, ?, ?, ?, ?)", rows)


def _create_v1(db: sqlite3.Connection) -> None:
    """A new database starts at v1 and is migrated like any old one: one code path."""
    for statement in V1_DDL.split(";"):
        if statement.strip():
            db.execute(statement)
    History.set_version(db, 1)


# MIGRATIONS[v] turns a v-1 database into a v one.
MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {2: _migrate_v2, 3: _migrate_v3}

SAMPLE_COLUMNS = (
    "mode", "server", "client", "protocol", "repeat", "status", "error", "throughput_bps",
    "sender_bps", "retransmits", "jitter_ms", "lost_percent", "lost_packets", "packets",
    "cpu_client_pct", "cpu_server_pct", "started", "finished", "tool",
)  # fmt: skip


NUMERIC = SAMPLE_COLUMNS[7:16]  # schema 1's numeric sample columns (every metric is in `metrics`)
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


def image_ids(doc: dict[str, Any]) -> dict[str, dict[str, str]]:
    """Every container image id a run used: {image: {host: id}}, merged over its samples."""
    found: dict[str, dict[str, str]] = {}
    for sample in doc.get("tests", []):
        details = sample.get("details") or {}
        for image, per_host in (details.get("image_ids") or {}).items():
            found.setdefault(image, {}).update(per_host or {})
    return found


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
                _create_v1(db)
                version = 1
            for target in range(version + 1, SCHEMA_VERSION + 1):
                MIGRATIONS[target](db)
                self.set_version(db, target)

        self._transaction(upgrade)

    def _check(self, db: sqlite3.Connection) -> int:
        """The schema version (0 for a new, empty file); raise if the file is not ours."""
        version = int(db.execute("PRAGMA user_version").fetchone()[0])
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master")}
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

    @staticmethod
    def set_version(db: sqlite3.Connection, version: int) -> None:
        db.execute(f"PRAGMA user_version = {int(version)}")
        db.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)", (str(version),)
        )

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

        def write(db: sqlite3.Connection) -> None:
            db.execute("DELETE FROM samples WHERE run_id = ?", (run_id,))
            db.execute("DELETE FROM metrics WHERE run_id = ?", (run_id,))
            db.execute("DELETE FROM hosts WHERE run_id = ?", (run_id,))
            db.execute(
                "INSERT OR REPLACE INTO runs (run_id, scenario, started, finished, status, "
                "netrun_version, run_dir, document, image_ids, stored_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run_id,
                    scenario,
                    *(doc.get(k) for k in ("started", "finished", "status", "netrun_version")),
                    str(Path(run_dir).absolute()) if run_dir is not None else None,
                    json.dumps(doc),
                    json.dumps(image_ids(doc)),
                    datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
                ),
            )
            for host, facts in (doc.get("hosts") or {}).items():
                facts = facts or {}
                nic = facts.get("nic") or {}
                nic_fields = (nic.get(k) for k in ("iface", "speed_mbps", "mtu", "driver"))
                db.execute(
                    "INSERT INTO hosts VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (run_id, host, facts.get("kernel"), facts.get("iperf3_version"), *nic_fields),
                )
            marks = ", ".join("?" * (len(SAMPLE_COLUMNS) + 2))
            db.executemany(
                f"INSERT INTO samples (run_id, test, {', '.join(SAMPLE_COLUMNS)}) VALUES ({marks})",
                [
                    (run_id, str(s.get("name")), *(s.get(c) for c in SAMPLE_COLUMNS[:-1]),
                     s.get("tool") or "iperf3")
                    for s in doc.get("tests", [])
                ],
            )  # fmt: skip
            _write_metrics(db, run_id, doc)

        with self._errors():
            self._transaction(write)

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
            with self._errors():
                samples = [
                    {"status": status, metric: value}
                    for status, value in self.db.execute(
                        "SELECT status, value FROM metrics "
                        "WHERE run_id = ? AND test = ? AND metric = ? ORDER BY sample",
                        (row.run_id, test, metric),
                    )
                ]
            summary = summarize(ok_values(samples, metric))
            if summary is not None:
                out.append((row.started or "", summary))
        return out

    def headline(self, scenario: str, test: str) -> metrics.Metric:
        """The metric a trend of ``test`` follows: its tool's headline (throughput for
        iperf3, rtt_avg_ms for ping), from the newest stored sample."""
        from netrun.tools import DEFAULT, get_tool

        with self._errors():
            row = self.db.execute(
                "SELECT s.tool FROM samples s JOIN runs r ON r.run_id = s.run_id "
                "WHERE r.scenario = ? AND s.test = ? ORDER BY r.started DESC LIMIT 1",
                (scenario, test),
            ).fetchone()
        try:
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
