"""`netrun baseline accept|pin|unpin`: a person's word on which run is the baseline.

A regressed run never becomes ``--baseline last`` (nor one of ``median:N``), so a link that
stays broken pages every night; ``accept RUN`` says its level is the new normal, ``pin
RUN`` makes one run the baseline of its scenario and tag until ``unpin``
(netrun.history.marks).
"""

from __future__ import annotations

import argparse

from netrun.errors import InputError
from netrun.history import marks
from netrun.history.db import History, default_path
from netrun.history.judge import CAUSES, DEFAULT_PAGE_ON
from netrun.job import EXIT_OK


def cmd_baseline(ns: argparse.Namespace) -> int:
    db = ns.db or default_path()
    if not db.exists():
        raise InputError(f"{db}: no history database; pick one with --db")
    with History.open(db) as history:
        if ns.action == "accept":
            run_id = marks.accept(history, ns.run)
            print(f"run {run_id} accepted: its level is a baseline from now on")
        elif ns.action == "pin":
            run_id, scenario, tag = marks.pin(history, ns.run)
            where = f"scenario {scenario}" + (f", tag {tag}" if tag else ", untagged runs")
            print(f"run {run_id} pinned: --baseline last of {where} compares with it")
        else:
            doc = history.get_run(ns.run)
            gone = marks.unpin(history, str(doc.get("scenario")), doc.get("tag"))
            print(f"unpinned {', '.join(gone)}" if gone else "nothing was pinned")
    return EXIT_OK


def page_on(value: str | None) -> tuple[str, ...]:
    """--page-on's causes (netrun.history.judge.CAUSES); a bad one is an InputError."""
    if value is None:
        return DEFAULT_PAGE_ON
    words = [w.strip() for w in value.split(",") if w.strip()]
    if words == ["all"]:
        return tuple(CAUSES)
    if not words or (bad := [w for w in words if w not in CAUSES]):
        shown = ", ".join(bad) if words else "nothing"
        raise InputError(f"--page-on {shown}: use causes of {', '.join(CAUSES)}, or all")
    return tuple(words)
