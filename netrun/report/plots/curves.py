"""Sweeps drawn as curves over the swept value.

A scenario's ``sweep: {length: [100, 400, 1400]}`` runs one test per value, named
``udp-sizes[length=100]`` and so on. As separate bars they read as unrelated tests; what a
sweep asks is how throughput changes with the value, so each sweep is one small plot: the
swept value on x (a log scale when it spans more than 20×), the median Mbit/s on y with
its 95% CI, one curve per combination of the other swept keys.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from netrun.report.plots import png, style
from netrun.report.summary import summary_rows

SWEEPS = "sweeps.png"
_NAME = re.compile(r"^(?P<base>.+)\[(?P<swept>[^\[\]]+)\]$")
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmMgGtT]?)\s*$")
_SCALE = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}

#: (base name, swept key on x) -> curve label -> [(x, median Mbit/s, CI low, CI high)]
Sweeps = dict[tuple[str, str], dict[str, list[tuple[float, float | None, Any, Any]]]]


def number(value: Any) -> float | None:
    """A swept value as a number: 1400, 0.5, '800K' (iperf3's suffixes, x1000)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    found = _SIZE.match(str(value))
    return float(found.group(1)) * _SCALE[found.group(2).lower()] if found else None


def sweeps(doc: dict[str, Any]) -> Sweeps:
    """Every sweep of the run with a numeric first key, from the test names and options."""
    found: Sweeps = {}
    names = {str(t.get("name")) for t in doc.get("tests") or [] if isinstance(t, dict)}
    if not any((m := _NAME.match(n)) and "=" in m.group("swept") for n in names):
        return found  # no sweep: no need to summarise every test (a 992-test mesh's page)
    for row in summary_rows(doc):
        match = _NAME.match(str(row["name"]))
        if not match:
            continue
        pairs = [p.split("=", 1) for p in match.group("swept").split(",") if "=" in p]
        if not pairs:
            continue
        key = pairs[0][0]
        options = _options(doc, row["name"])
        x = number(options.get(key, pairs[0][1]))
        if x is None:
            continue
        label = ", ".join(f"{k}={v}" for k, v in pairs[1:]) or row["mode"]
        point = (x, row["mbps"], row.get("ci_low_mbps"), row.get("ci_high_mbps"))
        found.setdefault((match.group("base"), key), {}).setdefault(label, []).append(point)
    return {k: v for k, v in found.items() if sum(len(c) for c in v.values()) > 1}


def _options(doc: dict[str, Any], name: str) -> dict[str, Any]:
    for sample in doc.get("tests", []):
        if sample.get("name") == name and isinstance(sample.get("options"), dict):
            return dict(sample["options"])
    return {}


def plot_sweeps(doc: dict[str, Any], path: Path) -> Path:
    """One plot per sweep, side by side, into ``path`` (PNG)."""
    found = sweeps(doc)
    count = max(1, len(found))
    cols = min(3, count)
    rows = -(-count // cols)
    fig = png.figure(max(7.0, 4.6 * cols), 3.4 * rows + 0.8)
    axes = fig.subplots(rows, cols, squeeze=False)
    for k, ((base, key), curves) in enumerate(found.items()):
        ax = axes[k // cols][k % cols]
        xs = [p[0] for c in curves.values() for p in c]
        values = [
            v for c in curves.values() for p in c for v in (p[1], p[2], p[3]) if v is not None
        ]
        bottom, top = style.value_range(values)
        for cycled, (label, points) in zip(_cycle(style.PALETTE), curves.items(), strict=False):
            colour = style.mode_colour(label) if label in style.MODE_COLOURS else cycled
            points = sorted(points, key=lambda p: p[0])
            ok = [p for p in points if p[1] is not None]
            ax.plot([p[0] for p in ok], [p[1] for p in ok], "-o", ms=4, color=colour, label=label)
            for x, y, low, high in ok:
                if low is not None and high is not None:
                    ax.errorbar(x, y, yerr=[[max(0.0, y - low)], [max(0.0, high - y)]],
                                fmt="none", ecolor=colour, capsize=3, lw=1)  # fmt: skip
            for x, *_ in (p for p in points if p[1] is None):  # at the axis' bottom
                ax.plot([x], [bottom], "x", color=style.FAILED_COLOUR, ms=8, clip_on=False)
        if min(xs) > 0 and max(xs) / min(xs) > 20:
            ax.set_xscale("log")
        ax.set_ylim(bottom, top)
        ax.set_title(f"{base}: throughput over {key}{style.from_note(bottom)}", fontsize=10)
        ax.set_xlabel(key)
        ax.set_ylabel("median Mbit/s (95% CI)")
        ax.grid(alpha=0.3)
        if len(curves) > 1:
            ax.legend(fontsize=8)
    for k in range(len(found), rows * cols):
        axes[k // cols][k % cols].set_visible(False)
    if not found:
        axes[0][0].text(
            0.5, 0.5, "no sweep in this run", ha="center", transform=axes[0][0].transAxes
        )
    failed = any(p[1] is None for c in found.values() for points in c.values() for p in points)
    marks = " (x: failed)" if failed else ""  # a passing run is never said to have failed
    fig.suptitle(f"{doc.get('scenario')}, run {doc.get('run_id', '-')}: sweeps{marks}",
                 fontsize=10)  # fmt: skip
    fig.tight_layout()
    return png.save(fig, path)


def _cycle(items: list[str]) -> Iterable[str]:
    while True:
        yield from items
