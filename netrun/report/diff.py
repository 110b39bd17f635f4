"""Two saved runs side by side: ``netrun diff RUN_A RUN_B``, B judged against A.

Tests are matched by name and by what they measured (mode, hosts, measuring options;
see netrun.history.baseline): a test that ran with other options in B is shown with what differs,
not with a change, since its figures are not comparable. Every declared metric either run
has is a row, judged as a baseline comparison judges it (netrun.history.regress: B's
tolerances, each tool's defaults, the headline's confidence-interval rule, loss on the
worst repeat), so ``netrun diff`` can fail a script on a regression. Nothing here reads a host.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from netrun.core.metrics import Limit, Metric, declared
from netrun.history.baseline import differences, headline_name
from netrun.history.judge import sides
from netrun.history.regress import Verdict, compare, tolerances_from_doc
from netrun.report.render import text_table
from netrun.results import context, flags
from netrun.results.stats import ok_values, samples_by_test
from netrun.tools import form

HEADERS = [
    "test", "sender→receiver", "metric", "A", "B", "Δ%", "tolerance", "verdict", "flags A",
    "flags B", "note",
]  # fmt: skip


def _status(samples: Sequence[dict[str, Any]]) -> str:
    failed = sum(1 for s in samples if s.get("status") != "ok")
    return "" if not failed else f"{failed}/{len(samples)} failed"


def verdicts(a: dict[str, Any], b: dict[str, Any]) -> list[Verdict]:
    """B's tests judged against A's, with the tolerances B recorded (as a baseline would)."""
    return compare(b, a, tolerances_from_doc(b))


def _limits(b: dict[str, Any], samples: Sequence[dict[str, Any]], test: str) -> dict[str, Any]:
    try:
        tool = form.of_sample(samples[0])  # a load: test's idle/loaded metrics
    except KeyError:
        tool = None
    return tolerances_from_doc(b)(test).limits(tool)


def _tolerance_text(limit: Limit | None, metric: Metric) -> str:
    return "-" if limit is None else limit.floored(metric.floor).text(metric.unit)


def _metric_verdict(
    metric: Metric, va: float, vb: float, limit: Limit | None, breached: bool
) -> str:
    """A non-headline metric's word: regressed as the test's verdict found, else improved
    or ok by its tolerance; "-" when nothing judges it."""
    if breached:
        return "regressed"
    allowed = None if limit is None else limit.floored(metric.floor).allowed(va)
    if allowed is None:
        return "-"
    change = vb - va
    better = change > 0 if metric.better == "higher" else change < 0
    return "improved" if better and abs(change) > allowed else "ok"


def rows(a: dict[str, Any], b: dict[str, Any]) -> list[list[str]]:
    """One row per test and metric of either run, A's tests first, then tests only B has;
    a test's first row is its headline and carries its verdict, flags and notes."""
    tests_a, tests_b = samples_by_test(a), samples_by_test(b)
    metrics = {**declared(b), **declared(a)}
    judged_tests = {v.test: v for v in verdicts(a, b)}
    out = []
    for name in dict.fromkeys([*tests_a, *tests_b]):
        sa, sb = tests_a.get(name), tests_b.get(name)
        either = sa or sb
        assert either is not None
        head = headline_name(a if sa else b, name)
        notes: list[str] = []
        comparable = bool(sa and sb)
        if sa and sb:
            if differs := differences(sb, sa):
                shown = (d.replace("(baseline ", "(A ") for d in differs)
                notes.append("not comparable: " + "; ".join(shown))
                comparable = False
        else:
            notes.append("only in A" if sa else "only in B")
        for side, samples in (("A", sa), ("B", sb)):
            if samples and (status := _status(samples)):
                notes.append(f"{side}: {status}")
        verdict = judged_tests.get(name)
        limits = _limits(b, either, name)
        names = [head, *(m for m in metrics if m != head)]
        first = True
        for metric_name in names:
            metric = metrics.get(metric_name) or Metric(metric_name, "", "higher", "")
            values_a = ok_values(sa, metric_name) if sa else []
            values_b = ok_values(sb, metric_name) if sb else []
            if not values_a and not values_b and not first:
                continue  # a metric neither run measured: absent, not a row of dashes
            va: float | None
            vb: float | None
            if values_a and values_b:  # medians, or the worst repeats for loss
                vb, va, _ = sides(metric, values_b, values_a)
            else:
                va = statistics.median(values_a) if values_a else None
                vb = statistics.median(values_b) if values_b else None
            delta, word = "-", "-"
            limit = limits.get(metric_name)
            if comparable and va is not None and vb is not None:
                delta = f"{100 * (vb - va) / abs(va):+.1f}" if va else "-"
                if first and verdict is not None:
                    word = verdict.verdict
                elif verdict is not None and verdict.verdict != "failed":
                    breached = metric_name in verdict.metrics
                    word = _metric_verdict(metric, va, vb, limit, breached)
            elif first and verdict is not None:  # incomparable, new, failed
                word = verdict.verdict
            unit = metric.shown_unit or metric.unit
            out.append(
                [
                    name,
                    flags.direction(either[0]) if first else "",
                    f"{metric_name} ({unit})" if unit else metric_name,
                    "-" if va is None else metric.show(va),
                    "-" if vb is None else metric.show(vb),
                    delta,
                    _tolerance_text(limit, metric),
                    word,
                    (",".join(flags.of_test(sa)) or "-" if sa else "-") if first else "",
                    (",".join(flags.of_test(sb)) or "-" if sb else "-") if first else "",
                    "; ".join(notes) if first else "",
                ]
            )
            first = False
    return out


def regressed(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """True when a test of B regressed against A (``netrun diff`` then exits 3)."""
    return any(v.verdict == "regressed" for v in verdicts(a, b))


def render(a: dict[str, Any], b: dict[str, Any]) -> str:
    """The side-by-side text: which runs, then the table, then the flags' footnotes."""

    found = rows(a, b)
    lines = [
        f"A: run {a.get('run_id')} of {a.get('started')}, scenario {a.get('scenario')}"
        + (f", tag {a['tag']}" if a.get("tag") else ""),
        f"B: run {b.get('run_id')} of {b.get('started')}, scenario {b.get('scenario')}"
        + (f", tag {b['tag']}" if b.get("tag") else ""),
        text_table(HEADERS, found) if found else "no tests in either run",
        "Δ% = (B - A) / A of the median of the ok samples (loss: of the worst repeat); tests "
        "match by name, mode, hosts and measuring options; B is judged against A with B's "
        "tolerances (each tool's defaults unless the scenario set them)",
    ]
    used = {f for row in found for col in (8, 9) for f in row[col].split(",") if f not in ("", "-")}
    lines += flags.footnotes(used)
    lines += context.diff_lines(a, b)  # kernel, NIC, sysctls, tool versions A -> B
    return "\n".join(lines) + "\n"
