"""style.finish: the one ending every one-axes plot shares."""

from __future__ import annotations

from pathlib import Path

from netrun.report.plots import style

PNG = b"\x89PNG\r\n\x1a\n"


def test_finish_writes_the_title_the_legend_outside_and_the_file(tmp_path: Path) -> None:
    fig = style.figure(7.0)
    ax = fig.add_subplot()
    ax.bar([0], [1.0], label="baremetal")
    out = style.finish(fig, ax, tmp_path / "a.png", "the heading", axis="y")
    assert out == tmp_path / "a.png"
    assert out.read_bytes()[:8] == PNG
    assert ax.get_title() == "the heading"
    legend = ax.get_legend()
    assert legend is not None and [t.get_text() for t in legend.get_texts()] == ["baremetal"]


def test_finish_says_why_an_axes_is_empty_and_draws_no_legend(tmp_path: Path) -> None:
    fig = style.figure(7.0)
    ax = fig.add_subplot()
    style.finish(fig, ax, tmp_path / "b.png", "t", empty_text="no tests in this run")
    assert ax.get_legend() is None
    assert [t.get_text() for t in ax.texts] == ["no tests in this run"]
