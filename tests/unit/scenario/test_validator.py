"""Mode/tool combinations are refused at validation, from what each mode and tool declare,
so --check-only (and `netrun check`, which loads the scenario first) says it before any
host is touched: one line per test, naming it and the fix."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from netrun.errors import ScenarioError
from netrun.modes import mode_tools
from netrun.scenario.loader import load_scenario
from tests.conftest import ROOT

HOSTS = ("alpha", "bravo", "charlie")
TESTS = """
tests:
  - {name: ff-iperf2, mode: freeflow, tool: iperf2}
  - {name: turn-default, mode: turn, relay: charlie}
  - {name: turn-ping, mode: turn, tool: ping, relay: charlie}
  - {name: turn-ok, mode: turn, tool: iperf2, relay: charlie}
  - {name: ff-ok, mode: freeflow}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "combos.yaml"
    path.write_text("name: combos\ndefaults: {server: alpha, client: bravo}\n" + text)
    return path


def test_modes_declare_their_tools() -> None:
    tools = mode_tools()
    assert tools["turn"] == ("iperf2",)
    assert tools["baremetal"] is None and tools["freeflow"] == ("iperf3", "netperf")
    assert tools["docker"] == tools["flannel"] == ("iperf3", "iperf2", "netperf")


def test_every_bad_combination_is_one_line_with_the_fix(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError) as err:
        load_scenario(write(tmp_path, TESTS), hosts=HOSTS)
    lines = str(err.value).splitlines()
    assert len(lines) == 3, lines
    ff, turn_default, turn_ping = lines
    assert "tests[0] 'ff-iperf2': mode 'freeflow' measures with tool iperf3, netperf only" in ff
    assert "not tool 'iperf2': set tool: iperf3, or another mode (iperf2 runs in mode" in ff
    assert "baremetal, docker, flannel, kubernetes, turn)" in ff
    assert turn_default.endswith(
        "tests[1] 'turn-default': mode 'turn' measures with tool iperf2 only, not the default"
        " tool 'iperf3': set tool: iperf2, or another mode (iperf3 runs in mode baremetal,"
        " docker, flannel, freeflow, kubernetes)"
    )
    assert "tests[2] 'turn-ping': mode 'turn' measures with tool iperf2 only, not tool 'ping'" in (
        turn_ping
    )


def test_tool_from_defaults_or_e_counts(tmp_path: Path) -> None:
    path = write(tmp_path, "tests:\n  - {name: t, mode: turn, relay: charlie}\n")
    scen = load_scenario(path, hosts=HOSTS, overrides={"tool": "iperf2"})
    assert [t.tool for t in scen.tests] == ["iperf2"]
    with pytest.raises(ScenarioError, match="not tool 'ping'"):
        load_scenario(path, hosts=HOSTS, overrides={"tool": "ping"})


def test_check_only_says_it_without_connecting(tmp_path: Path) -> None:
    inventory = tmp_path / "inv.yaml"
    inventory.write_text(
        "all:\n  hosts:\n"
        + "".join(f"    {h}: {{ansible_host: 192.0.2.{i}}}\n" for i, h in enumerate(HOSTS, 1))
    )  # TEST-NET-1: nothing there to connect to, and --check-only must not try
    argv = [sys.executable, "-m", "netrun", str(write(tmp_path, TESTS)), "-i", str(inventory)]
    done = subprocess.run(
        [*argv, "--check-only"], capture_output=True, text=True, timeout=60, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    errors = [ln for ln in done.stderr.splitlines() if ln.startswith("netrun: error: ")]
    assert len(errors) == 3 and "Traceback" not in done.stderr, done.stderr
    assert any("'turn-default': mode 'turn' measures with tool iperf2 only" in e for e in errors)
