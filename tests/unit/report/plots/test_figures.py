"""netrun.report.plots.figures draws real PNGs from the real results.json fixtures (see
tests/unit/report/test_render.py)."""

from __future__ import annotations

import copy
import json
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest

from netrun.errors import NetrunError
from netrun.report.plots.figures import (
    TrendPoint,
    plot_all,
    plot_intervals,
    plot_throughput,
    plot_trend,
)
from netrun.results import stats
from tests.conftest import HISTORY_FIXTURES, RESULTS_FIXTURES

ALL = ["baremetal-4s", "baremetal-3", "freeflow-3", "mixed-failed-3", "repeats-8"]
SIGNATURE = b"\x89PNG\r\n\x1a\n"


def load(path: Path) -> dict[str, Any]:
    return json.loads((path / "results.json").read_text())


def png_size(path: Path) -> tuple[int, int]:
    """Width and height from the IHDR chunk, after checking the signature and its CRC."""
    data = path.read_bytes()
    assert data[:8] == SIGNATURE, path
    length, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR" and length == 13
    body = data[16 : 16 + length]
    (crc,) = struct.unpack(">I", data[16 + length : 20 + length])
    assert zlib.crc32(kind + body) == crc
    assert data.endswith(b"IEND\xaeB`\x82")
    width, height = struct.unpack(">II", body[:8])
    return width, height


def sensible(path: Path) -> None:
    width, height = png_size(path)
    assert 600 <= width <= 3000 and 300 <= height <= 2000, (path, width, height)
    assert path.stat().st_size > 10_000  # something was drawn, not a blank page


@pytest.mark.parametrize("name", ALL)
def test_plot_all_writes_two_valid_pngs(name: str, tmp_path: Path) -> None:
    paths = plot_all(load(RESULTS_FIXTURES / name), tmp_path / "plots")
    assert [p.name for p in paths] == ["throughput.png", "intervals.png"]
    for path in paths:
        sensible(path)


def test_throughput_width_grows_with_the_number_of_tests(tmp_path: Path) -> None:
    few = png_size(plot_throughput(load(RESULTS_FIXTURES / "freeflow-3"), tmp_path / "few.png"))[0]
    doc = load(RESULTS_FIXTURES / "baremetal-3")
    many = copy.deepcopy(doc)
    for copy_no in range(1, 5):
        many["tests"] += [{**t, "name": f"{t['name']}-{copy_no}"} for t in doc["tests"]]
    wide = png_size(plot_throughput(many, tmp_path / "many.png"))[0]
    assert few < wide <= 3000


def test_failed_and_empty_runs_still_plot(tmp_path: Path) -> None:
    doc = load(RESULTS_FIXTURES / "mixed-failed-3")
    failed = copy.deepcopy(doc)
    for t in failed["tests"]:
        t.update(status="failed", error="down", throughput_bps=None, intervals=[])
    for maker in (plot_throughput, plot_intervals):
        sensible(maker(failed, tmp_path / f"failed-{maker.__name__}.png"))
        sensible(maker({**doc, "tests": []}, tmp_path / f"empty-{maker.__name__}.png"))


def test_plot_trend_over_real_history(tmp_path: Path) -> None:
    series: list[TrendPoint] = []
    for run in sorted(HISTORY_FIXTURES.glob("baremetal-*")):
        doc = load(run)
        name = doc["tests"][0]["name"]
        values = stats.ok_values([t for t in doc["tests"] if t["name"] == name], "throughput_bps")
        s = stats.summarize([v / 1e6 for v in values])
        assert s is not None
        series.append((doc["started"], s.median, s.ci_low, s.ci_high))
    series.append(("2026-12-01T02:00:00Z", None, None, None))  # a night whose test failed
    path = plot_trend(series, tmp_path / "trend.png", "tcp: median Mbit/s per night")
    sensible(path)
    sensible(plot_trend([], tmp_path / "none.png", "no runs yet"))


def test_unwritable_folder_is_a_netrun_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(NetrunError, match="cannot create the plot folder"):
        plot_all(load(RESULTS_FIXTURES / "baremetal-3"), blocker / "plots")
    with pytest.raises(NetrunError, match="cannot write the plot"):
        plot_throughput(load(RESULTS_FIXTURES / "baremetal-3"), tmp_path / "missing" / "t.png")
    from netrun.report.plots import png  # the one save of every plot (sweeps, matrix, MTU too)

    with pytest.raises(NetrunError, match=r"m\.png: cannot write the plot"):
        png.save(png.figure(2, 2), tmp_path / "missing" / "m.png")


