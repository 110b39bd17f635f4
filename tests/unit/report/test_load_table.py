"""The latency-under-load table, on the results of a real run over a 50 Mbit/s lab link
(tests/fixtures/load: the bare-metal tests of scenarios/rrul.yaml, 3 repeats)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from netrun import tools
from netrun.report import headline, load_table
from netrun.report.html import render_html
from netrun.report.render import render_json, render_markdown, render_table
from netrun.report.summary import group_samples
from netrun.results import stats
from netrun.tools.base import Latency
from tests.conftest import LOAD_FIXTURES, RESULTS_FIXTURES
from tests.unit.tools import probe_tool


def doc() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(
        (LOAD_FIXTURES / "rrul-baremetal-50mbit.results.json").read_text()
    )
    return loaded


def test_each_load_test_is_one_row_of_medians() -> None:
    found = {r.test: r for r in load_table.loaded(doc())}
    assert list(found) == ["rrul-baremetal", "rrul-baremetal-rr"]
    ping, rr = found["rrul-baremetal"], found["rrul-baremetal-rr"]
    samples = group_samples(doc()["tests"])["rrul-baremetal"]
    idle = stats.summarize(stats.ok_values(samples, "rtt_p50_ms_idle"))
    assert idle is not None and ping.idle_p50_ms == idle.median
    assert ping.loaded_p50_ms is not None and ping.loaded_p50_ms > 10  # the 20 ms queue
    assert ping.added_p99_ms is None and ping.n == 3 and ping.load == "4x tcp both"
    assert rr.idle_p50_ms is not None and rr.idle_p50_ms < 1  # netperf's us, shown in ms
    assert rr.added_p99_ms is not None  # one repeat of three had 100 transactions
    assert rr.load_bps is not None and 80e6 < rr.load_bps < 100e6


def test_text_markdown_json_and_html_show_it() -> None:
    text = render_table(doc())
    assert load_table.TITLE in text and "added p50 ms" in text
    row = next(line for line in text.splitlines() if "4x tcp both" in line)
    assert row.startswith("rrul-baremetal ") and row.split()[-1] == "3"
    assert "#### latency under load" in render_markdown(doc())
    rows = json.loads(render_json(doc()))["latency_under_load"]
    assert [r["test"] for r in rows] == ["rrul-baremetal", "rrul-baremetal-rr"]
    assert rows[0]["added_p50_ms"] == pytest.approx(
        rows[0]["loaded_p50_ms"] - rows[0]["idle_p50_ms"], abs=5
    )
    assert "<h2>latency under load" in render_html(doc())


def test_a_run_without_load_has_no_table_and_added_latency_is_no_latency_family() -> None:
    plain = doc()
    plain["tests"] = [dict(s, metrics={"rtt_avg_ms": 0.1}) for s in plain["tests"]]
    assert load_table.rows(plain) == []
    assert load_table.TITLE not in render_table(plain)
    names = list(doc()["tests"][0]["metrics"])
    assert names[0] == "latency_added_p50_ms"
    assert headline.latency_prefix(names) is None  # not drawn in latency.png as a latency


def test_netperf_under_load_is_shown_to_its_buckets_and_names_them() -> None:
    """The real netperf-load run (TCP_RR idle, then under a 4+4 stream load): idle p50 20 us
    (bucket 20-30 us), loaded 7000 us (7-8 ms). Each figure is shown no finer than its bucket
    (0.02, 7: not 0.020, 7.000), the added one to the wider bucket with that width (7 ±1,
    not 6.970), and one line names the buckets; the brief report likewise."""
    from netrun.report import brief

    doc = json.loads((RESULTS_FIXTURES / "netperf-load" / "results.json").read_text())
    (row,) = load_table.rows(doc)
    assert row[4:10] == ["0.02", "7", "7 ±1", "2", "10", "10 ±10"]
    note = load_table.bucket_note(doc)
    assert note.startswith("buckets (idle→loaded, ms): rr-load p50 0.01→1, p99 1→10")
    assert "low edge" in note and "added ± the wider bucket" in note
    (brow,) = load_table.brief_rows(doc)
    assert brow[4:8] == ["0.02→7", "+7 ±1", "2→10", "+10 ±10"]
    (table,) = [t for t in brief.tables(doc) if t.kind == "load"]
    assert table.title.endswith(note)


def test_ping_under_load_keeps_its_precision() -> None:
    """ping's percentiles are not bucketed: no note, three decimals as before (a real
    netperf-load sample turned ping: its tool and details' buckets changed)."""
    doc = json.loads((RESULTS_FIXTURES / "netperf-load" / "results.json").read_text())
    for s in doc["tests"]:
        s["tool"] = "ping"
        for phase in ("idle", "loaded"):
            s["details"][phase].pop("bucket_us", None)
        m = s["metrics"]
        m.update(rtt_p50_ms_idle=0.0213, rtt_p50_ms_loaded=6.9731)
    (row,) = load_table.rows(doc)
    assert row[4:7] == ["0.021", "6.973", "6.970"] and load_table.bucket_note(doc) == ""


def test_a_tool_says_which_metrics_are_its_latency(monkeypatch: pytest.MonkeyPatch) -> None:
    """The table reads Tool.latency, never a tool's name: the tests' own probe tool,
    given percentiles in seconds, shows in ms; a tool this netrun does not know, none."""
    probe = replace(probe_tool.TOOL, latency=Latency("rtt_p50_s", "rtt_p99_s", per_ms=1000.0))
    monkeypatch.setattr(probe_tool, "TOOL", probe)
    monkeypatch.setitem(tools._MODULES, "probe", "tests.unit.tools.probe_tool")
    metrics = {"latency_added_p50_ms": 4.0, "rtt_p50_s_idle": 0.001, "rtt_p50_s_loaded": 0.005}
    sample = {"name": "p", "mode": "baremetal", "tool": "probe", "status": "ok",
              "options": {"load": True}, "metrics": metrics}  # fmt: skip
    (row,) = load_table.loaded({"tests": [sample]})
    assert row.idle_p50_ms == pytest.approx(1.0) and row.loaded_p50_ms == pytest.approx(5.0)
    (unknown,) = load_table.loaded({"tests": [dict(sample, tool="nosuchtool")]})
    assert unknown.idle_p50_ms is None and unknown.added_p50_ms == 4.0
