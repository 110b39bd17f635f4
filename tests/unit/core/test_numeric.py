"""Untrusted numbers (issue 9): a huge integer, an exponent beyond float range or a negative
zero is bad data with a clear message, or a missing value, never a traceback."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from netrun.core import numeric
from netrun.core.options import parse_overrides
from netrun.errors import NetrunError
from netrun.history.db import History
from netrun.results import store as results
from netrun.scenario.loader import load_scenario
from netrun.tools.iperf3 import parse as iperf3_parse
from tests.conftest import IPERF3_FIXTURES, RESULTS_FIXTURES

HUGE = 10**400


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1, 1.0),
        (-0.0, 0.0),
        (2.5, 2.5),
        (HUGE, None),
        (-HUGE, None),
        (float("nan"), None),
        (float("inf"), None),
        (1e300, None),  # beyond the limit of a measurement
        (True, None),
        ("12", None),
        (None, None),
    ],
)
def test_finite(value: object, expected: float | None) -> None:
    got = numeric.finite(value)
    assert got == expected
    if got == 0.0:
        assert str(got) == "0.0"  # not "-0.0"


def test_whole_truncates_and_refuses_overflow() -> None:
    assert numeric.whole(3.9) == 3
    assert numeric.whole(HUGE) is None


def _iperf3_doc() -> dict:
    return json.loads((IPERF3_FIXTURES / "tcp_1stream.stdout").read_text())


def test_iperf3_parser_reads_a_huge_interval_start_as_missing() -> None:
    doc = _iperf3_doc()
    doc["intervals"][1]["sum"]["start"] = HUGE  # once an OverflowError in float()
    result = iperf3_parse.parse(json.dumps(doc), 0, "")
    assert result.intervals[1].start == 0.0
    assert result.receiver_bps > 0


def test_iperf3_parser_refuses_a_huge_rate_with_a_plain_error() -> None:
    doc = _iperf3_doc()
    doc["end"]["sum_received"]["bits_per_second"] = HUGE
    doc["end"]["sum_received"]["bytes"] = HUGE
    with pytest.raises(NetrunError, match="no usable receiver rate"):
        iperf3_parse.parse(json.dumps(doc), 0, "")


def _results_with(tmp_path: Path, **fields: object) -> Path:
    src = RESULTS_FIXTURES / "baremetal-3"
    shutil.copytree(src, tmp_path / "run")
    path = tmp_path / "run" / "results.json"
    doc = json.loads(path.read_text())
    doc["tests"][0].update(fields)
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize(
    "fields",
    [{"throughput_bps": HUGE}, {"retransmits": -HUGE}, {"repeat": HUGE}, {"jitter_ms": 1e300}],
)
def test_results_read_back_refuse_huge_numbers(tmp_path: Path, fields: dict) -> None:
    path = _results_with(tmp_path, **fields)
    with pytest.raises(NetrunError, match="has the wrong type"):
        results.load(path)


def test_history_import_skips_a_run_with_huge_numbers(tmp_path: Path) -> None:
    _results_with(tmp_path, throughput_bps=HUGE)
    problems: list[str] = []
    with History.open(tmp_path / "h.sqlite") as db:
        assert db.import_dir(tmp_path, problems) == []
    assert len(problems) == 1 and "throughput_bps" in problems[0]


def test_scenario_numbers(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        "name: s\ntests: [{name: t, mode: baremetal, server: a, client: b, omit: -0.0,"
        f" duration: {HUGE}, bitrate: {HUGE}, window: 1e999}}]\n"
    )
    with pytest.raises(NetrunError) as err:
        load_scenario(path, hosts=("a", "b"))
    text = str(err.value)
    assert "duration must be" in text and "bitrate" in text and "window" in text
    assert "omit" not in text  # -0.0 is 0
    assert parse_overrides(["omit=-0.0"]) == {"omit": 0.0}
    assert str(parse_overrides(["omit=-0.0"])["omit"]) == "0.0"


def test_short_shows_about_three_significant_figures() -> None:
    """One rule for the table's stats columns and the live line (netrun.run.sampler.mbps)."""
    from netrun.core import numeric
    from netrun.run import sampler

    assert [numeric.short(v) for v in (938.4, 52.44, 1.634, -52.44, None)] == [
        "938", "52.4", "1.63", "-52.4", "-",
    ]  # fmt: skip
    assert numeric.short(3.14159, numeric.digits(52.4)) == "3.1"
    assert sampler.mbps(938.4e6) == numeric.short(938.4) == "938"
