"""`netrun history`: list stored runs, why their tests moved, and the trend of each line.

Prints and returns exit codes like the CLI's other subcommands; the work itself is
netrun.history's.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from netrun.errors import InputError
from netrun.job import EXIT_OK


def cmd_history(ns: argparse.Namespace) -> int:
    from netrun.history.db import History, default_path

    db = ns.db or default_path()
    with History.open(db) as history:
        if ns.action == "import":
            if ns.path is None:
                raise InputError("netrun history import needs a folder: netrun history import DIR")
            if not ns.path.exists():
                raise InputError(f"{ns.path}: no such folder")
            problems: list[str] = []
            added = history.import_dir(ns.path, problems)
            for line in problems:
                print(f"netrun: skipped {line}", file=sys.stderr)
            print(f"imported {len(added)} run(s) into {db}")
            return EXIT_OK
        rows = history.runs(scenario=ns.scenario, test=ns.test, last=ns.last)
        if not rows and (ns.scenario or ns.test):
            print(_what_exists(history, ns.scenario, ns.test))
            return EXIT_OK
        print(history_table(history, rows, ns.test))
    return EXIT_OK


def _what_exists(history: Any, scenario: str | None, test: str | None) -> str:
    """An empty filter names what the history does hold, so the next try can succeed."""
    runs = history.runs(scenario=scenario) if scenario and test else history.runs()
    asked = " and ".join(
        f"{what} '{value}'" for what, value in (("scenario", scenario), ("test", test)) if value
    )
    if scenario and test and runs:
        tests = sorted({t for r in runs for t in r.tests})
        return f"no stored runs of {asked}; tests of '{scenario}' with runs: {', '.join(tests)}"
    if not runs and scenario and test:
        runs = history.runs()
    if scenario is None and test:
        tests = sorted({t for r in runs for t in r.tests})
        return f"no stored runs of {asked}; tests with runs: {', '.join(tests) or 'none'}"
    names = sorted({r.scenario for r in runs})
    shown = ", ".join(names) if names else "none yet (netrun stores every run; see --db)"
    return f"no stored runs of {asked}; scenarios with runs: {shown}"


def _history_why(
    history: Any, run_ids: list[str], labels: dict[str, tuple[str, str]], only_test: str | None
) -> list[str]:
    """Why each listed run's tests regressed (or failed, were noisy, improved): a line per
    test, as the run's reports say it (netrun.report.why)."""
    from netrun.core.metrics import declared
    from netrun.report.why import reasons, stored

    lines = []
    for run_id in run_ids:
        if not any(word in labels[run_id][1] for word in ("regressed", "noisy", "improved")):
            continue  # read only the runs with something to explain
        doc = history.get_run(run_id)
        found = stored(doc) or []
        because = reasons(found, declared(doc))
        for v in found:
            if v.test in because and only_test in (None, v.test):
                lines.append(f"run {run_id}: {v.test} {v.verdict}: {because[v.test]}")
    return lines


def history_table(history: Any, rows: list[Any], only_test: str | None) -> str:
    from tabulate import tabulate

    if not rows:
        return "no stored runs (netrun stores every run; see --db)"
    from netrun.history.baseline import verdicts_by_run

    labels = verdicts_by_run(history, [r.run_id for r in rows], only_test)
    table = [
        [r.run_id, r.scenario, r.started, labels[r.run_id][0], r.status,
         f"{r.samples - r.failed}/{r.samples}", labels[r.run_id][1]]
        for r in rows
    ]  # fmt: skip
    headers = ["run", "scenario", "started", "tag", "status", "ok samples", "verdicts"]
    # run ids such as 680572e5 and test names are text: tabulate would print 6.80572e+10
    out = [tabulate(table, headers=headers, disable_numparse=True)]
    if because := _history_why(history, [r.run_id for r in rows], labels, only_test):
        out += ["", *because]
    from netrun.history.trends import table_rows

    trends = table_rows(history, rows, only_test)  # a row per line of comparable runs
    if trends:
        out.append("")
        units = {t[2].rsplit("(", 1)[-1].rstrip(")") for t in trends}
        median = f"median {units.pop()} (last 6)" if len(units) == 1 else "median (last 6)"
        headers = ["scenario", "test", "metric", "runs", median, "Δ", "new line"]
        out.append(tabulate(trends, headers=headers, disable_numparse=True))
    return "\n".join(out)
