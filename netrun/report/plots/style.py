"""What every plot of a run shares: one colour per mode, and axes that follow the data.

A mode keeps its colour in every plot (bare metal is always blue, TURN always vermilion),
so a reader matches the throughput bars, the latency bars and the interval lines at a
glance. An axis spans what was measured and the physical ceiling near it (the line rate),
rather than always starting at 0: a 2% drop between two 940 Mbit/s bars shows.
"""

from __future__ import annotations

import math
import textwrap
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from netrun.report.plots import png

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

# Colour-blind-safe (Okabe-Ito).
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"]
#: The one mode -> colour map of every plot; a mode not named here gets a fixed colour of
#: its name (the same in every plot and every run).
MODE_COLOURS = {
    "baremetal": "#0072B2",
    "docker": "#E69F00",
    "flannel": "#009E73",
    "freeflow": "#CC79A7",
    "turn": "#D55E00",
}
_OTHER = ["#56B4E9", "#000000", "#F0E442", "#999999"]
FAILED_COLOUR = "#C00000"
CEILING_COLOUR = "#C00000"
#: A ceiling more than this many times the highest value is left off the axis (a 0.8
#: Mbit/s TURN test beside a 1000 Mbit/s line would be a flat line at the bottom).
CEILING_REACH = 2.0
#: The axis starts at 0 unless the lowest value is above this share of the highest.
ZERO_BELOW = 0.5


def mode_colour(mode: str) -> str:
    """The colour of ``mode`` in every plot."""
    return MODE_COLOURS.get(mode) or _OTHER[zlib.crc32(mode.encode()) % len(_OTHER)]


def figure(width_in: float, height_in: float = 5.0) -> Figure:
    return png.figure(min(max(width_in, 7.0), 28.0), height_in)


def ceilings_in_reach(values: Iterable[float], ceilings: Iterable[float]) -> list[float]:
    """The ceilings worth drawing beside ``values``: within CEILING_REACH of the highest."""
    known = [v for v in values if math.isfinite(v)]
    top = max(known, default=0.0)
    return sorted({c for c in ceilings if c and top and c <= CEILING_REACH * top})


def value_range(values: Iterable[float], ceilings: Iterable[float] = ()) -> tuple[float, float]:
    """(bottom, top) of an axis holding every value and the ceilings in reach: from 0
    unless every value is close to the top (then from just under the lowest, so a small
    difference is visible); a little room above."""
    known = [v for v in values if math.isfinite(v)]
    if not known:
        return 0.0, 1.0
    reach = ceilings_in_reach(known, ceilings)
    low, high = min(known), max([*known, *reach])
    if high <= 0:
        return min(low, 0.0) * 1.1 or 0.0, 1.0
    span = high - low
    pad = max(span * 0.12, high * 0.02)
    bottom = low - pad if low > ZERO_BELOW * high and low - pad > 0 else 0.0
    return bottom, high + pad * (1.0 if bottom else 1.25)


def from_note(bottom: float) -> str:
    """What a title says when the value axis does not start at 0."""
    return f"; y axis from {bottom:.4g}, not 0" if bottom > 0 else ""


def legend(ax: Axes) -> None:
    """Outside the plot on the right, so it never hides a bar or a line (none when nothing
    drawn has a label: a run whose every test failed)."""
    if not ax.get_legend_handles_labels()[0]:
        return
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)


def empty(ax: Axes, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="grey")


def title(doc: dict[str, Any], what: str) -> str:
    return f"{doc.get('scenario')}, run {doc.get('run_id', '-')}, {doc.get('started')}\n{what}"


def whole(heading: str, fig: Figure, fontsize: float | str) -> str:
    """The title wrapped to the figure's width, so no line is cut off at its edges."""
    size = fontsize if isinstance(fontsize, int | float) else 12.0
    # the title centres on the axes (some 60% of the figure beside an outside legend);
    # a character is about 0.55 em, an em ``size`` points of 1/72 inch
    chars = max(int(fig.get_size_inches()[0] * 0.6 * 72 / (size * 0.55)), 30)
    return "\n".join(
        textwrap.fill(line, chars, break_on_hyphens=False) for line in heading.split("\n")
    )


def finish(
    fig: Figure,
    ax: Axes,
    path: Path,
    heading: str,
    *,
    empty_text: str | None = None,
    axis: Literal["both", "x", "y"] = "both",
    fontsize: float | str = 9,
) -> Path:
    """The ending of a one-axes plot: its title, the legend outside (or ``empty_text``
    across the axes when nothing was drawn), a light grid along ``axis``, a tight layout,
    and the file written."""
    ax.set_title(whole(heading, fig, fontsize), fontsize=fontsize)
    if empty_text is None:
        legend(ax)
    else:
        empty(ax, empty_text)
    ax.grid(axis=axis, alpha=0.3)
    fig.tight_layout()
    return png.save(fig, path)
