"""The one-screen terminal report (issue 36): the answer first, a table per kind of result,
only the columns with values, only the notes that change how a figure reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from netrun.history.regress import Verdict
from netrun.report.brief import render_brief, tables, trim
from netrun.report.render import render
from netrun.report.summary import incomplete
from tests.conftest import ROOT

FIXTURES = ROOT / "tests" / "fixtures"
RESULTS = sorted((FIXTURES / "results").glob("shipped-*/results.json"))
RRUL = FIXTURES / "load" / "rrul-baremetal-50mbit.results.json"


def load(path: Path) -> dict:
    return json.loads(path.read_text())


@pytest.mark.parametrize("path", RESULTS, ids=lambda p: p.parent.name)
def test_a_shipped_scenarios_report_fits_one_screen_without_not_applicable_notes(
    path: Path,
) -> None:
    doc = load(path)
    brief = render_brief(doc, where="out")
    assert len(brief.splitlines()) <= 40, brief
    assert "not applicable" not in brief and "TCP_INFO of" not in brief
    assert brief.rstrip().endswith("netrun report out --detail (or --format html)")
    full = render(doc, "table")  # the full report keeps every note
    assert len(full.splitlines()) > len(brief.splitlines())


def test_the_full_report_is_the_default_of_render_and_the_brief_is_asked_for() -> None:
    doc = load(FIXTURES / "results" / "shipped-baremetal" / "results.json")
    assert "unavailable for" in render(doc, "table")
    assert render(doc, "table", detail=False, where="X") == render_brief(doc, where="X")


def test_latency_under_load_shows_idle_beside_loaded_and_each_direction_of_the_load() -> None:
    doc = load(RRUL)
    [(_, head, headers, rows)] = tables(doc)
    assert head.startswith("latency under load") and "c→s + s→c" in head
    by_test = {r[0]: dict(zip(headers, r, strict=True)) for r in rows}
    rr = by_test["rrul-baremetal-rr"]
    assert rr["p50 ms idle→loaded"] == "0.023→27.583" and rr["added p50"] == "+27.557"
    assert rr["p99 ms idle→loaded"] == "0.121→39.785"
    assert rr["load Mbit/s c→s + s→c"] == "47.4 + 47.6"  # not one 95 Mbit/s "load"
    assert rr["load"] == "4+4 tcp" and rr["probe"] == "netperf bravo→alpha"
    assert by_test["rrul-baremetal"]["samples"] == "10/10"  # ping: 10 replies each phase


def test_a_latency_test_shows_its_tools_percentiles_unit_samples_and_rate() -> None:
    doc = load(RRUL)
    for sample in doc["tests"]:  # the same run without load: the loaded phase's metrics
        if sample["tool"] == "netperf":
            sample["metrics"] = {
                k.removesuffix("_idle"): v for k, v in sample["metrics"].items() if "_idle" in k
            }
            sample["details"] = sample["details"]["idle"]
    doc["tests"] = [s for s in doc["tests"] if s["tool"] == "netperf"]
    [(_, head, headers, rows)] = tables(doc)
    assert head.startswith("latency")
    assert headers[:9] == ["test", "mode", "sender→receiver", "tool", "unit", "p50", "p90",
                           "p99", "mean"]  # fmt: skip
    row = dict(zip(headers, rows[0], strict=True))
    assert row["unit"] == "µs" and row["p50"] == "22.7" and row["samples"] == "106083"
    assert row["trans/s"] == "35358"
    assert "Mbit/s" not in headers and "ceiling" not in headers


def test_trim_drops_the_columns_without_a_value_but_keeps_test_and_status() -> None:
    headers, rows = trim(["test", "a", "b", "status"], [["x", "-", "1", "-"], ["y", "", "-", "-"]])
    assert headers == ["test", "b", "status"] and rows == [["x", "1", "-"], ["y", "-", "-"]]


def test_a_killed_run_is_named_incomplete_with_what_it_did_not_reach() -> None:
    doc = load(FIXTURES / "results" / "shipped-baremetal" / "results.json")
    doc["status"] = "running"  # SIGKILL: the run never wrote its end
    doc["planned"] = [*dict.fromkeys(t["name"] for t in doc["tests"]), "later"]
    line = incomplete(doc)
    assert line is not None and line.startswith("INCOMPLETE RUN: it never saved its end")
    assert line.endswith("not measured: later")
    for text in (render_brief(doc), render(doc, "table"), render(doc, "markdown")):
        assert "INCOMPLETE RUN" in text.splitlines()[1], text
    doc["status"] = "finished"
    assert incomplete(doc) is None


def test_an_incomparable_verdict_says_why_under_the_tables() -> None:
    doc = load(FIXTURES / "results" / "shipped-baremetal" / "results.json")
    name = doc["tests"][0]["name"]
    verdicts = [Verdict(name, "incomparable", None, "bitrate 200M (baseline 300M)")]
    brief = render_brief(doc, verdicts)
    assert f"{name}: incomparable: bitrate 200M (baseline 300M)" in brief
    assert "incomparable" in brief.splitlines()[3]  # the verdict column of its row
