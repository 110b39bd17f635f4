"""The HTML page of a 32-host ordered mesh (992 tests), as `netrun report --format html` draws it.

The doc is generated from the real ``mesh-once-8`` results.json (an 8-host lab at
200 Mbit/s): its samples reused for every ordered pair of 32 hosts, named as netrun.scenario.pairs
names them (``mesh[h01->h02]``), with one host's pairs at 60% (a bad cable) and one pair
failed. What the page must still show: every test and every pair, the slow host and the
failed pair named, each plot inlined and sized for a browser, and, in its text, how the
plots draw a run this large. How long it takes is the benchmark's (bench/scale.py) to say.
"""

from __future__ import annotations

import base64
import copy
import json
import re
from html.parser import HTMLParser
from typing import Any

import pytest

from netrun.report.page import html_page
from netrun.report.plots.figures import MAX_BARS, MAX_PANELS
from tests.conftest import RESULTS_FIXTURES

HOSTS = [f"h{i:02d}" for i in range(1, 33)]
SLOW, FAILED = "h07", ("h03", "h09")


def mesh_doc(hosts: list[str]) -> dict[str, Any]:
    """An ordered mesh over ``hosts`` from the real 8-host run's samples."""
    real = json.loads((RESULTS_FIXTURES / "mesh-once-8" / "results.json").read_text())
    samples = [t for t in real["tests"] if t["status"] == "ok"]
    tests = []
    pairs = [(c, s) for c in hosts for s in hosts if c != s]
    for k, (client, server) in enumerate(pairs):
        test = copy.deepcopy(samples[k % len(samples)])
        test.update(name=f"mesh[{client}->{server}]", client=client, server=server,
                    hosts={"server": server, "client": client},
                    matrix={"id": "mesh", "pairs": "mesh"})  # fmt: skip
        if SLOW in (client, server):
            factor = 0.6
            test["throughput_bps"] *= factor
            test["metrics"]["throughput_bps"] *= factor
            test["intervals"] = [[a, b, bps * factor] for a, b, bps in test["intervals"]]
        if (client, server) == FAILED:
            test.update(status="failed", error="iperf3: unable to connect to server",
                        throughput_bps=None, intervals=[])  # fmt: skip
            test["metrics"]["throughput_bps"] = None
        tests.append(test)
    return {**real, "scenario": "mesh-32", "tests": tests}


class _Page(HTMLParser):
    """Tables (as rows of cell texts), images and the text of each <h2> and <p>."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self.imgs: list[dict[str, str | None]] = []
        self.captions: dict[str, str] = {}
        self.notes: list[str] = []
        self._cell: list[str] | None = None
        self._tag = ""
        self._h2 = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._tag = tag
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "img":
            self.imgs.append(dict(attrs))

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append("".join(self._cell))
            self._cell = None
        self._tag = ""

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        elif self._tag == "h2":
            self._h2 = data
        elif self._tag == "p":
            self.captions[self._h2] = data
        elif self._tag == "li":
            self.notes.append(data)


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


@pytest.fixture(scope="module")
def page() -> _Page:
    doc = mesh_doc(HOSTS)
    assert len(doc["tests"]) == 992
    parsed = _Page()
    parsed.feed(html_page(doc))
    return parsed


def test_every_test_and_every_pair_is_on_the_page(page: _Page) -> None:
    names = {f"mesh[{c}->{s}]" for c in HOSTS for s in HOSTS if c != s}
    tables = [t for t in page.tables if t[0][0] not in ("tests", "host")]  # not the overview
    summary, grid, samples = (tables[0], tables[1], tables[-1])
    assert {row[0] for row in summary[1:]} == names and len(summary) == 993
    assert {row[0] for row in samples[1:]} == names
    assert grid[0] == ["client \\ server", *HOSTS]
    assert [row[0] for row in grid[1:]] == HOSTS
    cells = {(row[0], s): v for row in grid[1:] for s, v in zip(HOSTS, row[1:], strict=True)}
    assert cells[FAILED] == "FAIL"
    measured = [v for (c, s), v in cells.items() if c != s and (c, s) != FAILED]
    assert len(measured) == 991 and all(float(v) > 0 for v in measured), "a number per pair"


def test_the_slow_host_and_the_failed_pair_are_named(page: _Page) -> None:
    said = " ".join(page.notes)
    assert f"all 62 pairs of {SLOW}" in said and f"look at {SLOW}'s cable" in said
    assert "1 pair(s) failed (FAIL): h03->h09" in said


def test_plots_are_inlined_sized_for_a_browser_and_say_how_they_draw_992_tests(
    page: _Page,
) -> None:
    assert [img["alt"] for img in page.imgs] == ["throughput", "intervals", "matrix-mesh"]
    for img in page.imgs:
        src = img["src"] or ""
        assert src.startswith("data:image/png;base64,")
        width, height = png_size(base64.b64decode(src.split(",", 1)[1]))
        assert 600 <= width <= 2000 and 300 <= height <= 1400, (img["alt"], width, height)
    assert page.captions["throughput"].startswith(f"992 tests, more than {MAX_BARS}: each")
    assert "ranked lowest first" in page.captions["throughput"]
    assert page.captions["intervals"].startswith(f"992 tests, more than {MAX_PANELS}: every")
    assert page.captions["matrix-mesh"].startswith("32 servers, more than 16: the cells carry")


def test_a_small_mesh_keeps_its_bars_panels_and_numbered_cells() -> None:
    small = _Page()
    small.feed(html_page(mesh_doc(HOSTS[:4])))  # 12 tests: every plot as before
    assert [img["alt"] for img in small.imgs] == ["throughput", "intervals", "matrix-mesh"]
    assert not set(small.captions) & {"throughput", "intervals", "matrix-mesh"}
    assert not re.search(r"more than \d+", " ".join(small.captions.values()))
