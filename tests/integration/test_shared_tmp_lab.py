"""Hosts that share one remote tmp (the lab's namespaces in this machine's /tmp, NFS homes
in HPC labs): a host's sweep acts only on what that host made (issue 23).

`netrun cleanup` after a SIGKILL used to run, on charlie, alpha's and bravo's undo
records (charlie's MTU "back to 1500"), kill their iperf3 by pid and remove their run
folder, leaving alpha and bravo at MTU 9000. Each host now has a run folder of its own,
marked with its boot id and network namespace, and signals only pids of its namespace.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from netrun.cleanup.owner import HOST_FILE
from tests.integration.conftest import LabHandle, lab_iperf3_pids
from tests.integration.helpers import (
    entry,
    lab_settings,
    load_results,
    netrun_process,
    run_netrun,
    wait_for,
    write_inventory,
    write_scenario,
)

pytestmark = [pytest.mark.integration, pytest.mark.faults]


def data_mtu(lab: LabHandle, host: str) -> int:
    from netrun.lab.system import ip_json

    (link,) = ip_json("link", "show", "dev", "data0", netns=lab.host(host).namespace)
    return int(link["mtu"])


def shared_tmp_inventory(lab: LabHandle, tmp_path: Path) -> tuple[Path, Path]:
    """An inventory whose hosts all keep their run folders in one folder."""
    shared = tmp_path / "shared"
    shared.mkdir()
    host_vars = {h: {"netrun_remote_tmp": str(shared)} for h in lab.hosts}
    return write_inventory(tmp_path, lab, host_vars=host_vars, file="shared.yaml"), shared


def test_cleanup_after_sigkill_restores_every_hosts_mtu_on_a_shared_tmp(
    lab: LabHandle, tmp_path: Path
) -> None:
    assert "charlie" in lab.hosts, lab.hosts
    before = lab_settings(lab)
    inventory, shared = shared_tmp_inventory(lab, tmp_path)
    scenario = write_scenario(
        tmp_path, [entry("long", duration=30, mtu=9000)], name="killed", file="long.yaml"
    )
    out = tmp_path / "first"

    def measuring() -> bool:
        at_9000 = data_mtu(lab, "alpha") == 9000 and data_mtu(lab, "bravo") == 9000
        return at_9000 and any(shared.glob("netrun-*-bravo/*.client.pid"))

    with netrun_process([scenario, "-i", inventory, "-o", out, "--no-history"], cwd=tmp_path) as p:
        assert wait_for(measuring, timeout=30), p.poll()
        wait_for(lambda: False, 0.5)
        os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=10)
    run_id = load_results(out)["run_id"]
    folders = sorted(d.name for d in shared.iterdir())
    assert folders == [f"netrun-{run_id}-alpha", f"netrun-{run_id}-bravo"], folders
    marks = {(shared / f / HOST_FILE).read_text() for f in folders}
    assert len(marks) == 2, marks  # one kernel, two network namespaces
    pids = lab_iperf3_pids(lab)
    assert pids, "the killed run's iperf3 should still run"

    # charlie sees both folders in the shared tmp: it must leave them alone
    run = run_netrun(["cleanup", "-i", inventory, "-l", "charlie"], cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "charlie: nothing left behind", run.stdout
    assert sorted(d.name for d in shared.iterdir()) == folders
    assert data_mtu(lab, "alpha") == 9000 and data_mtu(lab, "bravo") == 9000
    assert set(pids) <= set(lab_iperf3_pids(lab))

    # every host: each runs its own records only
    run = run_netrun(["cleanup", "-i", inventory], cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    for host in ("alpha", "bravo"):
        assert f"{host}: undone: MTU of data0 back to 1500" in lines, run.stdout
        assert f"{host}: removed {shared}/netrun-{run_id}-{host}" in lines, run.stdout
    assert "charlie: nothing left behind" in lines, run.stdout
    assert sum("undone:" in line for line in lines) == 2, run.stdout
    assert data_mtu(lab, "alpha") == 1500 and data_mtu(lab, "bravo") == 1500
    assert list(shared.iterdir()) == []
    assert wait_for(lambda: not lab_iperf3_pids(lab), 5), lab_iperf3_pids(lab)
    assert lab_settings(lab) == before


def test_a_run_on_a_shared_tmp_leaves_nothing(lab: LabHandle, tmp_path: Path) -> None:
    """Hosts on one folder in one run, both ways round, with an MTU change."""
    before = lab_settings(lab)
    inventory, shared = shared_tmp_inventory(lab, tmp_path)
    tests = [
        entry("ab", duration=1, mtu=9000),
        entry("bc", server="bravo", client="charlie", duration=1),
        entry("ca", server="charlie", client="alpha", duration=1, reverse=True),
    ]
    scenario = write_scenario(tmp_path, tests, name="shared")
    run = run_netrun([scenario, "-i", inventory, "-o", "out", "--no-history"], cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    doc = load_results(tmp_path / "out")
    assert [t["status"] for t in doc["tests"]] == ["ok"] * 3, doc["tests"]
    ab, bc = doc["tests"][0], doc["tests"][1]
    for side in ("client", "server"):  # nic: what the test ran at, and the probe's value
        assert ab["nic"][side]["mtu"] == 9000 and ab["nic"][side]["mtu_at_probe"] == 1500
        assert bc["nic"][side]["mtu"] == bc["nic"][side]["mtu_at_probe"] == 1500
    assert list(shared.iterdir()) == []
    assert lab_settings(lab) == before
