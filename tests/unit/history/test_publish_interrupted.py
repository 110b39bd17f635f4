"""Ctrl-C or SIGTERM while a finished run publishes keeps what the run measured: publishing
says what it had not done yet (and how to do it later) and gives the interrupt's exit code,
and the run's table and results.json still follow (netrun.job)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from netrun.errors import Interrupted
from netrun.history.db import History
from netrun.publish import PublishOptions, publish
from tests.unit.history.test_baseline import run


@pytest.mark.parametrize(("signal", "code"), [(KeyboardInterrupt(), 130), (Interrupted(143), 143)])
def test_an_interrupt_while_measuring_again_leaves_the_verdicts_that_stand(
    tmp_path: Path, signal: BaseException, code: int
) -> None:
    base = tmp_path / "base.json"
    base.write_text(json.dumps(run("x", 1, 1000.0)))

    def again(names: list[str]) -> tuple[dict[str, Any] | None, Path | None, str]:
        raise signal  # a remeasure that does not keep the interrupt itself

    doc = run("a", 2, 500.0)
    db = tmp_path / "history.db"
    out = publish(doc, tmp_path, PublishOptions(db=db, baseline=str(base)), again)
    assert out.interrupted == code
    (line,) = out.problems
    name = "SIGTERM" if code == 143 else "SIGINT"
    assert line.startswith(
        f"publishing interrupted by {name}; not done: the baseline comparison, the history; "
    )
    assert f"netrun history import {tmp_path.resolve()}" in line
    # the regression stands unconfirmed, in the document results.json is saved from
    (standing,) = doc["baseline"]["verdicts"]
    assert standing["pages"] and standing["confirmation"] == "unconfirmed"
    with History.open(db) as history:  # never half stored: `history import` adds it whole
        assert not history.has_run(doc["run_id"])


def test_without_a_history_the_line_asks_for_no_import(tmp_path: Path) -> None:
    base = tmp_path / "base.json"
    base.write_text(json.dumps(run("x", 1, 1000.0)))

    def again(names: list[str]) -> tuple[dict[str, Any] | None, Path | None, str]:
        raise KeyboardInterrupt

    out = publish(run("a", 2, 500.0), tmp_path, PublishOptions(baseline=str(base)), again)
    assert out.problems == ["publishing interrupted by SIGINT; not done: the baseline comparison"]
    assert out.interrupted == 130
    calm = publish(run("b", 2, 1000.0), tmp_path, PublishOptions(baseline=str(base)), again)
    assert calm.interrupted is None and not calm.problems  # nothing paged: nothing to ask
