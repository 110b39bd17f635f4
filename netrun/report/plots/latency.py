"""The latency plot: each latency tool's headline drawn as what its samples carry.

ping reports min/avg/max/mdev of its round trips, iperf2 min/avg/max/stdev of one-way
latency; netrun.report.headline reads the family from the declared metric names. Each test
is a whisker from min to max, a box of mean ± the spread, and the mean as a dot (each ok
repeat's mean as a small dot), coloured by mode as in every plot, tests grouped by
sender→receiver, as the tables write it. A test with per-packet samples (ping's
``details.rtts_ms``) is drawn as its percentiles instead. Values that span decades (TURN's
20 ms worst case beside a 0.01 ms direct path) get a log axis.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from netrun.core.metrics import finite
from netrun.report import headline
from netrun.report.plots import style
from netrun.report.summary import group_samples

LATENCY = "latency.png"
#: Past this max/min ratio the axis is logarithmic.
LOG_RATIO = 30.0
PERCENTILES = (5, 50, 95, 99)


def _per_packet(samples: list[dict[str, Any]]) -> list[float]:
    """Per-packet latencies the ok samples carry (ping's ``details.rtts_ms``: [seq, ms]
    pairs), if any."""
    out: list[float] = []
    for s in samples:
        found = (s.get("details") or {}).get("rtts_ms") if s.get("status") == "ok" else None
        if isinstance(found, list):
            pairs = [x[-1] if isinstance(x, list) and x else x for x in found]
            out += [v for v in (finite(x) for x in pairs) if v is not None]
    return out


def _repeat_means(samples: list[dict[str, Any]], name: str) -> list[float]:
    out = []
    for s in samples:
        value = (s.get("metrics") or {}).get(name) if s.get("status") == "ok" else None
        if (number := finite(value)) is not None:
            out.append(number)
    return out


def wanted(doc: dict[str, Any], rows: list[dict[str, Any]]) -> bool:
    """True when some test measured latency (a latency.png is drawn)."""
    return any(r.get("latency_ms") for r in rows)


def plot_latency(doc: dict[str, Any], path: Path, rows: list[dict[str, Any]]) -> Path:
    """latency.png: every test with a latency family, grouped by sender→receiver as the
    tables write it (a test's probes go client to server unless it is reversed)."""
    samples = group_samples(doc.get("tests", []))
    shown = [r for r in rows if r.get("latency_ms")]
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in shown:
        groups.setdefault(row.get("direction") or row["pair"], []).append(row)
    fig = style.figure(1.0 * len(shown) + 1.2 * len(groups) + 3)
    ax = fig.add_subplot()
    x = 0.0
    ticks: list[float] = []
    labels: list[str] = []
    drawn: list[float] = []
    seen: set[str] = set()
    for pair, members in groups.items():
        start = x
        for row in members:
            found = row["latency_ms"]
            colour = style.mode_colour(row["mode"])
            label = row["mode"] if row["mode"] not in seen else None
            seen.add(row["mode"])
            ticks.append(x)
            labels.append(f"{row['name']}\n{row['via']}" if row.get("via") else row["name"])
            packets = _per_packet(samples[row["name"]])
            if len(packets) >= 20:
                drawn += _percentiles(ax, x, packets, colour, label)
            elif found.get("percentiles"):
                drawn += _reported(ax, x, found, colour, label)
            else:
                drawn += _range(ax, x, found, colour, label)
                means = _repeat_means(samples[row["name"]], found["metric"])
                if len(means) > 1:
                    ax.plot([x] * len(means), means, "o", ms=3, color="black", alpha=0.5)
                    drawn += means
            said = f"{found['avg']:.3g}" + ("\nnot accelerated" if row.get("not_accelerated")
                                            else "")  # fmt: skip
            ax.annotate(said, (x, found["avg"]), textcoords="offset points",
                        xytext=(9, 0), fontsize=7, va="center")  # fmt: skip
            x += 1
        ax.annotate(pair, xy=((start + x - 1) / 2, 1), xycoords=("data", "axes fraction"),
                    xytext=(0, -14), textcoords="offset points", ha="center", fontsize=9,
                    color="dimgrey")  # fmt: skip
        if start > 0:
            ax.axvline(start - 0.8, color="lightgrey", lw=1, ls=":")
        x += 0.6
    if ticks:
        ax.set_xlim(ticks[0] - 1.0, ticks[-1] + 1.0)
    positive = [v for v in drawn if v > 0]
    note = ""
    if positive and max(positive) / min(positive) > LOG_RATIO:
        ax.set_yscale("log")
        ax.set_ylim(min(positive) / 1.5, max(positive) * 4)  # room for the pair's name
        note = "; log axis"
    else:
        bottom, top = style.value_range(drawn)
        ax.set_ylim(bottom, top)
        note = style.from_note(bottom)
    says = sorted({headline.says(doc, str(r.get("tool") or ""), r["latency_ms"]["metric"])
                   for r in shown})  # fmt: skip
    ax.set_ylabel(" / ".join(says) + " (ms)", fontsize=8)
    ax.set_xticks(ticks, labels, rotation=20 if len(shown) > 4 else 0,
                  ha="right" if len(shown) > 4 else "center", fontsize=8)  # fmt: skip
    ax.set_xlabel("test, grouped by sender→receiver")
    what = "dot: median of the repeats' means (small dots: each repeat's); box: ± mdev/stdev"
    what += f";\nwhisker: median min to median max{note}"
    if any(len(_per_packet(samples[r["name"]])) >= 20 for r in shown):
        what += "; per-packet tests: box p5-p95, tick p99, dot p50"
    if any(r["latency_ms"].get("percentiles") for r in shown):
        what += "; reported percentiles: dot mean, box p50-p90, whisker to p99, tick p99.9"
    nothing = None if shown else "no latency measured in this run"
    return style.finish(
        fig, ax, path, style.title(doc, f"latency: {what}"), empty_text=nothing, axis="y"
    )


def _range(ax: Any, x: float, found: dict[str, Any], colour: str, label: str | None) -> list[float]:
    """Whisker min-max, box mean ± spread, dot the mean; returns the values drawn."""
    avg, low, high, spread = found["avg"], found["min"], found["max"], found["spread"]
    drawn = [avg]
    if low is not None and high is not None:
        ax.vlines(x, low, high, color=colour, lw=1.2)
        ax.hlines([low, high], x - 0.12, x + 0.12, color=colour, lw=1.2)
        drawn += [low, high]
    if spread:
        bottom = max(avg - spread, low if low is not None else 0.0, 0.0)
        ax.bar(x, avg + spread - bottom, 0.5, bottom=bottom, color=colour, alpha=0.35)
        drawn += [bottom, avg + spread]
    ax.plot([x], [avg], "o", ms=7, color=colour, label=label, zorder=3)
    return drawn


def _reported(
    ax: Any, x: float, found: dict[str, Any], colour: str, label: str | None
) -> list[float]:
    """Percentiles a tool reported (netperf): box p50-p90, whisker to p99, tick p99.9, dot
    the mean; returns the values drawn."""
    cuts = {float(q): float(v) for q, v in found["percentiles"]}
    drawn = list(cuts.values())
    if 50.0 in cuts and 90.0 in cuts:
        ax.bar(x, cuts[90.0] - cuts[50.0], 0.5, bottom=cuts[50.0], color=colour, alpha=0.35)
    if 99.0 in cuts:
        ax.vlines(x, cuts.get(90.0, cuts.get(50.0, cuts[99.0])), cuts[99.0], color=colour, lw=1.2)
        ax.hlines([cuts[99.0]], x - 0.12, x + 0.12, color=colour, lw=1.2)
    if 99.9 in cuts:
        ax.hlines([cuts[99.9]], x - 0.08, x + 0.08, color=colour, lw=0.8, linestyles=":")
    mid = found["avg"] if found["avg"] is not None else cuts.get(50.0)
    if mid is not None:
        ax.plot([x], [mid], "o", ms=7, color=colour, label=label, zorder=3)
        drawn.append(mid)
    return drawn


def _percentiles(
    ax: Any, x: float, values: list[float], colour: str, label: str | None
) -> list[float]:
    """Box p5-p95, whisker to p99 and the max, dot the median."""
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    p5, p50, p95, p99 = (cuts[p - 1] for p in PERCENTILES)
    ax.vlines(x, min(values), max(values), color=colour, lw=0.8, alpha=0.6)
    ax.bar(x, p95 - p5, 0.5, bottom=p5, color=colour, alpha=0.35)
    ax.hlines([p99], x - 0.15, x + 0.15, color=colour, lw=1.2)
    ax.plot([x], [p50], "o", ms=7, color=colour, label=label, zorder=3)
    return [min(values), p5, p50, p95, p99, max(values)]
