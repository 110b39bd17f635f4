"""The HTML report as one page a team can pass around: tables and plots in one file.

``report.html`` inlines its PNGs as data URIs, so it needs no folder beside it. A run
with ``--plot`` already drew them; ``netrun report --format html`` draws them here, into
a temporary folder that is removed at once, whenever matplotlib is importable. Without
matplotlib the page says why it has no plots rather than leaving them out silently.
"""

from __future__ import annotations

import importlib.util
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from netrun.report.html import render_html
from netrun.report.render import render
from netrun.report.summary import summary_rows


def can_plot() -> bool:
    """Whether matplotlib is there to draw with (it is a dependency; a trimmed install
    may still lack it)."""
    return importlib.util.find_spec("matplotlib") is not None


def html_page(
    doc: dict[str, Any], verdicts: Sequence[Any] | None = None, plots: Sequence[Path] = ()
) -> str:
    """The self-contained page: the given plots, else freshly drawn ones."""
    if plots:
        return render(doc, "html", verdicts, plots)
    if not can_plot():
        page = render(doc, "html", verdicts, ())
        note = "<p>no plots: matplotlib is not installed (pip install matplotlib)</p>"
        return page.replace("</body>", f"{note}</body>", 1)
    from netrun.report.plots.figures import plot_all

    summary = summary_rows(doc, verdicts)  # once for the plots and the page
    with tempfile.TemporaryDirectory(prefix="netrun-page-") as tmp:
        return render_html(doc, verdicts, plot_all(doc, Path(tmp), summary), summary)
