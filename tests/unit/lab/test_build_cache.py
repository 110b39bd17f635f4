"""A build past its deadline leaves no process behind (issue 40: an orphaned `go build`
kept compiling for minutes after `lab turncat` gave up on it)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from netrun.errors import NetrunError
from netrun.lab.system import run_build


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


def test_a_build_past_its_deadline_takes_its_children_along(tmp_path: Path) -> None:
    pidfile = tmp_path / "child"
    script = f"sleep 30 & echo $! > {pidfile}; wait"
    with pytest.raises(NetrunError, match="took over 1s"):
        run_build(["sh", "-c", script], timeout=1)
    child = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(child)


def test_a_build_that_ends_gives_its_output() -> None:
    done = run_build(["sh", "-c", "echo out; echo err >&2; exit 3"], timeout=10)
    assert (done.returncode, done.stdout, done.stderr) == (3, "out\n", "err\n")
