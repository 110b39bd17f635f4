"""The TCP internals table (netrun.report.tcp_table) on a run captured on the Docker hand lab
with the real FreeFlow router (tests/fixtures/results/tcpinfo-lab: every mode, -R with and
without the server's JSON, UDP, MTU 9000)."""

from __future__ import annotations

import copy
import json
from typing import Any

from netrun.report import tcp_table
from netrun.report.html import render_html
from netrun.report.render import render_markdown, render_table
from netrun.tools.iperf3 import flows as iperf3_flows
from netrun.tools.iperf3.parse import parse
from tests.conftest import RESULTS_FIXTURES


def load() -> dict[str, Any]:
    return json.loads((RESULTS_FIXTURES / "tcpinfo-lab" / "results.json").read_text())


def test_one_row_per_test_with_figures_and_whose_they_are() -> None:
    doc = load()
    rows = {r[0]: r for r in tcp_table.rows(doc)}
    # UDP, FreeFlow's overlay socket and a reversed container test have no row
    assert list(rows) == ["bare", "bare-rev", "flannel", "bare-9000", "flannel-9000"]
    assert rows["bare"][1] == "client bravo"
    assert rows["bare-rev"][1] == "server alpha"  # -R: the server sent (its own JSON)
    headers = tcp_table.headers(doc)
    pmtu = {name: row[headers.index("pmtu_bytes (bytes)")] for name, row in rows.items()}
    assert pmtu == {"bare": "1500", "bare-rev": "1500", "flannel": "1450",
                    "bare-9000": "9000", "flannel-9000": "8950"}  # fmt: skip
    assert "snd_cwnd_max_bytes (KByte)" in headers


def test_the_reports_show_it_under_the_main_table_and_say_why_others_have_none() -> None:
    doc = load()
    text = render_table(doc)
    main, rest = text.split("\n\n", 1)
    assert "rtt_mean_ms" not in main  # the headline table stays as it was
    assert rest.startswith("test          TCP_INFO of   rtt_mean_ms (ms)")
    assert "unavailable for udp: UDP: TCP internals do not apply" in text
    assert "unavailable for freeflow, freeflow-rev: FreeFlow: iperf3 reads TCP_INFO" in text
    assert "unavailable for flannel-rev: reverse (-R): the sender is the server" in text
    assert "| bare-rev     | server alpha  |" in render_markdown(doc)
    assert "<td>server alpha</td>" in render_html(doc)


def test_a_run_without_tcp_figures_has_no_table() -> None:
    doc = load()
    doc["tests"] = [t for t in doc["tests"] if t["name"] in ("udp", "freeflow")]
    assert tcp_table.rows(doc) == []
    assert "TCP_INFO of" not in render_table(doc)


def test_a_sample_older_than_the_metrics_shows_nothing() -> None:
    doc = copy.deepcopy(load())
    for t in doc["tests"]:
        for name in tcp_table.NAMES:
            t["metrics"].pop(name)
    assert tcp_table.rows(doc) == []


def fan(reverse: bool = False) -> dict[str, Any]:
    """The lab fan-in of three clients into delta (tests/fixtures/results/fanin-3), its TCP
    figures those of its captured raw outputs pooled (the run predates them)."""
    doc = json.loads((RESULTS_FIXTURES / "fanin-3" / "results.json").read_text())
    for sample in doc["tests"]:
        raws = [RESULTS_FIXTURES / "fanin-3" / f["raw"] for f in sample["details"]["flows"]]
        pooled = iperf3_flows.combine([parse(p.read_text()) for p in raws]).tcp_info
        sample["metrics"].update(pooled)
        sample["options"]["reverse"] = reverse
    return doc


def test_a_fan_tests_row_says_its_figures_are_each_flows_sender() -> None:
    (row,) = tcp_table.rows(fan())
    assert row[:2] == ["fan[3->delta]", "each flow's client: alpha, bravo, charlie"]
    (reversed_row,) = tcp_table.rows(fan(reverse=True))
    assert reversed_row[1] == "each flow's server: delta"
    doc = fan()
    doc["tests"] = [dict(t, flows=[[f"h{i}", "delta"] for i in range(5)]) for t in doc["tests"]]
    assert tcp_table.rows(doc)[0][1] == "each flow's client: 5 hosts"
