"""load.png on a real run's results (tests/fixtures/load): idle and loaded side by side."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from netrun.report.plots import load
from netrun.report.plots.figures import plot_all
from netrun.report.summary import group_samples
from tests.conftest import LOAD_FIXTURES


def doc() -> dict[str, Any]:
    found: dict[str, Any] = json.loads(
        (LOAD_FIXTURES / "rrul-baremetal-50mbit.results.json").read_text()
    )
    return found


def test_distributions_pool_the_repeats() -> None:
    tests = group_samples(doc()["tests"])
    ping = tests["rrul-baremetal"]
    assert len(load.distribution(ping, "idle")) == 30  # 10 replies x 3 repeats
    assert min(load.distribution(ping, "loaded")) > max(load.distribution(ping, "idle"))
    rr = tests["rrul-baremetal-rr"]
    counted = sum(s["details"]["loaded"]["samples"] for s in rr)
    assert len(load.distribution(rr, "loaded")) == counted  # every histogram transaction


def test_plot_all_draws_load_png_only_for_load_runs(tmp_path: Path) -> None:
    files = plot_all(doc(), tmp_path)
    assert tmp_path / load.LOAD in files
    assert (tmp_path / load.LOAD).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    plain = doc()
    plain["tests"] = [dict(s, metrics={"rtt_avg_ms": 0.1}) for s in plain["tests"]]
    assert not load.wanted(plain)
