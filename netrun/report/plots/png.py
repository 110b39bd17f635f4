"""PNG figures for the plots: matplotlib's object API on the Agg backend, and one way to
write a figure to its file.

matplotlib is imported inside the functions, so importing netrun never needs it; Agg with
no pyplot state means no display and no global figure, so a cron job without $DISPLAY
draws the same pictures. A file that cannot be written is one plain error naming it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from netrun.errors import NetrunError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

DPI = 100


def figure(width_in: float, height_in: float) -> Figure:
    """A new figure of that size (inches) at DPI, on the Agg backend."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    return Figure(figsize=(width_in, height_in), dpi=DPI)


def save(fig: Figure, path: Path) -> Path:
    """Write ``fig`` to ``path`` as PNG; NetrunError naming the file if it cannot.

    The placeholder layout engine tight_layout leaves behind is dropped first: with one
    set, savefig lays every text out again in a draw without output (a tenth of a second
    on a 32-host heatmap); the saved pixels are the same."""
    fig.set_layout_engine(None)
    try:
        fig.savefig(path, format="png", dpi=DPI)
    except OSError as exc:
        raise NetrunError(f"{path}: cannot write the plot ({exc.strerror or exc})") from None
    return path
