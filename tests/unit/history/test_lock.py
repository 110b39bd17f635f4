"""netrun.history.lock with real processes: exactly one of two racing runs gets the lock."""

from __future__ import annotations

import multiprocessing
import os
import queue
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from netrun.errors import LockError, NetrunError
from netrun.history.lock import RunLock, lock_path_for, read_holder
from tests.conftest import ROOT

CTX = multiprocessing.get_context("fork")


def race(path: str, start: Any, done: Any, results: Any) -> None:
    """Child: try the lock as the other child does, report, hold it until both reported."""
    start.wait(timeout=10)
    lock = RunLock(path, wait=False)
    try:
        lock.acquire()
    except LockError as exc:
        results.put((os.getpid(), "refused", str(exc)))
        done.wait(timeout=10)
        return
    results.put((os.getpid(), "held", ""))
    done.wait(timeout=10)
    lock.release()


def waiter(path: str, results: Any) -> None:
    """Child: block until the lock is free, then report."""
    results.put(("trying", os.getpid()))
    with RunLock(path, wait=True):
        results.put(("held", read_holder(Path(path))))


def test_exactly_one_of_two_processes_gets_the_lock(tmp_path: Path) -> None:
    path = str(tmp_path / "history.sqlite.lock")
    start, done, results = CTX.Barrier(2), CTX.Barrier(2), CTX.Queue()
    procs = [CTX.Process(target=race, args=(path, start, done, results)) for _ in range(2)]
    for p in procs:
        p.start()
    try:
        got = [results.get(timeout=20) for _ in procs]
    finally:
        for p in procs:
            p.join(timeout=20)
    outcomes = sorted(g[1] for g in got)
    assert outcomes == ["held", "refused"]
    holder = next(g[0] for g in got if g[1] == "held")
    refused = next(g[2] for g in got if g[1] == "refused")
    assert refused == (
        f"another netrun run holds {path} (pid {holder}); wait for it or pass --wait-lock"
    )
    assert all(p.exitcode == 0 for p in procs)


def test_wait_blocks_until_the_holder_releases(tmp_path: Path) -> None:
    path = tmp_path / "h.lock"
    results = CTX.Queue()
    with RunLock(path) as lock:
        assert read_holder(path) == os.getpid() and lock.held
        child = CTX.Process(target=waiter, args=(str(path), results))
        child.start()
        assert results.get(timeout=20)[0] == "trying"
        with pytest.raises(queue.Empty):  # still blocked while we hold it
            results.get(timeout=0.5)
    try:
        kind, pid = results.get(timeout=20)
    finally:
        child.join(timeout=20)
    assert (kind, pid) == ("held", child.pid)
    assert child.exitcode == 0


def test_wait_with_timeout_gives_up(tmp_path: Path) -> None:
    path = tmp_path / "h.lock"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(path)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        began = time.monotonic()
        with pytest.raises(LockError, match=rf"\(pid {holder.pid}\) for more than 0.2s"):
            RunLock(path, wait=True, timeout=0.2).acquire()
        assert time.monotonic() - began >= 0.2
    finally:
        holder.kill()
        holder.wait(timeout=10)
    # the kernel dropped the killed holder's lock: the stale pid in the file does not matter
    with RunLock(path, wait=False):
        assert read_holder(path) == os.getpid()


HOLD = """
import sys, time
from netrun.history.lock import RunLock
with RunLock(sys.argv[1]):
    print("held", flush=True)
    time.sleep(60)
"""


def test_release_clears_the_pid_and_keeps_the_file(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "h.lock"
    lock = RunLock(path)
    with lock:
        assert path.read_text() == f"{os.getpid()}\n"
    assert path.exists() and path.read_text() == ""
    assert not lock.held
    with RunLock(path):  # free again, in the same process too
        pass


def test_beside_the_database() -> None:
    assert lock_path_for("/x/history.sqlite") == Path("/x/history.sqlite.lock")
    assert RunLock.beside(Path("/x/h.db"), wait=True).path == Path("/x/h.db.lock")


def test_unwritable_place_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(NetrunError, match=r"cannot create the lock file .*--db"):
        RunLock(blocker / "h.lock").acquire()
