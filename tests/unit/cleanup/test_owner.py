"""The run folder's owner mark, and the cleanup that spares a live owner (run in real sh)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from netrun.cleanup.owner import FILE, alive_test, mark_script
from netrun.cleanup.scripts import cleanup_script
from netrun.hosts.proc import boot_id, process_start


def sh(script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=30)


def test_mark_names_this_process(tmp_path: Path) -> None:
    workdir = tmp_path / "netrun-0123abcd"
    assert sh(mark_script(str(workdir))).returncode == 0
    assert (workdir / FILE).read_text().split() == [
        boot_id(),
        str(os.getpid()),
        str(process_start(os.getpid())),
    ]
    assert sh(f"d={workdir}; if {alive_test()}; then echo alive; fi").stdout == "alive\n"


def test_cleanup_spares_live_owners_only(tmp_path: Path) -> None:
    live, dead, unmarked = (
        tmp_path / f"netrun-{rid}" for rid in ("1111aaaa", "2222bbbb", "3333cccc")
    )
    assert sh(mark_script(str(live))).returncode == 0  # this process: alive
    dead.mkdir()
    (dead / FILE).write_text(f"{boot_id()} 4194304 1\n")  # above pid_max: never alive
    unmarked.mkdir()  # a run from before owner marks
    other_kernel = tmp_path / "netrun-4444dddd"
    other_kernel.mkdir()
    (other_kernel / FILE).write_text(f"another-boot {os.getpid()} {process_start(os.getpid())}\n")
    out = sh(cleanup_script(str(tmp_path), None, docker=None, spare_live=True)).stdout
    assert "skipped run 1111aaaa: it is still running" in out
    assert live.exists() and not dead.exists() and not unmarked.exists()
    assert not other_kernel.exists()  # a live pid of another kernel is not this one's


def test_without_spare_live_every_folder_goes(tmp_path: Path) -> None:
    live = tmp_path / "netrun-1111aaaa"
    assert sh(mark_script(str(live))).returncode == 0
    out = sh(cleanup_script(str(tmp_path), None, docker=None)).stdout
    assert f"removed {live}" in out and not live.exists()
