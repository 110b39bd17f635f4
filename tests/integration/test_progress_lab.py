"""Progress of a real run: timestamped lines for cron, a live line on a terminal, -q quiet,
each error printed once.

charlie's iperf3 points nowhere, so one test fails for a host error while another passes.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.conftest import LabHandle
from tests.integration.helpers import (
    entry,
    run_netrun,
    run_netrun_on_terminal,
    write_inventory,
    write_scenario,
)

pytestmark = pytest.mark.integration

ERR = "iperf3 not found ('/nonexistent/iperf3'"
STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \[")


@pytest.fixture
def broken(lab: LabHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    inv = write_inventory(
        tmp_path, lab, host_vars={"charlie": {"netrun_iperf3": "/nonexistent/iperf3"}}
    )
    scen = write_scenario(
        tmp_path,
        [entry("good", repeat=2), entry("bad", client="charlie", repeat=2)],
        name="progress",
    )
    return scen, inv


def test_cron_lines_are_timestamped_and_count_samples(
    broken: tuple[Path, Path], tmp_path: Path
) -> None:
    scen, inv = broken
    res = run_netrun([scen, "-i", inv, "-o", tmp_path / "out"], cwd=tmp_path)
    assert res.returncode == 1, res.stderr
    progress = [
        line for line in res.stderr.splitlines() if not line.startswith(("netrun:", "results:"))
    ]
    assert progress and all(STAMP.match(line) for line in progress), progress
    assert any("[2/4 samples, " in line and "good" in line for line in progress), progress
    assert "ETA " in progress[-1] and "\r" not in res.stderr
    assert res.stderr.count(ERR) == 2, "once as progress, once in the summary: " + res.stderr
    assert res.stdout.count(ERR) == 1, "once in the table: " + res.stdout


def test_quiet_and_one_destination_print_each_error_once(
    broken: tuple[Path, Path], tmp_path: Path
) -> None:
    scen, inv = broken
    both = subprocess.run(
        [sys.executable, "-m", "netrun", scen, "-i", inv, "-o", tmp_path / "out", "-q"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120,
    )  # fmt: skip
    assert both.returncode == 1, both.stdout
    assert both.stdout.count(ERR) == 1, both.stdout
    assert not STAMP.search(both.stdout) and "samples" not in both.stdout


def test_a_terminal_gets_a_live_line(
    lab: LabHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    scen = write_scenario(tmp_path, [entry("tp", repeat=2)], defaults={"duration": 2}, name="live")
    code, text = run_netrun_on_terminal(
        [scen, "-i", lab.inventory, "-o", tmp_path / "out"], cwd=tmp_path, timeout=60
    )
    assert code == 0, text
    assert "\r\x1b[K" in text, text
    assert re.search(
        r"\[\d/2 samples, \d+:\d\d elapsed, ETA \d+:\d\d\] \| tp repeat \d/2 ", text
    ), text
    assert "last: tp " in text and " Mbit/s" in text, text
    assert not STAMP.search(text.replace("\r", "\n")), "no timestamps on a terminal"
