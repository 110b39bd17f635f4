"""Plots of a results document (and of a history of runs) as PNG files, for reports and cron.

Rendered from results.json alone, like netrun.report.render. matplotlib is imported inside the
functions with the Agg backend and the object API (no pyplot state, no display), so importing
netrun never needs matplotlib and a cron job without $DISPLAY draws the same pictures.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from netrun.errors import NetrunError
from netrun.report.plots import (
    bars,
    curves,
    fanin,
    latency,
    load,
    matrix,
    overview,
    png,
    series,
    style,
)
from netrun.report.plots.style import PALETTE as COLOURS
from netrun.report.summary import group_samples, summary_rows
from netrun.results.store import safe_name

if TYPE_CHECKING:
    pass

THROUGHPUT = "throughput.png"
INTERVALS = "intervals.png"
#: Up to this many tests, a bar each (an inch per bar: 992 made a 218,000-pixel PNG)...
MAX_BARS = 48
#: ...and a small plot of intervals each (about 0.07 s apiece: 48 took 3-5 s). Past these,
#: netrun.report.plots.overview draws every test on one axes, so a 992-test page renders in about 1
#: s.
MAX_PANELS = 12

TrendPoint = tuple[str, float | None, float | None, float | None]


_figure = style.figure
_empty = style.empty


def _mode_colours(modes: Sequence[str]) -> dict[str, str]:
    """The fixed colour of each mode (netrun.report.plots.style), for these modes."""
    return {m: style.mode_colour(m) for m in dict.fromkeys(modes)}


def _rated(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tests that measure throughput: their tool declares it (a ping test's does not)
    and a passing repeat has it, or none passed (drawn FAILED). A netperf TCP_RR test
    passes without one (only TCP_STREAM measures it): not drawn, never drawn as failed."""
    return [
        r for r in rows
        if "throughput_bps" in r.get("produces", ("throughput_bps",))
        and (r.get("mbps") is not None or not r.get("n_ok"))
    ]  # fmt: skip


def plot_throughput(
    doc: dict[str, Any], path: Path, rows: list[dict[str, Any]] | None = None
) -> Path:
    """Median Mbit/s per test, modes on the same pair side by side, CI (or min-max) bars.

    The error bar spans the 95% CI of the mean (clipped at zero) when a test ran several
    times; each repeat is a dot, so an outlier is seen rather than averaged away. Failed
    tests keep their slot, marked FAILED; a test whose tool measures no throughput (ping)
    is not drawn (latency.png has it). Dashed lines are the line rates in reach; the y axis
    follows the data (netrun.report.plots.style). ``rows``: the run's summary_rows when the
    caller has them (a 992-test run's take 0.05-0.1 s).
    """
    every = summary_rows(doc) if rows is None else rows
    rows = _rated(every)
    if len(rows) > MAX_BARS:
        return _ranked(doc, rows, path)
    return _bar_figure(doc, every, rows, path, zoomed=False)


