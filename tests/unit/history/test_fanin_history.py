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


SWEPT = json.loads((RESULTS_FIXTURES / "fanin-clients" / "results.json").read_text())


def test_each_count_of_a_sweep_of_clients_has_its_own_history_and_verdict(tmp_path: Path) -> None:
    history = History.open(tmp_path / "h.db")
    try:
        history.add_run(SWEPT)
        for sample in SWEPT["tests"]:
            ((_, stats),) = history.series(
                SWEPT["scenario"], sample["name"], metric="aggregate_bps"
            )
            assert stats.values == pytest.approx([sample["metrics"]["aggregate_bps"]])
    finally:
        history.close()
    worse = copy.deepcopy(SWEPT)
    wide = worse["tests"][1]  # only the 3-client fan got slower
    for key in ("aggregate_bps", "throughput_bps"):
        wide["metrics"][key] *= 0.7
    wide["throughput_bps"] *= 0.7
    verdicts = {v.test: v.verdict for v in compare(worse, SWEPT)}
    assert verdicts == {"fan[1->delta]": "ok", "fan[3->delta]": "regressed"}
