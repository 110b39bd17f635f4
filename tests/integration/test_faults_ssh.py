"""Fault suite, SSH faults: a host that hangs, drops, loses its sshd, changes its key or
refuses sudo. Each run must end within its deadlines, fail only the tests that need that
host with one line naming it, and leave nothing behind (check_fault's four promises).

Every fault is injected inside the lab host's own network namespace and undone in
``finally``; a killed sshd is restarted with ``netrun.lab.up`` (which repairs), so the
tests after it find a healthy lab.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import pytest

from netrun.lab import core as netrun_lab_core
from netrun.lab.system import cmdline, netns_inode, pid_netns_inode
from netrun.tools.iperf3.run import REMOTE_MARGIN
from tests.integration.conftest import LabHandle, lab_iperf3_pids
from tests.integration.helpers import (
    FaultRun,
    check_fault,
    entry,
    error_lines,
    lab_settings,
    load_results,
    run_dirs,
    run_netrun,
    run_under_fault,
    start_netrun,
    wait_for,
    write_inventory,
    write_scenario,
)

pytestmark = [pytest.mark.integration, pytest.mark.faults]

#: Every run here: SSH gives up after 2 s (connect, banner and auth alike).
FAST = ["--connect-timeout", "2", "-o", "out"]


@pytest.fixture(autouse=True)
def own_history(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """A history database (and its run lock) per test, not the machine's shared one.

    After the test, its run's folder goes even if an assertion stopped the test before
    the cleanup it checks (check_fault has judged leftovers by then).
    """
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    yield
    run_id = run_id_of(tmp_path / "out")
    if run_id:
        for folder in run_dirs(run_id):
            shutil.rmtree(folder, ignore_errors=True)


# -- injecting faults -------------------------------------------------------------------------
def ns_pids(lab: LabHandle, host: str) -> list[int]:
    """Every process inside lab host ``host``'s network namespace."""
    inode = netns_inode(lab.host(host).namespace)
    found = []
    for entry_ in Path("/proc").iterdir():
        if entry_.name.isdigit() and pid_netns_inode(int(entry_.name)) == inode:
            found.append(int(entry_.name))
    return found


def sshd_pids(lab: LabHandle, host: str, *, listener: bool) -> list[int]:
    """The host's sshd: its listener, or the per-connection processes (``sshd: root@notty``)."""
    found = []
    for pid in ns_pids(lab, host):
        argv = cmdline(pid)
        if not argv or not argv[0].startswith("sshd"):
            continue
        is_listener = "sshd_config" in " ".join(argv)  # the listener runs with -f <config>
        if is_listener == listener:
            found.append(pid)
    return found


def kill_pids(pids: list[int]) -> None:
    for pid in pids:
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@contextmanager
def sshd_repaired(lab: LabHandle) -> Iterator[None]:
    """Whatever a test kills, every lab host's sshd answers again afterwards."""
    try:
        yield
    finally:
        status = netrun_lab_core.up(lab.config)
        assert status.ok, status.problems()


