"""Report pages rendered from saved runs, checked as a reader sees them (issue 25).

Fixtures (tests/fixtures/results/*/results.json, as netrun wrote them on the emulated lab):
- shipped-NAME: scenarios/NAME.yaml with -e duration=1 -e repeat=1, every test passing;
- turn-lab: scenarios/turn.yaml (iperf2 direct, TURN-UDP, TURN-TCP through coturn);
- ping-lab: scenario.yaml beside it, ping alone, 3 repeats;
- ping-mixed: scenario.yaml beside it, ping beside an iperf3 TCP and a UDP test;
- mixed-failed-3: a test on a closed port fails, the others pass.
Every page must inline PNGs that decode, and say or draw "FAILED" only for a failed test.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from netrun.report import headline
from netrun.report.page import html_page
from netrun.report.plots import figures, matrix, png, style
from netrun.report.render import render_markdown, render_table
from netrun.report.summary import summary_rows, table_rows
from tests.conftest import RESULTS_FIXTURES, ROOT
from tests.pages import PNG_SIGNATURE, figure_texts, inlined_pngs, passing

SHIPPED = sorted(p.parent.name for p in RESULTS_FIXTURES.glob("shipped-*/results.json"))
PASSING = [*SHIPPED, "turn-lab", "ping-lab", "ping-mixed"]


def load(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((RESULTS_FIXTURES / name / "results.json").read_text())
    return doc


def page_of(doc: dict[str, Any]) -> tuple[str, dict[str, list[str]]]:
    with figure_texts() as texts:
        page = html_page(doc)
    return page, texts


def test_the_saved_runs_are_of_shipped_scenarios() -> None:
    """A new scenario file is covered by the lab test (its page in Chromium) at once; its
    saved run here is captured with `netrun FILE -i INVENTORY -e duration=1 -e repeat=1`."""
    shipped = {p.stem for p in (ROOT / "scenarios").glob("*.yaml")}
    assert SHIPPED and {n.removeprefix("shipped-") for n in SHIPPED} <= shipped


@pytest.mark.parametrize("name", PASSING)
def test_a_passing_run_is_never_written_or_drawn_failed(name: str) -> None:
    doc = load(name)
    assert passing(doc) == {t["name"] for t in doc["tests"]}
    page, texts = page_of(doc)
    pngs = inlined_pngs(page)
    assert pngs and page.count("<img ") == len(pngs)
    for alt, data in pngs.items():
        assert data.startswith(PNG_SIGNATURE) and data.endswith(b"IEND\xaeB`\x82"), alt
    said = page.lower().replace("failed{", "").replace("<th>failed</th>", "")  # a count's label
    assert "FAILED" not in page and "failed" not in said
    assert "<th>failed</th>" not in page or "<th>tests</th><th>passed</th><th>failed</th>" in page
    for plot, words in texts.items():
        assert not [w for w in words if "fail" in w.lower()], (plot, words)


def test_a_failed_test_alone_is_failed() -> None:
    doc = load("mixed-failed-3")
    page, texts = page_of(doc)
    assert "tcp-down: FAILED" in page
    assert "FAILED" in texts["throughput.png"]
    assert [w for w in texts["intervals.png"] if "failed" in w] == ["failed: no intervals"]
    rows = {r["name"]: r for r in summary_rows(doc)}
    assert rows["tcp-ok"]["status"] == "ok" and rows["tcp-down"]["status"] == "FAILED"


def test_a_ping_run_leads_with_its_rtt_and_has_no_throughput() -> None:
    doc = load("ping-lab")
    headers, rows = table_rows(doc)
    assert "Mbit/s" not in headers and "ceiling" not in headers and "retr" not in headers
    cell = rows[0][headers.index("latency ms")]
    (row,) = summary_rows(doc)
    assert row["headline"] == "rtt_avg_ms" and cell.startswith(f"{row['latency_ms']['avg']:.3f}")
    assert headline.headline(doc, doc["tests"]).name == "rtt_avg_ms"
    _, texts = page_of(doc)
    assert set(texts) == {"latency.png"}  # no throughput, no intervals
    assert "Mbit/s" not in render_markdown(doc).split("\n\n")[1].splitlines()[0]
    assert "Mbit/s" not in render_table(doc)


def test_ping_beside_iperf3_has_blank_cells_not_dashes() -> None:
    doc = load("ping-mixed")
    headers, rows = table_rows(doc)
    by_name = {r[0]: dict(zip(headers, r, strict=True)) for r in rows}
    assert by_name["ping-idle"]["Mbit/s"] == "" and by_name["tcp"]["Mbit/s"] != ""
    assert by_name["ping-idle"]["latency ms"] != "" and by_name["tcp"]["latency ms"] == ""
    _, texts = page_of(doc)
    assert {"throughput.png", "latency.png", "intervals.png"} <= set(texts)
    assert not [w for w in texts["throughput.png"] if w == "ping-idle"]  # not a bar
    assert any(w == "ping-idle" for w in texts["latency.png"])


def test_the_turn_page_shows_transport_jitter_latency_and_the_relay() -> None:
    doc = load("shipped-turn")
    headers, rows = table_rows(doc)
    cells = {r[0]: dict(zip(headers, r, strict=True)) for r in rows}
    assert cells["turn-udp-1000pps"]["mode"] == "turn (TURN-UDP)"
    assert cells["turn-tcp-10000pps"]["mode"] == "turn (TURN-TCP)"
    assert all(c["jitter/loss"] != "-" for c in cells.values())  # iperf2's jitter shows
    assert all(c["Mbit/s"] not in ("", "-") for c in cells.values())
    page, texts = page_of(doc)
    assert "latency.png" in texts and "TURN-UDP" in " ".join(texts["latency.png"])
    assert "<h2>relay latency (one-way)</h2>" in page
    text = render_table(doc)
    assert "the relay added" in text and "over TURN-UDP (95% interval" in text
    assert "relayed and" in text and "direct packets" in text


def test_percent_bare_compares_only_alike_tests() -> None:
    rows = {r["name"]: r for r in summary_rows(load("shipped-turn"))}
    assert rows["turn-udp-1000pps"]["pct_bare"] is not None  # 1000 pps against 1000 pps
    assert rows["turn-tcp-10000pps"]["pct_bare"] is None  # 10000 pps: no alike bare test


def test_modes_keep_one_colour_in_every_plot(tmp_path: Path) -> None:
    doc = load("shipped-turn")
    drawn: dict[str, set[str]] = {}
    plots: dict[str, set[str]] = {}
    real = png.save

    def record(fig: Any, path: Path) -> Path:
        from matplotlib.colors import to_hex

        for ax in fig.axes:
            handles, labels = ax.get_legend_handles_labels()
            for handle, label in zip(handles, labels, strict=True):
                patches = getattr(handle, "patches", None)  # a bar chart's container
                colour = patches[0].get_facecolor() if patches else handle.get_color()
                drawn.setdefault(label, set()).add(to_hex(colour, keep_alpha=False))
                plots.setdefault(label, set()).add(Path(path).name)
        return real(fig, path)

    with mock.patch.object(png, "save", record):
        figures.plot_all(doc, tmp_path)
    for mode in ("baremetal", "turn"):
        assert drawn[mode] == {style.MODE_COLOURS[mode].lower()}
        assert plots[mode] == {"throughput.png", "latency.png"}


def test_axes_follow_the_data_and_the_ceiling() -> None:
    bottom, top = style.value_range([940.0, 921.0], [1000.0])  # a 2% drop below the line
    assert 850 < bottom < 921 and 1000 < top < 1050
    assert style.value_range([0.8, 8.0], [1000.0]) == (0.0, pytest.approx(8.0 + 7.2 * 0.12 * 1.25))
    assert style.ceilings_in_reach([0.8, 8.0], [1000.0]) == []
    assert style.value_range([]) == (0.0, 1.0)


def test_the_heatmap_scale_follows_the_pairs(tmp_path: Path) -> None:
    doc = load("mesh-once-8-slow-delta")
    limits: list[tuple[float, float]] = []
    real = png.save

    def record(fig: Any, path: Path) -> Path:
        limits.extend(im.get_clim() for ax in fig.axes for im in ax.get_images())
        return real(fig, path)

    with mock.patch.object(png, "save", record):
        matrix.plot_all(doc, tmp_path)
    (grid,) = matrix.grids(doc)
    values = [v / 1e6 for v in grid.values.values() if v is not None]
    assert limits == [(min(values), max(values))]
