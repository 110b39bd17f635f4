"""A regression pages only when a second measurement repeats it (netrun.history.confirm),
and a figure whose host lost CPU to its hypervisor is judged as a CPU-bound one (the
cpu-stolen flag), on the captured run of tests/unit/history/test_baseline.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from netrun.history import confirm
from netrun.history.regress import compare
from netrun.publish import KILLED, PublishOptions, publish
from netrun.report import why
from netrun.results import flags
from tests.unit.history.test_baseline import run


def stolen(doc: dict[str, Any], pct: float) -> dict[str, Any]:
    """``doc`` with its client host's hypervisor taking ``pct``% of its CPU time."""
    for sample in doc["tests"]:
        cpu = {"busy_seconds": 1.0, "busiest_pct": 40.0, "steal_pct": pct, "boot": "b"}
        sample.setdefault("details", {})["counters"] = {"client": {"cpu": cpu}}
    return doc


def test_a_host_whose_cpu_was_stolen_is_flagged_and_widens_the_tolerance() -> None:
    assert "cpu-stolen" in flags.of_sample(stolen(run("a", 2, 900.0), 12.0)["tests"][0])
    assert "cpu-stolen" not in flags.of_sample(stolen(run("a", 2, 900.0), 4.9)["tests"][0])
    assert flags.stolen_pcts(run("a", 2, 900.0)["tests"][0]) == {}  # no counters read
    (v,) = compare(stolen(run("b", 2, 920.0), 12.0), run("x", 1, 1000.0))  # -8%
    assert v.verdict == "noisy" and not v.pages
    assert "CPU stolen by the hypervisor in this run" in v.noise and "widened to 15.0%" in v.noise
    (v,) = compare(stolen(run("c", 2, 500.0), 12.0), run("x", 1, 1000.0))  # halved: still
    assert v.verdict == "regressed" and v.pages


def test_a_regression_the_second_measurement_repeats_pages() -> None:
    base = run("x", 1, 1000.0)
    first = compare(run("a", 2, 500.0), base)
    assert confirm.to_confirm(first) == ["tcp-forward"]
    (v,) = confirm.settle(first, compare(run("b", 2, 505.0), base))
    assert v.verdict == "regressed" and v.pages and v.confirmation == confirm.CONFIRMED
    assert "confirmed by a second measurement: throughput 505.0 vs 1000.0" in v.detail
    assert "; confirmed by a second measurement: throughput 505.0" in why.reason(v)
    (kept,) = why.stored({"baseline": {"verdicts": [why.record(v)]}}) or []
    assert kept.confirmation == confirm.CONFIRMED and kept.pages  # as results.json keeps it


def test_a_dip_the_second_measurement_does_not_repeat_pages_nobody() -> None:
    base = run("x", 1, 1000.0)
    (v,) = confirm.settle(compare(run("a", 2, 900.0), base), compare(run("b", 2, 995.0), base))
    assert v.verdict == "noisy" and not v.pages and v.confirmation == confirm.NOT_CONFIRMED
    assert v.after == 900.0e6  # the run's own figure stays; the second is named
    assert "not confirmed: a second measurement read throughput 995.0 vs 1000.0" in v.noise
    assert "; not confirmed: a second measurement read" in why.reason(v)
    assert "confirmation" not in why.record(compare(run("c", 2, 990.0), base)[0])  # not asked


def test_a_second_measurement_that_failed_leaves_the_regression_paging() -> None:
    base = run("x", 1, 1000.0)
    first = compare(run("a", 2, 500.0), base)
    (v,) = confirm.settle(first, None, "interrupted by SIGINT")
    assert v.verdict == "regressed" and v.pages and v.confirmation == confirm.UNCONFIRMED
    assert "could not confirm it (interrupted by SIGINT)" in v.detail
    failed = run("b", 2, 500.0)
    failed["tests"][0].update(status="failed", error="iperf3 exited 1")
    (v,) = confirm.settle(first, compare(failed, base))
    assert v.pages and "could not confirm it (it failed" in v.detail
    ok = compare(run("c", 2, 1000.0), base)
    assert confirm.settle(ok, None) == ok  # nothing paged: nothing measured again


def test_publish_measures_again_only_what_would_page(tmp_path: Path) -> None:
    base = tmp_path / "base.json"
    base.write_text(json.dumps(run("x", 1, 1000.0)))
    asked: list[list[str]] = []

    def again(names: list[str]) -> tuple[dict[str, Any] | None, Path | None, str]:
        asked.append(names)
        # what it saves first: what stands if netrun is killed while it measures
        (standing,) = doc["baseline"]["verdicts"]
        assert standing["confirmation"] == "unconfirmed" and standing["pages"]
        assert f"could not confirm it ({KILLED})" in standing["detail"]
        assert doc["baseline"]["confirmation"]["unavailable"] == KILLED
        return run("b", 2, 990.0), tmp_path / "confirm" / "results.json", ""

    doc = run("a", 2, 800.0)
    out = publish(doc, tmp_path, PublishOptions(baseline=str(base)), again)
    assert asked == [["tcp-forward"]] and not out.regressed
    saved = doc["baseline"]
    assert saved["confirmation"]["tests"] == ["tcp-forward"]
    assert saved["confirmation"]["results"] == "confirm/results.json"  # moves with the folder
    assert saved["verdicts"][0]["confirmation"] == "not confirmed"
    off = publish(
        run("c", 2, 800.0), tmp_path, PublishOptions(baseline=str(base), confirm=False), again
    )
    assert off.regressed and len(asked) == 1
    quiet = publish(run("d", 2, 1000.0), tmp_path, PublishOptions(baseline=str(base)), again)
    assert not quiet.regressed and len(asked) == 1
