"""Two checkouts, one machine: `netrun lab up|down|status|inventory` from several working
directories, each with its own inventories/local.yaml, as two engineers' clones would be.

The rule under test: `up` from a second checkout reuses the running lab and writes its
inventory there too, or says what differs and how to run a second lab beside it; `down`
from one checkout only lets go of its own inventory while another checkout uses the lab;
no `down` removes an inventory file that does not hold exactly what the lab wrote.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from netrun.lab import core as netrun_lab_core
from netrun.lab import plan as netrun_lab_plan
from netrun.lab import sharing
from netrun.lab import status as netrun_lab_status
from netrun.lab.system import netns_exists
from tests.integration.conftest import OWNER, SLOT, LabHandle, lab_skip_reason, sweep_stale_labs
from tests.integration.helpers import run_netrun

PREFIX = f"nrts{SLOT or ''}"
NET = 50 + 2 * SLOT
#: A second lab beside the first, as the refusal tells a user to start one.
PREFIX2 = f"nrtz{SLOT or ''}"
NET2 = 51 + 2 * SLOT
LOCAL = Path("inventories/local.yaml")

pytestmark = pytest.mark.integration


class Machine:
    """Three checkouts (a, b, c: working directories) and one lab's flags."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.state = tmp / "state"
        for name in "abc":
            (tmp / name).mkdir()
        self.flags = ["--hosts", "2", "--prefix", PREFIX, "--net-index", str(NET)]
        self.flags += ["--state-dir", str(self.state)]

    def inv(self, checkout: str) -> Path:
        return self.tmp / checkout / LOCAL

    def netrun(self, checkout: str, *args: str | Path) -> subprocess.CompletedProcess[str]:
        res = run_netrun(list(args), cwd=self.tmp / checkout, timeout=120)
        assert "Traceback" not in res.stderr, res.stderr
        return res

    def up(self, checkout: str, *extra: str) -> subprocess.CompletedProcess[str]:
        return self.netrun(checkout, "lab", "up", *self.flags, *extra)

    def lab(self, checkout: str, action: str, *extra: str) -> subprocess.CompletedProcess[str]:
        return self.netrun(checkout, "lab", action, "--state-dir", self.state, *extra)

    def sshd_pids(self) -> list[int | None]:
        return [h.sshd_pid for h in netrun_lab_status.status(self.state).hosts]


@pytest.fixture
def machine(tmp_path: Path) -> Iterator[Machine]:
    reason = lab_skip_reason()
    if reason:
        pytest.skip(reason)
    for prefix in (PREFIX, PREFIX2):
        sweep_stale_labs(prefix)
    (tmp_path / OWNER).write_text(f"{os.getpid()}\n")  # another session's sweep leaves it
    m = Machine(tmp_path)
    try:
        yield m
    finally:
        netrun_lab_core.down(m.state)
        netrun_lab_core.down(tmp_path / "state2")


def test_a_second_checkout_shares_the_lab_and_each_down_lets_go_of_its_own(
    machine: Machine,
) -> None:
    m = machine
    assert m.up("a").returncode == 0
    pids = m.sshd_pids()

    res = m.up("b")
    assert res.returncode == 0, res.stderr
    said = [line for line in res.stderr.splitlines() if line.startswith("reusing")]
    assert said == [sharing.reused(m.state, [m.inv("a")], m.inv("b"))]
    assert m.sshd_pids() == pids  # the same lab, not a new one
    assert m.inv("b").read_text() == m.inv("a").read_text()
    check = m.netrun("b", "check", "-i", LOCAL)  # b's inventory reaches the lab's hosts
    assert check.returncode == 0, check.stdout + check.stderr

    # status from anywhere: hosts, both addresses, rate, sshd, every inventory
    status = m.lab("c", "status")
    assert status.returncode == 0, status.stdout
    out = status.stdout
    assert f"2 host(s), prefix {PREFIX}, net {NET}, rate 1gbit, docker no" in out
    for name, host in (("alpha", 10), ("bravo", 11)):
        row = next(line.split() for line in out.splitlines() if line.startswith(name))
        assert row[:5] == [name, f"{PREFIX}-{name}", f"10.201.{NET}.{host}",
                           f"10.202.{NET}.{host}", "1gbit"]  # fmt: skip
        assert row[5:] == ["pid", str(netrun_lab_status.status(m.state).host(name).sshd_pid)]
    for checkout in "ab":
        assert f"inventory: {m.inv(checkout)} (written by lab up)" in out

    # the inventory of the running lab, on stdout or into a file
    printed = m.lab("c", "inventory")
    assert printed.returncode == 0 and printed.stdout == m.inv("a").read_text()
    export = m.tmp / "c" / "export.yaml"
    assert m.lab("c", "inventory", "-o", "export.yaml").returncode == 0
    assert export.read_text() == m.inv("a").read_text()
    assert f"inventory: {export} (written by lab inventory -o)" in m.lab("c", "status").stdout

    # c's own file, which no lab wrote; c's down is refused: the lab is not c's
    m.inv("c").parent.mkdir()
    m.inv("c").write_text("all:\n  hosts: {}\n")
    refused = m.lab("c", "down")
    assert refused.returncode != 0
    assert refused.stderr.strip().splitlines() == [
        "netrun: error: " + sharing.not_a_user(m.state, m.inv("c"), [m.inv("a"), m.inv("b")])
    ]
    assert m.inv("c").read_text() == "all:\n  hosts: {}\n"
    assert m.sshd_pids() == pids

    # b lets go: only b's inventory goes, the lab stays up for a
    res = m.lab("b", "down")
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == sharing.still_used(m.state, m.inv("b"), [m.inv("a")])
    assert not m.inv("b").exists() and m.inv("a").exists()
    assert netrun_lab_status.status(m.state).ok and m.sshd_pids() == pids

    # a edits its inventory; a's down (the last user) removes the lab, and every inventory
    # that still holds what the lab wrote, but not a's edited one nor c's own
    with m.inv("a").open("a") as f:
        f.write("# a note of mine\n")
    res = m.lab("a", "down")
    assert res.returncode == 0, res.stderr
    assert f"left inventory {m.inv('a')}: changed since the lab wrote it" in res.stderr
    assert not export.exists()
    assert m.inv("a").read_text().endswith("# a note of mine\n")
    assert m.inv("c").exists()
    assert not m.state.exists()
    assert not any(netns_exists(f"{PREFIX}-{n}") for n in ("alpha", "bravo", "switch"))


