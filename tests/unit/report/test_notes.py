"""netrun.report.notes on real results.json files captured on the emulated lab
(tests/fixtures/results; their stories are in tests/unit/report/test_render.py)."""

from __future__ import annotations

import copy
import json
from typing import Any

from netrun.report.notes import notes
from netrun.report.summary import summary_rows
from tests.conftest import LOAD_FIXTURES, RESULTS_FIXTURES


def load(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((RESULTS_FIXTURES / name / "results.json").read_text())
    return doc


def test_the_legend_comes_before_what_happened() -> None:
    said = notes(load("repeats-8"))
    legend = next(i for i, line in enumerate(said) if line.startswith("line rate: 1000 Mbit/s"))
    spread = next(i for i, line in enumerate(said) if line.startswith("n = repeats"))
    outlier = next(i for i, line in enumerate(said) if "repeat 6 is an outlier" in line)
    assert legend < spread < outlier


def test_rows_given_are_the_rows_used() -> None:
    doc = load("repeats-8")
    assert notes(doc, summary_rows(doc)) == notes(doc)


def test_a_failure_is_told_once_and_not_again_as_a_run_error() -> None:
    doc = copy.deepcopy(load("mixed-failed-3"))
    error = next(t["error"] for t in doc["tests"] if t["status"] != "ok")
    doc["errors"] = [*doc.get("errors", []), error, "the controller lost a host"]
    doc["not_run"] = ["later-test"]
    said = notes(doc)
    assert [line for line in said if error in line] == [
        f"tcp-down: FAILED (repeat 1, 2, 3): {error}"
    ]
    assert said[-2:] == [
        "error: the controller lost a host",
        "not run (the run was interrupted): later-test",
    ]


def test_the_latency_legend_names_the_tools_figure() -> None:
    said = notes(load("ping-lab"))
    assert any(
        line.startswith("latency ms = ") and "ping's mean round-trip time" in line for line in said
    )


def test_a_tool_added_later_says_what_its_latency_is_in_its_own_words() -> None:
    """The legend reads the run's declaration of the metric (its description) and the
    sample's tool: no table of tools in the report."""
    doc = load("ping-lab")
    for test in doc["tests"]:
        test["tool"] = "hoptool"
    doc["metrics"]["rtt_avg_ms"]["description"] = "mean hop-by-hop time"
    said = [line for line in notes(doc) if line.startswith("latency ms = ")]
    assert said == ["latency ms = median of the repeats' mean (min-max): "
                    "hoptool's mean hop-by-hop time"]  # fmt: skip


def test_a_load_tests_idle_and_loaded_forms_are_one_note_per_metric() -> None:
    doc = json.loads((LOAD_FIXTURES / "rrul-baremetal-50mbit.results.json").read_text())
    lines = [line for line in notes(doc) if " unavailable for " in line]
    assert (
        "connections_per_s (idle and loaded) unavailable for rrul-baremetal-rr: only TCP_CRR "
        "opens a connection per transaction"
    ) in lines
    assert any(line.startswith("latency_p99_us (loaded) unavailable") for line in lines)
    assert not any("_idle" in line.split(" unavailable")[0] for line in lines)
    assert not any("_loaded" in line.split(" unavailable")[0] for line in lines)
