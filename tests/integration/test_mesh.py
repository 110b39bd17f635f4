"""A mesh across the lab (issue 14): generated pairs, rounds, the matrix, a dead node.

Eight hosts of the 12-host lab (`netrun lab up --hosts 12`, bare metal, 200 Mbit/s) run a
``mesh-once`` of 2-second tests with ``parallel: true``: 28 pairs in 7 rounds, and the
rounds' wall time within 30% of 7 x 2 s. (With 1-second tests, 30% allows 0.3 s a round:
bench/scale.py measures 0.08-0.14 s now that each round's servers start during the round
before, but the suite's other sessions can load the machine's two cores.) The wall time is
taken from the moments the progress lines arrive (results.json keeps whole seconds): from
the first test's set-up to the last test's result. Everything else is judged on
results.json and the printed matrix.
"""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from netrun.lab.system import cmdline
from tests.integration.conftest import LabHandle, lab_iperf3_pids
from tests.integration.helpers import (
    NETRUN,
    _env,
    check_fault,
    lab_settings,
    load_results,
    run_under_fault,
    stopped_run,
    write_yaml,
)

pytestmark = [pytest.mark.integration]

MESH = {
    "name": "mesh8",
    "parallel": True,
    "defaults": {"duration": 2},
    "tests": [{"name": "m", "mode": "baremetal", "hosts": "all[0:7]", "pairs": "mesh-once"}],
}


def test_mesh_once_of_8_runs_28_pairs_in_7_rounds(big_lab: LabHandle, tmp_path: Path) -> None:
    scen = write_yaml(tmp_path / "mesh.yaml", MESH)
    args = [*NETRUN, str(scen), "-i", str(big_lab.inventory), "-o", "out", "--no-history"]
    listed = subprocess.run(
        [*args, "--list-tests"], cwd=tmp_path, env=_env(), capture_output=True, text=True
    )
    assert listed.returncode == 0, listed.stderr
    assert "28 tests in 7 rounds" in listed.stdout
    plan = [line.split(": ", 1)[1] for line in listed.stdout.splitlines() if "  round " in line]
    assert len(plan) == 7

    proc = subprocess.Popen(
        args, cwd=tmp_path, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    first = last = None
    assert proc.stderr is not None
    for line in proc.stderr:
        now = time.monotonic()
        if "setting up" in line and first is None:
            first = now
        if "Mbit/s" in line or "FAILED" in line:
            last = now
    out = proc.stdout.read() if proc.stdout else ""
    assert proc.wait(timeout=120) == 0, out
    assert first is not None and last is not None
    wall = last - first
    doc = load_results(tmp_path / "out")
    names = [s["name"] for s in doc["tests"]]
    assert len(names) == 28 and all(s["status"] == "ok" for s in doc["tests"])
    eight = list(big_lab.hosts)[:8]
    assert names == [f"m[{a}->{b}]" for i, a in enumerate(eight) for b in eight[i + 1 :]]
    assert "matrix m (mesh-once): throughput_bps in Mbit/s, client rows, server columns" in out
    assert wall <= 1.3 * 7 * 2, f"7 rounds of 2 s took {wall:.2f} s"
    print(f"mesh-once of 8: 7 rounds of 2 s in {wall:.2f} s")


def test_an_unreachable_node_fails_only_its_own_pairs(big_lab: LabHandle, tmp_path: Path) -> None:
    inventory = yaml.safe_load(Path(big_lab.inventory).read_text())
    inventory["all"]["hosts"]["delta"]["ansible_port"] = 1  # nothing listens: refused
    inv = write_yaml(tmp_path / "inv.yaml", inventory)
    scen = dict(MESH, name="dead-node")
    scen["tests"] = [dict(MESH["tests"][0], hosts="all[0:3]")]
    path = write_yaml(tmp_path / "mesh.yaml", scen)
    before = lab_settings(big_lab)
    run = run_under_fault(
        [path, "-i", inv, "-o", "out", "--no-history", "-q"], cwd=tmp_path, outdir=tmp_path / "out"
    )
    dead = ["m[alpha->delta]", "m[bravo->delta]", "m[charlie->delta]"]
    alive = ["m[alpha->bravo]", "m[alpha->charlie]", "m[bravo->charlie]"]
    doc = check_fault(
        big_lab,
        run,
        fault="mesh-once of 4 with delta unreachable",
        before=before,
        max_seconds=40,
        statuses={**dict.fromkeys(dead, "failed"), **dict.fromkeys(alive, "ok")},
        host="delta",
        exit_code=1,
    )
    assert [s["name"] for s in doc["tests"]] == [*alive[:2], dead[0], alive[2], *dead[1:]]
    out = run.proc.stdout
    # -q: the summary line names each failed pair
    assert out.startswith("dead-node: 3 ok, 3 failed ("), out
    assert all(f"{name} failed on" in out.splitlines()[0] for name in dead), out
    row = next(line for line in out.splitlines() if line.startswith("alpha "))
    assert row.split()[-1] == "FAIL"


@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGKILL, -9)])
def test_stopped_while_the_next_rounds_servers_wait(
    big_lab: LabHandle, tmp_path: Path, sig: signal.Signals, code: int
) -> None:
    """Round 2's servers are started during round 1 (netrun.tools.savers.pipeline): stopped then,
    the run (or, after SIGKILL, `netrun cleanup`) must remove them and their armed clients."""
    scen = dict(MESH, name="stopped-ahead", defaults={"duration": 4})
    scen["tests"] = [dict(MESH["tests"][0], hosts="all[0:3]")]
    path = write_yaml(tmp_path / "mesh.yaml", scen)
    before = lab_settings(big_lab)
    out = tmp_path / "out"
    args = [path, "-i", big_lab.inventory, "-o", "out", "--no-history", "-q"]
    # Round 1 runs two servers; a third and fourth are round 2's, started ahead.
    run = stopped_run(
        big_lab,
        args,
        cwd=tmp_path,
        outdir=out,
        ready=lambda: len(servers(big_lab)) >= 3,
        sig=sig,
        what="no server was started ahead of its round",
    )
    if run is None:  # SIGKILL, then netrun cleanup
        return
    doc = check_fault(
        big_lab,
        run,
        fault="SIGINT with round 2's servers started ahead",
        before=before,
        max_seconds=15,
        statuses={},
        host=None,
        exit_code=code,
    )
    assert doc["status"] == "interrupted"


def servers(lab: LabHandle) -> list[int]:
    """iperf3 servers running in the lab's namespaces."""
    return [pid for pid in lab_iperf3_pids(lab) if "-s" in cmdline(pid)]
