"""netrun.hosts.lease's scripts run for real with sh on this machine: a run holding a host's
lease refuses another, names it, lets go at once when released, and a crashed holder
(its connection gone) blocks nobody.

Each test keeps its lease files in its own folder (``folder``): helpers and CI jobs on
one machine share /tmp and this kernel's network namespace.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from netrun.hosts import lease

A, B = "aaaa1111", "bbbb2222"
WHO_A = "run aaaa1111 from ctl-a (user alice, pid 1, started 2026-12-03T10:00:00Z)"


def sh(script: str) -> tuple[str, float]:
    """Run ``script`` with sh; its output and how long it took."""
    started = time.monotonic()
    res = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=30)
    return res.stdout, time.monotonic() - started


class Holder:
    """A run's connection to the host: a process whose sh child takes the lease and
    which lives on (as sshd's session process does) until it is killed."""

    def __init__(self, script: str) -> None:
        code = (
            "import subprocess, sys, time\n"
            "r = subprocess.run(['sh', '-c', sys.argv[1]], capture_output=True, text=True)\n"
            "print(r.stdout, flush=True)\n"
            "time.sleep(120)\n"
        )
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code, script], stdout=subprocess.PIPE, text=True
        )
        assert self.proc.stdout is not None
        self.said = self.proc.stdout.readline()

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)


@pytest.fixture
def holders() -> Iterator[list[Holder]]:
    made: list[Holder] = []
    try:
        yield made
    finally:
        for holder in made:
            holder.kill()


def take(folder: Path, run_id: str, who: str = "") -> str:
    out, _ = sh(lease.acquire_script(run_id, who or f"run {run_id}", str(folder)) + "; echo after")
    return out


def test_a_held_lease_refuses_another_run_naming_the_holder(
    tmp_path: Path, holders: list[Holder]
) -> None:
    holders.append(Holder(lease.acquire_script(A, WHO_A, str(tmp_path))))
    assert lease.parse(holders[0].said) == lease.Answer("taken")
    out, took = sh(lease.acquire_script(B, "run bbbb2222", str(tmp_path)) + "; echo after")
    assert lease.parse(out) == lease.Answer("held", WHO_A)
    assert "after" not in out, "what follows a refused lease must not run"
    assert took < 2, "a live holder refuses at once"


def test_the_same_run_again_finds_the_lease_its_own(tmp_path: Path, holders: list[Holder]) -> None:
    holders.append(Holder(lease.acquire_script(A, WHO_A, str(tmp_path))))
    out = take(tmp_path, A)
    assert lease.parse(out) == lease.Answer("ours") and "after" in out


def test_a_released_lease_is_free_at_once(tmp_path: Path, holders: list[Holder]) -> None:
    holders.append(Holder(lease.acquire_script(A, WHO_A, str(tmp_path))))
    sh(lease.release_script(A, str(tmp_path)))
    out, took = sh(lease.acquire_script(B, "run bbbb2222", str(tmp_path)))
    assert lease.parse(out) == lease.Answer("taken")
    assert took < 1, took
    assert not list(tmp_path.glob(f"*.{A}")) and list(tmp_path.glob(f"*.{B}"))
    sh(lease.release_script(B, str(tmp_path)))


def test_a_crashed_holders_lease_blocks_nobody(tmp_path: Path, holders: list[Holder]) -> None:
    """SIGKILL of the connection (the controller, or sshd once its TCP peer is gone): the
    watcher sees it within POLL_S and the next run takes the lease."""
    holders.append(Holder(lease.acquire_script(A, WHO_A, str(tmp_path))))
    holders[0].kill()
    out, took = sh(lease.acquire_script(B, "run bbbb2222", str(tmp_path)))
    assert lease.parse(out) == lease.Answer("taken")
    assert took < lease.STALE_WAIT_S
    deadline = time.monotonic() + 5
    while list(tmp_path.glob(f"*.{A}")) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not list(tmp_path.glob(f"*.{A}")), "the crashed holder's file should go"
    sh(lease.release_script(B, str(tmp_path)))


