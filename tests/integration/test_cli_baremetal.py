"""The netrun CLI end to end in bare-metal mode, against the emulated 3-host lab.

Each test runs ``python -m netrun`` in its own tmp folder with ``-o out`` and judges the run
by its exit code, its one-line errors and results.json. After every test nothing may be
left: no iperf3 in the lab's namespaces and no /tmp/netrun-<run id> folder.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
import yaml

from tests.integration.conftest import LabHandle, lab_iperf3_pids
from tests.integration.helpers import (
    assert_nothing_left,
    entry,
    error_lines,
    iperf3_left,
    load_results,
    netrun_process,
    only_test,
    run_dirs,
    run_netrun,
    samples_of,
    wait_for,
    write_inventory,
    write_scenario,
)

pytestmark = pytest.mark.integration

VERSION = re.compile(r"^\d+\.\d+(\.\d+)?$")
CONTRACT_KEYS = {
    "name", "mode", "server", "client", "protocol", "repeat", "status", "error",
    "throughput_bps", "sender_bps", "retransmits", "cpu_client_pct", "cpu_server_pct",
    "jitter_ms", "lost_percent", "nic", "iperf3_version", "raw",
}  # fmt: skip


@pytest.fixture(autouse=True)
def nothing_left(lab: LabHandle, tmp_path: Path) -> Iterator[None]:
    """After every test: no iperf3 in the lab, no run folder of the test's main run."""
    yield
    assert_nothing_left(lab, tmp_path / "out")


def netrun_ok(tmp: Path, *args: str | Path, timeout: float = 90) -> dict:
    """Run netrun expecting exit 0; its results.json."""
    res = run_netrun([*args, "-q", "-o", "out"], cwd=tmp, timeout=timeout)
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr
    return load_results(tmp / "out")


def netrun_failed(tmp: Path, *args: str | Path, timeout: float = 90, out: str = "out") -> dict:
    """Run netrun expecting exit 1 (a test failed) and no internal error; its results.json."""
    res = run_netrun([*args, "-q", "-o", out], cwd=tmp, timeout=timeout)
    assert res.returncode == 1, (res.returncode, res.stderr)
    assert "Traceback" not in res.stderr and "internal error" not in res.stderr, res.stderr
    return load_results(tmp / out)


