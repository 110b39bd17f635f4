"""netserver's stop: the whole process group, and only what was started (identity checks)."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from netrun.cleanup import undo
from netrun.hosts import proc
from netrun.tools.netperf.server import BUSY, stop_script
from tests.conftest import NETPERF_FIXTURES


def alive(pid: int) -> bool:
    return proc.process_start(pid) is not None and "Z" not in _state(pid)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "Z"


def test_stop_ends_the_leader_and_its_children(tmp_path: Path) -> None:
    """Like netserver's per-test children, the child outlives a kill of its parent alone."""
    pidfile = tmp_path / "ns.pid"
    kids = tmp_path / "kids"
    start = (
        f"timeout -k 5 60 sh -c 'sleep 60 & echo $! > {kids}; wait' >/dev/null 2>&1 </dev/null & "
        + undo.save_pid(str(pidfile))
    )
    subprocess.run(["sh", "-c", start], check=True, timeout=10)
    for _ in range(100):
        if kids.exists() and kids.read_text().strip():
            break
        time.sleep(0.05)
    leader = int(pidfile.read_text().split()[0])
    child = int(kids.read_text())
    assert alive(leader) and alive(child)
    subprocess.run(["sh", "-c", stop_script(str(pidfile))], check=True, timeout=20)
    for _ in range(100):
        if not alive(child) and not alive(leader):
            break
        time.sleep(0.05)
    assert not alive(child) and not alive(leader)


def test_stop_leaves_a_reused_pid_alone(tmp_path: Path) -> None:
    other = subprocess.Popen(["sleep", "30"])
    try:
        pidfile = tmp_path / "ns.pid"
        pidfile.write_text(f"{other.pid} 1 \n")  # a start time that is not this process's
        subprocess.run(["sh", "-c", stop_script(str(pidfile))], check=True, timeout=20)
        assert other.poll() is None
    finally:
        other.kill()
        other.wait()


def test_a_busy_port_is_told_by_netservers_own_words() -> None:
    assert BUSY in (NETPERF_FIXTURES / "netserver_busy.stderr").read_text()
    assert (NETPERF_FIXTURES / "netserver_busy.rc").read_text().strip() == "1"
