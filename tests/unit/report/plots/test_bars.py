"""throughput.png does not exaggerate (issue 36): bars from zero, a labelled zoomed panel
only where every bar is near the top, each test's ceiling drawn, flagged and not
accelerated bars marked, the title whole, groups as the tables write directions."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

from netrun.report.plots import png
from netrun.report.plots.figures import plot_throughput
from tests.conftest import RESULTS_FIXTURES


def load(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((RESULTS_FIXTURES / name / "results.json").read_text())
    return doc


@contextmanager
def drawn() -> Iterator[list[Any]]:
    """Every figure saved inside the block."""
    figures: list[Any] = []
    real = png.save

    def keep(fig: Any, path: Path) -> Path:
        figures.append(fig)
        return real(fig, path)

    with mock.patch.object(png, "save", keep):
        yield figures


def texts(fig: Any) -> list[str]:
    from matplotlib.text import Text

    return [t.get_text() for t in fig.findobj(Text) if t.get_text()]


def test_close_bars_start_at_zero_with_a_labelled_zoomed_panel_below(tmp_path: Path) -> None:
    doc = load("shipped-freeflow")  # 931 / 893 / 873 Mbit/s: a few % apart
    with drawn() as figures:
        plot_throughput(doc, tmp_path / "t.png")
    [fig] = figures
    full, zoomed = fig.axes
    assert full.get_ylim()[0] == 0
    assert zoomed.get_ylim()[0] > 0 and zoomed.get_title().startswith("zoomed: y axis from")
    said = texts(fig)
    assert any("not accelerated" in t for t in said)  # the FreeFlow bar says so
    assert any(t.startswith("bravo→alpha") for t in said)  # the direction, as the table's
    assert "goodput ceiling" in said  # the legend of the ceiling lines


def test_far_apart_bars_get_one_panel_from_zero(tmp_path: Path) -> None:
    doc = load("shipped-docker")  # a UDP test far below the TCP ones
    with drawn() as figures:
        plot_throughput(doc, tmp_path / "t.png")
    [fig] = figures
    assert len(fig.axes) == 1 and fig.axes[0].get_ylim()[0] == 0


def test_a_reverse_test_is_grouped_by_its_sender(tmp_path: Path) -> None:
    doc = copy.deepcopy(load("shipped-baremetal"))
    with drawn() as figures:
        plot_throughput(doc, tmp_path / "t.png")
    groups = [t for t in texts(figures[0]) if t.endswith((" tcp", " udp"))]
    assert "alpha→bravo tcp" in groups and "bravo→alpha tcp" in groups  # tcp-reverse: alpha sends


def test_the_title_is_wrapped_to_the_figure(tmp_path: Path) -> None:
    with drawn() as figures:
        plot_throughput(load("shipped-baremetal"), tmp_path / "t.png")
    fig = figures[0]
    title = fig.axes[0].get_title()
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(fig).get_renderer()
    box = fig.axes[0].title.get_window_extent(renderer)
    assert "\n" in title and box.x0 >= 0 and box.x1 <= fig.bbox.width
