"""The fault suite, data-path faults: a link taken down, iperf3 stopped, a port already taken.

Each test asserts the suite's four promises through ``check_fault``: a bounded wall time,
the test's status in results.json, one error line naming the host, and nothing left on any
lab host. Faults are injected from here while netrun runs: by ``ip link`` in the host's
namespace, or by a signal to the iperf3 pid that netrun recorded in its own run folder.
Every run gets ``--db`` in the test's tmp folder (the default history and its lock are
shared with everyone on this machine).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import IPERF3_FIXTURES
from tests.integration.conftest import LabHandle, lab_iperf3_pids
from tests.integration.helpers import (
    FaultRun,
    check_fault,
    entry,
    lab_inventory_data,
    lab_settings,
    load_results,
    netrun_process,
    only_test,
    run_dirs,
    run_under_fault,
    wait_for,
    write_scenario,
)

pytestmark = [pytest.mark.integration, pytest.mark.faults]

#: Seconds of traffic, and netrun's deadline for the client (the scenario's ``timeout``).
DURATION = 2
DEADLINE = 6
#: From start to exit: connecting, the deadline, the kill and the sweep.
MAX_SECONDS = DEADLINE + 12
#: A port for the busy tests, away from the 5201.. range netrun picks from by default.
BUSY_PORT = 5251


def args(tmp: Path, scenario: Path, lab: LabHandle) -> list[Any]:
    return [scenario, "-i", lab.inventory, "-q", "-o", "out", "--db", tmp / "history.sqlite"]


def data_iface(lab: LabHandle, host: str) -> str:
    return str(lab_inventory_data(lab)["all"]["hosts"][host]["netrun_iface"])


def measuring_dirs(out: Path) -> list[Path] | None:
    """The run's folders on the hosts (each host has its own remote tmp) once the first
    client iperf3 has recorded its pid."""
    try:
        run_id = load_results(out)["run_id"]
    except (OSError, ValueError, KeyError):
        return None
    dirs = run_dirs(run_id)
    return dirs if any((d / "t0r1.client.pid").exists() for d in dirs) else None


def run_injecting(
    lab: LabHandle, tmp: Path, scenario: Path, inject: Callable[[list[Path]], None]
) -> FaultRun:
    """Run netrun; once its client runs, ``inject(run folder)``; time the run to its exit."""
    started = time.monotonic()
    with netrun_process(args(tmp, scenario, lab), cwd=tmp) as proc:
        run_dir = wait_for(lambda: measuring_dirs(tmp / "out"), 30)
        assert run_dir, "the test never started measuring"
        time.sleep(0.3)  # let iperf3 move some data first
        inject(run_dir)
        stdout, stderr = proc.communicate(timeout=MAX_SECONDS + 30)
    done = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    return FaultRun(done, time.monotonic() - started, tmp / "out")


def recorded_pid(lab: LabHandle, pidfile: Path) -> int:
    """A pid netrun recorded, checked to be an iperf3 in the lab (never anything else)."""
    pid = int(pidfile.read_text().split()[0])  # pid start boot (netrun.hosts.proc.save_pid)
    assert pid in lab_iperf3_pids(lab), f"{pidfile} holds {pid}, not a lab iperf3"
    return pid


# -- the data link goes down ----------------------------------------------------------------
def test_data_link_down_mid_test_is_cut_at_the_deadline(lab: LabHandle, tmp_path: Path) -> None:
    """The client waits on a dead path forever; netrun kills it by pid at its deadline."""
    ns, iface = lab.host("alpha").namespace, data_iface(lab, "alpha")
    before = lab_settings(lab)
    scen = write_scenario(tmp_path, [entry("ab", duration=DURATION, timeout=DEADLINE)])

    def link_down(_run_dirs: list[Path]) -> None:
        subprocess.run(["ip", "-n", ns, "link", "set", iface, "down"], check=True, timeout=10)

    try:
        run = run_injecting(lab, tmp_path, scen, link_down)
    finally:
        subprocess.run(["ip", "-n", ns, "link", "set", iface, "up"], check=True, timeout=10)
    doc = check_fault(
        lab,
        run,
        fault="data link down mid-test",
        before=before,
        max_seconds=MAX_SECONDS,
        statuses={"ab": "failed"},
        host="bravo",
        error_has=f"did not finish within {DEADLINE}s",
    )
    assert run.elapsed >= DEADLINE  # it did wait for the deadline, not give up at once
    err = only_test(doc, "ab")["error"]
    assert err.startswith("bravo: iperf3 client to alpha "), err
    assert f"killed it by pid: lost the data path: {iface} on alpha is down" in err, err


# -- iperf3 stopped with SIGSTOP ------------------------------------------------------------
@pytest.mark.parametrize("end", ["server", "client"])
def test_iperf3_stopped_mid_test_is_killed(lab: LabHandle, tmp_path: Path, end: str) -> None:
    """A stopped process never sees SIGTERM; netrun must still end it (CONT, then KILL)."""
    before = lab_settings(lab)
    scen = write_scenario(tmp_path, [entry("ab", duration=DURATION, timeout=DEADLINE)])
    stopped: list[int] = []

    def stop(run_dirs_: list[Path]) -> None:
        name = "t0r1.client.pid" if end == "client" else "t0r1.[0-9]*.pid"
        (pidfile,) = [f for d in run_dirs_ for f in d.glob(name)]
        pid = recorded_pid(lab, pidfile)
        os.kill(pid, signal.SIGSTOP)
        stopped.append(pid)

    try:
        run = run_injecting(lab, tmp_path, scen, stop)
        host = "alpha" if end == "server" else "bravo"
        doc = check_fault(
            lab,
            run,
            fault=f"iperf3 {end} stopped (SIGSTOP)",
            before=before,
            max_seconds=MAX_SECONDS,
            statuses={"ab": "failed"},
            host=host,
            error_has=f"on {host} was stopped (SIGSTOP)",
        )
    finally:  # only if netrun failed to: the pid is still a stopped lab iperf3 of this test
        for pid in stopped:
            if pid in lab_iperf3_pids(lab):
                os.kill(pid, signal.SIGKILL)
    err = only_test(doc, "ab")["error"]
    assert err.startswith("bravo: iperf3 client to alpha ") and "killed it by pid" in err, err


# -- the port is busy -------------------------------------------------------------------------
IDLE_CLIENT = """
import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10)
print("connected", flush=True)
sys.stdin.read()
"""


def listening(ns: str, port: int) -> bool:
    ss = subprocess.run(
        ["ip", "netns", "exec", ns, "ss", "-ltnH", f"sport = :{port}"],
        capture_output=True,
        text=True,
        timeout=10,
    )
    return bool(ss.stdout.strip())


def established(ns: str, port: int) -> list[str]:
    """The namespace's established TCP connections to ``port``, with their processes."""
    ss = subprocess.run(
        ["ip", "netns", "exec", ns, "ss", "-tnpH", "state", "established", f"dport = :{port}"],
        capture_output=True,
        text=True,
        timeout=10,
    )
    return ss.stdout.splitlines()


