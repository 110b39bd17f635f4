"""Roles beyond server and client, and undo records that outlive a SIGKILL.

A test-only mode (trio_mode.py) has a third role, ``relay``, whose data NIC runs at a lower
MTU during the test: a host change that is not a container. Its undo is recorded on the
host and in the journal before the change; teardown, the next run's sweep and `netrun
cleanup` each carry it out.

Each lab host gets a remote tmp of its own here (on a real lab every host has its own
/tmp; the lab's hosts share this machine's), so a host's records run on that host only.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.integration.conftest import LabHandle
from tests.integration.helpers import (
    check_fault,
    entry,
    lab_settings,
    load_results,
    netrun_process,
    run_netrun,
    run_under_fault,
    wait_for,
    write_inventory,
    write_scenario,
)
from tests.integration.trio_mode import TRIO_MTU

pytestmark = [pytest.mark.integration]
HERE = ROOT / "tests" / "integration"


@pytest.fixture(autouse=True)
def trio_mode(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The CLI (a subprocess) finds the test-only mode, and a journal of its own."""
    monkeypatch.setenv("NETRUN_EXTRA_MODES", "trio=trio_mode")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))


def own_tmp_inventory(lab: LabHandle, tmp_path: Path) -> Path:
    """The lab's inventory with a remote tmp per host."""
    host_vars = {h: {"netrun_remote_tmp": str(tmp_path / "remote" / h)} for h in lab.hosts}
    for h in lab.hosts:
        (tmp_path / "remote" / h).mkdir(parents=True)
    return write_inventory(tmp_path, lab, host_vars=host_vars, file="own-tmp.yaml")


def folders(tmp_path: Path, run_id: str) -> list[Path]:
    """The run's folders on every host."""
    return sorted((tmp_path / "remote").glob(f"*/netrun-{run_id}-*"))


def trio(name: str, relay: str = "charlie", **opts: object) -> dict[str, object]:
    return {**entry(name, mode="trio", **opts), "relay": relay}


def data_mtu(lab: LabHandle, host: str) -> int:
    from netrun.lab.system import ip_json

    ns = lab.host(host).namespace
    for link in ip_json("addr", "show", netns=ns):
        if any(a.get("local") == lab.host(host).data_ip for a in link.get("addr_info", [])):
            return int(link["mtu"])
    raise AssertionError(f"no data NIC on {host}")


def test_a_third_role_is_connected_probed_reported_and_its_change_undone(
    lab: LabHandle, tmp_path: Path
) -> None:
    before = lab_settings(lab)
    inventory = own_tmp_inventory(lab, tmp_path)
    scenario = write_scenario(tmp_path, [trio("t3")], name="roles")
    run = run_netrun([scenario, "-i", inventory, "-o", "out", "--no-history"], cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    doc = load_results(tmp_path / "out")
    test = doc["tests"][0]
    assert test["status"] == "ok", test
    assert test["hosts"] == {"server": "alpha", "client": "bravo", "relay": "charlie"}
    assert (test["server"], test["client"]) == ("alpha", "bravo")
    assert test["details"]["relay_mtu"] == TRIO_MTU
    assert "charlie" in doc["hosts"], "the relay was not probed"
    assert "relay charlie" in run.stderr
    assert "bravo→alpha relay charlie" in run.stdout, run.stdout  # the table
    assert lab_settings(lab) == before, "the relay's MTU was not restored"
    assert folders(tmp_path, doc["run_id"]) == []
    assert list((tmp_path / "xdg" / "netrun" / "runs").glob("*.json")) == []


def test_a_missing_role_and_a_foreign_role_are_scenario_errors(
    lab: LabHandle, tmp_path: Path
) -> None:
    bad = write_scenario(
        tmp_path, [entry("no-relay", mode="trio"), {**entry("bm"), "relay": "charlie"}]
    )
    run = run_netrun([bad, "-i", lab.inventory, "-o", "out", "--no-history"], cwd=tmp_path)
    assert run.returncode != 0
    assert "'no-relay': missing key 'relay'" in run.stderr, run.stderr
    assert "unknown role 'relay' for mode 'baremetal'" in run.stderr, run.stderr
    assert "Traceback" not in run.stderr


def kill_during_trio(lab: LabHandle, tmp_path: Path) -> tuple[str, Path]:
    """Start a long trio test, SIGKILL netrun once the relay's MTU changed; the run id,
    and the inventory (each host with a remote tmp of its own)."""
    inventory = own_tmp_inventory(lab, tmp_path)
    long = write_scenario(tmp_path, [trio("long", duration=30)], name="killed", file="long.yaml")
    first = tmp_path / "first"
    with netrun_process([long, "-i", inventory, "-o", first, "--no-history"], cwd=tmp_path) as p:
        # SIGKILL mid-measurement: the relay's MTU is changed and iperf3 runs at both ends
        # (a start still under way when netrun dies would finish after any cleanup)
        client = tmp_path / "remote" / "bravo"
        assert wait_for(
            lambda: data_mtu(lab, "charlie") == TRIO_MTU and any(client.glob("*/*.client.pid")),
            timeout=30,
        ), p.poll()
        wait_for(lambda: False, 0.5)  # the client is under way
        os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=10)
    killed = load_results(first)["run_id"]
    entry_ = json.loads((tmp_path / "xdg" / "netrun" / "runs" / f"{killed}.json").read_text())
    undo = [u for h in entry_["hosts"].values() for u in h.get("undo", {}).values()]
    assert any("MTU" in what for what in undo), entry_
    assert data_mtu(lab, "charlie") == TRIO_MTU
    (relay_folder,) = (tmp_path / "remote" / "charlie").glob(f"netrun-{killed}-*")
    assert len(list((relay_folder / "undo").glob("*.sh"))) == 1
    return str(killed), inventory


