"""netrun.history.db on real results.json files: store, query, migrate, and refuse what is not
ours."""

from __future__ import annotations

import copy
import json
import multiprocessing
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from netrun.errors import InputError
from netrun.history.db import History, HistoryError, UnknownRunError, default_path
from netrun.history.tables import SCHEMA_VERSION, V1_DDL
from tests.conftest import HISTORY_FIXTURES, HISTORYDB_FIXTURES, ROOT


def load(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((HISTORY_FIXTURES / name / "results.json").read_text())
    return doc


@pytest.fixture
def db(tmp_path: Path) -> History:
    history = History.open(tmp_path / "h.sqlite")
    yield history
    history.close()


def test_default_path_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert default_path() == tmp_path / "netrun" / "history.sqlite"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_path() == tmp_path / "home" / ".local/share/netrun/history.sqlite"


def test_open_creates_parents_and_current_schema(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "h.sqlite"
    with History.open(path) as h:
        assert h.db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        meta = h.db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        assert meta[0] == str(SCHEMA_VERSION)
    with History.open(path) as h:  # reopening an up-to-date file changes nothing
        assert h.runs() == []


def test_add_run_and_read_back(db: History) -> None:
    doc = load("baremetal-1")
    db.add_run(doc, "/results/run1")
    [row] = db.runs()
    assert row.run_id == doc["run_id"] and row.scenario == "baremetal"
    assert (row.started, row.finished, row.status) == (doc["started"], doc["finished"], "finished")
    assert row.run_dir == "/results/run1" and row.netrun_version == doc["netrun_version"]
    assert (row.samples, row.failed) == (12, 0)
    assert row.tests == ("tcp-forward", "tcp-reverse", "tcp-4-streams", "udp-500m")
    assert db.get_run(doc["run_id"]) == doc  # the whole document, to render again
    env = {e["host"]: e for e in db.environment(doc["run_id"])}
    assert env["alpha"]["kernel"] == doc["hosts"]["alpha"]["kernel"]
    assert env["alpha"]["iperf3_version"] == "3.12"
    assert (env["bravo"]["nic_driver"], env["bravo"]["nic_mtu"]) == ("veth", 1500)
    stored = db.db.execute(
        "SELECT throughput_bps, retransmits FROM samples WHERE run_id = ? AND test = ? "
        "ORDER BY repeat",
        (doc["run_id"], "tcp-forward"),
    ).fetchall()
    expected = [(t["throughput_bps"], t["retransmits"]) for t in doc["tests"]][:3]
    assert stored == expected


def test_add_run_is_idempotent(db: History) -> None:
    doc = load("baremetal-1")
    db.add_run(doc, "x")
    db.add_run(doc, "x")
    assert len(db.runs()) == 1
    assert db.db.execute("SELECT COUNT(*) FROM samples").fetchone()[0] == 12
    assert db.db.execute("SELECT COUNT(*) FROM hosts").fetchone()[0] == 3


def test_image_ids_of_a_docker_run(db: History) -> None:
    doc = load("docker-1")
    db.add_run(doc, None)
    ids = json.loads(
        db.db.execute("SELECT image_ids FROM runs WHERE run_id = ?", (doc["run_id"],)).fetchone()[0]
    )
    assert set(ids["netrun-lab/iperf3:latest"]) == {"alpha", "bravo"}
    assert ids["netrun-lab/iperf3:latest"]["alpha"].startswith("sha256:")


def test_runs_filters_and_last(db: History) -> None:
    first, second, dock = load("baremetal-1"), load("baremetal-2"), load("docker-1")
    for doc in (second, dock, first):  # insertion order must not matter
        db.add_run(doc)
    assert [r.run_id for r in db.runs()] == [first["run_id"], second["run_id"], dock["run_id"]]
    assert [r.run_id for r in db.runs(scenario="baremetal", last=1)] == [second["run_id"]]
    assert [r.run_id for r in db.runs(test="docker-tcp")] == [dock["run_id"]]
    assert db.runs(scenario="nope") == []


def test_last_run_before(db: History) -> None:
    first, second = load("baremetal-1"), load("baremetal-2")
    db.add_run(first)
    db.add_run(second)
    assert db.last_run("baremetal").run_id == second["run_id"]
    assert db.last_run("baremetal", before=second["run_id"]).run_id == first["run_id"]
    assert db.last_run("baremetal", before=first["run_id"]) is None
    assert db.last_run("baremetal", before="not-stored").run_id == second["run_id"]
    assert db.last_run("docker") is None


def test_series_gives_one_summary_per_run(db: History) -> None:
    first, second = load("baremetal-1"), load("baremetal-2")
    db.add_run(first)
    db.add_run(second)
    points = db.series("baremetal", "tcp-forward")
    assert [p[0] for p in points] == [first["started"], second["started"]]
    values = [t["throughput_bps"] for t in second["tests"] if t["name"] == "tcp-forward"]
    assert points[1][1].values == tuple(values)
    assert len(db.series("baremetal", "tcp-forward", last=1)) == 1
    jitter = db.series("baremetal", "udp-500m", metric="jitter_ms")
    assert all(s.n == 3 for _, s in jitter)
    with pytest.raises(InputError):
        db.series("baremetal", "udp-500m", metric="document; DROP TABLE runs")


def test_series_skips_runs_where_the_test_failed(db: History) -> None:
    doc = copy.deepcopy(load("baremetal-1"))
    for t in doc["tests"]:
        if t["name"] == "tcp-forward":
            t.update(status="failed", throughput_bps=None, error="boom")
    db.add_run(doc)
    assert db.series("baremetal", "tcp-forward") == []
    assert db.runs()[0].failed == 3


def test_get_run_by_prefix_and_errors(db: History) -> None:
    a, b = load("baremetal-1"), copy.deepcopy(load("baremetal-2"))
    b["run_id"] = a["run_id"][:3] + "zzzzz"
    db.add_run(a)
    db.add_run(b)
    assert db.get_run(a["run_id"][:4])["run_id"] == a["run_id"]
    with pytest.raises(UnknownRunError, match="matches 2 runs"):
        db.get_run(a["run_id"][:3])
    with pytest.raises(UnknownRunError, match=r"no stored run matches 'nothing'.*netrun history"):
        db.get_run("nothing")


def test_import_dir_skips_stored_and_reports_unreadable(db: History, tmp_path: Path) -> None:
    root = tmp_path / "results"
    for name in ("baremetal-1", "baremetal-2"):
        shutil.copytree(HISTORY_FIXTURES / name, root / name)
    (root / "broken").mkdir()
    (root / "broken" / "results.json").write_text("{ not json")
    db.add_run(load("baremetal-1"))
    problems: list[str] = []
    assert db.import_dir(root, problems) == [load("baremetal-2")["run_id"]]
    assert len(problems) == 1 and "broken" in problems[0]
    assert db.import_dir(root) == []
    assert db.runs()[-1].run_dir == str(root / "baremetal-2")
    with pytest.raises(InputError):
        db.import_dir(tmp_path / "missing")


def test_add_run_rejects_a_document_without_run_id(db: History) -> None:
    with pytest.raises(HistoryError, match="no run_id"):
        db.add_run({"scenario": "x", "tests": []}, "somewhere")


def test_migrates_a_v1_database_and_keeps_its_data(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    doc = load("docker-1")
    old = sqlite3.connect(path)
    old.executescript(V1_DDL)
    old.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    old.execute("PRAGMA user_version = 1")
    old.execute(
        "INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (doc["run_id"], "docker", doc["started"], doc["finished"], "finished", "0.1.0", "/r",
         json.dumps(doc)),
    )  # fmt: skip
    old.execute(
        "INSERT INTO samples (run_id, test, status, throughput_bps) VALUES (?, ?, 'ok', 1e9)",
        (doc["run_id"], "docker-tcp"),
    )
    old.commit()
    old.close()
    with History.open(path) as h:
        assert h.db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert h.get_run(doc["run_id"]) == doc
        ids = json.loads(h.db.execute("SELECT image_ids FROM runs").fetchone()[0])
        assert "netrun-lab/iperf3:latest" in ids  # back-filled from the stored document
        indexes = {r[0] for r in h.db.execute("SELECT name FROM sqlite_master WHERE type='index'")}
        assert {"runs_scenario_started", "samples_run_test"} <= indexes
        assert h.series("docker", "docker-tcp")[0][1].values == (1e9,)
        h.add_run(load("baremetal-1"))  # and new runs go in as usual
        assert len(h.runs()) == 2


def test_refuses_a_newer_schema(tmp_path: Path) -> None:
    path = tmp_path / "new.sqlite"
    History.open(path).close()
    con = sqlite3.connect(path)
    con.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    con.close()
    with pytest.raises(HistoryError, match=rf"schema v{SCHEMA_VERSION + 1} is newer.*upgrade"):
        History.open(path)


@pytest.mark.parametrize(
    "content",
    [b"this is a text file, not sqlite\n" * 20, b"SQLite format 3\x00" + b"\xff" * 2000],
)
def test_corrupt_file_is_refused_and_kept(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "h.sqlite"
    path.write_bytes(content)
    with pytest.raises(HistoryError) as err:
        History.open(path)
    assert str(err.value) == (
        f"{path}: not a netrun history database (corrupt or another file); "
        "move it away or pick another with --db"
    )
    assert path.read_bytes() == content  # nothing lost


def test_another_sqlite_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE songs (title TEXT)")
    con.commit()
    con.close()
    with pytest.raises(HistoryError, match="not a netrun history database"):
        History.open(path)


def test_a_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(HistoryError, match="is a folder"):
        History.open(tmp_path)


LOCKED = "{}: database is locked by another process; retry later"


def test_write_while_another_process_writes_fails_fast(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    History.open(path).close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer: reading still works, writing waits
    try:
        with History.open(path, timeout=0.1) as h:
            assert h.runs() == []
            with pytest.raises(HistoryError) as err:
                h.add_run(load("baremetal-1"))
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert str(err.value) == LOCKED.format(path)


def test_open_while_another_process_writes_reads_at_once(tmp_path: Path) -> None:
    """Write-ahead log: a writer mid-transaction (even EXCLUSIVE) never stops a reader;
    another writer still fails fast, naming the file, once its wait is over."""
    path = tmp_path / "h.sqlite"
    History.open(path).close()
    holder = sqlite3.connect(path, isolation_level=None)
    assert holder.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with History.open(path, timeout=0.1) as h:
            assert h.runs() == []
            with pytest.raises(HistoryError) as err:
                h.add_run(load("baremetal-1"))
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert str(err.value) == LOCKED.format(path)


def test_a_rollback_journal_file_moves_to_the_write_ahead_log(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    old = sqlite3.connect(path)
    old.executescript(V1_DDL + "PRAGMA user_version = 1;")
    old.close()
    History.open(path).close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


def _add_many(path: str, start: Any, results: Any, name: str, count: int) -> None:
    """Child: store ``count`` copies of a run (new ids), one transaction each."""
    start.wait(timeout=10)
    try:
        doc = load(name)
        with History.open(path) as h:
            for i in range(count):
                h.add_run(doc | {"run_id": f"{name}-{i}"})
        results.put("ok")
    except Exception as exc:  # reported to the parent, which asserts on it
        results.put(repr(exc))


def test_two_writers_at_once_both_store_every_run(tmp_path: Path) -> None:
    """Two runs ending together (two labs, two controllers): neither is refused."""
    path = tmp_path / "h.sqlite"
    History.open(path).close()
    assert at_once(_add_many, path, 15) == ["ok", "ok"]
    with History.open(path) as h:
        assert len(h.runs()) == 30


def at_once(target: Any, path: Path, *extra: Any) -> list[str]:
    """Run ``target`` in two processes that start together (one per saved run), each
    reporting "ok" or its error; what they reported."""
    ctx = multiprocessing.get_context("fork")
    start, results = ctx.Barrier(2), ctx.Queue()
    procs = [
        ctx.Process(target=target, args=(str(path), start, results, name, *extra))
        for name in ("baremetal-1", "baremetal-2")
    ]
    for p in procs:
        p.start()
    got = [results.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=30)
    return got


def _open_and_add(path: str, start: Any, results: Any, name: str) -> None:
    """Child: open (create or migrate) the database at the same moment as its sibling."""
    start.wait(timeout=10)
    try:
        with History.open(path, timeout=10) as h:
            h.add_run(load(name))
        results.put("ok")
    except Exception as exc:  # reported to the parent, which asserts on it
        results.put(repr(exc))


@pytest.mark.parametrize("from_v1", [False, True])
def test_two_processes_creating_or_migrating_at_once(tmp_path: Path, from_v1: bool) -> None:
    path = tmp_path / "h.sqlite"
    if from_v1:
        old = sqlite3.connect(path)
        old.executescript(V1_DDL + "PRAGMA user_version = 1;")
        old.close()
    assert at_once(_open_and_add, path) == ["ok", "ok"]
    with History.open(path) as h:
        assert len(h.runs()) == 2


# -- v3: the long metrics table ----------------------------------------------------------------
V2_FIXTURE = HISTORYDB_FIXTURES / "v2.sqlite"


def test_a_real_v2_database_migrates_to_the_metrics_table_with_nothing_lost(
    tmp_path: Path,
) -> None:
    """The fixture was written by netrun's v2 code (before metrics): every run, sample and
    document survives, and each schema 1 column reappears as metric rows."""
    path = tmp_path / "v2.sqlite"
    path.write_bytes(V2_FIXTURE.read_bytes())
    old = sqlite3.connect(path)
    before_runs = old.execute("SELECT run_id, document FROM runs ORDER BY run_id").fetchall()
    before_samples = old.execute(
        "SELECT run_id, test, repeat, status, throughput_bps, jitter_ms FROM samples ORDER BY rowid"
    ).fetchall()
    assert old.execute("PRAGMA user_version").fetchone()[0] == 2
    old.close()
    with History.open(path) as db:
        assert db.db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        after_runs = db.db.execute("SELECT run_id, document FROM runs ORDER BY run_id").fetchall()
        assert after_runs == before_runs
        after_samples = db.db.execute(
            "SELECT run_id, test, repeat, status, throughput_bps, jitter_ms FROM samples "
            "ORDER BY rowid"
        ).fetchall()
        assert after_samples == before_samples
        # every schema 1 value is in the long table too, under its own name
        for run_id, test, repeat, _status, bps, jitter in before_samples:
            got = dict(
                db.db.execute(
                    "SELECT metric, value FROM metrics WHERE run_id = ? AND test = ? "
                    "AND repeat = ? AND metric IN ('throughput_bps', 'jitter_ms')",
                    (run_id, test, repeat),
                ).fetchall()
            )
            assert got == {"throughput_bps": bps, "jitter_ms": jitter}
        rows = db.runs()
        assert len(rows) == 8 and sum(r.samples for r in rows) == 80
        assert db.series(rows[0].scenario, rows[0].tests[0])  # trends read the new table
        assert db.headline(rows[0].scenario, rows[0].tests[0]).name == "throughput_bps"


def test_history_lists_a_migrated_v2_database(tmp_path: Path) -> None:
    path = tmp_path / "v2.sqlite"
    path.write_bytes(V2_FIXTURE.read_bytes())
    res = subprocess.run(
        [sys.executable, "-m", "netrun", "history", "--db", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert res.returncode == 0, res.stderr
    for run_id in ("7c746a62", "8e03adc2", "ea683a72"):
        assert run_id in res.stdout
    assert "throughput_bps (Mbit/s)" in res.stdout


def test_any_metric_of_a_new_tool_is_stored_and_trended(db: History) -> None:
    samples = [
        {"name": "rtt", "mode": "baremetal", "tool": "ping", "server": "a", "client": "b",
         "protocol": "icmp", "repeat": r, "status": "ok",
         "metrics": {"rtt_avg_ms": v, "rtt_min_ms": None, "lost_percent": 0.0}}
        for r, v in ((1, 0.1), (2, 0.3))
    ]  # fmt: skip
    db.add_run({"run_id": "p1", "scenario": "ping", "started": "2026-11-30T01:00:00Z",
                "tests": samples})  # fmt: skip
    [(_, summary)] = db.series("ping", "rtt", metric="rtt_avg_ms")
    assert summary.median == pytest.approx(0.2)
    assert db.series("ping", "rtt", metric="rtt_min_ms") == []  # null: unavailable, never 0
    assert db.headline("ping", "rtt").name == "rtt_avg_ms"


def test_history_listing_shows_a_numeric_looking_run_id_verbatim(db: History) -> None:
    """Run ids are hex: 680572e5 is text, not 6.80572e+10 (tabulate's number parsing)."""
    from netrun.cli.history import history_table

    doc = load("baremetal-1")
    doc["run_id"] = "680572e5"
    db.add_run(doc)
    shown = history_table(db, db.runs(), None)
    assert "680572e5" in shown and "e+10" not in shown
