"""Trends that compare like with like: a test's runs as lines, split where it changed.

A trend joins tonight's median to last night's only when a baseline would compare them
(same mode, hosts and measuring options: netrun.history.baseline.differences). A run with
another bitrate, or a shaped link where it was unshaped, starts a new line, named by what
differs; its figures never make a step in the old line. A line of one run has no change.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from netrun.core.metrics import Metric
from netrun.history.baseline import differences
from netrun.history.db import History, RunRow
from netrun.results.stats import Summary

SHOWN = 6  # medians shown per line in `netrun history`


@dataclass(frozen=True)
class Point:
    """One run's figure of one test."""

    run_id: str
    started: str
    summary: Summary


@dataclass(frozen=True)
class Line:
    """Consecutive runs of one test that measured the same thing, oldest first; ``since``
    says what differs from the line before it ("" for the first line)."""

    points: tuple[Point, ...]
    since: str = ""

    @property
    def delta_pct(self) -> float | None:
        """The change from the line's first median to its last, in %; None for one run."""
        if len(self.points) < 2 or not self.points[0].summary.median:
            return None
        first, last = self.points[0].summary.median, self.points[-1].summary.median
        return (last / first - 1) * 100


def lines(
    history: History,
    scenario: str,
    test: str,
    metric: str,
    last: int | None = None,
    seen: dict[str, dict[str, dict[str, Any]]] | None = None,
) -> list[Line]:
    """The stored runs of one test (the newest ``last``), as lines of comparable runs.

    A run whose test has no ok sample is a gap, not a point; it does not split a line.
    ``seen`` keeps each run's signatures between calls (one read of a run for all tests).
    """
    seen = {} if seen is None else seen
    out: list[Line] = []
    points: list[Point] = []
    since = ""
    previous: dict[str, Any] | None = None
    for row in history.runs(scenario=scenario, test=test, last=last):
        if row.run_id not in seen:
            seen[row.run_id] = history.signatures(row.run_id)
        sample = seen[row.run_id].get(test)
        found = history.series_of(row.run_id, test, metric)
        if sample is None or found is None:
            continue
        if previous is not None and (differ := differences([sample], [previous])):
            out.append(Line(tuple(points), since))
            points = []
            since = f"from run {row.run_id}: " + "; ".join(
                d.replace("(baseline ", "(before ") for d in differ
            )
        points.append(Point(row.run_id, row.started or "", found))
        previous = sample
    if points:
        out.append(Line(tuple(points), since))
    return out


def table_rows(history: History, rows: Sequence[RunRow], only_test: str | None) -> list[list[str]]:
    """The trend rows under `netrun history`: one per line of each test in ``rows`` (so an
    incomparable run starts a row of its own); Δ is "-" for a line of one run."""
    out: list[list[str]] = []
    seen: dict[str, dict[str, dict[str, Any]]] = {}
    for scenario in dict.fromkeys(r.scenario for r in rows):
        tests = dict.fromkeys(t for r in rows if r.scenario == scenario for t in r.tests)
        for test in tests:
            if only_test and test != only_test:
                continue
            metric = history.headline(scenario, test)
            for line in lines(history, scenario, test, metric.name, len(rows), seen):
                medians = [p.summary.median for p in line.points]
                delta = line.delta_pct
                out.append(
                    [
                        scenario,
                        test,
                        metric.label,
                        str(len(medians)),
                        " → ".join(_show(metric, m) for m in medians[-SHOWN:]),
                        "-" if delta is None else f"{delta:+.1f}%",
                        line.since or "-",
                    ]
                )
    return out


def _show(metric: Metric, value: float) -> str:
    if metric.name == "throughput_bps":  # whole Mbit/s, as the trend always showed
        return f"{value / metric.scale:.0f}"
    return metric.show(value)
