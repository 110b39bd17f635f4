"""The live line's per-second figure during a real test, under a real terminal (a pty).

Three 4-second tests on the lab: iperf3 forward (the server, alpha, receives), iperf3
reverse (the client, bravo, receives) and iperf2 forward. While each runs, the live line
must show the receiving host's NIC rate more than once, before the test's result line;
the counter loop must be gone from the hosts soon after; results.json must not know it.
"""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from netrun.lab.system import netns_inode, pid_netns_inode
from tests.integration.conftest import LabHandle
from tests.integration.helpers import (
    entry,
    load_results,
    run_netrun,
    run_netrun_on_terminal,
    write_scenario,
)

pytestmark = pytest.mark.integration

FIGURE = re.compile(r"\| (\S+) repeat 1/1 \d+:\d\d/0:04 NIC (\w+):(\S+) rx ([\d.]+) Mbit/s")


def loops_left(lab: LabHandle) -> list[str]:
    """netrun.run.sampler's counter loops still running in this lab's hosts (another test
    session's lab may run its own at the same time)."""
    inodes = {netns_inode(ns) for ns in lab.namespaces} - {None}
    out = subprocess.run(["pgrep", "-af", "proc/uptime"], capture_output=True, text=True)
    return [
        line
        for line in out.stdout.splitlines()
        if "rx_bytes" in line and pid_netns_inode(int(line.split()[0])) in inodes
    ]


def loops_end(lab: LabHandle, within: float = 5) -> list[str]:
    """The loops still there after ``within`` s: a closed channel ends one at its next line,
    so a run that just ended (an earlier test's) may leave one for up to a second."""
    deadline = time.monotonic() + within
    while loops_left(lab) and time.monotonic() < deadline:
        time.sleep(0.1)
    return loops_left(lab)


def test_a_terminal_sees_per_second_nic_figures_while_each_test_runs(
    lab: LabHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert not loops_end(lab)
    scen = write_scenario(
        tmp_path,
        [
            entry("fwd"),
            entry("rev", reverse=True),
            entry("udp2", tool="iperf2", bitrate="10000pps", length=1000),
        ],
        defaults={"duration": 4},
        name="live",
    )
    code, text = run_netrun_on_terminal(
        [scen, "-i", lab.inventory, "-o", tmp_path / "out"], cwd=tmp_path, timeout=120, columns=200
    )
    assert code == 0, text
    # Every redraw or message, in the order the terminal got them.
    shown = [part for part in re.split(r"\r\x1b\[K|\n", text) if part]
    figures: dict[str, list[tuple[int, str, float]]] = {}
    results: dict[str, int] = {}
    for at, part in enumerate(shown):
        if found := FIGURE.search(part):
            name, host, _iface, mbps = found.groups()
            figures.setdefault(name, []).append((at, host, float(mbps)))
        if found := re.match(r"(\S+) \(baremetal, .*\): throughput_bps ", part):
            results[found.group(1)] = at
    receivers = {"fwd": "alpha", "rev": "bravo", "udp2": "alpha"}
    for name, host in receivers.items():
        got = figures.get(name, [])
        assert len(got) >= 2, f"{name}: per-second figures while it ran\n{text}"
        assert {h for _, h, _ in got} == {host}, got
        assert all(at < results[name] for at, _, _ in got), "shown during the test, not after"
        assert max(mbps for _, _, mbps in got) > 10, got  # data was flowing
    doc = load_results(tmp_path / "out")
    assert "NIC" not in (tmp_path / "out" / "results.json").read_text()
    assert all(t["status"] == "ok" for t in doc["tests"])
    assert not loops_end(lab)


def test_a_killed_run_leaves_no_counter_loop(
    lab: LabHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))  # the journal cleanup reads
    scen = write_scenario(tmp_path, [entry("long")], defaults={"duration": 20}, name="killed")
    assert not loops_end(lab)
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "netrun", scen, "-i", lab.inventory, "-o", tmp_path / "out"],
        cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=slave,
    )  # fmt: skip
    os.close(slave)
    seen, deadline = b"", time.monotonic() + 30
    try:
        while b" NIC alpha:" not in seen and time.monotonic() < deadline:
            seen += os.read(master, 4096)
        assert loops_left(lab), seen.decode(errors="replace")
    finally:
        proc.kill()  # SIGKILL: no teardown of netrun's own runs
        proc.wait(timeout=10)
        os.close(master)
    assert not loops_end(lab)  # the host's sshd closes the channel; the loop ends
    swept = run_netrun(["cleanup", "-i", lab.inventory], cwd=tmp_path)  # the iperf3 pair
    assert swept.returncode == 0, swept.stderr


def test_off_a_terminal_and_with_q_nothing_is_sampled(lab: LabHandle, tmp_path: Path) -> None:
    scen = write_scenario(tmp_path, [entry("fwd")], defaults={"duration": 3}, name="quiet")
    assert not loops_end(lab)
    for extra in ([], ["-q"]):
        proc = subprocess.Popen(
            [sys.executable, "-m", "netrun", scen, "-i", lab.inventory, "-o",
             tmp_path / f"out{len(extra)}", *extra],
            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "XDG_DATA_HOME": str(tmp_path / "xdg")},
        )  # fmt: skip
        seen_loop = False
        while proc.poll() is None:
            seen_loop = seen_loop or bool(loops_left(lab))
            time.sleep(0.2)
        _out, err = proc.communicate()
        assert proc.returncode == 0, err
        assert not seen_loop and "NIC " not in err
