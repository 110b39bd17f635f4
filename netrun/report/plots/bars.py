"""throughput.png: each test's median Mbit/s as a bar from zero, grouped by the direction the
data flowed (sender→receiver, as the tables write it) and protocol.

A bar's height is its share of the axis, so the axis starts at 0: a 4% gap looks like 4%.
Where every bar sits near the top (a small difference matters), a second panel under the
first zooms in, labelled so. Each bar carries its test's goodput ceiling as a short red
line across it (the best its packets allow on that line rate), and a bar whose figure is
flagged (a flag that makes its figure not what it asked for: status flagged) or whose FreeFlow
repeats were not accelerated is hatched; every bar's flags and "not accelerated" are written
above it. Failed tests keep their slot, marked FAILED; a test whose tool measures no
throughput (ping) is not drawn (latency.png has it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from netrun.core import metrics
from netrun.report.plots import style
from netrun.results import flags

if TYPE_CHECKING:
    from matplotlib.axes import Axes

FLAGGED_HATCH = "//"
SLOW_HATCH = "xx"
#: The zoomed panel is drawn when every bar is above this share of the tallest: then a few
#: percent between them matter and would not show from zero.
ZOOM_ABOVE = 0.8


def hatch(row: dict[str, Any]) -> str | None:
    """A bar's hatch: not accelerated (FreeFlow), flagged (its figure is not what it asked
    for), or None."""
    if row.get("not_accelerated"):
        return SLOW_HATCH
    return FLAGGED_HATCH if flags.not_as_asked(row.get("flags") or ()) else None


def _bps(sample: dict[str, Any]) -> float | None:
    return metrics.of_sample(sample).get("throughput_bps")


def mark(row: dict[str, Any]) -> str:
    """What a bar says above it: its flags by number, not accelerated; "" for neither."""
    said = []
    if row.get("not_accelerated"):
        said.append("not accelerated")
    if row.get("flags"):
        said.append(f"flags {flags.marker(row['flags'])}")
    return "\n".join(said)


class Bars:
    """The bars of one run, drawn the same on the full and the zoomed panel."""

    def __init__(
        self,
        groups: dict[tuple[str, str], list[dict[str, Any]]],
        colours: dict[str, str],
        samples: dict[str, list[dict[str, Any]]],
    ) -> None:
        self.groups, self.colours, self.samples = groups, colours, samples
        self.ticks: list[float] = []
        self.labels: list[str] = []
        self.drawn: list[float] = []
        self.failed: list[float] = []

    def draw(self, ax: Axes, first: bool) -> None:
        """Every bar, its CI, repeats and ceiling on ``ax``; the labels and marks when
        ``first`` (the full panel), so the zoomed one does not repeat them."""
        x, seen, said = 0.0, set(), False
        for (way, proto), members in self.groups.items():
            start = x
            for row in members:
                if first:
                    self.ticks.append(x)
                    name = row["name"]
                    self.labels.append(f"{name}\n{row['via']}" if row.get("via") else name)
                if row["mbps"] is None:
                    if first:
                        self.failed.append(x)
                    x += 1
                    continue
                hatched = hatch(row)
                label = row["mode"] if row["mode"] not in seen else None
                seen.add(row["mode"])
                ax.bar(x, row["mbps"], 0.8, color=self.colours[row["mode"]], alpha=0.85,
                       label=label if first else None, hatch=hatched, edgecolor="black"
                       if hatched else None, linewidth=0.6 if hatched else 0)  # fmt: skip
                self._spread(ax, x, row, first)
                ceiling = row.get("ceiling_mbps")
                if ceiling:
                    named = "goodput ceiling" if first and not said else "_nolegend_"
                    ax.hlines(ceiling, x - 0.45, x + 0.45, color=style.CEILING_COLOUR, lw=2,
                              label=named)  # fmt: skip
                    said = True
                    if first:
                        self.drawn.append(ceiling)
                if first and (text := mark(row)):
                    top = max(row["mbps"], ceiling or 0.0)
                    ax.annotate(text, (x, top), ha="center", va="bottom", fontsize=7,
                                xytext=(0, 3), textcoords="offset points")  # fmt: skip
                x += 1
            if first:
                centre = (start + x - 1) / 2
                ax.annotate(f"{way} {proto}", xy=(centre, 1), xycoords=("data", "axes fraction"),
                            xytext=(0, -14), textcoords="offset points", ha="center",
                            fontsize=9, color="dimgrey")  # fmt: skip
            if start > 0:
                ax.axvline(start - 0.8, color="lightgrey", lw=1, ls=":")
            x += 0.6

    def _spread(self, ax: Axes, x: float, row: dict[str, Any], first: bool) -> None:
        """The 95% CI of the mean as an error bar (clipped at 0) and each repeat as a dot."""
        drawn = [row["mbps"]]
        low, high = row["ci_low_mbps"], row["ci_high_mbps"]
        if low is not None and high is not None:
            low = max(low, 0.0)
            ax.errorbar(x, (low + high) / 2, yerr=(high - low) / 2, fmt="none",
                        ecolor="black", capsize=4, lw=1.2)  # fmt: skip
            drawn += [low, high]
        values = [
            v / 1e6
            for s in self.samples[row["name"]]
            if s["status"] == "ok" and (v := _bps(s)) is not None
        ]
        if len(values) > 1:
            ax.plot([x] * len(values), values, "o", ms=3, color="black", alpha=0.5)
        if first:
            self.drawn += drawn + values


def group(rows: Sequence[dict[str, Any]]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """Rows by the direction their data flowed (sender→receiver) and protocol."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row.get("direction") or row["pair"], row["protocol"]), []).append(row)
    return groups
