"""A node's own cgroup root in every hierarchy: made before its kubelet starts, and
emptied and removed when the cluster goes.

Two kubelets on one cgroup root kill each other's pods, so each node has its own
(``/<namespace>``), under every cgroup v1 controller and the hybrid unified hierarchy.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

MOUNTINFO = Path("/proc/self/mountinfo")


def hierarchies() -> list[Path]:
    """Every mounted cgroup (v1 and v2) hierarchy's mount point."""
    found = []
    for line in MOUNTINFO.read_text().splitlines():
        left, _, right = line.partition(" - ")
        fstype = right.split()[0] if right else ""
        if fstype in ("cgroup", "cgroup2"):
            found.append(Path(left.split()[4]))
    return found


def create(root: str) -> None:
    """``root`` under every hierarchy; cpuset's needs its parent's cpus and mems first."""
    for top in hierarchies():
        path = top / root.lstrip("/")
        path.mkdir(exist_ok=True)
        for name in ("cpuset.cpus", "cpuset.mems"):
            mine = path / name
            if mine.exists() and not mine.read_text().strip():
                mine.write_text((top / name).read_text())


def _dirs(top: Path, root: str) -> list[Path]:
    base = top / root.lstrip("/")
    if not base.is_dir():
        return []
    found = [Path(d) for d, _, _ in os.walk(base)]
    return sorted(found, key=lambda p: len(p.parts), reverse=True)


def pids(root: str) -> set[int]:
    found: set[int] = set()
    for top in hierarchies():
        for path in _dirs(top, root):
            with contextlib.suppress(OSError, ValueError):
                found |= {int(p) for p in (path / "cgroup.procs").read_text().split()}
    return found


def remove(root: str, timeout: float = 20) -> list[str]:
    """Kill what still runs under ``root`` (the node's pods), then remove its cgroups,
    deepest first; returns the directories removed."""
    deadline = time.monotonic() + timeout
    while (left := pids(root)) and time.monotonic() < deadline:
        for pid in left:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.2)
    removed = []
    for top in hierarchies():
        for path in _dirs(top, root):
            while True:
                try:
                    path.rmdir()
                    removed.append(str(path))
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.2)
    return removed