def _bar_figure(
    doc: dict[str, Any],
    every: list[dict[str, Any]],
    rows: list[dict[str, Any]],
    path: Path,
    zoomed: bool,
) -> Path:
    """plot_throughput's figure: the bars from zero, and with ``zoomed`` a second panel
    below them from just under the lowest figure (drawn again when the first pass finds
    every bar near the top)."""
    groups = bars.group(rows)
    drawing = bars.Bars(
        groups, _mode_colours([r["mode"] for r in rows]), group_samples(doc.get("tests", []))
    )
    fig = _figure(1.0 * len(rows) + 1.2 * len(groups) + 2, 8.0 if zoomed else 5.0)
    ax = fig.add_subplot(2, 1, 1) if zoomed else fig.add_subplot()
    drawing.draw(ax, first=True)
    rates = style.ceilings_in_reach(
        drawing.drawn, (r["line_rate_mbps"] for r in rows if r["line_rate_mbps"])
    )
    for rate in rates:
        ax.axhline(rate, ls="--", color=style.CEILING_COLOUR, lw=1, alpha=0.6,
                   label=f"line rate {rate:g} Mbit/s")  # fmt: skip
    zoom, top = style.value_range(drawing.drawn, rates)
    heights = [r["mbps"] for r in rows if r["mbps"]]
    close = len(heights) > 1 and min(heights) > bars.ZOOM_ABOVE * max(heights)
    if zoom > 0 and close and not zoomed:  # every bar near the top: a small difference matters
        return _bar_figure(doc, every, rows, path, zoomed=True)
    for at in drawing.failed:
        ax.text(at, 0, "FAILED", rotation=90, ha="center", va="bottom",
                color=style.FAILED_COLOUR)  # fmt: skip
    many = len(rows) > 4
    ax.set_xticks(drawing.ticks, drawing.labels, rotation=20 if many else 0,
                  ha="right" if many else "center")  # fmt: skip
    marked = any(bars.mark(r) for r in rows)
    ax.set_ylim(0, top * 1.12 if marked else top)  # from zero: a bar's height is its figure
    ax.set_ylabel("throughput (Mbit/s)")
    ax.set_xlabel("test, grouped by sender→receiver and protocol")
    others = len(every) - len(rows)
    without = f"\n{others} test(s) without a throughput: see latency.png" if others else ""
    hatched = any(bars.hatch(r) for r in rows)
    marks = "; hatched: flagged (//) or not accelerated (xx)" if hatched else ""
    heading = _title(doc, "median throughput from 0; red bar: the test's goodput ceiling; "
                     f"whiskers: 95% CI of the mean; dots: repeats{marks}{without}")  # fmt: skip
    if zoomed:
        below = fig.add_subplot(2, 1, 2)
        drawing.draw(below, first=False)
        below.set_xticks(drawing.ticks, [""] * len(drawing.ticks))
        below.set_ylim(zoom, top)
        below.set_ylabel("Mbit/s (zoomed)")
        below.set_title(f"zoomed: y axis from {zoom:.4g} Mbit/s, not 0: the same bars, "
                        "their differences magnified", fontsize=9)  # fmt: skip
        below.grid(axis="y", alpha=0.3)
    nothing = None if rows else "no tests in this run"
    return style.finish(fig, ax, path, heading, empty_text=nothing, axis="y", fontsize=10)


