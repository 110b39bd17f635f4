"""The latency-under-load table, on the results of a real run over a 50 Mbit/s lab link
(tests/fixtures/load: the bare-metal tests of scenarios/rrul.yaml, 3 repeats)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from netrun.report import headline, load_table
from netrun.report.html import render_html
from netrun.report.render import render_json, render_markdown, render_table
from netrun.report.summary import group_samples
from netrun.results import stats
from tests.conftest import LOAD_FIXTURES


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