def iso(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def fake_tool(lab: LabHandle, host: str, name: str, body: str) -> Path:
    """An executable ``name`` first on PATH in SSH sessions of ``host``; remove it after."""
    path = lab.bin_dir(host) / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


# -- 1. the whole contract --------------------------------------------------------------------
def test_tcp_and_udp_end_to_end(lab: LabHandle, tmp_path: Path) -> None:
    scen = write_scenario(
        tmp_path,
        [
            entry("bm-tcp"),
            entry("bm-udp", protocol="udp", bitrate="100M", length=1400),
        ],
        defaults={"duration": 10},  # -e duration=1 must win
        name="e2e",
    )
    started = time.monotonic()
    doc = netrun_ok(tmp_path, scen, "-i", lab.inventory, "-e", "duration=1")
    assert time.monotonic() - started < 40, "duration=1 override was not applied"
    out = tmp_path / "out"

    assert doc["schema"] == 2 and doc["scenario"] == "e2e" and doc["status"] == "finished"
    assert iso(doc["started"]) <= iso(doc["finished"])
    assert isinstance(doc["netrun_version"], str) and doc["netrun_version"]
    assert [t["name"] for t in doc["tests"]] == ["bm-tcp", "bm-udp"]
    for t in doc["tests"]:
        assert t.keys() >= CONTRACT_KEYS, CONTRACT_KEYS - t.keys()
        assert (t["mode"], t["server"], t["client"]) == ("baremetal", "alpha", "bravo")
        assert t["repeat"] == 1 and type(t["repeat"]) is int
        assert (t["status"], t["error"]) == ("ok", None), t["error"]
        assert t["options"]["duration"] == 1
        for key in ("sender_bps", "cpu_client_pct", "cpu_server_pct"):
            assert isinstance(t[key], int | float), (key, t[key])
        for side in ("client", "server"):
            nic = t["nic"][side]
            assert (nic["iface"], nic["mtu"], nic["driver"]) == ("data0", 1500, "veth"), nic
            assert isinstance(nic["speed_mbps"], int | float), nic
            assert VERSION.match(t["iperf3_version"][side]), t["iperf3_version"]
        raw_path = out / t["raw"]
        assert not Path(t["raw"]).is_absolute() and raw_path.is_file()
        raw = json.loads(raw_path.read_text())
        assert raw["start"]["test_start"]["duration"] == 1
        assert raw["start"]["test_start"]["protocol"] == t["protocol"].upper()

    tcp, udp = doc["tests"]
    assert tcp["protocol"] == "tcp" and 0.5e9 <= tcp["throughput_bps"] <= 1.1e9, tcp
    assert type(tcp["retransmits"]) is int
    assert tcp["jitter_ms"] is None and tcp["lost_percent"] is None
    # the sender's TCP internals (issue 26): there for TCP, "do not apply" for UDP
    got = tcp["metrics"]
    assert 0 < got["rtt_mean_ms"] <= got["rtt_max_ms"] < 1000, got
    assert got["snd_cwnd_max_bytes"] > 0 and got["snd_wnd_max_bytes"] > 0, got
    assert got["pmtu_bytes"] == 1500 and tcp["details"]["tcp_info_of"] == "client"
    assert udp["metrics"]["rtt_mean_ms"] is None
    assert udp["details"]["unavailable"]["pmtu_bytes"] == "UDP: TCP internals do not apply"
    assert udp["protocol"] == "udp" and 50e6 <= udp["throughput_bps"] <= 110e6, udp
    assert isinstance(udp["jitter_ms"], int | float) and isinstance(
        udp["lost_percent"], int | float
    )

    report = (out / "report.txt").read_text()
    assert "bm-tcp" in report and "bm-udp" in report
    assert "TCP_INFO of" in report and "client bravo" in report  # the TCP internals table
    again = run_netrun(["report", out, "--detail"], cwd=tmp_path, timeout=30)
    assert again.returncode == 0, again.stderr
    assert again.stdout == report


# -- 2-4. repeat, limit, inventory -----------------------------------------------------------
def test_repeat_gives_one_sample_per_repeat(lab: LabHandle, tmp_path: Path) -> None:
    scen = write_scenario(tmp_path, [entry("twice", repeat=2)])
    doc = netrun_ok(tmp_path, scen, "-i", lab.inventory)
    samples = samples_of(doc, "twice")
    assert [s["repeat"] for s in samples] == [1, 2]
    assert all(s["status"] == "ok" and s["throughput_bps"] > 0 for s in samples)
    assert len({s["raw"] for s in samples}) == 2
    assert all((tmp_path / "out" / s["raw"]).is_file() for s in samples)


def test_limit_runs_only_tests_within_the_pattern(lab: LabHandle, tmp_path: Path) -> None:
    scen = write_scenario(
        tmp_path,
        [
            entry("ab"),
            entry("bc", server="bravo", client="charlie"),
            entry("ca", server="charlie", client="alpha"),
        ],
    )
    doc = netrun_ok(tmp_path, scen, "-i", lab.inventory, "-l", "alpha:bravo")
    assert [t["name"] for t in doc["tests"]] == ["ab"]
    assert doc["tests"][0]["status"] == "ok"
    assert sorted(doc["skipped"]) == ["bc", "ca"]
    assert "charlie" not in doc["hosts"], "a host outside the limit was contacted"


def test_inventory_list(lab: LabHandle, tmp_path: Path) -> None:
    res = run_netrun(["inventory", "-i", lab.inventory, "--list"], cwd=tmp_path, timeout=30)
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    hostvars = data["_meta"]["hostvars"]
    assert set(hostvars) == {"alpha", "bravo", "charlie"}
    assert hostvars["alpha"]["ansible_host"] == lab.host("alpha").mgmt_ip
    assert hostvars["bravo"]["netrun_data_ip"] == lab.host("bravo").data_ip
    assert hostvars["charlie"]["ansible_user"] == "root"  # all.vars merged in
    assert sorted(data["lab"]["hosts"]) == ["alpha", "bravo", "charlie"]
    assert "lab" in data["all"]["children"]


# -- 6-8. connection failures ----------------------------------------------------------------
@pytest.mark.faults
def test_unreachable_host_fails_only_its_tests(lab: LabHandle, tmp_path: Path) -> None:
    subnet = lab.host("alpha").mgmt_ip.rsplit(".", 1)[0]
    inv = write_inventory(tmp_path, lab, host_vars={"ghost": {"ansible_host": f"{subnet}.250"}})
    scen = write_scenario(
        tmp_path, [entry("to-ghost", server="ghost", client="alpha"), entry("ab")]
    )
    started = time.monotonic()
    doc = netrun_failed(tmp_path, scen, "-i", inv, "--connect-timeout", "2", timeout=60)
    assert time.monotonic() - started < 15
    ghost = only_test(doc, "to-ghost")
    assert ghost["status"] == "failed" and ghost["error"].startswith("ghost: "), ghost["error"]
    assert f"{subnet}.250" in ghost["error"]
    assert only_test(doc, "ab")["status"] == "ok"


def test_refused_login_names_the_host(lab: LabHandle, tmp_path: Path) -> None:
    key = tmp_path / "stranger_ed25519"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True, timeout=30
    )
    inv = write_inventory(
        tmp_path, lab, host_vars={"bravo": {"ansible_ssh_private_key_file": str(key)}}
    )
    scen = write_scenario(tmp_path, [entry("ab")])
    doc = netrun_failed(tmp_path, scen, "-i", inv)
    err = only_test(doc, "ab")["error"]
    assert err.startswith("bravo: ") and "refused" in err, err