def plot_intervals(doc: dict[str, Any], path: Path) -> Path:
    """Mbit/s per interval over time, one small plot per test (small multiples on one y
    scale, so tests compare at a glance without their lines hiding each other); later
    repeats faint, the line rate dashed. A test without intervals (ping) is left out, a
    failed one keeps its panel; each panel says whose report it draws."""
    every = group_samples(doc.get("tests", []))
    groups = {
        name: samples
        for name, samples in every.items()
        if any(series.points(s) for s in samples) or all(s["status"] != "ok" for s in samples)
    }
    rates = _line_rates(doc)
    if len(groups) > MAX_PANELS:
        return _overlaid(doc, groups, rates, path)
    names = list(groups) or ["-"]
    cols = min(3, len(names))
    nrows = -(-len(names) // cols)
    fig = _figure(4.2 * cols + 1.0, 2.6 * nrows + 1.2)
    # One y scale set on every panel below, not sharey: matplotlib's shared axes cost
    # O(panels²) per limit change, which kept a 992-test mesh's page busy for minutes.
    axes = fig.subplots(nrows, cols, squeeze=False)
    drawn: list[float] = []
    whose: set[str] = set()
    for k, name in enumerate(names):
        ax = axes[k // cols][k % cols]
        samples = groups.get(name, [])
        colour = style.mode_colour(str(samples[0].get("mode"))) if samples else COLOURS[0]
        with_data = [s for s in samples if s["status"] == "ok" and series.points(s)]
        for i, sample in enumerate(with_data):
            found = overview.line(sample)  # one interval: a flat line over it
            whose.add(series.whose(sample))
            drawn += [y for _, y in found]
            ax.plot([t for t, _ in found], [y for _, y in found], "-o", ms=2.5, color=colour,
                    alpha=1.0 if i == 0 else 0.3, lw=1.5 if i == 0 else 1.0)  # fmt: skip
        if not with_data:
            _empty(ax, "failed: no intervals" if samples else "no interval data")
        more = f", {len(with_data)} repeats (later faint)" if len(with_data) > 1 else ""
        ax.set_title(f"{name}{more}", fontsize=9)
        ax.grid(alpha=0.3)
        ax.set_xlim(left=0)
        if k % cols == 0:
            ax.set_ylabel("Mbit/s")
        if k // cols == nrows - 1:
            ax.set_xlabel("s since the test started")
    for k in range(len(names), nrows * cols):
        axes[k // cols][k % cols].set_visible(False)
    shown = style.ceilings_in_reach(drawn, rates)
    bottom, top = style.value_range(drawn, shown)
    for k in range(len(names)):
        for rate in shown:
            axes[k // cols][k % cols].axhline(rate, ls="--", color=style.CEILING_COLOUR, lw=0.8)
        axes[k // cols][k % cols].set_ylim(bottom, top)
    lines = f"; dashed: line rate {', '.join(f'{r:g}' for r in shown)} Mbit/s" if shown else ""
    left = len(every) - len(groups)
    without = f"; {left} test(s) whose tool reports no intervals" if left else ""
    by = ", ".join(sorted(whose)) or "the tool"
    fig.suptitle(_title(doc, f"throughput per interval, as the {by} reported it{lines}"
                        f"{style.from_note(bottom)}{without}"), fontsize=10)  # fmt: skip
    fig.tight_layout()
    return png.save(fig, path)


def _ranked(doc: dict[str, Any], rows: list[dict[str, Any]], path: Path) -> Path:
    """plot_throughput past MAX_BARS tests: every median on one axes
    (netrun.report.plots.overview)."""
    fig = _figure(12.0)
    ax = fig.add_subplot()
    what = overview.ranked(ax, rows, _mode_colours([r["mode"] for r in rows]))
    drawn = [r[k] for r in rows for k in ("mbps", "ci_high_mbps", "ci_low_mbps") if r[k]]
    rates = style.ceilings_in_reach(
        drawn, (r["line_rate_mbps"] for r in rows if r["line_rate_mbps"])
    )
    for rate in rates:
        ax.axhline(rate, ls="--", color=style.CEILING_COLOUR, lw=1,
                   label=f"line rate {rate:g} Mbit/s")  # fmt: skip
    if any(r["mbps"] is None and not r["n_ok"] for r in rows):
        drawn.append(0.0)  # failed tests are drawn at 0
    bottom, top = style.value_range(drawn, rates)
    ax.set_ylim(bottom, top)
    ax.set_ylabel("throughput (Mbit/s)")
    heading = _title(doc, f"median throughput: {what} (a bar per test up to {MAX_BARS})"
                     + style.from_note(bottom))  # fmt: skip
    return style.finish(fig, ax, path, heading, fontsize="large")


def _overlaid(
    doc: dict[str, Any], groups: dict[str, list[dict[str, Any]]], rates: list[float], path: Path
) -> Path:
    """plot_intervals past MAX_PANELS tests: every test's line on one axes."""
    fig = _figure(12.0)
    ax = fig.add_subplot()
    what, low, high = overview.overlay(ax, groups, COLOURS)
    shown = style.ceilings_in_reach([high], rates)
    for rate in shown:
        ax.axhline(rate, ls="--", color=style.CEILING_COLOUR, lw=0.8)
    bottom, top = style.value_range([low, high], shown)
    ax.set_ylim(bottom, top)
    ax.set_xlabel("s since the test started")
    ax.set_ylabel("Mbit/s")
    lines = f"dashed: line rate {', '.join(f'{r:g}' for r in shown)} Mbit/s; " if shown else ""
    what += f"\n{lines}a small plot per test up to {MAX_PANELS} tests{style.from_note(bottom)}"
    heading = _title(doc, f"throughput per interval: {what}")
    return style.finish(fig, ax, path, heading, fontsize=10)


def _line_rates(doc: dict[str, Any]) -> list[float]:
    """The run's line rates in Mbit/s, from the samples (no summary rows needed)."""
    found = {t.get("line_rate_mbps") for t in doc.get("tests") or [] if isinstance(t, dict)}
    return sorted(r for r in found if isinstance(r, int | float) and r)


def plot_trend(
    series: Sequence[TrendPoint],
    path: Path,
    title: str,
    ylabel: str = "throughput (Mbit/s)",
    *,
    baseline: float | None = None,
    tolerance: float | None = None,
    baseline_label: str = "baseline",
) -> Path:
    """A test's headline median across runs (Mbit/s, or ms for ping), the CI as bars and a
    band: what a nightly job watches.

    ``series`` holds (run started, ISO 8601; median Mbit/s; CI low; CI high); a None median
    (a failed run) is drawn as a red mark on the time axis, a None CI as no bar.
    """
    from matplotlib.dates import date2num

    points = sorted(
        ((float(date2num(_when(s))), m, lo, hi) for s, m, lo, hi in series), key=lambda p: p[0]
    )
    fig = _figure(10.0, 4.5)
    ax = fig.add_subplot()
    ax.xaxis_date()
    ok = [p for p in points if p[1] is not None]
    if ok:
        ax.plot([p[0] for p in ok], [p[1] or 0.0 for p in ok], "-o", ms=4, color=COLOURS[0],
                label="median")  # fmt: skip
        band = [p for p in ok if p[2] is not None and p[3] is not None]
        if band:
            lows = [max(p[2] or 0.0, 0.0) for p in band]
            highs = [p[3] or 0.0 for p in band]
            ax.fill_between([p[0] for p in band], lows, highs, color=COLOURS[0], alpha=0.15)
            pairs = list(zip(lows, highs, strict=True))
            ax.errorbar([p[0] for p in band], [(lo + hi) / 2 for lo, hi in pairs],
                        yerr=[(hi - lo) / 2 for lo, hi in pairs], fmt="none",
                        ecolor=COLOURS[0], capsize=3, lw=1, label="95% CI")  # fmt: skip
    top = max([v for p in ok for v in (p[1], p[3]) if v is not None], default=0.0)
    if baseline is not None:
        ax.axhline(baseline, color="#009E73", lw=1.2, label=baseline_label)
        top = max(top, baseline)
        if tolerance:
            low, high = baseline * (1 - tolerance), baseline * (1 + tolerance)
            ax.axhspan(low, high, color="#009E73", alpha=0.12,
                       label=f"tolerance ±{tolerance * 100:g}%")  # fmt: skip
            top = max(top, high)
    failed = [p[0] for p in points if p[1] is None]
    if failed:
        ax.plot(failed, [0] * len(failed), "x", color="#C00000", ms=8, label="failed run")
    if not points:
        _empty(ax, "no history yet")
    else:
        ax.legend(loc="lower left", fontsize=8)
        fig.autofmt_xdate()
    ax.set_ylim(0, top * 1.12 or 1)  # every point, bar, band and the baseline in view
    ax.set_xlabel("run started (UTC)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return png.save(fig, path)


def plot_all(
    doc: dict[str, Any], outdir: Path, rows: list[dict[str, Any]] | None = None
) -> list[Path]:
    """throughput.png (tests that measure throughput), latency.png (tests that measure
    latency), load.png (tests with load:), intervals.png (tests with intervals), (with
    sweeps) sweeps.png and (with generated pairs) matrix-ID.png, (with fan-ins)
    fanin-TEST.png in ``outdir``; ``rows`` as plot_throughput takes them."""
    try:
        outdir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise NetrunError(f"{outdir}: cannot create the plot folder ({exc.strerror})") from None

    rows = summary_rows(doc) if rows is None else rows
    files = []
    if _rated(rows) or not rows:  # a ping-only run has no throughput to draw
        files.append(plot_throughput(doc, outdir / THROUGHPUT, rows))
    if latency.wanted(doc, rows):
        files.append(latency.plot_latency(doc, outdir / latency.LATENCY, rows))
    if load.wanted(doc):  # latency idle vs under load (load:)
        files.append(load.plot_load(doc, outdir / load.LOAD))
    if any(series.points(s) or s.get("status") != "ok" for s in doc.get("tests") or []):
        files.append(plot_intervals(doc, outdir / INTERVALS))
    if curves.sweeps(doc):
        files.append(curves.plot_sweeps(doc, outdir / curves.SWEEPS))
    return files + matrix.plot_all(doc, outdir) + fanin.plot_all(doc, outdir)


def captions(doc: dict[str, Any], grids: list[Any] | None = None) -> dict[str, str]:
    """Plot file stem -> what the page says under it, for plots that draw a large run
    differently from a small one: said in the page's text, not only in a PNG's title.
    ``grids``: the run's matrix.grids, when the caller has them."""

    count = len(group_samples(doc.get("tests", [])))
    out = {}
    if count > MAX_BARS:
        out[Path(THROUGHPUT).stem] = (
            f"{count} tests, more than {MAX_BARS}: each test's median is a point, ranked "
            f"lowest first, the lowest {overview.NAMED} named, instead of a bar per test; "
            "the table above has every test's figures."
        )
    if count > MAX_PANELS:
        out[Path(INTERVALS).stem] = (
            f"{count} tests, more than {MAX_PANELS}: every test's intervals on one axes, the "
            f"{overview.NAMED} with the lowest mean in colour, instead of a small plot per test."
        )
    for grid in matrix.grids(doc) if grids is None else grids:
        if len(grid.cols) > matrix.ANNOTATED:
            out[f"matrix-{safe_name(grid.id)}"] = (
                f"{len(grid.cols)} servers, more than {matrix.ANNOTATED}: the cells carry no "
                "numbers; the matrix table above has every pair's."
            )
    return out


def _when(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


_title = style.title
