"""A fan-in's figures over its repeats (issue 28), read from a lab run saved as results.json:
three clients into delta, two repeats."""

from __future__ import annotations

import copy
import json
import statistics

import pytest

from netrun.results.fanin import fanins
from tests.conftest import RESULTS_FIXTURES

DOC = json.loads((RESULTS_FIXTURES / "fanin-3" / "results.json").read_text())


def test_the_aggregate_is_the_repeats_median_and_each_flow_its_mean() -> None:
    (fan,) = fanins(DOC)
    assert (fan.test, fan.kind, fan.host, fan.mode, fan.repeats) == (
        "fan[3->delta]", "fanin", "delta", "baremetal", 2
    )  # fmt: skip
    samples = DOC["tests"]
    agg = statistics.median(s["metrics"]["aggregate_bps"] / 1e6 for s in samples)
    assert fan.aggregate_mbps == pytest.approx(agg)
    assert [s.label for s in fan.shares] == ["alpha→delta", "bravo→delta", "charlie→delta"]
    alpha = statistics.fmean(s["details"]["flows"][0]["throughput_bps"] / 1e6 for s in samples)
    assert fan.shares[0].mbps == pytest.approx(alpha)
    assert sum(s.pct_of_aggregate or 0 for s in fan.shares) == pytest.approx(100, abs=0.5)
    assert fan.shares[0].raw == tuple(s["details"]["flows"][0]["raw"] for s in samples)
    assert fan.line_rate_mbps == 200 and fan.ceiling_mbps and fan.pct_of_ceiling
    assert fan.to_dict()["flows"][0]["client"] == "alpha"


def test_a_failed_repeat_is_left_out_and_a_run_without_fans_has_none() -> None:
    doc = copy.deepcopy(DOC)
    doc["tests"][1]["status"] = "failed"
    (fan,) = fanins(doc)
    assert fan.repeats == 1
    assert fan.aggregate_mbps == pytest.approx(doc["tests"][0]["metrics"]["aggregate_bps"] / 1e6)
    plain = copy.deepcopy(DOC)
    for s in plain["tests"]:
        del s["flows"]
    assert fanins(plain) == []


def test_flows_that_swap_the_link_between_repeats_still_share_all_of_it() -> None:
    """Three clients into alpha's 200 Mbit/s link (a `--host-rate` lab, 2026-12-01 23:55
    UTC, 3 repeats): which flow took most of the link changed between repeats, so each
    flow's median was 9-26 Mbit/s of a 188 Mbit/s aggregate. Means add up to the mean
    aggregate: the shares sum to 100% and each is what the flow carried on average."""
    doc = json.loads((RESULTS_FIXTURES / "fanin-host-rate" / "results.json").read_text())
    found = {f.test: f for f in fanins(doc)}
    three = found["incast[3->alpha]"]
    samples = [s for s in doc["tests"] if s["name"] == "incast[3->alpha]"]
    mean_total = statistics.fmean(s["metrics"]["aggregate_bps"] / 1e6 for s in samples)
    assert sum(s.mbps or 0 for s in three.shares) == pytest.approx(mean_total, rel=1e-6)
    assert sum(s.pct_of_aggregate or 0 for s in three.shares) == pytest.approx(100)
    assert three.fairness is not None and three.fairness < 0.6