def known_hosts_lines(lab: LabHandle) -> dict[str, str]:
    """The lab's known_hosts: mgmt address -> its line."""
    lines = [ln for ln in lab.known_hosts.read_text().splitlines() if ln.strip()]
    return {ln.split()[0]: ln for ln in lines}


def test_changed_host_key_is_refused_before_any_command(lab: LabHandle, tmp_path: Path) -> None:
    other = tmp_path / "other_ed25519"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True, timeout=30
    )
    alpha_ip = lab.host("alpha").mgmt_ip
    lines = known_hosts_lines(lab)
    keytype, blob = other.with_suffix(".pub").read_text().split()[:2]
    lines[alpha_ip] = f"{alpha_ip} {keytype} {blob}"
    known = tmp_path / "known_hosts"
    known.write_text("\n".join(lines.values()) + "\n")
    inv = write_inventory(tmp_path, lab, all_vars={"netrun_known_hosts": str(known)})
    scen = write_scenario(tmp_path, [entry("ab")])
    marker = tmp_path / "a-command-ran-on-alpha"
    fake_tool(lab, "alpha", "uname", f'touch {marker}\nexec /bin/uname "$@"\n')
    try:
        doc = netrun_failed(tmp_path, scen, "-i", inv)
    finally:
        (lab.bin_dir("alpha") / "uname").unlink()
    err = only_test(doc, "ab")["error"]
    assert err.startswith("alpha: ") and "CHANGED" in err, err
    assert f"ssh-keygen -f {known} -R {alpha_ip}" in err, err
    assert not marker.exists(), "a command ran on alpha despite its changed host key"
    assert "alpha" not in doc["hosts"]


def test_unknown_host_key_is_refused(lab: LabHandle, tmp_path: Path) -> None:
    known = tmp_path / "known_hosts"
    known.write_text("")
    inv = write_inventory(tmp_path, lab, all_vars={"netrun_known_hosts": str(known)})
    scen = write_scenario(tmp_path, [entry("ab")])
    doc = netrun_failed(tmp_path, scen, "-i", inv)
    err = only_test(doc, "ab")["error"]
    assert err.split(":")[0] in ("alpha", "bravo"), err
    assert "--accept-new-host-keys" in err and str(known) in err, err
    assert known.read_text() == "", "a refused key was written anyway"


def test_accept_new_host_keys_records_every_host(lab: LabHandle, tmp_path: Path) -> None:
    known = tmp_path / "known_hosts"
    known.write_text("")
    inv = write_inventory(tmp_path, lab, all_vars={"netrun_known_hosts": str(known)})
    scen = write_scenario(tmp_path, [entry("ab"), entry("cb", server="charlie")])
    doc = netrun_ok(tmp_path, scen, "-i", inv, "--accept-new-host-keys")
    assert [t["status"] for t in doc["tests"]] == ["ok", "ok"]
    expected = known_hosts_lines(lab)
    written = {ln.split()[0]: ln for ln in known.read_text().splitlines() if ln.strip()}
    for name in ("alpha", "bravo", "charlie"):
        ip = lab.host(name).mgmt_ip
        assert ip in written, f"{name}'s key ({ip}) was not written to {known}: {written}"
        assert written[ip].split()[1:3] == expected[ip].split()[1:3]


# -- 9-11. tools on the hosts -----------------------------------------------------------------
@pytest.mark.faults
def test_iperf3_missing_on_a_host(lab: LabHandle, tmp_path: Path) -> None:
    inv = write_inventory(
        tmp_path, lab, host_vars={"bravo": {"netrun_iperf3": "iperf3-not-installed"}}
    )
    scen = write_scenario(tmp_path, [entry("ab")])
    doc = netrun_failed(tmp_path, scen, "-i", inv)
    err = only_test(doc, "ab")["error"]
    assert err.startswith("bravo: ") and "iperf3" in err and "iperf3-not-installed" in err, err


