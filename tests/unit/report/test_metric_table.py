"""The metrics table at the precision the data carries, on a real lab run of netperf
(tests/fixtures/results/netperf-lab: 2 and 3 repeats of TCP_RR, 3 of UDP_RR x2)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from typing import Any

from netrun.report import exporters
from netrun.report.metric_table import json_rows, rows
from tests.conftest import RESULTS_FIXTURES


def lab() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(
        (RESULTS_FIXTURES / "netperf-lab" / "results.json").read_text()
    )
    return doc


def table() -> dict[tuple[str, str], list[str]]:
    return {(r[0], r[1]): r for r in rows(lab())}


def test_two_repeats_show_no_interval() -> None:
    got = table()
    assert all(r[8] == "-" for (test, _), r in got.items() if test == "rr-2" and r[4] != "0")
    assert got[("rr-3", "transactions_per_s")][8] != "-"


def test_no_interval_has_a_negative_bound() -> None:
    for row in rows(lab()):
        assert row[8] == "-" or not row[8].startswith("-"), row
    # the 3-repeat longest transaction: the t interval's low end is below 0, shown as 0
    assert table()[("rr-3", "latency_max_us")][8].startswith("0-")


def test_percentiles_are_whole_buckets_with_the_bucket_named() -> None:
    got = table()
    assert got[("rr-3", "latency_p50_us")][5] == "20 (bucket 20-30 us)"
    assert got[("rr-3", "latency_p99_us")][5] == "1000 (buckets 1000-2000, 2000-3000 us)"
    # two repeats in two buckets: the middle two as a range, never their mean (600)
    assert got[("rr-2", "latency_p99_us")][5] == "200-1000 (buckets 200-300, 1000-2000 us)"
    for (_, name), row in got.items():
        if name.startswith("latency_p") and row[4] != "0":
            assert "." not in row[5].split(" (")[0], row  # no decimals below a bucket
    # exact figures (netperf's own mean, from every transaction) name no bucket
    assert "bucket" not in got[("rr-3", "latency_mean_us")][5]


def test_json_rows_name_the_buckets() -> None:
    found = json_rows(lab())["udp-rr-3"]["latency_p50_us"]
    assert found["buckets"] == "buckets 20-30, 40-50 us"
    assert "buckets" not in json_rows(lab())["udp-rr-3"]["latency_mean_us"]
    assert json_rows(lab())["rr-2"]["latency_max_us"]["ci_low"] is None


def test_junit_names_the_bucket_too() -> None:
    suite = ET.tostring(exporters.testsuite(lab())).decode()
    assert "latency_p50_us: median 20 (bucket 20-30 us)" in suite
    assert "latency_p99_us: median 200-1000 (buckets 200-300, 1000-2000 us)" in suite
    assert "latency_mean_us: median 58.7 us" in suite


def test_a_load_tests_phase_percentiles_name_their_buckets() -> None:
    """A real netperf TCP_RR idle, then under a 4+4 stream load (netperf-load): each phase's
    percentile names the bucket its own histogram put it in (details.idle/loaded)."""
    doc = json.loads((RESULTS_FIXTURES / "netperf-load" / "results.json").read_text())
    got = {(r[0], r[1]): r for r in rows(doc)}
    idle, loaded = (
        got[("rr-load", "latency_p50_us_idle")],
        got[("rr-load", "latency_p50_us_loaded")],
    )
    assert idle[5] == "20 (buckets 20-30, 30-40 us)"
    assert loaded[5] == "7000 (buckets 6000-7000, 7000-8000 us)"
    assert "bucket" not in got[("rr-load", "latency_mean_us_idle")][5]