def test_cleanup_removes_only_files_of_holders_that_are_gone(
    tmp_path: Path, holders: list[Holder]
) -> None:
    holders.append(Holder(lease.acquire_script(A, WHO_A, str(tmp_path))))
    live = next(tmp_path.glob(f"*.{A}"))
    dead = live.with_name(live.name.replace(A, B))
    dead.write_text("run bbbb2222\n999999 1 999999\n")
    sh(lease.release_script(None, str(tmp_path)))
    assert live.exists() and not dead.exists()
    out = take(tmp_path, B)
    assert lease.parse(out) == lease.Answer("held", WHO_A)


def test_other_users_can_read_the_lease_whatever_the_holders_umask(
    tmp_path: Path, holders: list[Holder]
) -> None:
    holders.append(Holder("umask 077; " + lease.acquire_script(A, WHO_A, str(tmp_path))))
    modes = {p.name.rsplit(".", 1)[-1]: p.stat().st_mode & 0o777 for p in tmp_path.iterdir()}
    assert all(mode & 0o044 == 0o044 for mode in modes.values()), modes


@pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("runuser"), reason="needs root and runuser"
)
def test_a_run_of_another_user_is_refused_then_takes_the_lease(holders: list[Holder]) -> None:
    """Two controllers logging in as two users: the lock file is another's (read, never
    written, by the second), the who line too."""
    folder = Path(tempfile.mkdtemp(dir="/tmp"))
    try:
        folder.chmod(0o1777)  # as /tmp itself
        holders.append(Holder(lease.acquire_script(A, WHO_A, str(folder))))
        other = ["runuser", "-u", "nobody", "--", "sh", "-c"]
        script = lease.acquire_script(B, "run bbbb2222", str(folder))
        res = subprocess.run([*other, script], capture_output=True, text=True, timeout=30)
        assert lease.parse(res.stdout) == lease.Answer("held", WHO_A), res
        sh(lease.release_script(A, str(folder)))
        res = subprocess.run([*other, script], capture_output=True, text=True, timeout=30)
        assert lease.parse(res.stdout) == lease.Answer("taken"), res
        subprocess.run([*other, lease.release_script(B, str(folder))], timeout=30)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_the_folder_the_lease_lives_in_is_shared_by_every_user_of_a_host() -> None:
    """A fixed folder (not TMPDIR, which differs per user), keyed by the host's identity."""
    script = lease.acquire_script(A, WHO_A)
    assert "/tmp/netrun-lease." in script and "TMPDIR" not in script
    assert "/proc/self/ns/net" in lease.key_script()


def test_a_who_line_with_shell_characters_stays_one_quoted_line(
    tmp_path: Path, holders: list[Holder]
) -> None:
    who = "run aaaa1111 from $(touch x) `id` 'q' \"d\" ; rm -rf /"
    holders.append(Holder(lease.acquire_script(A, who, str(tmp_path))))
    out = take(tmp_path, B)
    assert lease.parse(out) == lease.Answer("held", who)


def test_parse_and_bad_run_ids() -> None:
    assert lease.parse("x\nNETRUN_LEASE none: the host has no flock command\n") == lease.Answer(
        "none", "the host has no flock command"
    )
    assert lease.parse("no answer") is None
    shown = lease.parse("NETRUN_LEASE held run \x1b[31mred\x07 " + "x" * 400)
    assert (
        shown is not None and shown.detail.startswith("run [31mred x") and len(shown.detail) == 300
    )
    with pytest.raises(ValueError):
        lease.acquire_script("$(reboot)", "x")
    with pytest.raises(ValueError):
        lease.release_script("../x")
    assert lease.holder("abcd1234").startswith("run abcd1234 from ")


def test_a_lease_held_by_this_same_run_is_ours() -> None:
    """Two inventory names for one host probe it at once: the second finds the lease the
    first just took, held by this same run (test_trusted_figures_lab's bravo2)."""
    said = "NETRUN_LEASE held run e81a99a8 from vm (user root, pid 22459, started now)\n"
    assert lease.parse(said, "e81a99a8") == lease.Answer("ours", said.split(" ", 2)[2].strip())
    assert lease.parse(said, "0badc0de").state == "held"  # type: ignore[union-attr]
    assert lease.parse(said).state == "held"  # type: ignore[union-attr]
