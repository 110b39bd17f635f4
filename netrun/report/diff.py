"""Two saved runs side by side: ``netrun diff RUN_A RUN_B``.

Tests are matched by name and by what they measured (mode, hosts, measuring options;
see netrun.history.baseline): a test that ran with other options in B is shown with what differs,
not with a change, since its figures are not comparable. Nothing here reads a host.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from netrun.core.metrics import declared
from netrun.history.baseline import differences, headline_name
from netrun.report.render import text_table
from netrun.results import context, flags
from netrun.results.stats import ok_values, samples_by_test, summarize

HEADERS = ["test", "sender→receiver", "metric", "A", "B", "Δ%", "flags A", "flags B", "note"]


def _median(samples: Sequence[dict[str, Any]], metric: str) -> float | None:
    summary = summarize(ok_values(samples, metric))
    return summary.median if summary else None


def _status(samples: Sequence[dict[str, Any]]) -> str:
    failed = sum(1 for s in samples if s.get("status") != "ok")
    return "" if not failed else f"{failed}/{len(samples)} failed"


def rows(a: dict[str, Any], b: dict[str, Any]) -> list[list[str]]:
    """One row per test of either run, A's order first, then tests only B has."""
    tests_a, tests_b = samples_by_test(a), samples_by_test(b)
    metrics = {**declared(b), **declared(a)}
    out = []
    for name in dict.fromkeys([*tests_a, *tests_b]):
        sa, sb = tests_a.get(name), tests_b.get(name)
        either = sa or sb
        assert either is not None
        head = headline_name(a if sa else b, name)
        metric = metrics.get(head)
        show = metric.show if metric else (lambda v: f"{v:g}")
        unit = (metric.shown_unit or metric.unit) if metric else ""
        va = _median(sa, head) if sa else None
        vb = _median(sb, head) if sb else None
        notes: list[str] = []
        delta = "-"
        if sa and sb:
            if differs := differences(sb, sa):
                shown = (d.replace("(baseline ", "(A ") for d in differs)
                notes.append("not comparable: " + "; ".join(shown))
            elif va is not None and vb is not None and va:
                delta = f"{100 * (vb - va) / abs(va):+.1f}"
        else:
            notes.append("only in A" if sa else "only in B")
        for side, samples in (("A", sa), ("B", sb)):
            if samples and (status := _status(samples)):
                notes.append(f"{side}: {status}")
        out.append(
            [
                name,
                flags.direction(either[0]),
                f"{head} ({unit})" if unit else head,
                "-" if va is None else show(va),
                "-" if vb is None else show(vb),
                delta,
                ",".join(flags.of_test(sa)) if sa else "-",
                ",".join(flags.of_test(sb)) if sb else "-",
                "; ".join(notes),
            ]
        )
    return out


def render(a: dict[str, Any], b: dict[str, Any]) -> str:
    """The side-by-side text: which runs, then the table, then the flags' footnotes."""

    found = rows(a, b)
    lines = [
        f"A: run {a.get('run_id')} of {a.get('started')}, scenario {a.get('scenario')}"
        + (f", tag {a['tag']}" if a.get("tag") else ""),
        f"B: run {b.get('run_id')} of {b.get('started')}, scenario {b.get('scenario')}"
        + (f", tag {b['tag']}" if b.get("tag") else ""),
        text_table(HEADERS, found) if found else "no tests in either run",
        "Δ% = (B - A) / A of the median of the ok samples; tests match by name, mode, hosts "
        "and measuring options",
    ]
    used = {f for row in found for col in (6, 7) for f in row[col].split(",") if f != "-"}
    lines += flags.footnotes(used)
    lines += context.diff_lines(a, b)  # kernel, NIC, sysctls, tool versions A -> B
    return "\n".join(lines) + "\n"
