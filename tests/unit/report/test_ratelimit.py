"""netrun.report.ratelimit: a rate-limited test's % ceil stays against the line's ceiling,
marked, with a note giving the rate it asked for. Fixture: baremetal-4s (a real lab run:
three TCP tests and udp-500m, UDP at 500 Mbit/s on 1 GbE)."""

from __future__ import annotations

import copy
import csv
import io
import json
from typing import Any

from netrun.report import ratelimit
from netrun.report.render import render, render_table
from netrun.report.summary import table_rows
from tests.conftest import RESULTS_FIXTURES


def load() -> dict[str, Any]:
    return json.loads((RESULTS_FIXTURES / "baremetal-4s" / "results.json").read_text())


def cells(doc: dict[str, Any]) -> dict[str, str]:
    headers, rows = table_rows(doc)
    return {r[0]: r[headers.index("% ceil")] for r in rows}


def test_udp_at_500m_is_marked_against_the_ceiling_and_tcp_is_not() -> None:
    doc = load()
    udp = next(t for t in doc["tests"] if t["name"] == "udp-500m")
    shown = cells(doc)
    pct = 100 * udp["throughput_bps"] / 1e6 / udp["goodput_ceiling_mbps"]
    assert shown["udp-500m"] == f"{pct:.1f}{ratelimit.MARK}"  # still the line's ceiling
    assert shown["tcp-forward"][-1].isdigit() and shown["tcp-4-streams"][-1].isdigit()


def test_the_note_names_the_test_its_asked_rate_and_that_share_of_the_ceiling() -> None:
    doc = load()
    ceiling = next(t for t in doc["tests"] if t["name"] == "udp-500m")["goodput_ceiling_mbps"]
    (line,) = [x for x in render_table(doc).splitlines() if x.startswith("* rate limited")]
    assert f"udp-500m asked 500 Mbit/s ({100 * 500 / ceiling:.1f}% of its ceiling)" in line
    assert "against the line's ceiling" in line and "tcp-" not in line


def test_a_rate_at_or_above_the_ceiling_limits_nothing() -> None:
    doc = load()
    for test in doc["tests"]:
        if test["name"] == "udp-500m":
            test["options"]["bitrate"] = "2G"
    assert cells(doc)["udp-500m"][-1].isdigit()
    assert "rate limited" not in render_table(doc)


def test_a_tcp_test_with_a_bitrate_below_the_ceiling_is_marked() -> None:
    doc = load()
    extra = copy.deepcopy(next(t for t in doc["tests"] if t["name"] == "tcp-forward"))
    extra["name"] = "tcp-300m"
    extra["options"]["bitrate"] = "300M"
    doc["tests"].append(extra)
    assert cells(doc)["tcp-300m"].endswith(ratelimit.MARK)
    assert cells(doc)["tcp-forward"][-1].isdigit()


def test_csv_carries_the_asked_rate_unmarked() -> None:
    rows = {r["name"]: r for r in csv.DictReader(io.StringIO(render(load(), "csv")))}
    assert float(rows["udp-500m"]["offered_mbps"]) == 500
    assert rows["tcp-forward"]["offered_mbps"] == ""
    assert not rows["udp-500m"]["pct_ceiling"].endswith(ratelimit.MARK)
