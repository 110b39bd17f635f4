"""The throughput-versus-MTU plot, drawn with ``--plot`` when a scenario sweeps ``mtu:``.

One line per test of the sweep (its name without the ``mtu=`` part, e.g. flannel and bare
metal side by side), the host MTU on the x axis and the median Mbit/s on the y axis, each
point labelled with the overlay MTU where there is one: the reference write-up's figure.
Rendered from results.json alone, like netrun.report.plots.figures.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from netrun.report.plots import style
from netrun.report.summary import group_samples, summarize

MTU_PLOT = "mtu.png"
_MTU_PART = re.compile(r"(?<=[\[,])mtu=\d+,?|,mtu=\d+(?=\])")


def series(doc: dict[str, Any]) -> dict[str, list[tuple[int, float, str]]]:
    """Test (without its mtu= part) -> [(host MTU, median Mbit/s, MTU cell)], by MTU."""
    out: dict[str, list[tuple[int, float, str]]] = {}
    for samples in group_samples(doc.get("tests", [])).values():
        first = samples[0]
        mtu = (first.get("details") or {}).get("mtu")
        row = summarize(samples)
        if not isinstance(mtu, dict) or not mtu.get("underlay") or row["mbps"] is None:
            continue
        name = _MTU_PART.sub("", str(first["name"])).replace("[]", "")
        out.setdefault(f"{name} ({first['mode']})", []).append(
            (int(mtu["underlay"]), float(row["mbps"]), row["mtu"])
        )
    return {k: sorted(v) for k, v in out.items()}


def sweeps_mtu(doc: dict[str, Any]) -> bool:
    """True when the run measured at two host MTUs or more."""
    return len({m for points in series(doc).values() for m, _, _ in points}) > 1


def plot_mtu(doc: dict[str, Any], outdir: Path) -> list[Path]:
    """mtu.png in ``outdir`` when the run swept the MTU; [] otherwise."""
    if not sweeps_mtu(doc):
        return []

    fig = style.figure(9.0)
    ax = fig.add_subplot()
    found = series(doc)
    modes = [name.rsplit(" (", 1)[-1].rstrip(")") for name in found]
    by_mode = len(set(modes)) == len(modes)  # a line per mode: the mode's own colour
    for i, (name, points) in enumerate(found.items()):
        xs = [m for m, _, _ in points]
        ys = [v for _, v, _ in points]
        colour = style.mode_colour(modes[i]) if by_mode else style.PALETTE[i % len(style.PALETTE)]
        ax.plot(xs, ys, marker="o", color=colour, label=name)
        for x, y, cell in points:
            ax.annotate(cell, (x, y), textcoords="offset points", xytext=(0, 6), fontsize=7)
    ax.set_xlabel("host MTU (bytes); labels: underlay/overlay")
    ax.set_ylabel("Mbit/s (median)")
    ax.margins(x=0.08, y=0.15)  # room for the labels
    bottom, top = style.value_range([v for points in found.values() for _, v, _ in points])
    ax.set_ylim(bottom, top)
    heading = style.title(doc, "throughput versus MTU" + style.from_note(bottom))
    return [style.finish(fig, ax, outdir / MTU_PLOT, heading)]