def test_client_iperf3_exiting_127_is_a_clear_failure(lab: LabHandle, tmp_path: Path) -> None:
    """An iperf3 that answers --version but whose run exits 127 (a broken install)."""
    real = shutil.which("iperf3")
    scen = write_scenario(tmp_path, [entry("ab")])
    body = f'[ "$1" = --version ] && exec {real} --version\nexit 127\n'
    fake_tool(lab, "bravo", "iperf3", body)
    try:
        doc = netrun_failed(tmp_path, scen, "-i", lab.inventory)
    finally:
        (lab.bin_dir("bravo") / "iperf3").unlink()
    err = only_test(doc, "ab")["error"]
    assert err.startswith("bravo: ") and "iperf3" in err and "not found" in err, err


# The busy port (a foreign iperf3 holding it): test_faults_datapath.py.


def test_ethtool_unsupported_is_not_a_failure(lab: LabHandle, tmp_path: Path) -> None:
    scen = write_scenario(tmp_path, [entry("ab")])
    fake_tool(
        lab, "alpha", "ethtool", 'echo "netlink error: Operation not supported" >&2\nexit 1\n'
    )
    try:
        doc = netrun_ok(tmp_path, scen, "-i", lab.inventory)
    finally:
        (lab.bin_dir("alpha") / "ethtool").unlink()
    t = only_test(doc, "ab")
    assert t["status"] == "ok", t["error"]
    server, client = t["nic"]["server"], t["nic"]["client"]
    assert server["speed_mbps"] is None and server["driver"] is None, server
    assert (server["iface"], server["mtu"]) == ("data0", 1500)
    assert client["driver"] == "veth" and client["speed_mbps"] is not None
    speed = yaml.safe_load(lab.inventory.read_text())["all"]["vars"]["netrun_link_speed_mbps"]
    assert t["line_rate_mbps"] == speed


# -- 12-13. signals and cleanup ---------------------------------------------------------------
def wait_until_measuring(out: Path, timeout: float = 20) -> str:
    """The run id, once the client iperf3 of the first test is running on its host."""

    def client_running() -> str | None:
        try:
            run_id = load_results(out)["run_id"]
        except (OSError, ValueError, KeyError):
            return None
        dirs = run_dirs(run_id)
        return run_id if any(f for d in dirs for f in d.glob("*.client.pid")) else None

    run_id = wait_for(client_running, timeout)
    assert run_id, "the test never started measuring"
    return run_id


@pytest.mark.faults
@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_stops_the_run_and_cleans_up(
    lab: LabHandle, tmp_path: Path, sig: signal.Signals, code: int
) -> None:
    scen = write_scenario(tmp_path, [entry("long", duration=8)])
    with netrun_process([scen, "-i", lab.inventory, "-q", "-o", "out"], cwd=tmp_path) as proc:
        wait_until_measuring(tmp_path / "out")
        time.sleep(0.5)  # let iperf3 move some data
        sent = time.monotonic()
        proc.send_signal(sig)
        _stdout, stderr = proc.communicate(timeout=15)
        assert time.monotonic() - sent < 10
    assert proc.returncode == code, stderr
    assert "Traceback" not in stderr
    doc = load_results(tmp_path / "out")
    assert doc["status"] == "interrupted"
    assert doc["finished"] is not None
    assert only_test(doc, "long")["status"] != "ok"


@pytest.mark.faults
def test_sigkill_then_cleanup_removes_leftovers(lab: LabHandle, tmp_path: Path) -> None:
    scen = write_scenario(tmp_path, [entry("long", duration=8)])
    with netrun_process([scen, "-i", lab.inventory, "-q", "-o", "out"], cwd=tmp_path) as proc:
        run_id = wait_until_measuring(tmp_path / "out")
        proc.kill()
        proc.communicate(timeout=15)
    left = lab_iperf3_pids(lab)
    assert run_dirs(run_id), "the killed run's folder should still be there"
    # --run-id: only this run's leftovers are ours.
    res = run_netrun(["cleanup", "-i", lab.inventory, "--run-id", run_id], cwd=tmp_path, timeout=60)
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr
    assert f"/netrun-{run_id}" in res.stdout and "removed /" in res.stdout, res.stdout
    if left:
        assert "killed iperf3 pid" in res.stdout, res.stdout
    assert iperf3_left(lab) == []
    assert run_dirs(run_id) == []
    again = run_netrun(
        ["cleanup", "-i", lab.inventory, "--run-id", run_id], cwd=tmp_path, timeout=60
    )
    assert again.returncode == 0 and "nothing left behind" in again.stdout, again.stdout
    assert not error_lines(again.stderr)
