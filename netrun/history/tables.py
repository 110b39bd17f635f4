"""The history database's tables: their layout, forward migrations, and one run's rows.

netrun.history.db opens the file and answers queries; this module alone knows the columns, so
a new schema version is one migration here plus SCHEMA_VERSION.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from netrun.core import metrics
from netrun.results import context

SCHEMA_VERSION = 4

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


CONTEXT_DDL = """
CREATE TABLE host_context (
    run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE, host TEXT NOT NULL,
    field TEXT NOT NULL, value TEXT, PRIMARY KEY (run_id, host, field)
)
"""


def _migrate_v4(db: sqlite3.Connection) -> None:
    """v4: each host's context (netrun.results.context), one row per field as
    ``context.flat`` labels it, filled from the stored documents that have one (runs before
    it have none: they keep no rows, and compare as "nothing known")."""
    db.execute(CONTEXT_DDL)
    for run_id, document in db.execute("SELECT run_id, document FROM runs").fetchall():
        write_context(db, run_id, json.loads(document))


def write_context(db: sqlite3.Connection, run_id: str, doc: dict[str, Any]) -> None:
    """The context rows of one run: (run, host, field label, text)."""
    rows = [
        (run_id, host, label, value)
        for host, found in context.of_doc(doc).items()
        for label, value in context.flat(found).items()
    ]
    db.executemany("INSERT OR REPLACE INTO host_context VALUES (?, ?, ?, ?)", rows)


def write_metrics(db: sqlite3.Connection, run_id: str, doc: dict[str, Any]) -> None:
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


def create_v1(db: sqlite3.Connection) -> None:
    """A new database starts at v1 and is migrated like any old one: one code path."""
    for statement in V1_DDL.split(";"):
        if statement.strip():
            db.execute(statement)
    set_version(db, 1)


# MIGRATIONS[v] turns a v-1 database into a v one.
MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {
    2: _migrate_v2,
    3: _migrate_v3,
    4: _migrate_v4,
}

SAMPLE_COLUMNS = (
    "mode", "server", "client", "protocol", "repeat", "status", "error", "throughput_bps",
    "sender_bps", "retransmits", "jitter_ms", "lost_percent", "lost_packets", "packets",
    "cpu_client_pct", "cpu_server_pct", "started", "finished", "tool",
)  # fmt: skip


NUMERIC = SAMPLE_COLUMNS[7:16]  # schema 1's numeric sample columns (every metric is in `metrics`)


def set_version(db: sqlite3.Connection, version: int) -> None:
    """Record the schema version twice: PRAGMA user_version, and ``meta`` for people."""
    db.execute(f"PRAGMA user_version = {int(version)}")
    db.execute(
        "INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)", (str(version),)
    )


def image_ids(doc: dict[str, Any]) -> dict[str, dict[str, str]]:
    """Every container image id a run used: {image: {host: id}}, merged over its samples."""
    found: dict[str, dict[str, str]] = {}
    for sample in doc.get("tests", []):
        details = sample.get("details") or {}
        for image, per_host in (details.get("image_ids") or {}).items():
            found.setdefault(image, {}).update(per_host or {})
    return found


def write_run(
    db: sqlite3.Connection,
    run_id: str,
    scenario: str,
    doc: dict[str, Any],
    run_dir: Path | str | None,
) -> None:
    """Replace one run's rows: the document, its hosts, samples, metrics and host context."""
    db.execute("DELETE FROM samples WHERE run_id = ?", (run_id,))
    db.execute("DELETE FROM metrics WHERE run_id = ?", (run_id,))
    db.execute("DELETE FROM hosts WHERE run_id = ?", (run_id,))
    db.execute("DELETE FROM host_context WHERE run_id = ?", (run_id,))
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
    write_metrics(db, run_id, doc)
    write_context(db, run_id, doc)
