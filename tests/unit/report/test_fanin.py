"""The fan-in's block in every report format and its plot (issue 28), from a saved lab run."""

from __future__ import annotations

import csv
import html
import io
import json
from pathlib import Path

import pytest

from netrun.report.exporters import prometheus_text
from netrun.report.plots import fanin as fanin_plot
from netrun.report.plots.figures import plot_all
from netrun.report.render import render
from netrun.report.summary import summary_rows
from netrun.results.flags import direction
from tests.conftest import RESULTS_FIXTURES

DOC = json.loads((RESULTS_FIXTURES / "fanin-3" / "results.json").read_text())
HEAD = "fanin fan[3->delta] (baremetal, tcp, 3 flows into delta, 2 ok repeat(s)): aggregate"


def test_the_table_shows_the_aggregate_then_each_client() -> None:
    text = render(DOC, "table")
    row = next(line for line in text.splitlines() if line.startswith("fan[3->delta]"))
    assert "alpha,bravo,charlie→delta" in row
    block = text[text.index(HEAD) :].splitlines()
    assert "against delta's ceiling" in block[0] and "fairness (Jain) 1.000" in block[0]
    assert [line.split()[0] for line in block[3:6]] == [
        "alpha→delta",
        "bravo→delta",
        "charlie→delta",
    ]


def test_markdown_json_and_html_carry_it_too() -> None:
    assert f"#### {HEAD}" in render(DOC, "markdown")
    (fan,) = json.loads(render(DOC, "json"))["fanin"]
    assert [f["client"] for f in fan["flows"]] == ["alpha", "bravo", "charlie"]
    assert html.escape(HEAD) in render(DOC, "html")


def test_direction_of_a_fanin_and_a_fanout_names_every_flow() -> None:
    assert direction(DOC["tests"][0]) == "alpha,bravo,charlie→delta"
    out = {"client": "delta", "server": "alpha", "flows": [["delta", "alpha"], ["delta", "bravo"]]}
    assert direction(out) == "delta→alpha,bravo"
    apart = {"client": "a", "server": "b", "flows": [["a", "b"], ["c", "d"]]}
    assert direction(apart) == "a→b, c→d"


def test_csv_and_prometheus_name_every_flow_of_a_fan() -> None:
    """Not its first flow's pair (server=delta, client=alpha for three clients)."""
    rows = list(csv.DictReader(io.StringIO(render(DOC, "csv"))))
    assert {(r["client"], r["server"]) for r in rows} == {("alpha,bravo,charlie", "delta")}
    prom = prometheus_text(DOC)
    assert 'server="delta",client="alpha,bravo,charlie"' in prom
    assert 'client="alpha"' not in prom


def test_the_throughput_plot_groups_a_fan_by_all_its_flows() -> None:
    """plots group rows by their pair; a fan's names every flow."""
    [row] = summary_rows(DOC)
    assert row["pair"] == "alpha,bravo,charlie→delta"


def test_the_fanin_plot_is_drawn_with_the_others(tmp_path: Path) -> None:
    files = plot_all(DOC, tmp_path)
    assert tmp_path / fanin_plot.filename("fan[3->delta]") in files
    assert (tmp_path / "fanin-fan_3-_delta.png").read_bytes()[:4] == b"\x89PNG"


SWEPT = json.loads((RESULTS_FIXTURES / "fanin-clients" / "results.json").read_text())
BY_COUNT = "fanin fan[N->delta] by clients (baremetal, tcp): the aggregate into delta"


def test_a_sweep_of_clients_gets_a_table_by_count_in_every_format() -> None:
    text = render(SWEPT, "table")
    block = text[text.index(BY_COUNT) :].splitlines()
    assert block[1].split()[:2] == ["clients", "aggregate"]
    by_test = {s["name"]: s for s in SWEPT["tests"]}
    for line, name in zip(block[3:5], ["fan[1->delta]", "fan[3->delta]"], strict=True):
        cells = line.split()
        assert cells[0] == str(len(by_test[name]["flows"])) and cells[-1] == name
        assert cells[2] == f"{by_test[name]['goodput_ceiling_mbps']:.1f}"  # the proof
    assert f"#### {BY_COUNT}" in render(SWEPT, "markdown")
    (found,) = json.loads(render(SWEPT, "json"))["fanin_by_clients"]
    assert [r["clients"] for r in found["by_clients"]] == [1, 3]
    assert html.escape(BY_COUNT) in render(SWEPT, "html")
    assert BY_COUNT not in render(DOC, "table")  # one width: no table by count


def test_the_aggregate_by_clients_is_drawn(tmp_path: Path) -> None:
    files = plot_all(SWEPT, tmp_path)
    path = tmp_path / fanin_plot.count_filename("fan[N->delta]")
    assert path in files and path.read_bytes()[:4] == b"\x89PNG"


def test_pct_bare_of_a_fan_is_against_the_bare_fan_of_the_same_clients() -> None:
    doc = json.loads(json.dumps(SWEPT))
    docker = json.loads(json.dumps(next(s for s in doc["tests"] if s["name"] == "fan[3->delta]")))
    docker.update(name="dfan[3->delta]", mode="docker")
    docker["throughput_bps"] = docker["metrics"]["throughput_bps"] = 0.9 * docker["throughput_bps"]
    doc["tests"].append(docker)
    rows = {r["name"]: r for r in summary_rows(doc)}
    assert rows["dfan[3->delta]"]["pct_bare"] == pytest.approx(90.0)  # not 270% of 1 client
