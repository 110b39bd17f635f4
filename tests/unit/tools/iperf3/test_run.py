"""The time bound on what netrun starts on a host, run here with sh and the real iperf3:
a server or client whose netrun vanished still ends, and the pid files keep naming
iperf3 itself (not the ``timeout`` around it), so kills and state reads stay exact."""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from netrun.cleanup.scripts import cleanup_command
from netrun.hosts.proc import boot_id, process_start, read_pid, save_pid, wait_gone
from netrun.tools.iperf3 import server as iperf3_server
from netrun.tools.iperf3.run import CLIENT_WRAPPER, Iperf3Server

needs_iperf3 = pytest.mark.skipif(shutil.which("iperf3") is None, reason="iperf3 not installed")
needs_timeout = pytest.mark.skipif(shutil.which("timeout") is None, reason="no timeout(1)")


@pytest.fixture
def started() -> Iterator[list[int]]:
    """Pids this test started; each is killed on the way out."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def identity(pidfile: Path) -> tuple[int, str | None, str]:
    """(pid, start time, boot id) of the one pid-file format (netrun.hosts.proc.save_pid)."""
    pid, start, boot = pidfile.read_text().split()
    return int(pid), start, boot


def argv_of(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode() for part in raw.split(b"\0") if part]


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def gone(pid: int, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not argv_of(pid):
            return True
        time.sleep(0.05)
    return not argv_of(pid)


def start_server(tmp_path: Path, lifetime: float | None) -> tuple[int, int, Path]:
    script = iperf3_server.server_script(
        binary="iperf3",
        bind_ip="127.0.0.1",
        ports=[free_port()],
        workdir=str(tmp_path / "work"),
        tag="t1",
        wait_s=3.0,
        lifetime=lifetime,
    )
    done = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=20)
    pid, port, _log = iperf3_server.parse_server_ready(done.stdout)
    return pid, port, tmp_path / "work" / f"t1.{port}.pid"


@needs_iperf3
@needs_timeout
def test_server_with_a_lifetime_ends_by_itself(tmp_path: Path, started: list[int]) -> None:
    pid, _port, pidfile = start_server(tmp_path, lifetime=1.2)
    started.append(pid)
    assert argv_of(pid)[:2] == ["iperf3", "-s"], "the reported pid must be iperf3 itself"
    assert identity(pidfile) == (pid, process_start(pid), boot_id())  # pid start boot
    assert argv_of(parent_of(pid))[:4] == ["timeout", "-k", "5", "2"]  # ceil(1.2)
    assert gone(pid, within=6), "a server nobody connected to outlived its lifetime"


@needs_iperf3
def test_server_without_a_lifetime_is_started_as_before(tmp_path: Path, started: list[int]) -> None:
    pid, _port, pidfile = start_server(tmp_path, lifetime=None)
    started.append(pid)
    assert argv_of(pid)[:2] == ["iperf3", "-s"] and identity(pidfile)[0] == pid
    assert "timeout" not in argv_of(parent_of(pid))[:1]


def run_wrapped(tmp_path: Path, bound: str, *argv: str) -> tuple[subprocess.Popen[str], Path]:
    pidfile = tmp_path / "run" / "c.pid"
    wrapper = ["sh", "-c", CLIENT_WRAPPER, "netrun-client", str(pidfile.parent), str(pidfile)]
    # As the transport sends it: one quoted command line for the remote shell.
    line = shlex.join([*wrapper, bound, *argv])
    proc = subprocess.Popen(["sh", "-c", line], stdout=subprocess.PIPE, text=True)
    return proc, pidfile


@needs_timeout
def test_client_wrapper_records_the_tools_pid_and_bounds_it(
    tmp_path: Path, started: list[int]
) -> None:
    proc, pidfile = run_wrapped(tmp_path, "1", "sh", "-c", "echo ready; exec sleep 30")
    started.append(proc.pid)
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    pid, start, boot = identity(pidfile)
    assert (start, boot) == (process_start(pid), boot_id())
    started.append(pid)
    deadline = time.monotonic() + 5
    while argv_of(pid) != ["sleep", "30"] and time.monotonic() < deadline:
        time.sleep(0.02)  # the tool's sh execs sleep under the same pid
    assert argv_of(pid) == ["sleep", "30"], "the pid file must name the tool, not timeout"
    assert proc.wait(timeout=10) == 124  # timeout(1): the bound fired
    assert gone(pid, within=2)
    assert oct(pidfile.parent.stat().st_mode & 0o777) == "0o700"


def test_client_wrapper_passes_output_and_status_through(tmp_path: Path) -> None:
    proc, _pidfile = run_wrapped(tmp_path, "30", "sh", "-c", "echo 'a b'; exit 3")
    out, _ = proc.communicate(timeout=10)
    assert (out, proc.returncode) == ("a b\n", 3)


def test_client_wrapper_missing_tool_exits_127(tmp_path: Path) -> None:
    proc, _pidfile = run_wrapped(tmp_path, "30", "iperf3-not-installed-here")
    proc.communicate(timeout=10)
    assert proc.returncode == 127


def test_cleanup_command_is_quoted_for_a_shell() -> None:
    command = cleanup_command(Path("/srv/lab inv.yaml"), "node36", "1a2b3c4d")
    assert command == "netrun cleanup -i '/srv/lab inv.yaml' -l node36 --run-id 1a2b3c4d"
    assert shlex.split(command)[3] == "/srv/lab inv.yaml"


def test_the_next_servers_reading_waits_for_the_recorded_server_to_exit(tmp_path: Path) -> None:
    """The start that reads after the test before waits for that test's server, whose pid
    file holds ``pid start boot``: read as a whole word (``$(cat ...)``) the wait ended at
    once and the reading fell inside the test's window (test_round_trips caught it)."""
    server = Iperf3Server(None, bind_ip="192.0.2.1", workdir=str(tmp_path), tag="t1")  # type: ignore[arg-type]
    server.read, server.after, server.after_s = "echo READ", str(tmp_path / "t0.pid"), 5.0
    assert read_pid(server.after) in server.script()
    pidfile = shlex.quote(str(tmp_path / "t0.pid"))
    script = f"sleep 0.6 & {save_pid(pidfile)}; {read_pid(pidfile)}{wait_gone(5.0, 0.02)}echo gone"
    began = time.monotonic()
    out = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=10)
    assert out.stdout.strip() == "gone" and time.monotonic() - began >= 0.5, out
