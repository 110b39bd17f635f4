"""The single bare-metal test in as few SSH round trips as it can (issue 14, point 6).

Counted from the run's debug log, one "run" or "start" line per command. The server
host answers the probe with its server started (Mode.probe_starts: iperf3's
Tool.server_ahead), and is swept by a command sent as the client starts, which waits for
the one-shot server to exit (netrun.tools.savers.sweep). The client host's client is
started before its probe and waits for the server's port
(netrun.tools.iperf3.run.ArmedClient); it sweeps its host after the client.
Seven round trips one after the other became two: the probe, then the client. Each
host keeps its run folder apart here, as real hosts do (their own /tmp); hosts that
keep theirs in one folder (a lab's namespaces in one /tmp) count the same. The server
host's counters around each measurement (issues 25 and 29, netrun.tools.iperf3.readings)
cost no command of their own: the reading before rides on the server's start, the
reading after on the next test's start there or on the host's sweep.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from tests.integration.conftest import LabHandle
from tests.integration.helpers import (
    assert_nothing_left,
    entry,
    load_results,
    run_netrun,
    write_inventory,
    write_scenario,
)

pytestmark = pytest.mark.integration

RUN_LINE = re.compile(r" netrun\.hosts\.transport DEBUG (\w+): (run|start) ")


def commands(outdir: Path) -> Counter[str]:
    """host: kind -> how many commands of that kind ("alpha run")."""
    text = (outdir / "netrun.log").read_text()
    return Counter(f"{m.group(1)} {m.group(2)}" for m in RUN_LINE.finditer(text))


def own_folders(tmp: Path, lab: LabHandle) -> Path:
    """The lab's inventory with a run folder place of its own per host."""
    host_vars = {}
    for name in lab.hosts:
        (tmp / "remote" / name).mkdir(parents=True)
        host_vars[name] = {"netrun_remote_tmp": str(tmp / "remote" / name)}
    return write_inventory(tmp, lab, host_vars=host_vars)


def test_one_bare_metal_test_costs_two_commands_per_host(lab: LabHandle, tmp_path: Path) -> None:
    scen = write_scenario(tmp_path, [entry("t", duration=1)], name="single")
    inv = own_folders(tmp_path, lab)
    proc = run_netrun([scen, "-i", inv, "-q", "-o", "out", "--no-history"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc = load_results(tmp_path / "out")
    assert [s["status"] for s in doc["tests"]] == ["ok"]
    # alpha: probe + server (+ its reading before); its sweep (+ its reading after).
    # bravo: the armed client (+ its readings and sweep); the probe.
    want = {"alpha run": 1, "alpha start": 1, "bravo run": 1, "bravo start": 1}
    assert commands(tmp_path / "out") == want
    ends = doc["tests"][0]["details"]["counters"]
    for role in ("client", "server"):
        assert "unavailable" not in ends[role] and ends[role]["cpu"]["elapsed_seconds"] > 0.9
    # the server host's context ran beside its server's start (netrun.run.fleet), in
    # the same probe: read whole, its file in the run folder removed (checked below)
    for name in ("alpha", "bravo"):
        context = doc["hosts"][name]["context"]
        assert context["kernel"] and "context" not in context["unavailable"], name
    assert_nothing_left(lab, tmp_path / "out")
    assert not list((tmp_path / "remote").glob("*/*")), "a run folder was left"


def test_later_tests_start_their_own_servers_and_stop_the_last_ones(
    lab: LabHandle, tmp_path: Path
) -> None:
    """Three tests on one pair: the first server rides on the probe; each later one is
    started in its own round trip, which first kills the previous one (deferred), while
    its client, already started, waits for the port."""
    tests = [entry(f"t{i}", duration=1) for i in range(3)]
    scen = write_scenario(tmp_path, tests, name="three")
    inv = own_folders(tmp_path, lab)
    proc = run_netrun([scen, "-i", inv, "-q", "-o", "out", "--no-history"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc = load_results(tmp_path / "out")
    assert [s["status"] for s in doc["tests"]] == ["ok"] * 3
    # alpha: the probe, two starts ahead (each reads after the test before), its sweep
    want = {"alpha run": 3, "alpha start": 1, "bravo run": 1, "bravo start": 3}
    assert commands(tmp_path / "out") == want
    for test in doc["tests"]:  # every server end read, in its test's window
        server = test["details"]["counters"]["server"]
        client = test["details"]["counters"]["client"]
        assert "unavailable" not in server, test["name"]
        assert server["cpu"]["elapsed_seconds"] < client["cpu"]["elapsed_seconds"] + 0.5
    assert_nothing_left(lab, tmp_path / "out")
    assert not list((tmp_path / "remote").glob("*/*")), "a run folder was left"


def test_hosts_sharing_one_folder_are_swept_early_too(lab: LabHandle, tmp_path: Path) -> None:
    """The lab's hosts keep their run folders in one folder (as namespaces of one
    machine in its /tmp, or NFS homes): each has a run folder of its own and a sweep acts
    only on its own host's, so each host still sweeps itself with its last measurement:
    the same two commands per host as with folders apart, and nothing left."""
    shared = tmp_path / "shared"
    shared.mkdir()
    inv = write_inventory(
        tmp_path, lab, host_vars={h: {"netrun_remote_tmp": str(shared)} for h in lab.hosts}
    )
    scen = write_scenario(tmp_path, [entry("t", duration=1)], name="shared")
    proc = run_netrun([scen, "-i", inv, "-q", "-o", "out", "--no-history"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    want = {"alpha run": 1, "alpha start": 1, "bravo run": 1, "bravo start": 1}
    assert commands(tmp_path / "out") == want
    assert_nothing_left(lab, tmp_path / "out")
    assert list(shared.iterdir()) == [], "a run folder was left"
