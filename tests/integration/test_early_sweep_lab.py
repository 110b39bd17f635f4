"""The merged round trips leave nothing behind on failure paths (issue 14, point 6).

A bare-metal client now starts before its server and waits on its stdin for the port
(netrun.tools.iperf3.run.ArmedClient), and each host's last measurement sweeps the host
(netrun.tools.savers.sweep). These tests give each lab host a folder of its own (as real hosts
each have their own /tmp) and break the test in the ways that matter: the client
killed, a server that never listens, netrun SIGKILLed while a client still waits for
its port. Every time: no iperf3, no waiting client shell, no run folder.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from netrun.lab.system import cmdline, netns_inode, pid_netns_inode
from tests.integration.conftest import LabHandle, lab_iperf3_pids
from tests.integration.helpers import (
    entry,
    load_results,
    netrun_process,
    run_netrun,
    wait_for,
    write_inventory,
    write_scenario,
)

pytestmark = pytest.mark.integration


def own_folders(tmp: Path, lab: LabHandle, **extra: dict[str, str]) -> tuple[Path, Path]:
    """An inventory whose hosts keep their run folders apart (netrun_remote_tmp each)."""
    root = tmp / "remote"
    host_vars = {}
    for name in lab.hosts:
        (root / name).mkdir(parents=True)
        host_vars[name] = {"netrun_remote_tmp": str(root / name), **extra.get(name, {})}
    return write_inventory(tmp, lab, host_vars=host_vars), root


def waiting_clients(lab: LabHandle) -> list[int]:
    """Client shells (armed or running) inside the lab's namespaces."""
    inodes = {netns_inode(ns) for ns in lab.namespaces} - {None}
    found = []
    for entry_ in Path("/proc").iterdir():
        if entry_.name.isdigit():
            pid = int(entry_.name)
            argv = cmdline(pid) or []
            if "netrun-client" in argv and pid_netns_inode(pid) in inodes:
                found.append(pid)
    return found


def assert_clean(lab: LabHandle, root: Path) -> None:
    """Nothing of any run left: processes (polled: a killed peer takes a moment) and
    folders."""
    assert wait_for(lambda: not lab_iperf3_pids(lab), 10), lab_iperf3_pids(lab)
    assert wait_for(lambda: not waiting_clients(lab), 10), waiting_clients(lab)
    left = sorted(p for p in root.glob("*/*"))
    assert left == [], f"left in the hosts' folders: {left}"


def client_pidfile(root: Path) -> Path | None:
    return next(iter((root / "bravo").glob("netrun-*/*.client.pid")), None)


def test_single_test_sweeps_both_hosts_with_its_measurement(lab: LabHandle, tmp_path: Path) -> None:
    """Nothing runs on either host after the client: the server host's sweep went out as
    the client started, the client host's followed the client in its own command."""
    inv, root = own_folders(tmp_path, lab)
    scen = write_scenario(tmp_path, [entry("t")], name="single")
    proc = run_netrun([scen, "-i", inv, "-q", "-o", "out", "--no-history"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert [s["status"] for s in load_results(tmp_path / "out")["tests"]] == ["ok"]
    log = (tmp_path / "out" / "netrun.log").read_text()
    assert "for d in " not in log, "a final sweep ran although both hosts swept themselves"
    assert_clean(lab, root)


def test_killed_client(lab: LabHandle, tmp_path: Path) -> None:
    inv, root = own_folders(tmp_path, lab)
    scen = write_scenario(tmp_path, [entry("killed", duration=30)], name="killedclient")
    args = [scen, "-i", inv, "-q", "-o", "out", "--no-history"]
    with netrun_process(args, cwd=tmp_path) as proc:
        pidfile = wait_for(lambda: client_pidfile(root), 30)
        assert pidfile is not None, "the client never started"
        pid = int(wait_for(lambda: pidfile.read_text().strip(), 5).split()[0])  # pid start boot
        os.kill(pid, signal.SIGKILL)
        proc.communicate(timeout=60)
    assert proc.returncode == 1
    sample = load_results(tmp_path / "out")["tests"][0]
    assert sample["status"] == "failed", sample
    assert_clean(lab, root)


def fake_iperf3(tmp: Path) -> Path:
    """An iperf3 that answers --version but, as a server, never listens."""
    path = tmp / "deaf-iperf3"
    path.write_text('#!/bin/sh\n[ "$1" = --version ] && exec iperf3 --version\nexec sleep 60\n')
    path.chmod(0o755)
    return path


def test_server_that_never_listens(lab: LabHandle, tmp_path: Path) -> None:
    """The armed client waits on bravo while alpha's server fails to start (twice: on
    the probe, then again): it is abandoned and runs nothing."""
    deaf = {"alpha": {"netrun_iperf3": str(fake_iperf3(tmp_path))}}
    inv, root = own_folders(tmp_path, lab, **deaf)
    scen = write_scenario(tmp_path, [entry("deaf")], name="deafserver")
    proc = run_netrun([scen, "-i", inv, "-q", "-o", "out", "--no-history"], cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    sample = load_results(tmp_path / "out")["tests"][0]
    assert sample["status"] == "failed" and "not listening" in sample["error"], sample
    assert_clean(lab, root)


def test_sigkill_while_the_client_waits_for_its_port(lab: LabHandle, tmp_path: Path) -> None:
    """netrun SIGKILLed while its armed client waits: the connection closes, the client
    shell's stdin ends and it exits without running iperf3; the next run's sweep (from
    the journal) removes the rest."""
    deaf = {"alpha": {"netrun_iperf3": str(fake_iperf3(tmp_path))}}
    inv, root = own_folders(tmp_path, lab, **deaf)
    scen = write_scenario(tmp_path, [entry("waits")], name="sigkillarmed")
    args = [scen, "-i", inv, "-q", "-o", "out", "--no-history"]

    def armed_and_starting() -> bool:  # the client waits while the deaf server "starts"
        return bool(waiting_clients(lab)) and any((root / "alpha").glob("netrun-*/*.log"))

    with netrun_process(args, cwd=tmp_path) as proc:
        assert wait_for(armed_and_starting, 30), "the client was never armed"
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=15)
    assert wait_for(lambda: not waiting_clients(lab), 10), "the armed client outlived netrun"
    assert not any(
        Path(argv[0]).name == "iperf3" and "-c" in argv
        for argv in (cmdline(pid) or [] for pid in lab_iperf3_pids(lab))
    ), "a client ran after netrun died"
    # The next run on these hosts sweeps what the killed one left (the deaf server).
    good = tmp_path / "good"
    good.mkdir()
    inv2 = write_inventory(
        good,
        lab,
        host_vars={h: {"netrun_remote_tmp": str(root / h)} for h in lab.hosts},
    )
    scen2 = write_scenario(good, [entry("after")], name="after")
    again = run_netrun([scen2, "-i", inv2, "-q", "-o", "out", "--no-history"], cwd=good)
    assert again.returncode == 0, again.stderr
    assert load_results(good / "out").get("swept"), "the killed run's leftovers were not swept"
    assert_clean(lab, root)
