"""The single bare-metal test in as few SSH round trips as it can (issue 14, point 6).

Counted from the run's debug log, one "run" line per command: the server host answers
the probe with its server started (netrun.prestart), then the final sweep, which also
kills that server (Host.defer); the client host the probe, the client (which removes its
own pid file) and the sweep. Seven round trips one after the other became three.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from conftest import LabHandle
from helpers import assert_nothing_left, entry, load_results, run_netrun, write_scenario

pytestmark = pytest.mark.integration

RUN_LINE = re.compile(r" netrun\.transport DEBUG (\w+): run ")


def commands(outdir: Path) -> Counter[str]:
    text = (outdir / "netrun.log").read_text()
    return Counter(m.group(1) for m in RUN_LINE.finditer(text))


def test_one_bare_metal_test_costs_three_round_trips_per_host(
    lab: LabHandle, tmp_path: Path
) -> None:
    scen = write_scenario(tmp_path, [entry("t", duration=1)], name="single")
    proc = run_netrun([scen, "-i", lab.inventory, "-q", "-o", "out", "--no-history"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc = load_results(tmp_path / "out")
    assert [s["status"] for s in doc["tests"]] == ["ok"]
    assert commands(tmp_path / "out") == {"alpha": 2, "bravo": 3}
    assert_nothing_left(lab, tmp_path / "out")


def test_later_tests_start_their_own_servers_and_stop_the_last_ones(
    lab: LabHandle, tmp_path: Path
) -> None:
    """Three tests on one pair: the first server rides on the probe; each later one is
    started in its own round trip, which first kills the previous one (deferred)."""
    tests = [entry(f"t{i}", duration=1) for i in range(3)]
    scen = write_scenario(tmp_path, tests, name="three")
    proc = run_netrun([scen, "-i", lab.inventory, "-q", "-o", "out", "--no-history"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc = load_results(tmp_path / "out")
    assert [s["status"] for s in doc["tests"]] == ["ok"] * 3
    assert commands(tmp_path / "out") == {"alpha": 4, "bravo": 5}
    assert_nothing_left(lab, tmp_path / "out")
