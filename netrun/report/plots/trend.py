"""Trend plots of a run's tests across the stored history, for a nightly job.

Each plot says what it follows (scenario, test, mode, client→server pair, metric), shows
the baseline the run was compared with and the tolerance band around it, so a point
outside the band is a verdict one can see; its y axis holds every point, bar and band.
Without a baseline comparison the reference is the median of the earlier runs shown.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from netrun.history.db import History
from netrun.history.regress import tolerances_from_doc
from netrun.report.plots.figures import plot_trend
from netrun.report.summary import summary_rows
from netrun.results.store import safe_name

RUNS = 30


def trend_plots(
    doc: dict[str, Any], outdir: Path, history: History, throughput: float | None = None
) -> list[Path]:
    """trend-TEST.png for every test with at least two stored runs (this one included)."""
    files = []
    rows = {r["name"]: r for r in summary_rows(doc)}
    tolerance = tolerances_from_doc(doc, throughput)
    deltas = {
        v["test"]: v.get("delta_pct") for v in (doc.get("baseline") or {}).get("verdicts", [])
    }
    for name, row in rows.items():
        metric = history.headline(doc["scenario"], name)
        series = history.series(doc["scenario"], name, last=RUNS, metric=metric.name)
        if len(series) < 2:
            continue
        k = metric.scale
        points = [
            (
                started,
                s.median / k,
                None if s.ci_low is None else s.ci_low / k,
                None if s.ci_high is None else s.ci_high / k,
            )
            for started, s in series
            if s is not None and s.median is not None
        ]
        baseline, label = _reference(points, deltas.get(name), doc)
        band = tolerance(name).throughput if metric.name == "throughput_bps" else None
        unit = metric.shown_unit or metric.unit
        title = (
            f"{doc['scenario']}: {name} ({row['mode']}, {row['pair']}, {row['protocol']})\n"
            f"{metric.name} median per run, last {len(points)} runs"
        )
        path = outdir / f"trend-{safe_name(name)}.png"
        files.append(
            plot_trend(
                points,
                path,
                title,
                f"{metric.name} ({unit})",
                baseline=baseline,
                tolerance=band,
                baseline_label=label,
            )
        )
    return files


def _reference(
    points: list[tuple[str, float, Any, Any]], delta_pct: float | None, doc: dict[str, Any]
) -> tuple[float | None, str]:
    """The baseline value and its legend: the compared run's, else the earlier runs' median."""
    base = doc.get("baseline") or {}
    if delta_pct is not None and points and delta_pct > -100:
        value = points[-1][1] / (1 + delta_pct / 100)
        return value, f"baseline run {base.get('run_id')} ({str(base.get('started'))[:10]})"
    earlier = [p[1] for p in points[:-1] if p[1] is not None]
    if not earlier:
        return None, "baseline"
    return statistics.median(earlier), f"median of the {len(earlier)} earlier runs"
