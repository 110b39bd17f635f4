"""Printing how a run ended, as a nightly cron job wants it: stamped lines, no stale exports.

Cron appends a run's stderr to a log night after night; with ``-q`` every line netrun writes
there ends with the time and the run id (`` [2026-12-03T02:31:07Z run 1a2b3c4d]``), so a
line found in the log names its night. A run that ends before it measures (bad input, exit 2;
another run measures on one of its hosts, exit 75) still replaces the exports it was asked
to write, so yesterday's passing JUnit and figures are not published again as tonight's.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from netrun.job import Outcome
from netrun.publish import export_nothing_ran
from netrun.report.exporters import scenarios_in
from netrun.report.oneline import summary_line


def stamp(run_id: str | None) -> str:
    """The suffix of a -q line: the time now (UTC) and the run id ("no run" before one)."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return f" [{now} {f'run {run_id}' if run_id else 'no run'}]"


def stamped(lines: list[str], run_id: str | None, quiet: bool) -> list[str]:
    """``lines`` with the stamp under -q, as they are otherwise."""
    return [line + stamp(run_id) for line in lines] if quiet else lines


def scenario_label(ns: argparse.Namespace, name: str | None) -> str:
    """The scenario label of a run that ended before measuring: its name when it was read,
    else the one scenario last night's textfile names, else the file's stem."""
    if name:
        return name
    prom = ns.prometheus
    if isinstance(prom, Path) and prom.is_file():
        found = scenarios_in(prom.read_text(encoding="utf-8", errors="replace"))
        if len(found) == 1:
            return found[0]
    return re.sub(r"\.ya?ml$", "", Path(ns.scenario).name)


def nothing_ran(ns: argparse.Namespace, name: str | None, code: int, error: str) -> list[str]:
    """Replace the run's --prometheus and --junit files (exit 2 or 75); problems, if any."""
    if getattr(ns, "check_only", False) or getattr(ns, "list_tests", False):
        return []
    if ns.prometheus is None and ns.junit is None:
        return []
    return export_nothing_ran(ns.prometheus, ns.junit, scenario_label(ns, name), code, error)


def print_outcome(out: Outcome, run_id: str, quiet: int) -> None:
    """The table on stdout (-q: after the run's one summary line; -qq: the summary line
    alone, the table is in report.txt), then on stderr what failed, notes, problems, where
    the results went, and last a failure to save them."""
    if quiet:
        print(summary_line(out.doc) + stamp(run_id))
    if quiet < 2 or out.save_error is not None:  # unsaved: the table is all there is
        print(out.table, end="")
    sys.stdout.flush()
    lines = [f"netrun: internal error: {out.internal_error}"] if out.internal_error else []
    # The table names every failure; where stderr goes to the same place (a terminal, a
    # cron mail with 2>&1), the same lines again would only repeat them.
    shown = quiet < 2 or out.save_error is not None
    errors = [] if shown and same_destination(sys.stdout, sys.stderr) else out.errors
    lines += [f"netrun: error: {line}" for line in errors]
    lines += [f"netrun: {line}" for line in out.notes]
    lines += [f"netrun: error: {line}" for line in out.problems]
    if out.results is not None:
        lines.append(f"results: {out.results}")
    if out.interrupted:
        lines.append("netrun: interrupted; partial results saved")
    if out.save_error is not None:  # last: the table above is all there is of this run
        lines.append(f"netrun: error: results not saved: {out.save_error}")
    for line in stamped(lines, run_id, bool(quiet)):
        print(line, file=sys.stderr)


def same_destination(a: Any, b: Any) -> bool:
    """Whether two streams write to one file, pipe or terminal."""
    try:
        one, two = os.fstat(a.fileno()), os.fstat(b.fileno())
    except (OSError, ValueError, AttributeError):
        return False
    return (one.st_dev, one.st_ino) == (two.st_dev, two.st_ino)
