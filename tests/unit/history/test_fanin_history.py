"""A fan-in in the history and against a baseline (issue 28): its declared metrics need
nothing of their own; the aggregate is the headline (throughput_bps), judged with its
confidence interval, and the flows' fairness has iperf3's limit."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from netrun.history.db import History
from netrun.history.regress import compare
from tests.conftest import RESULTS_FIXTURES

DOC = json.loads((RESULTS_FIXTURES / "fanin-3" / "results.json").read_text())
NAME = "fan[3->delta]"


def test_the_aggregate_and_fairness_are_stored_per_run(tmp_path: Path) -> None:
    history = History.open(tmp_path / "h.db")
    try:
        history.add_run(DOC)
        series = history.series(DOC["scenario"], NAME, metric="aggregate_bps")
        assert len(series) == 1 and series[0][1].n == 2
        expected = sorted(s["metrics"]["aggregate_bps"] for s in DOC["tests"])
        assert sorted(series[0][1].values) == pytest.approx(expected)
        assert history.series_of(DOC["run_id"], NAME, "fairness_jain") is not None
    finally:
        history.close()


def test_a_smaller_aggregate_or_an_unfair_share_regresses() -> None:
    worse = copy.deepcopy(DOC)
    for s in worse["tests"]:
        for key in ("aggregate_bps", "throughput_bps"):
            s["metrics"][key] *= 0.8
        s["throughput_bps"] *= 0.8
        s["metrics"]["fairness_jain"] = 0.7
    (verdict,) = compare(worse, DOC)
    assert verdict.verdict == "regressed"
    assert set(verdict.metrics) == {"throughput_bps", "fairness_jain"}
    (same,) = compare(DOC, DOC)
    assert same.verdict == "ok"
