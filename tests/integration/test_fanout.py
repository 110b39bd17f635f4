"""Fan-out that holds (issue 14): a node that cannot be reached fails only its own pairs.

The 3-host lab plus two nodes that are not there: ``ghost`` at an address of the lab's own
management network that nothing answers (the connect times out), and ``closed`` at a port
of alpha where nothing listens (the connect is refused at once). A mesh of every pair of
the five, in parallel and with ``-f 2`` (fewer forks than hosts), must finish every pair
of the three real hosts, fail each pair of the two missing ones naming the missing host,
keep every result, and leave nothing behind.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from tests.integration.conftest import LabHandle
from tests.integration.helpers import (
    check_fault,
    entry,
    lab_settings,
    run_under_fault,
    write_inventory,
    write_scenario,
)

pytestmark = [pytest.mark.integration, pytest.mark.faults]


def test_unreachable_nodes_fail_only_their_pairs(lab: LabHandle, tmp_path: Path) -> None:
    alpha = lab.details["alpha"].mgmt_ip
    silent = alpha.rsplit(".", 1)[0] + ".250"  # in the lab's own mgmt /24, no host there
    inv = write_inventory(
        tmp_path,
        lab,
        host_vars={
            "ghost": {"ansible_host": silent, "netrun_data_ip": silent},
            "closed": {"ansible_host": alpha, "ansible_port": 1, "netrun_data_ip": silent},
        },
    )
    nodes = ["alpha", "bravo", "charlie", "ghost", "closed"]
    tests = [
        entry(f"{c}-{s}", server=s, client=c, duration=1)
        for c, s in itertools.combinations(nodes, 2)
    ]
    scen = write_scenario(tmp_path, tests, name="fanout")
    scen.write_text(scen.read_text() + "parallel: true\n")
    before = lab_settings(lab)
    run = run_under_fault(
        [scen, "-i", inv, "-q", "-o", "out", "--no-history", "-f", "2", "--connect-timeout", "3"],
        cwd=tmp_path,
        outdir=tmp_path / "out",
    )
    missing = {"ghost", "closed"}
    statuses = {
        t["name"]: "failed" if {t["server"], t["client"]} & missing else "ok" for t in tests
    }
    assert list(statuses.values()).count("ok") == 3
    # Connects (3 s timeout, two at a time) and three 1 s rounds: well under 30 s.
    doc = check_fault(
        lab,
        run,
        fault="two of five mesh nodes unreachable, -f 2",
        before=before,
        max_seconds=30,
        statuses=statuses,
        host="ghost",
        exit_code=1,
    )
    for sample in doc["tests"]:
        hosts = {sample["server"], sample["client"]}
        if hosts & missing:
            assert any(h in sample["error"] for h in hosts & missing), sample["error"]
    assert any("closed" in e for e in doc["errors"]), doc["errors"]
    assert set(doc["hosts"]) == {"alpha", "bravo", "charlie"}  # probed: only the real ones
