"""A person's word on stored runs: accept a new level, pin a golden baseline.

A regressed run is never a baseline (netrun.history.baseline.usable), so a link that stays
broken pages every night. When the new level is right (a slower link on purpose), a
person accepts the run: ``netrun baseline accept RUN``; it and the runs after it compare as
usual again. ``netrun baseline pin RUN`` makes one run the baseline of ``--baseline last``
for its scenario and tag until ``netrun baseline unpin``. Both are fields of the stored
document (``accepted``, ``pinned``: an ISO time), so they travel with the history.
"""

from __future__ import annotations

from typing import Any

from netrun.history.db import History
from netrun.results.store import utcnow

ACCEPTED = "accepted"
PINNED = "pinned"


def _set(history: History, run_id: str, field: str, value: Any) -> None:
    with history._errors():
        history._transaction(
            lambda db: db.execute(
                "UPDATE runs SET document = json_set(document, ?, ?) WHERE run_id = ?",
                (f"$.{field}", value, run_id),
            )
        )


def accept(history: History, run: str) -> str:
    """Mark a stored run (an id or unique prefix) accepted: its regressed verdicts no
    longer keep it from being a baseline. Returns the full run id."""
    run_id = history.resolve_id(run)
    _set(history, run_id, ACCEPTED, utcnow())
    return run_id


def _scope(history: History, run_id: str) -> tuple[str, str]:
    with history._errors():
        row = history.db.execute(
            "SELECT scenario, COALESCE(json_extract(document, '$.tag'), '') FROM runs "
            "WHERE run_id = ?",
            (run_id,),
        ).fetchone()
    return str(row[0]), str(row[1])


def unpin(history: History, scenario: str, tag: str | None) -> list[str]:
    """Remove the pin of a scenario and tag; the run ids that were pinned."""
    with history._errors():
        ids = [
            str(row[0])
            for row in history.db.execute(
                "SELECT run_id FROM runs WHERE scenario = ? "
                "AND COALESCE(json_extract(document, '$.tag'), '') = ? "
                "AND json_extract(document, '$.pinned') IS NOT NULL",
                (scenario, tag or ""),
            )
        ]

        def clear(db: Any) -> None:
            for run_id in ids:
                db.execute(
                    "UPDATE runs SET document = json_remove(document, '$.pinned') WHERE run_id = ?",
                    (run_id,),
                )

        history._transaction(clear)
    return ids


def pin(history: History, run: str) -> tuple[str, str, str]:
    """Make a stored run the baseline of ``--baseline last`` for its scenario and tag
    (another pin there is removed). Returns (run id, scenario, tag)."""
    run_id = history.resolve_id(run)
    scenario, tag = _scope(history, run_id)
    unpin(history, scenario, tag)
    _set(history, run_id, PINNED, utcnow())
    return run_id, scenario, tag


def pinned(history: History, scenario: str, tag: str | None) -> str | None:
    """The run id pinned for a scenario and tag, or None."""
    with history._errors():
        row = history.db.execute(
            "SELECT run_id FROM runs WHERE scenario = ? "
            "AND COALESCE(json_extract(document, '$.tag'), '') = ? "
            "AND json_extract(document, '$.pinned') IS NOT NULL "
            "ORDER BY started DESC LIMIT 1",
            (scenario, tag or ""),
        ).fetchone()
    return str(row[0]) if row else None
