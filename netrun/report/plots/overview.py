"""The overview of a run too large for a bar or a small plot per test: every test on one axes.

A 32-host mesh has 992 tests. One bar and one small plot per test drew seconds of axes
and tick labels (an HTML page took 5-8 s) and, capped, showed an arbitrary first few. Here
each plot is one axes whatever the count: the tests' medians ranked lowest first, and every
test's intervals overlaid, with the lowest few named, since the slow ones are what a lab
engineer looks for; the matrix and the tables name every pair. netrun.report.plots.figures decides
when to use these and owns the figure; this module only draws into the axes it is given.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from netrun.report.plots import series

if TYPE_CHECKING:
    from matplotlib.axes import Axes

#: The lowest tests named on each overview (more would cover the plot).
NAMED = 5
_FAILED = "#C00000"


def ranked(ax: Axes, rows: Sequence[dict[str, Any]], colours: dict[str, str]) -> str:
    """Every test's median Mbit/s as a point, ranked lowest first (failed tests first, at
    zero), coloured by mode, with the 95% CI as a band and the lowest NAMED tests named.
    A test that ran but has no throughput (ping) is left out and counted. Returns what
    the title should add."""
    failed = [r for r in rows if r["mbps"] is None and not r["n_ok"]]
    other = sum(1 for r in rows if r["mbps"] is None and r["n_ok"])
    ok = sorted((r for r in rows if r["mbps"] is not None), key=lambda r: r["mbps"])
    first = len(failed) + 1
    xs = list(range(first, first + len(ok)))
    if failed:
        ax.plot(range(1, first), [0.0] * len(failed), "x", color=_FAILED, ms=5,
                label=f"failed ({len(failed)})")  # fmt: skip
    if ok:
        ax.plot(xs, [r["mbps"] for r in ok], "-", color="lightgrey", lw=1, zorder=1)
    for mode, colour in colours.items():
        mine = [(x, r["mbps"]) for x, r in zip(xs, ok, strict=True) if r["mode"] == mode]
        if mine:
            ax.plot([x for x, _ in mine], [y for _, y in mine], "o", ms=2.5, color=colour,
                    label=mode, zorder=2)  # fmt: skip
    band = [(x, r) for x, r in zip(xs, ok, strict=True) if r["ci_low_mbps"] is not None]
    if band:
        ax.fill_between([x for x, _ in band], [max(r["ci_low_mbps"], 0.0) for _, r in band],
                        [r["ci_high_mbps"] for _, r in band], color="grey", alpha=0.25, lw=0,
                        label="95% CI of the mean")  # fmt: skip
    if ok:  # bottom right: under a curve that rises to the right, so it hides no point
        names = "\n".join(f"{r['name']}  {r['mbps']:.1f}" for r in ok[:NAMED])
        ax.text(0.98, 0.04, f"lowest (Mbit/s):\n{names}", transform=ax.transAxes, ha="right",
                va="bottom", fontsize=8, family="monospace",
                bbox={"facecolor": "white", "alpha": 0.85, "edgecolor": "lightgrey"})  # fmt: skip
    ax.set_xlim(0, len(failed) + len(ok) + 1)
    ax.set_xlabel("test, ranked by median throughput (lowest first)")
    named = f"; the lowest {min(NAMED, len(ok))} named" if ok else ""
    without = f"; {other} without a throughput (another tool)" if other else ""
    return f"every test's median ({len(rows)} tests) ranked lowest first{named}{without}"


def overlay(
    ax: Axes, groups: dict[str, list[dict[str, Any]]], colours: Sequence[str]
) -> tuple[str, float, float]:
    """Every test's intervals (each repeat) as one faint line; the NAMED tests with the
    lowest mean in colour and in the legend. Returns what the title should add and the
    lowest and highest Mbit/s drawn (for the y limits)."""
    from matplotlib.collections import LineCollection

    lines: list[list[tuple[float, float]]] = []
    means: list[tuple[float, str, list[tuple[float, float]]]] = []
    without = 0
    for name, samples in groups.items():
        mine = [line(s) for s in samples if s["status"] == "ok" and series.points(s)]
        if not mine:
            without += 1
            continue
        lines += mine
        means.append((sum(y for _, y in mine[0]) / len(mine[0]), name, mine[0]))
    top = max((y for line in lines for _, y in line), default=0.0)
    bottom = min((y for line in lines for _, y in line), default=0.0)
    ax.add_collection(LineCollection(lines, colors="grey", alpha=0.2, linewidths=0.8))
    lowest = sorted(means, key=lambda m: m[0])[:NAMED]
    for (mean, name, points), colour in zip(lowest, colours, strict=False):
        ax.plot([p[0] for p in points], [p[1] for p in points], "-o", ms=2.5, lw=1.5,
                color=colour, label=f"{name} (mean {mean:.1f})")  # fmt: skip
    ax.autoscale_view()
    ax.set_xlim(left=0)
    what = f"all {len(groups)} tests on one axes (grey)"
    if lowest:
        what += f", the {len(lowest)} with the lowest mean in colour"
    if without:
        what += f"; {without} without interval data"
    return what, bottom, top


def line(sample: dict[str, Any]) -> list[tuple[float, float]]:
    """(seconds, Mbit/s) at each interval's end; a test of one interval is a flat line
    over it (from 0), so it is seen rather than a lone point."""
    points = series.points(sample)
    if len(points) == 1:
        intervals = sample.get("intervals")
        start = float(intervals[0][0]) if isinstance(intervals, list) and intervals else 0.0
        points.insert(0, (start, points[0][1]))
    return points
