"""Trend plots of a run's tests across the stored history, for a nightly job.

Each plot says what it follows (scenario, test, mode, client→server pair, metric), shows
the baseline the run was compared with and the tolerance band around it, so a point
outside the band is a verdict one can see; its y axis holds every point, bar and band.
Without a baseline comparison the reference is the median of the earlier runs shown.
Only the runs comparable with the newest (netrun.history.trends) are joined: a shaped
1 Gbit/s run never makes a step in an unshaped line; the title says how many were left out.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from netrun.history import trends
from netrun.history.db import History
from netrun.history.regress import Tolerances, tolerances_from_doc
from netrun.report.plots.figures import plot_trend
from netrun.report.summary import summary_rows
from netrun.results.store import safe_name
from netrun.tools import form

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
        found = trends.lines(history, doc["scenario"], name, metric.name, last=RUNS)
        if not found or len(found[-1].points) < 2:
            continue  # the newest line (this run's options) has one run: nothing to join
        line = found[-1]
        k = metric.scale
        points = [
            (
                p.started,
                p.summary.median / k,
                None if p.summary.ci_low is None else p.summary.ci_low / k,
                None if p.summary.ci_high is None else p.summary.ci_high / k,
            )
            for p in line.points
        ]
        baseline, label = _reference(points, deltas.get(name), doc)
        band = _band(tolerance(name), doc, name, metric.name)
        unit = metric.shown_unit or metric.unit
        earlier = sum(len(each.points) for each in found[:-1])
        title = (
            f"{doc['scenario']}: {name} ({row['mode']}, {row['pair']}, {row['protocol']})\n"
            f"{metric.name} median per run, last {len(points)} comparable runs"
            + (f" ({earlier} earlier with other options not drawn)" if earlier else "")
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


def _band(tolerance: Tolerances, doc: dict[str, Any], test: str, metric: str) -> float | None:
    """The relative tolerance of the plotted metric (an absolute one has no band here)."""
    found: Mapping[str, Any] = next((t for t in doc.get("tests", []) if t.get("name") == test), {})
    try:
        limit = tolerance.limits(form.of_sample(found)).get(metric)
    except KeyError:
        return None
    return limit.relative if limit else None


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
