"""A run's metric declarations (results.json ``metrics``) keep each tool's own where two
tools declare one name: ping's ``rtt_max_ms`` (judged at 50%) and iperf3's TCP_INFO one
(not judged)."""

from __future__ import annotations

import json
from typing import Any

from netrun.core import metrics
from netrun.report import metric_table
from netrun.tools import get_tool
from tests.conftest import RESULTS_FIXTURES


def declarations(*tools: str) -> dict[str, Any]:
    """The table a run of these tools' tests declares, in that order (as the runner does)."""
    table: dict[str, Any] = {}
    for name in tools:
        for metric in get_tool(name).metrics:
            metrics.declare(table, name, metric)
    return table


def test_a_name_two_tools_declare_keeps_both_declarations() -> None:
    doc = {"metrics": declarations("ping", "iperf3")}
    ping = metrics.declared(doc, "ping")["rtt_max_ms"]
    iperf3 = metrics.declared(doc, "iperf3")["rtt_max_ms"]
    assert (ping.tolerance, ping.description) == ("50%", "longest round-trip time")
    assert iperf3.tolerance is None and "TCP_INFO" in iperf3.description
    assert metrics.declared(doc)["rtt_max_ms"] == ping  # no tool named: the first
    assert list(doc["metrics"]["rtt_max_ms"]["by_tool"]) == ["iperf3"]
    other = {"metrics": declarations("iperf3", "ping")}  # the other order
    assert metrics.declared(other, "ping")["rtt_max_ms"] == ping
    assert metrics.declared(other, "iperf3")["rtt_max_ms"] == iperf3


def test_a_name_declared_alike_twice_has_no_second_copy() -> None:
    table = declarations("ping", "ping")
    assert all(metrics.BY_TOOL not in data for data in table.values())


def test_an_odd_by_tool_in_a_hand_edited_file_falls_back_to_the_first() -> None:
    doc = {"metrics": declarations("ping")}
    doc["metrics"]["rtt_max_ms"]["by_tool"] = ["not", "a", "mapping"]
    assert metrics.declared(doc, "iperf3")["rtt_max_ms"].tolerance == "50%"


def test_the_metrics_table_reads_each_tests_own_tools_declaration() -> None:
    """A real ping + iperf3 run (tests/fixtures/results/ping-mixed), its declarations made
    again with iperf3's first: the ping test's rtt_max_ms is still ping's."""
    doc = json.loads((RESULTS_FIXTURES / "ping-mixed" / "results.json").read_text())
    doc["metrics"] = declarations("iperf3", "ping")
    pings = [s for s in doc["tests"] if s["tool"] == "ping"]
    found = metric_table.summaries(doc, pings)["rtt_max_ms"]["metric"]
    assert found.tolerance == "50%" and found.description == "longest round-trip time"
