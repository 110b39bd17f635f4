"""A ``load:`` test judged against a baseline: by its added latency (the loaded tool's
headline), with its idle/loaded metrics, not by the plain tool's metrics it does not have.
On a real run's results (tests/fixtures/load)."""

from __future__ import annotations

import copy
import json
from typing import Any

from netrun.history.baseline import headline_name
from netrun.report.diff import verdicts
from tests.conftest import LOAD_FIXTURES


def doc() -> dict[str, Any]:
    found: dict[str, Any] = json.loads(
        (LOAD_FIXTURES / "rrul-baremetal-50mbit.results.json").read_text()
    )
    return found


def test_a_load_test_is_judged_by_its_added_latency() -> None:
    assert headline_name(doc(), "rrul-baremetal") == "latency_added_p50_ms"
    same = {v.test: v for v in verdicts(doc(), doc())}
    assert same["rrul-baremetal"].verdict == "ok", same["rrul-baremetal"].detail
    worse = copy.deepcopy(doc())
    for sample in worse["tests"]:
        sample["metrics"]["latency_added_p50_ms"] += 20.0  # a deeper queue: 20 ms more
    found = {v.test: v for v in verdicts(doc(), worse)}
    assert found["rrul-baremetal"].verdict == "regressed", found["rrul-baremetal"].detail
    assert "latency_added_p50_ms" in found["rrul-baremetal"].metrics
