"""Each host's last container measurement sweeps the host (netrun.modes.docker.savers.client,
netrun.modes.docker.savers.serverend): the client's command ends with its host's sweep, the server's
host sweeps once its iperf3 served the test, and the run's end sends no sweep of its own.
Whatever way the run ends (success, a failed test, Ctrl-C, SIGKILL then ``netrun
cleanup``), nothing is left: no container, no router the run started, no run folder.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from tests.integration.conftest import LabHandle
from tests.integration.helpers import (
    entry,
    load_results,
    netrun_process,
    only_test,
    run_netrun,
    wait_for,
    write_scenario,
)
from tests.integration.test_container_faults import client_measuring
from tests.integration.test_container_modes import (
    ROUTER,
    containers_named,
    labelled,
    netrun,
    nothing_left,  # noqa: F401  (the autouse leftovers check)
)

pytestmark = [pytest.mark.integration, pytest.mark.docker]

#: The final sweep's script begins so (netrun.cleanup.scripts.cleanup_script).
FINAL_SWEEP = "run spared=;"


def commands(outdir: Path) -> list[str]:
    """The SSH commands the run sent, "host: run|start <first line>", from its debug log."""
    lines = (outdir / "netrun.log").read_text().splitlines()
    found = [
        line.split(" DEBUG ", 1)[1] for line in lines if "netrun.hosts.transport DEBUG" in line
    ]
    return [c for c in found if c.split(": ", 1)[1].startswith(("run ", "start "))]


@pytest.mark.parametrize("mode", ["docker", "freeflow"])
def test_a_single_test_sweeps_its_hosts_as_it_ends(
    docker_lab: LabHandle, tmp_path: Path, mode: str
) -> None:
    scenario = write_scenario(tmp_path, [entry("t", mode=mode, duration=1)])
    res = netrun(tmp_path, scenario, docker_lab.inventory)
    doc = load_results(tmp_path / "out")
    rec = only_test(doc, "t")
    assert rec["throughput_bps"] and rec["throughput_bps"] > 0, (res.stderr, rec)
    sent = commands(tmp_path / "out")
    assert not [c for c in sent if FINAL_SWEEP in c], sent  # the hosts swept themselves
    # per host: the probe (which started the containers), then the client's armed command
    # and the server's wait, each sweeping its host
    for host in ("alpha", "bravo"):
        assert len([c for c in sent if c.startswith(f"{host}: ")]) == 2, sent
    if mode == "freeflow":  # every proof is still there
        details = rec["details"]
        assert details["library_loaded"] == {"server": True, "client": True}
        for end in ("server", "client"):
            path = details["path_bytes"][end]
            assert all(path[d]["rx_bytes"] is not None for d in path), path
        assert {r["reused"] for r in details["routers"].values()} == {False}
        for host in ("alpha", "bravo"):  # the run's routers went with the sweep
            assert containers_named(docker_lab, host, ROUTER) == []


def test_repeats_sweep_only_after_the_last(docker_lab: LabHandle, tmp_path: Path) -> None:
    """Two repeats of a flannel test: the first hands the containers to the second."""
    scenario = write_scenario(tmp_path, [entry("t", mode="flannel", duration=1, repeat=2)])
    res = netrun(tmp_path, scenario, docker_lab.inventory)
    assert res.returncode == 0, res.stderr
    doc = load_results(tmp_path / "out")
    assert [t["status"] for t in doc["tests"]] == ["ok", "ok"], doc["tests"]
    for t in doc["tests"]:
        assert t["details"]["crossed_overlay"] is True, t["details"]
    assert not [c for c in commands(tmp_path / "out") if FINAL_SWEEP in c]


def test_a_failed_client_leaves_nothing_and_does_not_wait_out_its_bound(
    docker_lab: LabHandle, tmp_path: Path
) -> None:
    """The client container is killed while it measures: the test fails at once, the
    server's wait ends with the final sweep, and the run ends well before the test's
    deadline."""
    scenario = write_scenario(tmp_path, [entry("t", mode="docker", duration=20)])
    with netrun_process(
        [scenario, "-i", docker_lab.inventory, "-o", "out", "-q"], cwd=tmp_path
    ) as proc:
        assert wait_for(lambda: client_measuring(docker_lab) or proc.poll() is not None, 60)
        assert proc.poll() is None, proc.communicate()
        started = time.monotonic()
        for host in ("alpha", "bravo"):
            names = labelled(docker_lab, "netrun.role=client").get(host, [])
            if names:
                docker_lab.docker(host, "kill", *names)
        _, stderr = proc.communicate(timeout=60)
        took = time.monotonic() - started
    assert proc.returncode == 1, stderr
    assert "Traceback" not in stderr, stderr
    assert took < 10, took
    assert only_test(load_results(tmp_path / "out"), "t")["status"] == "failed"


def test_sigkill_while_measuring_then_cleanup(docker_lab: LabHandle, tmp_path: Path) -> None:
    """netrun killed while the client measures: the hosts' commands go on without it, and
    ``netrun cleanup`` afterwards finds whatever they did not remove (nothing left)."""
    scenario = write_scenario(tmp_path, [entry("t", mode="freeflow", duration=3)])
    with netrun_process(
        [scenario, "-i", docker_lab.inventory, "-o", "out", "-q"], cwd=tmp_path
    ) as proc:
        assert wait_for(lambda: client_measuring(docker_lab) or proc.poll() is not None, 60)
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
    run_id = load_results(tmp_path / "out")["run_id"]
    res = run_netrun(
        ["cleanup", "-i", docker_lab.inventory, "--run-id", run_id], cwd=tmp_path, timeout=120
    )
    assert res.returncode == 0, res.stderr
    # the hosts' own sweeps (after the test) or the cleanup's: either way, all gone
    assert wait_for(lambda: not labelled(docker_lab, f"netrun.run_id={run_id}"), 30)
    for host in ("alpha", "bravo"):
        assert containers_named(docker_lab, host, ROUTER) == []
