"""A table as text: tabulate's "simple" look without its padding, numbers right-aligned.

Shared by the one-screen report (netrun.report.brief) and the full one
(netrun.report.render), so both line up their columns alike.
"""

from __future__ import annotations

from netrun.report.summary import NUMERIC

#: Right-aligned columns: the main table's numbers and the one-screen tables' figures.
RIGHT = NUMERIC | {"p50", "p90", "p99", "mean", "samples", "trans/s", "Mbit/s", "bare metal",
                   "gap %", "added p50", "added p99"}  # fmt: skip


def text_table(headers: list[str], rows: list[list[str]]) -> str:
    """tabulate's "simple" look without its extra padding, to fit repeats in 170 columns."""
    widths = [max(len(c) for c in col) for col in zip(headers, *rows, strict=True)]
    right = [h in RIGHT for h in headers]

    def line(cells: list[str]) -> str:
        return "  ".join(
            c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right, strict=True)
        ).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *map(line, rows)])
