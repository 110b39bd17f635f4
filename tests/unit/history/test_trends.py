"""Trends compare like with like: an incomparable run starts a new line (issue 25).

Runs are the captured lab run baremetal-4s (tests/fixtures/results), stored under new run
ids and start times with one figure or option changed, as later nights would record them.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from netrun.cli.history import history_table
from netrun.history import trends
from netrun.history.db import History
from netrun.report.plots.trend import trend_plots
from tests.conftest import RESULTS_FIXTURES

BASE = json.loads((RESULTS_FIXTURES / "baremetal-4s" / "results.json").read_text())


def run(run_id: str, day: int, mbps: float, **options: Any) -> dict[str, Any]:
    """The captured run's tcp-forward test as a run of its own: one sample at ``mbps``."""
    doc = copy.deepcopy(BASE)
    doc.pop("baseline", None)
    doc["run_id"], doc["started"] = run_id, f"2026-11-{day:02d}T02:30:00Z"
    doc["tests"] = [t for t in doc["tests"] if t["name"] == "tcp-forward"]
    for t in doc["tests"]:
        t["throughput_bps"] = mbps * 1e6
        t.setdefault("metrics", {})["throughput_bps"] = mbps * 1e6
        t["options"].update(options)
    return doc


@pytest.fixture
def history(tmp_path: Path) -> History:
    with History.open(tmp_path / "h.sqlite") as db:
        yield db


def store(history: History, *runs: dict[str, Any]) -> None:
    for doc in runs:
        history.add_run(doc)


def test_a_run_with_another_bitrate_starts_a_new_line(history: History) -> None:
    """283 -> 293 -> 286 at 300M, then 389 at 500M: two lines, never "286 -> 389 +37.7%"."""
    store(
        history,
        run("aaaa0001", 1, 283.0, bitrate="300M"),
        run("aaaa0002", 2, 293.0, bitrate="300M"),
        run("aaaa0003", 3, 286.0, bitrate="300M"),
        run("aaaa0004", 4, 389.0, bitrate="500M"),
    )
    old, new = trends.lines(history, BASE["scenario"], "tcp-forward", "throughput_bps")
    assert [p.run_id for p in old.points] == ["aaaa0001", "aaaa0002", "aaaa0003"]
    assert old.delta_pct == pytest.approx((286 / 283 - 1) * 100)
    assert [p.run_id for p in new.points] == ["aaaa0004"] and new.delta_pct is None
    assert new.since == "from run aaaa0004: bitrate 500M (before 300M)"
    listing = history_table(history, history.runs(), None)
    rows = [x for x in listing.splitlines() if x.startswith(BASE["scenario"])]
    assert "286 → 389" not in listing and "+37.7%" not in listing
    assert any("283 → 293 → 286" in x and "+1.1%" in x for x in rows)
    assert any("389" in x and "bitrate 500M (before 300M)" in x for x in rows)


def test_going_back_to_the_old_options_starts_another_line(history: History) -> None:
    """A line joins consecutive comparable runs: 300M, 500M, 300M is three lines."""
    store(
        history,
        run("aaaa0001", 1, 283.0, bitrate="300M"),
        run("aaaa0002", 2, 389.0, bitrate="500M"),
        run("aaaa0003", 3, 286.0, bitrate="300M"),
    )
    found = trends.lines(history, BASE["scenario"], "tcp-forward", "throughput_bps")
    assert [len(line.points) for line in found] == [1, 1, 1]


def test_a_tests_only_run_has_no_delta(history: History) -> None:
    store(history, run("aaaa0001", 1, 940.0))
    listing = history_table(history, history.runs(), None)
    assert "+0.0%" not in listing
    row = next(x for x in listing.splitlines() if x.startswith(BASE["scenario"]))
    assert row.split()[-2:] == ["-", "-"]  # no change, no new line


def test_a_trend_plot_draws_only_the_runs_comparable_with_this_one(
    history: History, tmp_path: Path
) -> None:
    """Two unshaped runs, then a shaped one: the shaped run has no line to join yet, so no
    plot; a second shaped run draws a plot of the two shaped runs alone."""
    store(history, run("aaaa0001", 1, 940.0), run("aaaa0002", 2, 941.0))
    shaped = run("aaaa0003", 3, 420.0, bitrate="450M")
    store(history, shaped)
    assert trend_plots(shaped, tmp_path, history) == []
    again = run("aaaa0004", 4, 421.0, bitrate="450M")
    store(history, again)
    [path] = trend_plots(again, tmp_path, history)
    assert path.name == "trend-tcp-forward.png" and path.stat().st_size > 0
    newest = trends.lines(history, BASE["scenario"], "tcp-forward", "throughput_bps")[-1]
    assert [p.run_id for p in newest.points] == ["aaaa0003", "aaaa0004"]