def swept(doc: dict[str, Any], key: str, values: list[Any]) -> dict[str, Any]:
    """The run's first test repeated as a sweep over ``key`` (names and options as the
    scenario loader writes them), each value scaling its throughput."""
    first = next(t for t in doc["tests"] if t["status"] == "ok")
    tests = []
    for i, value in enumerate(values, 1):
        options = {**first["options"], key: value}
        bps = first["throughput_bps"] * i / len(values)
        tests.append({**first, "name": f"sz[{key}={value}]", "options": options,
                      "throughput_bps": bps})  # fmt: skip
    return {**doc, "tests": tests}


def test_sweeps_are_curves_over_the_swept_value(tmp_path: Path) -> None:
    from netrun.report.plots import curves

    doc = swept(load(RESULTS_FIXTURES / "baremetal-4s"), "length", [100, "1K", 1400])
    found = curves.sweeps(doc)
    assert list(found) == [("sz", "length")]
    [(_label, points)] = found[("sz", "length")].items()
    assert [p[0] for p in points] == [100.0, 1000.0, 1400.0]
    assert points[0][1] < points[1][1] < points[2][1]
    paths = plot_all(doc, tmp_path)
    assert [p.name for p in paths] == ["throughput.png", "intervals.png", "sweeps.png"]
    sensible(paths[-1])
    assert curves.sweeps(load(RESULTS_FIXTURES / "baremetal-3")) == {}  # no sweep: no sweeps.png


def test_intervals_are_one_small_plot_per_test(tmp_path: Path) -> None:
    doc = load(RESULTS_FIXTURES / "baremetal-3")
    one = {**doc, "tests": doc["tests"][:1]}
    six = {**doc, "tests": [{**t, "name": f"t{i}"} for i in range(6) for t in doc["tests"][:1]]}
    w1, h1 = png_size(plot_intervals(one, tmp_path / "one.png"))
    w6, h6 = png_size(plot_intervals(six, tmp_path / "six.png"))
    assert w6 > w1 and h6 > h1, "a grid of 3 columns and 2 rows"


def test_trend_shows_baseline_and_band_even_above_every_point(tmp_path: Path) -> None:
    series: list[TrendPoint] = [("2026-11-29T02:00:00Z", 900.0, 880.0, 920.0),
                                ("2026-11-30T02:00:00Z", 700.0, None, None)]  # fmt: skip
    plain = plot_trend(series, tmp_path / "plain.png", "t")
    banded = plot_trend(series, tmp_path / "band.png", "s: t (baremetal, b→a, tcp)",
                        baseline=1200.0, tolerance=0.05)  # fmt: skip
    sensible(banded)
    assert banded.read_bytes() != plain.read_bytes()


def test_a_large_run_draws_every_test_on_one_axes(tmp_path: Path) -> None:
    """A 992-test mesh kept the HTML page busy for minutes (one bar and one shared-axis panel
    per test), then seconds (the first 48); past MAX_BARS tests the medians are one ranked
    axes, past MAX_PANELS the intervals are one axes, whatever the count."""
    from netrun.report.plots.figures import MAX_BARS, MAX_PANELS

    doc = load(RESULTS_FIXTURES / "baremetal-3")
    big = {**doc, "tests": [{**doc["tests"][0], "name": f"m[{i}]"} for i in range(300)]}
    assert png_size(plot_intervals(big, tmp_path / "i.png")) == (1200, 500)
    assert png_size(plot_throughput(big, tmp_path / "t.png")) == (1200, 500)
    edge = {**doc, "tests": [{**doc["tests"][0], "name": f"m[{i}]"} for i in range(MAX_PANELS)]}
    _, height = png_size(plot_intervals(edge, tmp_path / "edge.png"))
    assert height == round((2.6 * MAX_PANELS / 3 + 1.2) * 100), "small plots up to the cap"
    bars = {**doc, "tests": [{**doc["tests"][0], "name": f"m[{i}]"} for i in range(MAX_BARS)]}
    assert png_size(plot_throughput(bars, tmp_path / "bars.png"))[0] > 2000, "a bar each"