@pytest.mark.faults
def test_the_next_run_carries_out_a_sigkilled_runs_undo_records(
    lab: LabHandle, tmp_path: Path
) -> None:
    before = lab_settings(lab)
    killed, inventory = kill_during_trio(lab, tmp_path)
    short = write_scenario(tmp_path, [trio("short")], name="next")
    run = run_under_fault(
        [short, "-i", inventory, "-o", "second", "--no-history"],
        cwd=tmp_path,
        outdir=tmp_path / "second",
    )
    doc = check_fault(
        lab,
        run,
        fault="SIGKILLed run with a changed MTU, undone by the next run",
        before=before,
        max_seconds=30,
        statuses={"short": "ok"},
        host=None,
        exit_code=0,
    )
    swept = doc.get("swept", [])
    assert any(s.startswith(f"charlie: run {killed}: undone: MTU") for s in swept), doc
    assert doc["hosts"]["charlie"]["nic"]["mtu"] == 1500  # probed again after the undo
    assert folders(tmp_path, killed) == []


@pytest.mark.faults
def test_netrun_cleanup_carries_out_a_sigkilled_runs_undo_records(
    lab: LabHandle, tmp_path: Path
) -> None:
    before = lab_settings(lab)
    killed, inventory = kill_during_trio(lab, tmp_path)
    # charlie unreachable (a wrong port): cleanup names the change still to undo there
    down = write_inventory(tmp_path, lab, host_vars={"charlie": {"ansible_port": 1}}, file="d.yaml")
    run = run_netrun(["cleanup", "-i", down, "-l", "charlie"], cwd=tmp_path)
    assert run.returncode == 1
    assert "still to undo there: MTU of data0 back to 1500" in run.stderr, run.stderr
    assert data_mtu(lab, "charlie") == TRIO_MTU
    run = run_netrun(["cleanup", "-i", inventory, "-l", "charlie"], cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "charlie: undone: MTU" in run.stdout, run.stdout
    assert lab_settings(lab) == before
    assert "charlie" not in [f.parent.name for f in folders(tmp_path, killed)]
    run = run_netrun(["cleanup", "-i", inventory, "--run-id", killed], cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert folders(tmp_path, killed) == []


def test_cleanup_without_run_id_leaves_a_live_run_alone(lab: LabHandle, tmp_path: Path) -> None:
    """An entry whose process still runs (here: this pytest) is a run still measuring."""
    from netrun.cleanup.journal import host_key
    from netrun.hosts.proc import process_start
    from netrun.inventory.loader import load_inventory

    journal = tmp_path / "xdg" / "netrun" / "runs"
    journal.mkdir(parents=True)
    folder = Path("/tmp/netrun-0123abce")
    folder.mkdir()
    try:
        key = host_key(load_inventory(lab.inventory).get("alpha"))
        live = {
            "run_id": "0123abce",
            "pid": os.getpid(),
            "started": process_start(os.getpid()),
            "hosts": {key: {"name": "alpha", "remote_tmp": "/tmp", "docker": "docker"}},
        }
        (journal / "0123abce.json").write_text(json.dumps(live))
        run = run_netrun(["cleanup", "-i", lab.inventory, "-l", "alpha"], cwd=tmp_path)
        assert run.returncode == 0, run.stderr
        assert "skipping run 0123abce" in run.stdout, run.stdout
        assert folder.exists(), "a live run's folder was swept"
    finally:
        folder.rmdir()
