"""load.png: latency idle beside latency under load, per test, coloured by mode.

Each ``load:`` test is a pair of boxes: idle (pale) and loaded (solid), in its mode's
colour, so one mode's queue reads against another's on the same pair. A box is p25-p75
of the pooled distribution of the ok repeats, whiskers p5-p95, a tick at p99 (when 100
values back it) and a dot at the median: ping's every reply (``details.<phase>.rtts_ms``),
netperf's ``-v 2`` histogram (each bucket's transactions at its middle). A tool that keeps
no distribution (iperf2) is drawn as its mean's dot. Under each pair: the load's
throughput. Latency spans decades under load (0.05 ms idle, 6 ms behind a queue), so the
axis goes logarithmic past a 30x ratio, as latency.png's does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from netrun.core.metrics import finite
from netrun.report import load_table
from netrun.report.plots import style
from netrun.report.summary import group_samples

LOAD = "load.png"
LOG_RATIO = 30.0
PHASES = ("idle", "loaded")
#: iperf2's mean one-way latency: its only figure per phase.
MEANS = ("latency_avg_ms",)


def _loaded_tests(doc: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    return {
        name: samples
        for name, samples in group_samples(doc.get("tests", [])).items()
        if any("latency_added_p50_ms" in (s.get("metrics") or {}) for s in samples)
    }


def wanted(doc: dict[str, Any]) -> bool:
    """True when some test ran with ``load:``."""
    return bool(_loaded_tests(doc))


def distribution(samples: list[dict[str, Any]], phase: str) -> list[float]:
    """Every latency (ms) of ``phase`` the ok samples keep: ping's replies, netperf's
    histogram buckets (their middles, as often as they counted)."""
    out: list[float] = []
    for s in samples:
        if s.get("status") != "ok":
            continue
        found = ((s.get("details") or {}).get(phase)) or {}
        for pair in found.get("rtts_ms") or []:
            value = finite(pair[-1] if isinstance(pair, list) and pair else pair)
            if value is not None:
                out.append(value)
        for bucket in found.get("histogram_us") or []:
            if isinstance(bucket, list) and len(bucket) == 3:
                low, high, count = (finite(b) for b in bucket)
                if low is not None and high is not None and count:
                    out += [(low + high) / 2000.0] * int(count)
    return out


def _cuts(values: list[float]) -> dict[int, float]:
    ordered = sorted(values)

    def at(q: int) -> float:
        return ordered[min(len(ordered) - 1, int(q / 100 * len(ordered)))]

    return {q: at(q) for q in (5, 25, 50, 75, 95, 99)}


def _mean(samples: list[dict[str, Any]], phase: str) -> float | None:
    values = []
    for s in samples:
        for name in MEANS:
            v = finite((s.get("metrics") or {}).get(f"{name}_{phase}"))
            if v is not None and s.get("status") == "ok":
                values.append(v)
    return sorted(values)[len(values) // 2] if values else None


def _box(ax: Any, x: float, values: list[float], colour: str, alpha: float) -> list[float]:
    c = _cuts(values)
    ax.vlines(x, c[5], c[95], color=colour, lw=1.2)
    ax.bar(x, c[75] - c[25], 0.36, bottom=c[25], color=colour, alpha=alpha, edgecolor=colour)
    if len(values) >= 100:
        ax.hlines([c[99]], x - 0.12, x + 0.12, color=colour, lw=1.2)
    ax.plot([x], [c[50]], "o", ms=6, color="black" if alpha > 0.5 else colour, zorder=3)
    return [c[5], c[50], c[95]] + ([c[99]] if len(values) >= 100 else [])


def plot_load(doc: dict[str, Any], path: Path) -> Path:
    """load.png: each load test's idle and loaded latency side by side."""
    tests = _loaded_tests(doc)
    fig = style.figure(1.6 * len(tests) + 3)
    ax = fig.add_subplot()
    drawn: list[float] = []
    ticks, labels = [], []
    seen: set[str] = set()
    bidir = False
    for i, (name, samples) in enumerate(tests.items()):
        mode = str(samples[0].get("mode"))
        colour = style.mode_colour(mode)
        for j, phase in enumerate(PHASES):
            x = i + (j - 0.5) * 0.42
            values = distribution(samples, phase)
            alpha = 0.25 if phase == "idle" else 0.8
            if values:
                drawn += _box(ax, x, values, colour, alpha)
            elif (mean := _mean(samples, phase)) is not None:
                ax.plot([x], [mean], "D", ms=6, color=colour, alpha=max(alpha, 0.5))
                drawn.append(mean)
        if mode not in seen:
            ax.bar([i], [0], color=colour, label=mode)  # the legend's swatch
            seen.add(mode)
        ticks.append(i)
        halves = load_table.load_cell(samples)  # "938.8 + 938.3": each way of a --bidir load
        bidir = bidir or "+" in halves
        load = f"\nload {halves} Mbit/s" if halves != "-" else ""
        if any((s.get("details") or {}).get("accelerated") is False for s in samples):
            load += "\nnot accelerated"
        labels.append(f"{name}\n{samples[0].get('tool')} idle | loaded{load}")
    positive = [v for v in drawn if v > 0]
    if positive and max(positive) / min(positive) > LOG_RATIO:
        ax.set_yscale("log")
        ax.set_ylim(min(positive) / 1.5, max(positive) * 2)
    elif drawn:
        ax.set_ylim(*style.value_range(drawn))
    ax.set_xticks(ticks, labels, fontsize=8)
    ax.set_xlim(-0.8, len(tests) - 0.2)
    ax.set_ylabel("latency (ms)")
    what = "pale idle, solid under load;\nbox p25-p75, whisker p5-p95, tick p99, dot p50"
    if bidir:
        what += ";\nload A + B Mbit/s: client→server + server→client"
    heading = style.title(doc, f"latency under load: {what}")
    nothing = None if tests else "no test ran with load: in this run"
    return style.finish(fig, ax, path, heading, empty_text=nothing, axis="y")