def test_down_all_removes_the_lab_for_everyone(machine: Machine) -> None:
    m = machine
    assert m.up("a").returncode == 0 and m.up("b").returncode == 0
    res = m.lab("b", "down", "--all")
    assert res.returncode == 0, res.stderr
    assert not m.inv("a").exists() and not m.inv("b").exists() and not m.state.exists()


def test_a_different_lab_names_each_difference_and_how_to_run_one_beside_it(
    machine: Machine,
) -> None:
    m = machine
    assert m.up("a").returncode == 0
    pids = m.sshd_pids()
    res = m.up("b", "--hosts", "3", "--rate", "400mbit")
    assert res.returncode != 0
    (line,) = res.stderr.strip().splitlines()
    assert line.startswith(
        f"netrun: error: a different lab is up in {m.state} (--hosts: running 2 vs asked 3; "
        f"--rate: running 1gbit vs asked 400mbit), used by {m.inv('a')}: to share it"
    ), line
    assert "to run a second lab beside it: netrun lab up --rate 400mbit --prefix " in line
    assert "lab down" not in line.replace("to lab status and lab down too", "")
    assert not m.inv("b").exists() and m.sshd_pids() == pids

    # the suggested values are free on this machine: no namespace, bridge or address
    suggested = sharing.beside(netrun_lab_plan.LabConfig(hosts=3))
    assert f"--prefix {suggested.prefix} --net-index {suggested.net_index}" in line
    assert not netns_exists(f"{suggested.prefix}-alpha")
    assert suggested.net_index not in sharing.nets_in_use()

    # a's own lab (a its only user): there, and only there, lab down is offered
    own = m.up("a", "--hosts", "3")
    assert own.stderr.strip().endswith("or, as only this inventory uses it, netrun lab down first")

    # and a second lab beside it, with its own --prefix, --net-index and --state-dir
    state2 = m.tmp / "state2"
    second = m.netrun(
        "b", "lab", "up", "--hosts", "2", "--rate", "400mbit", "--prefix", PREFIX2,
        "--net-index", str(NET2), "--state-dir", state2,
    )  # fmt: skip
    assert second.returncode == 0, second.stderr
    assert netrun_lab_status.status(state2).ok and netrun_lab_status.status(m.state).ok
    inv_b = yaml.safe_load(m.inv("b").read_text())["all"]
    assert inv_b["hosts"]["alpha"]["ansible_host"] == f"10.201.{NET2}.10"
    assert m.lab("b", "down").returncode != 0  # not b's: a's lab is left alone
    assert m.sshd_pids() == pids
    assert m.netrun("b", "lab", "down", "--state-dir", state2).returncode == 0
    assert not state2.exists() and netrun_lab_status.status(m.state).ok


def test_a_lab_with_the_same_names_elsewhere_is_named_not_torn_down(machine: Machine) -> None:
    """Same --prefix, another --state-dir: the refusal names the lab that owns the names."""
    m = machine
    assert m.up("a").returncode == 0
    other = m.tmp / "state2"
    res = m.netrun("b", "lab", "up", *m.flags[:-1], str(other))
    assert res.returncode != 0
    (line,) = res.stderr.strip().splitlines()
    assert f"{PREFIX}-alpha, {PREFIX}-bravo, {PREFIX}-switch, {PREFIX}mgmt already in use" in line
    assert f"the lab in {m.state} uses them" in line
    assert "to run a second lab beside it: netrun lab up --hosts 2 --prefix " in line
    assert "lab down" not in line and not other.exists()
    assert netrun_lab_status.status(m.state).ok


@pytest.mark.docker
def test_status_shows_each_hosts_docker_daemon(docker_lab: LabHandle, tmp_path: Path) -> None:
    res = run_netrun(["lab", "status", "--state-dir", docker_lab.state_dir], cwd=tmp_path)
    assert res.returncode == 0, res.stdout
    assert "docker yes" in res.stdout.splitlines()[0]
    header = next(line.split() for line in res.stdout.splitlines() if line.startswith("host"))
    assert header == ["host", "namespace", "management", "data", "rate", "sshd", "docker"]
    for name in docker_lab.hosts:
        row = next(line.split() for line in res.stdout.splitlines() if line.startswith(name))
        assert row[-2:] == ["pid", str(docker_lab.host(name).docker_pid)], row
    assert f"inventory: {docker_lab.inventory} (written by lab up)" in res.stdout
    printed = run_netrun(["lab", "inventory", "--state-dir", docker_lab.state_dir], cwd=tmp_path)
    assert printed.stdout == docker_lab.inventory.read_text()


def test_up_again_after_its_inventory_was_deleted_writes_it_back_quietly(
    machine: Machine,
) -> None:
    m = machine
    assert m.up("a").returncode == 0
    m.inv("a").unlink()
    res = m.up("a")
    assert res.returncode == 0, res.stderr
    assert "reusing" not in res.stderr and m.inv("a").exists()
    assert [str(f.path) for f in netrun_lab_status.status(m.state).inventories] == [str(m.inv("a"))]