@pytest.fixture
def foreign_server(lab: LabHandle) -> Iterator[tuple[subprocess.Popen[str], subprocess.Popen[str]]]:
    """Someone else's iperf3 server on alpha's BUSY_PORT, held busy by an idle connection
    from bravo (iperf3 3.12 then waits on that client: a new one hangs, it is never told
    "busy"). Both are this test's own processes, stopped by pid at the end."""
    alpha, bravo = lab.host("alpha"), lab.host("bravo")
    server = subprocess.Popen(
        ["ip", "netns", "exec", alpha.namespace, "iperf3", "-s", "-p", str(BUSY_PORT)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    idle: subprocess.Popen[str] | None = None
    try:
        assert wait_for(lambda: listening(alpha.namespace, BUSY_PORT), 10), "no foreign server"
        idle = subprocess.Popen(
            ["ip", "netns", "exec", bravo.namespace, sys.executable, "-c", IDLE_CLIENT,
             alpha.data_ip, str(BUSY_PORT)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        assert idle.stdout is not None and idle.stdout.readline().strip() == "connected"
        yield server, idle
    finally:
        if idle is not None:
            idle.kill()
            idle.communicate(timeout=10)
        server.kill()
        server.wait(timeout=10)


def test_busy_port_is_retried_then_reported_and_foreign_server_untouched(
    lab: LabHandle,
    tmp_path: Path,
    foreign_server: tuple[subprocess.Popen[str], subprocess.Popen[str]],
) -> None:
    """Our server cannot have the port: retried with backoff, then one line with the fix."""
    server, idle = foreign_server
    alpha, bravo = lab.host("alpha"), lab.host("bravo")
    before = lab_settings(lab)
    scen = write_scenario(tmp_path, [entry("ab", port=BUSY_PORT, busy_retries=2, busy_backoff=0.3)])
    run = run_under_fault(args(tmp_path, scen, lab), cwd=tmp_path, outdir=tmp_path / "out")
    # Not ours: the foreign server and its idle client are exactly as they were.
    assert server.poll() is None and idle.poll() is None
    assert listening(alpha.namespace, BUSY_PORT)
    connections = established(bravo.namespace, BUSY_PORT)
    assert len(connections) == 1, connections  # the idle client's alone
    foreign_pid = server.pid  # `ip netns exec` execs iperf3: the same pid
    server.kill()
    server.wait(timeout=10)
    doc = check_fault(
        lab,
        run,
        fault="port held by a foreign iperf3 server",
        before=before,
        max_seconds=20,
        statuses={"ab": "failed"},
        host="alpha",
        error_has=f"another iperf3 (pid {foreign_pid}) is using port {BUSY_PORT} on alpha",
    )
    assert run.elapsed >= 0.3 + 0.6  # it backed off twice before giving up
    err = only_test(doc, "ab")["error"]
    assert "(3 tries in " in err and err.endswith("stop it or set port: to a free one"), err


def test_server_answering_busy_is_retried_then_reported(lab: LabHandle, tmp_path: Path) -> None:
    """The other shape: the client reaches the server and hears "the server is busy running
    a test" (real iperf3 3.12 output, captured by tests/fixtures/capture.sh), as when another
    client got to our one-off server first. A fake iperf3 on bravo prints it as a client."""
    busy = IPERF3_FIXTURES / "busy.stdout"
    tries = tmp_path / "tries"
    fake = lab.bin_dir("bravo") / "iperf3"
    real = "/usr/bin/iperf3"
    fake.write_text(
        "#!/bin/sh\n"
        f'case " $* " in *" -c "*) ;; *) exec {real} "$@" ;; esac\n'
        f"echo try >>{tries}\n"
        f"cat {busy}\n"
    )
    fake.chmod(0o755)
    before = lab_settings(lab)
    scen = write_scenario(tmp_path, [entry("ab", busy_retries=2, busy_backoff=0.2)])
    try:
        run = run_under_fault(args(tmp_path, scen, lab), cwd=tmp_path, outdir=tmp_path / "out")
    finally:
        fake.unlink()
    doc = check_fault(
        lab,
        run,
        fault="server answers busy",
        before=before,
        max_seconds=20,
        statuses={"ab": "failed"},
        host="alpha",
        error_has="another iperf3 is using port",
    )
    assert tries.read_text().split() == ["try"] * 3  # the first run and two retries
    err = only_test(doc, "ab")["error"]
    assert err.startswith("alpha: another iperf3 is using port 52"), err
    assert err.endswith("stop it or set port: to a free one"), err
