"""A fan test's iperf2 flows summed into one sample (issue 28), from real output: the two
flows of a turn fan-in the lab ran at once (tests/fixtures/iperf2/2.1.8-turn-fanin-*), and
two separate captures standing for flows that got unequal shares."""

from __future__ import annotations

import pytest

from netrun.core.measurement import Measurement
from netrun.tools.fan import AGGREGATE, FAIRNESS
from netrun.tools.iperf2 import flows
from netrun.tools.iperf2.parse import parse
from netrun.tools.iperf2.tool import TOOL
from tests.conftest import IPERF2_FIXTURES


def flow(name: str, **details: object) -> Measurement:
    text = (IPERF2_FIXTURES / f"2.1.8-{name}.server.txt").read_text()
    return Measurement(text, parse(text), dict(details))


def turn_fanin() -> list[Measurement]:
    return [
        flow(f"turn-fanin-{c}", peer_seen="10.202.26.13", relayed_address=f"10.202.26.13:{p}")
        for c, p in (("alpha", 49458), ("bravo", 64957))
    ]


def test_iperf2_declares_the_fan_metrics() -> None:
    assert TOOL.fan is flows.FAN
    assert [m.name for m in TOOL.fan.metrics] == [AGGREGATE.name, FAIRNESS.name]
    assert not {m.name for m in TOOL.fan.metrics} & {m.name for m in TOOL.metrics}


def test_the_sum_pools_the_flows_counts_and_latency() -> None:
    found = turn_fanin()
    each = [m.result.metrics for m in found]
    total = flows.combine(found, {})
    m = total.metrics
    assert m["throughput_bps"] == pytest.approx(401000 + 401000)
    assert m["aggregate_bps"] == m["throughput_bps"]
    assert m["total"] == 1003 + 1003 and m["lost"] == 0 and m["lost_percent"] == 0.0
    assert m["pps"] == pytest.approx(each[0]["pps"] + each[1]["pps"])
    assert m["jitter_ms"] == max(e["jitter_ms"] for e in each)
    assert m["latency_min_ms"] == min(e["latency_min_ms"] for e in each)
    assert m["latency_max_ms"] == max(e["latency_max_ms"] for e in each)
    mean = (each[0]["latency_avg_ms"] * 1003 + each[1]["latency_avg_ms"] * 1003) / 2006
    assert m["latency_avg_ms"] == pytest.approx(mean)
    assert m["fairness_jain"] == pytest.approx(1.0)
    assert total.result.peer_seen is None  # each flow's own is in its record
    assert total.result.peers == ("10.202.26.13 port 49458", "10.202.26.13 port 64957")


def test_each_flows_record_keeps_its_proof() -> None:
    alpha, _bravo = turn_fanin()
    rec = flows.record("alpha", "charlie", alpha, "raw/a.txt")
    assert rec["client"] == "alpha" and rec["server"] == "charlie" and rec["raw"] == "raw/a.txt"
    assert rec["throughput_bps"] == 401000 and rec["total"] == 1003
    assert rec["peer_seen"] == "10.202.26.13" and rec["relayed_address"] == "10.202.26.13:49458"
    assert rec["peers"] == ["10.202.26.13 port 49458"]
    assert "relay_counters" not in rec  # a bare-metal flow has none


def test_unequal_flows_are_less_than_fair() -> None:
    found = [flow("normal"), flow("full")]  # 1000 pps against a path that dropped 99.9%
    rates = [m.result.metrics["throughput_bps"] for m in found]
    total = flows.combine(found, {})
    fair = sum(rates) ** 2 / (2 * sum(r * r for r in rates))
    assert total.metrics["fairness_jain"] == pytest.approx(fair)
    assert total.metrics["fairness_jain"] < 0.6
    assert total.metrics["lost"] == sum(m.result.metrics["lost"] for m in found)
