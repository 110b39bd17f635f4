"""tool: iperf2 and mode: turn end to end on the lab: real iperf2, real coturn, netrun's tunnel.

alpha runs the iperf2 server, bravo the client and the tunnel, charlie the coturn relay
(the groups servers, clients and relays of the lab's inventory). Traffic stays between the
lab's namespaces. The per-run TURN password is read from the relay's config file while the
run is under way, then looked for in every file the run left and in what it printed.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from netrun.lab.system import cmdline, netns_inode, pid_netns_inode
from netrun.tools.iperf2 import parse as iperf2
from tests.conftest import ROOT
from tests.integration.conftest import LabHandle
from tests.integration.helpers import (
    assert_nothing_left,
    entry,
    error_lines,
    load_results,
    netrun_process,
    only_test,
    remote_tmps,
    run_dirs,
    run_netrun,
    wait_for,
    write_inventory,
    write_scenario,
)
from tests.integration.turn_stand_ins import existing_coturn, write_turncat

pytestmark = pytest.mark.integration

NAMES = ("turnserver", "iperf", "netrun-turn-tunnel.py")


def lab_turn_pids(lab: LabHandle) -> list[tuple[int, str]]:
    """turnserver, iperf2 and tunnel processes inside the lab's namespaces."""
    inodes = {netns_inode(ns) for ns in lab.namespaces} - {None}
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        argv = cmdline(int(proc.name)) or []
        words = {Path(a).name for a in argv[:3]}
        if words & set(NAMES) and pid_netns_inode(int(proc.name)) in inodes:
            found.append((int(proc.name), " ".join(argv)[:120]))
    return found


def assert_no_turn_left(lab: LabHandle) -> None:
    wait_for(lambda: not lab_turn_pids(lab), 5)
    assert lab_turn_pids(lab) == [], "TURN/iperf2 processes left in the lab"


@pytest.fixture(autouse=True)
def nothing_left(lab: LabHandle, tmp_path: Path) -> Iterator[None]:
    yield
    assert_no_turn_left(lab)
    assert_nothing_left(lab, tmp_path / "out")


def relay_password() -> str | None:
    """The managed relay's per-run password, read from its config while the run is on."""
    confs = [c for t in remote_tmps() for c in t.glob("netrun-*/turn-relay/turnserver.conf")]
    for conf in confs:
        try:
            text = conf.read_text()
        except OSError:
            continue
        for line in text.splitlines():
            if line.startswith("user="):
                return line.split(":", 1)[1]
    return None


def every_file(folder: Path) -> Iterator[Path]:
    yield from (p for p in folder.rglob("*") if p.is_file())


def test_turn_scenario_prints_three_rows_with_proof_and_keeps_the_password_secret(
    lab: LabHandle, tmp_path: Path
) -> None:
    args = [ROOT / "scenarios" / "turn.yaml", "-i", lab.inventory, "-o", "out",
            "--db", tmp_path / "history.sqlite", "-e", "duration=2"]  # fmt: skip
    password = None
    with netrun_process(args, cwd=tmp_path) as proc:
        password = wait_for(relay_password, timeout=90)
        out, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err
    assert password, "never saw the relay's config"
    for name in ("direct", "turn-udp-1000pps", "turn-tcp-10000pps"):
        assert name in out, out
    # the brief answers first; every metric and note is in report.txt (--detail)
    detail = out + (tmp_path / "out" / "report.txt").read_text()
    assert "latency_avg_ms" in detail and "jitter_ms" in detail and "pps" in detail
    assert "turn-udp-1000pps: the relay added" in detail, detail
    assert "share the controller's clock" in detail, detail
    doc = load_results(tmp_path / "out")
    charlie = lab.host("charlie").data_ip
    for sample in doc["tests"]:
        assert sample["status"] == "ok", sample["error"]
        assert sample["tool"] == "iperf2"
        assert set(sample["metrics"]) == set(iperf2.METRIC_NAMES)
        assert sample["metrics"]["latency_avg_ms"] is not None
        details = sample["details"]
        assert details["clock"]["alpha"]["shared_clock"] is True
        if sample["mode"] == "turn":
            assert details["peer_seen"] == charlie, details
            assert details["relayed_address"].startswith(charlie + ":")
            assert details["relay_counters"].get("crossed") is True, details["relay_counters"]
            assert details["relay_counters"]["tx_packets"] >= sample["metrics"]["total"] * 0.9
            assert details["tunnel"]["kind"] == "netrun"
            assert details["tunnel"]["version"].startswith("netrun-turn-tunnel")
            assert details["tunnel"]["exit"].startswith("stats up ")
            assert details["relay"]["kind"] == "managed" and details["relay_log"]
        else:
            assert details["peer_seen"] == lab.host("bravo").data_ip
    tcp = only_test(doc, "turn-tcp-10000pps")
    assert tcp["details"]["relay"]["transport"] == "tcp"
    assert tcp["metrics"]["pps"] > 5000
    # the per-run password: nowhere in what netrun printed or kept
    assert password not in out and password not in err
    for path in [*every_file(tmp_path / "out"), tmp_path / "history.sqlite"]:
        assert password.encode() not in path.read_bytes(), path
    assert not run_dirs(doc["run_id"])