@contextmanager
def silent_listener(lab: LabHandle, host: str, port: int) -> Iterator[None]:
    """A TCP listener on ``host``'s mgmt address that accepts and never says a word."""
    code = (
        "import socket, sys\n"
        "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
        "s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(16)\n"
        "print('listening', flush=True)\n"
        "held = []\n"
        "while True:\n"
        "    held.append(s.accept()[0])\n"
    )
    d = lab.host(host)
    proc = subprocess.Popen(
        ["ip", "netns", "exec", d.namespace, sys.executable, "-c", code, d.mgmt_ip, str(port)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "listening\n"
        yield
    finally:
        proc.kill()
        proc.wait(timeout=10)


@contextmanager
def dropping_ssh(lab: LabHandle, host: str) -> Iterator[None]:
    """iptables in ``host``'s namespace silently drops every packet to its SSH port."""
    rule = ["INPUT", "-p", "tcp", "--dport", "22", "-j", "DROP"]
    ns = ["ip", "netns", "exec", lab.host(host).namespace, "iptables"]
    subprocess.run([*ns, "-A", *rule], check=True, timeout=30)
    try:
        yield
    finally:
        subprocess.run([*ns, "-D", *rule], check=True, timeout=30)
        rules = subprocess.run([*ns, "-S"], capture_output=True, text=True, timeout=30).stdout
        assert "DROP" not in rules, f"iptables rule left on {host}: {rules}"


@contextmanager
def fake_tool(lab: LabHandle, host: str, name: str, body: str) -> Iterator[Path]:
    """An executable ``name`` first on PATH in SSH sessions of ``host``, removed after."""
    path = lab.bin_dir(host) / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    try:
        yield path
    finally:
        path.unlink()


def run_id_of(outdir: Path) -> str | None:
    try:
        return str(load_results(outdir)["run_id"])
    except (OSError, ValueError, KeyError):
        return None


def fault_mid_run(
    args: list[str | Path],
    *,
    cwd: Path,
    ready: Callable[[str], bool],
    inject: Callable[[str], None],
    timeout: float = 90,
) -> tuple[FaultRun, str]:
    """Start netrun, ``inject(run_id)`` as soon as ``ready(run_id)``, and wait for its end."""
    outdir = cwd / "out"
    started = time.monotonic()
    proc = start_netrun(args, cwd=cwd)
    try:
        run_id = wait_for(lambda: run_id_of(outdir) or proc.poll() is not None, 30)
        assert isinstance(run_id, str), "netrun wrote no results.json"
        reached = wait_for(lambda: ready(run_id) or proc.poll() is not None, 30)
        assert reached and proc.poll() is None, "netrun ended before the fault point"
        inject(run_id)
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)
    done = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    return FaultRun(done, time.monotonic() - started, outdir), run_id


def client_started(run_id: str, tag: str = "t0r1") -> bool:
    """The first test's iperf3 client has written its pid: it is running now."""
    return any((d / f"{tag}.client.pid").exists() for d in run_dirs(run_id))


def the_fix(stderr: str, host: str) -> list[str]:
    """The ``netrun cleanup ...`` command the error line for ``host`` names (its argv)."""
    lines = [ln for ln in error_lines(stderr) if ln.startswith(f"netrun: error: {host}: cleanup")]
    assert len(lines) == 1, f"no single cleanup error line for {host}:\n{stderr}"
    command = lines[0].rsplit(" run: ", 1)[1]
    argv = shlex.split(command)
    assert argv[:2] == ["netrun", "cleanup"], lines[0]
    return argv[1:]


def run_the_fix(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    done = run_netrun(argv, cwd=cwd, timeout=60)
    assert done.returncode == 0, done.stderr
    return done


# -- a port that accepts TCP but never sends a banner -----------------------------------------
def test_port_without_ssh_banner(lab: LabHandle, tmp_path: Path) -> None:
    before = lab_settings(lab)
    inv = write_inventory(tmp_path, lab, host_vars={"alpha": {"ansible_port": 2222}})
    scen = write_scenario(tmp_path, [entry("ab"), entry("cb", server="charlie")])
    with silent_listener(lab, "alpha", 2222):
        run = run_under_fault([scen, "-i", inv, *FAST], cwd=tmp_path, outdir=tmp_path / "out")
    doc = check_fault(
        lab,
        run,
        fault="ssh: port accepts TCP, sends no banner",
        before=before,
        max_seconds=20,
        statuses={"ab": "failed", "cb": "ok"},
        host="alpha",
        error_has="sent no SSH banner within 2s",
    )
    assert "alpha" not in doc["hosts"], "a command ran on a host that never spoke SSH"


# -- a port that drops every packet -----------------------------------------------------------
def test_ssh_port_dropping_packets(lab: LabHandle, tmp_path: Path) -> None:
    before = lab_settings(lab)
    scen = write_scenario(tmp_path, [entry("ab"), entry("cb", server="charlie")])
    with dropping_ssh(lab, "alpha"):
        run = run_under_fault(
            [scen, "-i", lab.inventory, *FAST], cwd=tmp_path, outdir=tmp_path / "out"
        )
    check_fault(
        lab,
        run,
        fault="ssh: port drops packets (iptables DROP)",
        before=before,
        max_seconds=20,
        statuses={"ab": "failed", "cb": "ok"},
        host="alpha",
        error_has="no answer from",
    )


# -- sshd killed in the middle of a test ------------------------------------------------------
def test_ssh_session_killed_mid_test_reconnects(lab: LabHandle, tmp_path: Path) -> None:
    """The client host's SSH session dies (sshd's listener lives): that test fails; the
    host's next test reconnects and passes; the final sweep reconnects too."""
    before = lab_settings(lab)
    scen = write_scenario(
        tmp_path,
        [entry("ab", duration=2), entry("cb", server="charlie")],
    )
    with sshd_repaired(lab):
        run, _run_id = fault_mid_run(
            [scen, "-i", lab.inventory, *FAST],
            cwd=tmp_path,
            ready=client_started,
            inject=lambda _rid: kill_pids(sshd_pids(lab, "bravo", listener=False)),
        )
    check_fault(
        lab,
        run,
        fault="ssh: session of the client host killed mid-test",
        before=before,
        max_seconds=30,
        statuses={"ab": "failed", "cb": "ok"},
        host="bravo",
        error_has="SSH connection lost",
    )
    assert not [ln for ln in error_lines(run.proc.stderr) if "cleanup failed" in ln]


def test_sshd_killed_mid_test_and_kept_down(lab: LabHandle, tmp_path: Path) -> None:
    """Every sshd process of the server host dies while the client runs and stays dead
    until the run ends: its later tests fail at once, the others run, and the error line
    says cleanup there failed and which ``netrun cleanup`` command finishes it.

    The test running then measured to the end (the client's host is fine) and keeps its
    result: killing its server (``iperf3 -s -1``, gone by itself) rides on the host's next
    command, the final sweep, whose failure is the cleanup error line."""
    before = lab_settings(lab)
    scen = write_scenario(
        tmp_path,
        [
            entry("ab", duration=2),
            entry("cb", server="charlie"),
            entry("ac", client="charlie"),
        ],
    )
    with sshd_repaired(lab):
        run, run_id = fault_mid_run(
            [scen, "-i", lab.inventory, *FAST],
            cwd=tmp_path,
            ready=client_started,
            inject=lambda _rid: kill_pids(
                sshd_pids(lab, "alpha", listener=True) + sshd_pids(lab, "alpha", listener=False)
            ),
        )
        assert sshd_pids(lab, "alpha", listener=True) == [], "alpha's sshd came back by itself"
        fix = the_fix(run.proc.stderr, "alpha")
    assert fix == ["cleanup", "-i", str(lab.inventory), "-l", "alpha", "--run-id", run_id]
    doc = load_results(tmp_path / "out")
    assert any(e.startswith("alpha: cleanup failed (") for e in doc["errors"]), doc["errors"]
    # sshd is back: the command the error line names finishes the job.
    run_the_fix(fix, tmp_path)
    check_fault(
        lab,
        run,
        fault="ssh: sshd of the server host killed mid-test, kept down",
        before=before,
        max_seconds=30,
        statuses={"ab": "ok", "cb": "ok", "ac": "failed"},
        host="alpha",
        error_has="netrun cleanup",
    )


def processes_of_run(lab: LabHandle, run_id: str) -> list[str]:
    """Anything in the lab still running for this run (iperf3, its timeout, a fake tool)."""
    found = []
    for host in lab.hosts:
        for pid in ns_pids(lab, host):
            line = " ".join(cmdline(pid))
            if f"netrun-{run_id}" in line:
                found.append(f"{host}: {pid} {line[:400]}")
    return found


def test_hung_client_and_both_sshds_killed_end_by_their_time_bound(
    lab: LabHandle, tmp_path: Path
) -> None:
    """netrun can stop nothing: the client hangs (a stand-in that waits before starting
    iperf3) and both hosts' sshd die. The server (waiting for a client that never comes)
    and the hung client still end, by the remote time bound netrun started them under."""
    before = lab_settings(lab)
    real = shutil.which("iperf3")
    hung = f'[ "$1" = --version ] && exec {real} --version\nsleep 60\nexec {real} "$@"\n'
    deadline = 2  # the test's timeout: each remote process lives deadline + REMOTE_MARGIN
    scen = write_scenario(tmp_path, [entry("ab", timeout=deadline)])

    def kill_both(_run_id: str) -> None:
        for host in ("alpha", "bravo"):
            kill_pids(sshd_pids(lab, host, listener=True) + sshd_pids(lab, host, listener=False))

    with fake_tool(lab, "bravo", "iperf3", hung), sshd_repaired(lab):
        run, run_id = fault_mid_run(
            [scen, "-i", lab.inventory, *FAST], cwd=tmp_path, ready=client_started, inject=kill_both
        )
        ended = time.monotonic()
        left = processes_of_run(lab, run_id)
        assert any("iperf3 -s" in p for p in left), f"no orphaned server to bound: {left}"
        gone = wait_for(lambda: not processes_of_run(lab, run_id), deadline + REMOTE_MARGIN + 8)
        assert gone, (
            f"still running {time.monotonic() - ended:.0f}s on: {processes_of_run(lab, run_id)}"
        )
        assert lab_iperf3_pids(lab) == []
        fixes = [the_fix(run.proc.stderr, host) for host in ("alpha", "bravo")]
    for fix in fixes:
        run_the_fix(fix, tmp_path)
    check_fault(
        lab,
        run,
        fault="ssh: both sshds killed under a hung client (remote time bound)",
        before=before,
        max_seconds=30,
        statuses={"ab": "failed"},
        host="bravo",
        error_has="SSH connection lost",
    )


# -- a changed host key -----------------------------------------------------------------------
def accepted_logins(lab: LabHandle, host: str) -> int:
    """Successful SSH logins sshd logged on ``host`` so far."""
    log = lab.state_dir / "hosts" / host / "sshd.log"
    return log.read_text(errors="replace").count("Accepted publickey")


def test_changed_host_key_refused_before_any_command(lab: LabHandle, tmp_path: Path) -> None:
    before = lab_settings(lab)
    other = tmp_path / "other_ed25519"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True, timeout=30
    )
    alpha_ip = lab.host("alpha").mgmt_ip
    keytype, blob = other.with_suffix(".pub").read_text().split()[:2]
    lines = [
        f"{alpha_ip} {keytype} {blob}" if ln.split()[0] == alpha_ip else ln
        for ln in lab.known_hosts.read_text().splitlines()
        if ln.strip()
    ]
    known = tmp_path / "known_hosts"
    known.write_text("\n".join(lines) + "\n")
    inv = write_inventory(tmp_path, lab, all_vars={"netrun_known_hosts": str(known)})
    scen = write_scenario(tmp_path, [entry("ab"), entry("cb", server="charlie")])
    logins = accepted_logins(lab, "alpha")
    run = run_under_fault([scen, "-i", inv, *FAST], cwd=tmp_path, outdir=tmp_path / "out")
    doc = check_fault(
        lab,
        run,
        fault="ssh: changed host key",
        before=before,
        max_seconds=20,
        statuses={"ab": "failed", "cb": "ok"},
        host="alpha",
        error_has="has CHANGED",
    )
    assert f"ssh-keygen -f {known} -R {alpha_ip}" in only_error(doc, "ab")
    # Refused before login: sshd never accepted a session, so no command could run.
    assert accepted_logins(lab, "alpha") == logins
    assert "alpha" not in doc["hosts"]


def only_error(doc: dict[str, Any], name: str) -> str:
    errors = {s["error"] for s in doc["tests"] if s["name"] == name}
    assert len(errors) == 1, errors
    return str(errors.pop())


# -- sudo -n refused --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("become", "says", "fix"),
    [
        ({}, "sudo: a password is required", "set ansible_become_password, or allow NOPASSWD"),
        (
            {"ansible_become_password": "s3cret-pw"},
            "sudo: 1 incorrect password attempt",
            "sudo rejected ansible_become_password",
        ),
    ],
    ids=["no-password", "wrong-password"],
)
def test_sudo_refused(
    lab: LabHandle, tmp_path: Path, become: dict[str, str], says: str, fix: str
) -> None:
    """sudo on alpha refuses (a stand-in printing sudo's own words, exit 1, as sudo does)."""
    before = lab_settings(lab)
    inv = write_inventory(tmp_path, lab, host_vars={"alpha": {"ansible_become": True, **become}})
    scen = write_scenario(tmp_path, [entry("ab"), entry("cb", server="charlie")])
    body = f"cat >/dev/null\necho {shlex.quote(says)} >&2\nexit 1\n"
    with fake_tool(lab, "alpha", "sudo", body):
        run = run_under_fault([scen, "-i", inv, *FAST], cwd=tmp_path, outdir=tmp_path / "out")
    doc = check_fault(
        lab,
        run,
        fault=f"ssh: sudo refused ({says})",
        before=before,
        max_seconds=20,
        statuses={"ab": "failed", "cb": "ok"},
        host="alpha",
        error_has=fix,
    )
    assert f"alpha: sudo refused ({says}); " in only_error(doc, "ab")
    everything = run.proc.stdout + run.proc.stderr + (tmp_path / "out" / "results.json").read_text()
    assert "s3cret-pw" not in everything
