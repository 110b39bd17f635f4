"""The history's host context (schema v4, netrun.history.tables): a real v3 file migrates,
every field of every host is a row, a run stored again replaces its rows."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from netrun.history.db import History
from netrun.history.regress import compare
from netrun.history.tables import SCHEMA_VERSION
from netrun.results import context
from tests.conftest import HISTORYDB_FIXTURES, RESULTS_FIXTURES

V3_FIXTURE = HISTORYDB_FIXTURES / "v3.sqlite"
CC = "net.ipv4.tcp_congestion_control"


def load(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((RESULTS_FIXTURES / name / "results.json").read_text())
    return doc


def test_a_real_v3_database_migrates_and_fills_the_context_from_its_documents(
    tmp_path: Path,
) -> None:
    """The fixture was written by v3 code: baremetal-3 (no context) and context-a."""
    path = tmp_path / "v3.sqlite"
    path.write_bytes(V3_FIXTURE.read_bytes())
    old = sqlite3.connect(path)
    assert old.execute("PRAGMA user_version").fetchone()[0] == 3
    before = old.execute("SELECT run_id, document FROM runs ORDER BY run_id").fetchall()
    old.close()
    with History.open(path) as db:
        assert db.db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 4
        assert db.db.execute("SELECT run_id, document FROM runs ORDER BY run_id").fetchall() == (
            before
        )
        ids = {json.loads(d)["scenario"]: r for r, d in before}
        assert db.context(ids["baremetal"]) == {}  # stored before netrun read it
        found = db.context(ids["ctx"])
        assert set(found) == {"alpha", "bravo"}
        assert found["alpha"][CC] == "bbr"
        assert found["alpha"] == context.flat(context.of_doc(load("context-a"))["alpha"])
        assert len(db.runs()) == 2


def test_storing_a_run_writes_and_replaces_its_context_rows(tmp_path: Path) -> None:
    with History.open(tmp_path / "h.sqlite") as db:
        doc = load("context-b")
        db.add_run(doc)
        db.add_run(doc)  # again: replaced, not doubled
        rows = db.db.execute(
            "SELECT COUNT(*) FROM host_context WHERE run_id = ?", (doc["run_id"],)
        ).fetchone()[0]
        assert rows == sum(len(context.flat(c)) for c in context.of_doc(doc).values())
        assert db.context(doc["run_id"])["alpha"][CC] == "reno"
        db.db.execute("DELETE FROM runs WHERE run_id = ?", (doc["run_id"],))
        assert db.context(doc["run_id"]) == {}  # cascades with its run


def test_a_verdict_names_what_changed_on_its_hosts() -> None:
    base, cur = load("context-a"), load("context-b")
    (verdict,) = compare(cur, base)
    assert verdict.verdict == "ok"
    assert verdict.detail.endswith(
        "; context changed: alpha: net.ipv4.tcp_congestion_control bbr -> reno; "
        "bravo: net.ipv4.tcp_rmem 4096 131072 33554432 -> 4096 65536 4194304"
    )
    (same,) = compare(base, base)
    assert "context changed" not in same.detail
    (old,) = compare(cur, load("baremetal-3"))  # a baseline from before the context
    assert "context changed" not in old.detail


def test_a_regression_names_the_kernel_that_changed() -> None:
    base, cur = load("context-a"), load("context-b")
    for sample in cur["tests"]:
        sample["throughput_bps"] /= 2
        sample["metrics"]["throughput_bps"] /= 2
    cur["hosts"]["alpha"]["context"]["kernel"] = "6.1.0-27-amd64"
    base["hosts"]["alpha"]["context"]["kernel"] = "6.1.0-26-amd64"
    (verdict,) = compare(cur, base)
    assert verdict.verdict == "regressed"
    assert "; context changed: alpha: kernel 6.1.0-26-amd64 -> 6.1.0-27-amd64; " in verdict.detail
