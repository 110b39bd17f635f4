"""MTU tuning on the lab: ``mtu:`` set for a test, the path checked, the MTUs restored on
every exit path (end of run, failed path check, Ctrl-C, SIGTERM, SIGKILL then the next
run or `netrun cleanup`).

The lab's switch carries frames up to 9000 bytes while the hosts start at 1500; a test
that wants "a switch port without jumbo frames" lowers one switch port itself and puts
it back. Each host gets a remote tmp of its own, so its undo records run on that host.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import LabHandle
from tests.integration.helpers import (
    entry,
    lab_settings,
    load_results,
    netrun_process,
    run_netrun,
    samples_of,
    wait_for,
    write_inventory,
    write_scenario,
)

pytestmark = [pytest.mark.integration]


def own_tmp_inventory(lab: LabHandle, tmp_path: Path, **more: dict[str, Any]) -> Path:
    host_vars = {h: {"netrun_remote_tmp": str(tmp_path / "remote" / h)} for h in lab.hosts}
    for h in lab.hosts:
        (tmp_path / "remote" / h).mkdir(parents=True, exist_ok=True)
        host_vars[h].update(more.get(h, {}))
    return write_inventory(tmp_path, lab, host_vars=host_vars, file="own-tmp.yaml")


def data_mtu(lab: LabHandle, host: str) -> int:
    from netrun.lab.system import ip_json

    (link,) = ip_json("link", "show", "dev", "data0", netns=lab.host(host).namespace)
    return int(link["mtu"])


@contextmanager
def switch_port_mtu(lab: LabHandle, host: str, mtu: int) -> Iterator[None]:
    """A switch port without jumbo frames (the test's own injection, undone after)."""
    from netrun.lab.plan import plan

    cfg = plan(lab.config)
    port = next(h.switch_port for h in cfg.hosts if h.name == host)
    ns = cfg.switch_namespace
    show = ["ip", "-n", ns, "-o", "link", "show", "dev", port]
    old = subprocess.run(show, capture_output=True, text=True, check=True).stdout
    before = old.split(" mtu ")[1].split()[0]
    subprocess.run(["ip", "-n", ns, "link", "set", "dev", port, "mtu", str(mtu)], check=True)
    try:
        yield
    finally:
        subprocess.run(["ip", "-n", ns, "link", "set", "dev", port, "mtu", before], check=True)


def test_a_sweep_sets_each_mtu_once_checks_the_path_and_restores(
    lab: LabHandle, tmp_path: Path
) -> None:
    before = lab_settings(lab)
    inventory = own_tmp_inventory(lab, tmp_path)
    tests = [
        entry("bm", duration=1, sweep={"mtu": [1500, 9000]}),
        entry("again", duration=1, sweep={"mtu": [1500, 9000], "reverse": [True]}),
        entry("plain", duration=1),
    ]
    scenario = write_scenario(tmp_path, tests, name="mtu")
    run = run_netrun([scenario, "-i", inventory, "-o", "out", "--no-history"], cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    doc = load_results(tmp_path / "out")
    order = [t["name"] for t in doc["tests"]]
    # Run grouped by MTU (the log below: each value set once per host), but listed in
    # scenario order, as every table is (issue 14).
    assert order == [
        "bm[mtu=1500]",
        "bm[mtu=9000]",
        "again[mtu=1500,reverse=true]",
        "again[mtu=9000,reverse=true]",
        "plain",
    ], order
    big = samples_of(doc, "bm[mtu=9000]")[0]
    assert big["status"] == "ok", big
    mtu = big["details"]["mtu"]
    assert mtu["underlay"] == 9000 and mtu["overlay"] is None
    assert mtu["original"] == {"alpha": {"data0": 1500}, "bravo": {"data0": 1500}}
    assert mtu["path_checked"] == ["alpha -> bravo 9000", "bravo -> alpha 9000"]
    small = samples_of(doc, "bm[mtu=1500]")[0]
    assert big["goodput_ceiling_mbps"] > small["goodput_ceiling_mbps"]  # per MTU
    # the sending kernel's own path MTU agrees with the checked one (issue 26): the
    # client's under a forward test, the server's (its JSON) under -R
    for name, side, want in (("bm[mtu=9000]", "client", 9000), ("bm[mtu=1500]", "client", 1500),
                             ("again[mtu=9000,reverse=true]", "server", 9000)):  # fmt: skip
        found = samples_of(doc, name)[0]
        assert found["metrics"]["pmtu_bytes"] == want, (name, found["metrics"])
        assert found["details"]["tcp_info_of"] == side, name
        assert found["metrics"]["rtt_mean_ms"] > 0 and found["metrics"]["snd_cwnd_max_bytes"] > 0
        assert "pmtu-mismatch" not in found["flags"], name
    assert "mtu" not in samples_of(doc, "plain")[0]["details"]
    assert "MTU" in run.stdout and " 9000 " in run.stdout, run.stdout
    # set once per value and host: 1500 and 9000 on alpha and bravo (the debug log shows
    # each undo record as it is written, before its change)
    log = (tmp_path / "out" / "netrun.log").read_text()
    assert log.count("'# MTU of data0 back to 1500") == 4, log.count("back to 1500")
    assert lab_settings(lab) == before
    assert list((tmp_path / "remote").glob("*/netrun-*")) == []


def test_a_switch_port_without_jumbo_frames_fails_the_test_with_one_line(
    lab: LabHandle, tmp_path: Path
) -> None:
    before = lab_settings(lab)
    inventory = own_tmp_inventory(lab, tmp_path)
    tests = [entry("j", duration=1, sweep={"mtu": [9000, 1500]})]
    scenario = write_scenario(tmp_path, tests, name="jumbo")
    with switch_port_mtu(lab, "alpha", 1500):
        run = run_netrun([scenario, "-i", inventory, "-o", "out", "--no-history"], cwd=tmp_path)
    assert run.returncode == 1, run.stderr
    doc = load_results(tmp_path / "out")
    (failed,) = samples_of(doc, "j[mtu=9000]")
    assert failed["status"] == "failed"
    assert failed["error"].startswith("alpha -> bravo does not carry 9000-byte packets"), failed
    assert "(a switch port or the peer is at a lower MTU" in failed["error"]
    assert samples_of(doc, "j[mtu=1500]")[0]["status"] == "ok"  # the other test still ran
    assert "does not carry 9000-byte packets" in run.stderr
    assert "Traceback" not in run.stderr
    assert lab_settings(lab) == before


def test_the_management_interface_is_refused_unless_allowed(lab: LabHandle, tmp_path: Path) -> None:
    before = lab_settings(lab)
    mgmt = {h: {"netrun_iface": "mgmt0", "netrun_data_ip": lab.host(h).mgmt_ip} for h in lab.hosts}
    inventory = own_tmp_inventory(lab, tmp_path, **mgmt)
    scenario = write_scenario(tmp_path, [entry("m", duration=1, mtu=1400)], name="mgmt")
    run = run_netrun([scenario, "-i", inventory, "-o", "out", "--no-history"], cwd=tmp_path)
    assert run.returncode == 1
    error = samples_of(load_results(tmp_path / "out"), "m")[0]["error"]
    assert "mgmt0 carries netrun's SSH session" in error, error
    assert "allow_management_mtu: true" in error
    assert lab_settings(lab) == before


def long_9000(tmp_path: Path, inventory: Path) -> list[str | Path]:
    """netrun's arguments for one long test at MTU 9000."""
    tests = [entry("long", duration=30, mtu=9000)]
    scenario = write_scenario(tmp_path, tests, name="killed", file="long.yaml")
    return [scenario, "-i", inventory, "-o", tmp_path / "first", "--no-history"]


def measuring_at_9000(lab: LabHandle, tmp_path: Path) -> bool:
    """Both hosts run at 9000 and the iperf3 client is under way."""
    client = tmp_path / "remote" / "bravo"
    at_9000 = data_mtu(lab, "alpha") == 9000 and data_mtu(lab, "bravo") == 9000
    return at_9000 and any(client.glob("*/*.client.pid"))


@pytest.mark.faults
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_and_sigterm_restore_the_mtu(
    lab: LabHandle, tmp_path: Path, sig: signal.Signals
) -> None:
    before = lab_settings(lab)
    inventory = own_tmp_inventory(lab, tmp_path)
    with netrun_process(long_9000(tmp_path, inventory), cwd=tmp_path) as p:
        assert wait_for(lambda: measuring_at_9000(lab, tmp_path), timeout=30), p.poll()
        os.kill(p.pid, sig)
        p.wait(timeout=60)
    assert p.returncode == (130 if sig == signal.SIGINT else 143)
    assert lab_settings(lab) == before
    doc = load_results(tmp_path / "first")
    assert doc["status"] == "interrupted"


@pytest.mark.faults
def test_after_a_sigkill_cleanup_and_the_next_run_restore_the_mtu(
    lab: LabHandle, tmp_path: Path
) -> None:
    before = lab_settings(lab)
    inventory = own_tmp_inventory(lab, tmp_path)
    with netrun_process(long_9000(tmp_path, inventory), cwd=tmp_path) as p:
        assert wait_for(lambda: measuring_at_9000(lab, tmp_path), timeout=30), p.poll()
        wait_for(lambda: False, 0.5)
        os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=10)
    assert data_mtu(lab, "alpha") == 9000 and data_mtu(lab, "bravo") == 9000
    # netrun cleanup on alpha alone; the next run on bravo restores bravo's
    run = run_netrun(["cleanup", "-i", inventory, "-l", "alpha"], cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "alpha: undone: MTU of data0 back to 1500" in run.stdout, run.stdout
    assert data_mtu(lab, "alpha") == 1500
    assert data_mtu(lab, "bravo") == 9000
    short = write_scenario(tmp_path, [entry("short", duration=1)], name="next")
    run = run_netrun([short, "-i", inventory, "-o", "second", "--no-history"], cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    doc = load_results(tmp_path / "second")
    assert any("bravo: run" in s and "undone: MTU of data0" in s for s in doc["swept"]), doc
    assert doc["hosts"]["bravo"]["nic"]["mtu"] == 1500
    assert lab_settings(lab) == before


def test_flannel_follows_the_mtu_inside_the_containers(
    docker_lab: LabHandle, tmp_path: Path
) -> None:
    before = lab_settings(docker_lab)
    tests = [
        entry("fl", mode="flannel", duration=1, sweep={"mtu": [9000]}),
        entry("low", mode="flannel", duration=1, mtu=1500, overlay_mtu=1400),
        entry("ipip", mode="flannel", duration=1, mtu=1500, overlay_mtu=1480),
    ]
    scenario = write_scenario(tmp_path, tests, name="overlay")
    inventory = own_tmp_inventory(docker_lab, tmp_path)
    run = run_netrun([scenario, "-i", inventory, "-o", "out", "--no-history"], cwd=tmp_path)
    assert run.returncode == 1, run.stderr
    doc = load_results(tmp_path / "out")
    ipip = samples_of(doc, "ipip")[0]["error"]  # Calico's IP-in-IP value, not VXLAN's
    assert "overlay_mtu 1480 does not fit a VXLAN overlay on MTU 1500" in ipip, ipip
    big = samples_of(doc, "fl[mtu=9000]")[0]
    mtu = big["details"]["mtu"]
    assert (mtu["underlay"], mtu["overlay"]) == (9000, 8950)
    assert mtu["container"] == {"server": 8950, "client": 8950}
    assert mtu["original"]["alpha"] == {"data0": 1500, "flannel.1": 1450}
    assert "bravo:client -> alpha:server 8950" in mtu["path_checked"]
    assert "alpha:server -> bravo:client 8950" in mtu["path_checked"]
    assert big["details"]["overlay_mtu"] == 8950
    low = samples_of(doc, "low")[0]["details"]["mtu"]
    assert low["container"] == {"server": 1400, "client": 1400}
    assert "9000/8950" in run.stdout and "1500/1400" in run.stdout, run.stdout
    assert lab_settings(docker_lab) == before  # data0, flannel.1 and docker0 restored
