"""`netrun check`: the preflight against the lab, with hosts broken on purpose.

charlie's iperf3 points nowhere, bravo's known_hosts does not know its key (an SSH host-key
failure), and alpha is fine: one line per host, each failure naming its fix, exit 1. With
a scenario only the hosts its tests name are checked; all ready is exit 0. Nothing runs a
measurement, so nothing is left on the hosts.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.conftest import LabHandle
from tests.integration.helpers import (
    assert_nothing_left,
    entry,
    run_netrun,
    write_inventory,
    write_scenario,
)

pytestmark = pytest.mark.integration


def lines_by_host(stdout: str) -> dict[str, str]:
    return {line.split(":", 1)[0]: line for line in stdout.splitlines() if ": " in line}


def test_check_names_each_broken_host_and_its_fix(lab: LabHandle, tmp_path: Path) -> None:
    empty = tmp_path / "empty_known_hosts"
    empty.write_text("")
    inv = write_inventory(
        tmp_path,
        lab,
        host_vars={
            "charlie": {"netrun_iperf3": "/nonexistent/iperf3"},
            "bravo": {"netrun_known_hosts": str(empty)},
        },
    )
    res = run_netrun(["check", "-i", inv], cwd=tmp_path, timeout=120)
    assert res.returncode == 1, res.stdout + res.stderr
    got = lines_by_host(res.stdout)
    assert set(got) == {"alpha", "bravo", "charlie"}, res.stdout
    alpha = got["alpha"]
    assert alpha.startswith("alpha: ok: ssh ") and "host key ok" in alpha, alpha
    assert "iperf3 3." in alpha and "MTU " in alpha and "Mbit/s" in alpha, alpha
    assert "clock " in alpha and " ms" in alpha, alpha
    assert got["charlie"].startswith("charlie: FAIL: iperf3 not found"), got["charlie"]
    assert "apt-get install iperf3" in got["charlie"]
    assert got["bravo"].startswith("bravo: FAIL: "), got["bravo"]
    assert "host key" in got["bravo"].lower(), got["bravo"]
    assert "Traceback" not in res.stderr
    assert "2 of 3 host(s) not ready: bravo, charlie" in res.stderr
    assert_nothing_left(lab)


def test_check_with_a_scenario_checks_only_its_hosts(lab: LabHandle, tmp_path: Path) -> None:
    inv = write_inventory(tmp_path, lab, host_vars={"charlie": {"netrun_iperf3": "/nope"}})
    scen = write_scenario(tmp_path, [entry("tp", server="alpha", client="bravo")])
    res = run_netrun(["check", "-i", inv, scen], cwd=tmp_path, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    assert set(lines_by_host(res.stdout)) == {"alpha", "bravo"}, res.stdout
    assert "all 2 host(s) ready" in res.stderr
