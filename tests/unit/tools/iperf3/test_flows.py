"""A fan-in's flows summed into one iperf3 result (issue 28), from the three raw outputs a
lab fan-in of three clients into delta saved (tests/fixtures/results/fanin-3)."""

from __future__ import annotations

import json

import pytest

from netrun.core.measurement import Measurement
from netrun.tools.iperf3 import flows
from netrun.tools.iperf3.parse import parse
from netrun.tools.iperf3.tool import values
from tests.conftest import RESULTS_FIXTURES

RUN = RESULTS_FIXTURES / "fanin-3"


def runs(repeat: int = 1):
    return [
        parse((RUN / "raw" / f"fan_3-_delta_{c}-_delta.r{repeat}.json").read_text())
        for c in ("alpha", "bravo", "charlie")
    ]


def test_the_sum_is_the_receivers_and_the_shares_are_the_flows() -> None:
    each = runs()
    total = flows.combine(each)
    assert total.receiver_bps == pytest.approx(sum(r.receiver_bps for r in each))
    assert total.sender_bps == pytest.approx(sum(r.sender_bps for r in each))
    assert total.bytes_sent == sum(r.bytes_sent for r in each)
    assert total.retransmits == sum(r.retransmits for r in each)
    assert total.stream_bps == tuple(r.receiver_bps for r in each)
    assert total.cpu_client_pct is None and total.cpu_server_pct is None
    # each interval is the flows' sum
    first = sum(r.intervals[0].bits_per_second for r in each)
    assert total.intervals[0].bits_per_second == pytest.approx(first)
    assert len(total.intervals) == min(len(r.intervals) for r in each)


def test_fairness_is_jains_index_of_the_flows() -> None:
    each = runs()
    fair = flows.fairness(each)
    assert fair is not None and 0.99 < fair <= 1.0  # three equal shares of delta
    assert values(flows.combine(each))["fairness_jain"] == pytest.approx(fair)


def test_an_unknown_receiver_rate_makes_no_partial_sum() -> None:
    from dataclasses import replace

    each = runs()
    each[1] = replace(each[1], receiver_bps=None)
    assert flows.combine(each).receiver_bps is None
    assert flows.fairness(each) is None


def test_each_flows_record_names_its_raw_file() -> None:
    (alpha, *_rest) = runs()
    rec = flows.record("alpha", "delta", Measurement("", alpha), "raw/x.json")
    assert rec["client"] == "alpha" and rec["raw"] == "raw/x.json"
    saved = json.loads((RUN / "results.json").read_text())["tests"][0]["details"]["flows"][0]
    assert saved["throughput_bps"] == pytest.approx(alpha.receiver_bps)