def busy_port(lab: LabHandle, port: int) -> subprocess.Popen[str]:
    """A program holding UDP and TCP ``port`` on charlie's data address."""
    ip = lab.host("charlie").data_ip
    code = (
        "import socket,time\n"
        f"u=socket.socket(socket.AF_INET,socket.SOCK_DGRAM);u.bind(('{ip}',{port}))\n"
        f"t=socket.socket();t.bind(('{ip}',{port}));t.listen()\n"
        "print('ready',flush=True);time.sleep(120)\n"
    )
    ns = lab.host("charlie").namespace
    proc = subprocess.Popen(
        ["ip", "netns", "exec", ns, "python3", "-c", code], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def turn_test(name: str = "t", **opts: object) -> dict[str, object]:
    return entry(name, mode="turn", relay="charlie", tool="iperf2", bitrate="500pps", **opts)


def test_a_busy_relay_port_and_a_missing_turnserver_are_one_line_each(
    lab: LabHandle, tmp_path: Path
) -> None:
    holder = busy_port(lab, 3491)
    try:
        scenario = write_scenario(tmp_path, [turn_test("busy", turn_port=3491)])
        run = run_netrun([scenario, "-i", lab.inventory, "-o", "out", "--no-history"],
                         cwd=tmp_path)  # fmt: skip
    finally:
        holder.kill()
        holder.wait()
    assert run.returncode == 1
    (line,) = error_lines(run.stderr)
    assert "charlie" in line and "3491" in line and "turn_port" in line, line
    assert "Traceback" not in run.stderr
    inventory = write_inventory(
        tmp_path, lab, host_vars={"charlie": {"netrun_turnserver": "/nonexistent/turnserver"}}
    )
    scenario = write_scenario(tmp_path, [turn_test("missing")], file="m.yaml")
    run = run_netrun([scenario, "-i", inventory, "-o", "out2", "--no-history"], cwd=tmp_path)
    assert run.returncode != 0
    assert "charlie" in run.stderr and "apt-get install coturn" in run.stderr, run.stderr
    assert "Traceback" not in run.stderr


@pytest.fixture
def external_relay(lab: LabHandle, tmp_path: Path) -> Iterator[tuple[str, str, str]]:
    """A coturn the test starts on charlie (an "existing" TURN server): URI, user, password."""
    with existing_coturn(lab, "charlie", ["alpha"], tmp_path / "ext", 3492) as relay:
        yield relay


def test_an_existing_turn_server_wrong_credentials_401_then_right_ones(
    lab: LabHandle, tmp_path: Path, external_relay: tuple[str, str, str]
) -> None:
    uri, user, password = external_relay
    wrong = "not-the-password-" + password[:4]
    inventory = write_inventory(
        tmp_path, lab, host_vars={"bravo": {"turn_user": user, "turn_password": wrong}}
    )
    scenario = write_scenario(tmp_path, [turn_test("ext", turn_server=uri, turn_transport="tcp")])
    run = run_netrun([scenario, "-i", inventory, "-o", "bad", "--no-history"], cwd=tmp_path)
    assert run.returncode == 1
    (line,) = error_lines(run.stderr)
    assert "401" in line and "credentials" in line, line
    assert wrong not in run.stderr + run.stdout
    for path in every_file(tmp_path / "bad"):
        assert wrong.encode() not in path.read_bytes(), path
    # the right ones, from the environment this time
    plain = write_inventory(tmp_path, lab, file="plain.yaml")
    env_run = subprocess.run(
        [os.sys.executable, "-m", "netrun", scenario, "-i", plain, "-o", "out", "--no-history"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={**os.environ, "NETRUN_TURN_USER": user, "NETRUN_TURN_PASSWORD": password},
    )  # fmt: skip
    # coturn's own log says why it answered 401 (seen once in CI with these credentials)
    log = tmp_path / "ext" / "log"
    said = log.read_text(errors="replace")[-3000:] if log.exists() else "(no coturn log)"
    assert env_run.returncode == 0, env_run.stderr + said.replace(password, "<password>")
    sample = only_test(load_results(tmp_path / "out"), "ext")
    assert sample["details"]["relay"]["kind"] == "external"
    assert sample["details"]["peer_seen"] == lab.host("charlie").data_ip
    assert password not in env_run.stdout + env_run.stderr
    for path in every_file(tmp_path / "out"):
        assert password.encode() not in path.read_bytes(), path


@pytest.mark.faults
@pytest.mark.parametrize("after", ["netrun cleanup", "the next run"])
def test_after_a_sigkill_nothing_is_left_no_turnserver_tunnel_or_iperf(
    lab: LabHandle, tmp_path: Path, after: str
) -> None:
    scenario = write_scenario(tmp_path, [turn_test("long", duration=30)], name="killed")
    with netrun_process([scenario, "-i", lab.inventory, "-o", "out", "--no-history"],
                        cwd=tmp_path) as proc:  # fmt: skip

        def all_three() -> bool:
            names = " ".join(argv for _, argv in lab_turn_pids(lab))
            return all(n in names for n in ("turnserver", "netrun-turn-tunnel", "iperf -c"))

        assert wait_for(all_three, timeout=60), lab_turn_pids(lab)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    assert lab_turn_pids(lab), "the SIGKILL should have left the test's processes running"
    if after == "netrun cleanup":
        run = run_netrun(["cleanup", "-i", lab.inventory], cwd=tmp_path)
        assert run.returncode == 0, run.stderr
        assert "undone: stop turnserver" in run.stdout, run.stdout
        assert "undone: stop the iperf2 client" in run.stdout, run.stdout
    else:  # the next run sweeps the killed one's undo records before it starts
        short = write_scenario(tmp_path, [turn_test("short")], name="next", file="next.yaml")
        run = run_netrun([short, "-i", lab.inventory, "-o", "next", "--no-history"],
                         cwd=tmp_path)  # fmt: skip
        assert run.returncode == 0, run.stderr
        swept = load_results(tmp_path / "next").get("swept", [])
        assert any("undone: stop turnserver" in s for s in swept), swept
    assert lab_turn_pids(lab) == []


def test_a_hosts_turncat_is_used_when_netrun_turncat_names_it(
    lab: LabHandle, tmp_path: Path
) -> None:
    shim = write_turncat(tmp_path / "turncat")
    inventory = write_inventory(tmp_path, lab, host_vars={"bravo": {"netrun_turncat": str(shim)}})
    # turncat binds its listener before its allocation: the first packets may be late
    scenario = write_scenario(
        tmp_path, [turn_test("cat", turn_transport="udp")], defaults={"duration": 3}
    )
    run = run_netrun([scenario, "-i", inventory, "-o", "out", "--no-history"], cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    sample = only_test(load_results(tmp_path / "out"), "cat")
    details = sample["details"]
    assert details["tunnel"]["kind"] == "turncat" and details["tunnel"]["version"] is None
    assert details["tunnel"]["version_unavailable"]
    assert details["peer_seen"] == lab.host("charlie").data_ip
    assert details["relayed_address"] is None
    log = (tmp_path / "out" / "netrun.log").read_text()
    assert "turn://" not in log or "@" not in log.split("turn://", 1)[1][:80]


@pytest.mark.faults
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_turn_run_stops_its_relay_tunnel_and_iperf(
    lab: LabHandle, tmp_path: Path, sig: int
) -> None:
    scenario = write_scenario(tmp_path, [turn_test("long", duration=30)], name="stopped")
    with netrun_process([scenario, "-i", lab.inventory, "-o", "out", "--no-history"],
                        cwd=tmp_path) as proc:  # fmt: skip

        def client_running() -> bool:
            return any("iperf -c" in argv for _, argv in lab_turn_pids(lab))

        assert wait_for(client_running, timeout=60), lab_turn_pids(lab)
        os.kill(proc.pid, sig)
        proc.communicate(timeout=60)
    assert proc.returncode in (130, 143), proc.returncode
    assert lab_turn_pids(lab) == [], "an interrupted run left TURN/iperf2 processes"
    sample = only_test(load_results(tmp_path / "out"), "long")
    assert sample["error"] == "interrupted"


def test_an_iperf2_report_netrun_cannot_read_fails_the_test_with_the_raw_output_kept(
    lab: LabHandle, tmp_path: Path
) -> None:
    fake = lab.bin_dir("alpha") / "iperf"
    fake.write_text(
        "#!/bin/sh\n"
        'case " $* " in *" -s "*) ;; *) exec /usr/bin/iperf "$@" ;; esac\n'
        "echo 'Server listening on UDP port 5001'\n"
        "echo '[  1] 0.0000-1.0000 sec  garbled  ms nonsense'\n"
        "echo '[  1] 0.0000-2.0000 sec  garbled  ms nonsense'\n"
        "exec sleep 60\n"
    )
    fake.chmod(0o755)
    try:
        scenario = write_scenario(
            tmp_path, [entry("bad", tool="iperf2", bitrate="200pps")], defaults={"duration": 2}
        )
        run = run_netrun([scenario, "-i", lab.inventory, "-o", "out", "--no-history"],
                         cwd=tmp_path)  # fmt: skip
    finally:
        fake.unlink()
    assert run.returncode == 1
    (line,) = error_lines(run.stderr)
    assert "alpha: cannot parse iperf2 output" in line and "garbled" in line, line
    sample = only_test(load_results(tmp_path / "out"), "bad")
    assert sample["raw"] and "garbled" in (tmp_path / "out" / sample["raw"]).read_text()
    assert all(v is None for v in sample["metrics"].values())  # never a wrong number
