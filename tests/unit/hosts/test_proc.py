"""netrun.hosts.proc's sh, run for real by /bin/sh against processes of this test's own, and the
three scripts built on its wait (a server's kill, an undo record, the early sweep)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from netrun.hosts import proc
from netrun.hosts.proc import kill_script


def sh(script: str, timeout: float = 20) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["/bin/sh", "-c", script], capture_output=True, text=True, timeout=timeout
    )


def timed(script: str) -> tuple[float, str]:
    started = time.monotonic()
    out = sh(script)
    assert out.returncode == 0, out.stderr
    return time.monotonic() - started, out.stdout


@pytest.fixture
def stubborn() -> Iterator[subprocess.Popen[bytes]]:
    """A sleep that ignores SIGTERM (ignored signals stay ignored across exec)."""
    child = subprocess.Popen(["/bin/sh", "-c", "trap '' TERM; exec sleep 30"])
    deadline = time.monotonic() + 5
    # until sleep itself runs: sh's own command line names sleep before its trap is set
    while Path(f"/proc/{child.pid}/cmdline").read_bytes().split(b"\0")[0] != b"sleep":
        assert time.monotonic() < deadline
        time.sleep(0.01)
    try:
        yield child
    finally:
        if child.poll() is None:
            child.kill()
        child.wait(timeout=10)


def test_the_wait_ends_when_the_process_exits() -> None:
    child = subprocess.Popen(["sleep", "0.3"])
    try:
        took, out = timed(f"p={child.pid}; {proc.wait_gone(10)} echo $i")
        # our child is a zombie once it exits (we reap it below): that ends the wait
        assert 0.2 < took < 3 and int(out) < 500
    finally:
        child.wait(timeout=10)


def test_the_wait_ends_at_once_for_no_pid_a_gone_one_or_a_zombie() -> None:
    assert timed(f"p=; {proc.wait_gone(10)} echo $i")[1] == "0\n"
    assert timed(f"p=4194304; {proc.wait_gone(10)} echo $i")[1] == "0\n"  # above pid_max
    child = subprocess.Popen(["true"])
    try:
        while Path(f"/proc/{child.pid}/stat").read_text().split(") ")[1][0] != "Z":
            time.sleep(0.01)
        took, out = timed(f"p={child.pid}; {proc.wait_gone(10)} echo $i")
        assert out == "0\n" and took < 1
    finally:
        child.wait(timeout=10)


def test_the_wait_is_bounded_and_kills_only_when_asked(
    stubborn: subprocess.Popen[bytes],
) -> None:
    took, out = timed(f"p={stubborn.pid}; {proc.wait_gone(0.3, 0.05)} echo $i")
    assert out == "6\n" and 0.25 < took < 3
    assert stubborn.poll() is None
    took, _ = timed(f"p={stubborn.pid}; {proc.wait_gone(0.3, then_kill='-KILL')}")
    assert stubborn.wait(timeout=5) == -signal.SIGKILL


def test_the_bound_counts_whole_polls() -> None:
    """1 s at 0.02 s is 50 looks (the kill script's bound), 2 s 100 (an undo record's)."""
    assert "-lt 50 ]" in proc.wait_gone(1.0) and "-lt 100 ]" in proc.wait_gone(2)
    assert "-lt 3 ]" in proc.wait_gone(0.05, 0.02)  # a part poll is a whole one
    assert "kill" not in proc.wait_gone(1.0)


def test_kill_script_kills_what_ignores_sigterm_after_its_second(
    stubborn: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    pidfile = tmp_path / "t.pid"
    assert sh(proc.save_pid(str(pidfile), str(stubborn.pid))).returncode == 0
    took, _ = timed(kill_script(str(pidfile)))
    assert stubborn.wait(timeout=5) == -signal.SIGKILL
    assert 0.9 < took < 5 and not pidfile.exists()


def test_an_undo_record_kills_what_ignores_sigterm_after_its_grace(
    stubborn: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    pidfile = tmp_path / "p"
    assert sh(proc.save_pid(str(pidfile), str(stubborn.pid))).returncode == 0
    saved = [str(stubborn.pid), proc.process_start(stubborn.pid), proc.boot_id()]
    assert pidfile.read_text().split() == saved
    took, _ = timed(proc.kill_recorded(str(pidfile), grace=0.4))
    assert stubborn.wait(timeout=5) == -signal.SIGKILL and 0.35 < took < 5


def test_an_undo_record_of_a_process_that_obeys_sends_no_sigkill(tmp_path: Path) -> None:
    """SIGKILL only when the grace ran out: a pid that is gone (and may be reused at any
    moment) is never signalled again."""
    child = subprocess.Popen(["sleep", "30"])
    pidfile = tmp_path / "p"
    try:
        assert sh(proc.save_pid(str(pidfile), str(child.pid))).returncode == 0
        script = proc.kill_recorded(str(pidfile))
        last = '{ kill -s KILL -- "-$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; }; true'
        assert script.endswith(f"[ $i -lt 100 ] || {last}")
        took, _ = timed(script)
        assert took < 1 and child.wait(timeout=5) == -signal.SIGTERM
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def test_the_start_time_and_boot_id_read_as_python_reads_them() -> None:
    pid = os.getpid()
    assert sh(f"p={pid}; {proc.start_time()}").stdout.strip() == proc.process_start(pid)
    assert sh(f"x={pid}; {proc.start_time('$x')}").stdout.strip() == proc.process_start(pid)
    assert sh(f"p=4194304; {proc.start_time()}").stdout == ""
    assert sh(proc.READ_BOOT_ID).stdout.strip() == proc.boot_id() != ""
    assert proc.process_start(4194304) is None


def test_until_ready_ends_when_ready_when_the_process_is_gone_or_at_its_bound(
    tmp_path: Path,
) -> None:
    """The start wait of iperf2's server, coturn, the TURN tunnel and turncat."""
    flag, pidfile = tmp_path / "ready", tmp_path / "p"
    ready = f"[ -e {flag} ] && echo READY && exit 0"
    child = subprocess.Popen(["/bin/sh", "-c", f"sleep 0.3; touch {flag}; exec sleep 30"])
    try:
        pidfile.write_text(f"{child.pid} 1\n")  # as proc.save_pid writes it: pid, start
        took, out = timed(proc.until_ready(str(pidfile), ready, 10) + "echo NOT_READY")
        assert out == "READY\n" and 0.2 < took < 5
        flag.unlink()
        took, out = timed(proc.until_ready(str(pidfile), ready, 0.3) + "echo NOT_READY")
        assert out == "NOT_READY\n" and 0.25 < took < 5
    finally:
        child.kill()
        child.wait()
    pidfile.write_text("4194304 1\n")  # above pid_max: gone
    took, out = timed(proc.until_ready(str(pidfile), ready, 10) + "echo NOT_READY")
    assert out == "NOT_READY\n" and took < 1
    assert "-lt 300 ]" in proc.until_ready("p", "true", 15.0)  # 15 s at 0.05 s
