"""fanin-TEST.png: a fan-in's (fan-out's) flows, each client's bar, and their sum against the
bottleneck host's ceiling.

One figure per test of several flows (netrun.results.fanin has the numbers): a bar per flow
(its mean Mbit/s over the ok repeats, labelled with its share of the flows' sum), then the
flows as one stacked bar of the same colours, and the host's goodput ceiling (and line
rate) as dashed lines across. A fair share of a full link is each bar at ceiling / N:
that line is dotted.

fanin-clients-NAME.png: a fan test swept over its clients (``sweep: {clients: [...]}``), the
aggregate against the count, each point labelled with its Jain index, and the host's
goodput ceiling (from each count's own samples) dashed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from netrun.report.plots import style
from netrun.results.fanin import FanIn, FanSweep, fanins, sweeps
from netrun.results.store import safe_name


def filename(test: str) -> str:
    return f"fanin-{safe_name(test)}.png"


def plot(found: FanIn, path: Path) -> Path:
    """The figure of one fan-in (flows with no passing repeat are left out, named FAILED)."""
    shares = found.shares
    fig = style.figure(1.0 * len(shares) + 6, 4.5)
    ax = fig.add_subplot()
    colours = [style.PALETTE[i % len(style.PALETTE)] for i in range(len(shares))]
    values: list[float] = []
    bottom = 0.0
    total_x = len(shares) + 0.5
    for i, (share, colour) in enumerate(zip(shares, colours, strict=True)):
        if share.mbps is None:
            ax.text(i, 0, "FAILED", ha="center", va="bottom", color=style.FAILED_COLOUR)
            continue
        ax.bar(i, share.mbps, 0.7, color=colour, alpha=0.85)
        pct = "" if share.pct_of_aggregate is None else f"{share.pct_of_aggregate:.0f}%"
        ax.annotate(pct, (i, share.mbps), ha="center", va="bottom", fontsize=8,
                    xytext=(0, 2), textcoords="offset points")  # fmt: skip
        ax.bar(total_x, share.mbps, 0.7, bottom=bottom, color=colour, alpha=0.85)
        bottom += share.mbps
        values.append(share.mbps)
    if found.aggregate_mbps is not None:
        values.append(found.aggregate_mbps)
    ceilings = [c for c in (found.ceiling_mbps,) if c]
    if found.ceiling_mbps:
        what = f"{found.host}'s goodput ceiling {found.ceiling_mbps:.0f} Mbit/s"
        ax.axhline(found.ceiling_mbps, color=style.CEILING_COLOUR, ls="--", lw=1.2, label=what)
        fair = found.ceiling_mbps / max(len(shares), 1)
        ax.axhline(fair, color="dimgrey", ls=":", lw=1,
                   label=f"a fair share of it ({fair:.0f} Mbit/s)")  # fmt: skip
        ceilings.append(fair)
    labels = [s.label for s in shares] + ["aggregate"]
    ax.set_xticks([*range(len(shares)), total_x], labels, rotation=20, fontsize=8)
    _low, top = style.value_range(values or [1.0], ceilings)
    ax.set_ylim(0, top)
    ax.set_ylabel("Mbit/s (each flow's mean of the ok repeats)")
    fair_text = "" if found.fairness is None else f", Jain {found.fairness:.3f}"
    into = "into" if found.kind == "fanin" else "out of"
    heading = (
        f"{found.test}: {len(shares)} flows {into} {found.host} ({found.mode}, "
        f"{found.protocol}{fair_text})"
    )
    return style.finish(fig, ax, path, heading, axis="y", fontsize=10)


def count_filename(name: str) -> str:
    return f"fanin-clients-{safe_name(name)}.png"


def plot_counts(found: FanSweep, path: Path) -> Path:
    """The aggregate at each count of clients, with the fan host's ceiling."""
    fig = style.figure(7, 4.5)
    ax = fig.add_subplot()
    counts = [n for n, _ in found.points]
    done = [(n, f) for n, f in found.points if f.aggregate_mbps is not None]
    values = [f.aggregate_mbps for _, f in done if f.aggregate_mbps is not None]
    ax.plot([n for n, _ in done], values, "o-", color=style.PALETTE[0], label="aggregate")
    for n, f in done:
        fair = "" if f.fairness is None else f"Jain {f.fairness:.3f}"
        ax.annotate(fair, (n, f.aggregate_mbps or 0.0), ha="center", va="bottom", fontsize=8,
                    xytext=(0, 4), textcoords="offset points")  # fmt: skip
    for n, f in found.points:
        if f.aggregate_mbps is None:
            ax.text(n, 0, "FAILED", ha="center", va="bottom", color=style.FAILED_COLOUR)
    ceilings = [(n, f.ceiling_mbps) for n, f in found.points if f.ceiling_mbps]
    if ceilings:
        top = max(c for _, c in ceilings)
        ax.plot([n for n, _ in ceilings], [c for _, c in ceilings], "--",
                color=style.CEILING_COLOUR, lw=1.2,
                label=f"{found.host}'s goodput ceiling ({top:.0f} Mbit/s)")  # fmt: skip
    _low, high = style.value_range(values or [1.0], [c for _, c in ceilings])
    ax.set_ylim(0, high)
    ax.set_xticks(counts, [str(n) for n in counts])
    ax.margins(x=0.08)
    ax.set_xlabel("clients" if found.kind == "fanin" else "clients (hosts it sends to)")
    ax.set_ylabel("aggregate Mbit/s (median of the ok repeats)")
    into = "into" if found.kind == "fanin" else "out of"
    heading = (
        f"{found.name}: aggregate {into} {found.host} by clients ({found.mode}, {found.protocol})"
    )
    return style.finish(fig, ax, path, heading, fontsize=10)


def plot_all(doc: dict[str, Any], outdir: Path) -> list[Path]:
    """fanin-TEST.png for each test of several flows in the run, and fanin-clients-NAME.png
    for each fan test swept over its clients."""
    files = [plot(f, outdir / filename(f.test)) for f in fanins(doc)]
    return files + [plot_counts(s, outdir / count_filename(s.name)) for s in sweeps(doc)]
