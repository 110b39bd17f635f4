"""Starting the cluster's daemons detached, and finding them again by pid and command line."""

from __future__ import annotations

import subprocess
from pathlib import Path

from netrun.errors import NetrunError
from netrun.lab.system import kill_pid, pid_matches


def start(argv: list[str], log: Path) -> int:
    """Start `argv` in its own session (it outlives netrun), output to `log`; its pid.

    nsenter and unshare exec their program, so the pid is the daemon's own."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        try:
            child = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True
            )
        except OSError as err:
            raise NetrunError(f"cannot start {argv[0]}: {err}") from err
    return child.pid


def alive(pid: int | None, *needles: str) -> bool:
    return pid_matches(pid, *needles)


def stop(pid: int | None, *needles: str, timeout: float = 15) -> bool:
    """SIGTERM (then SIGKILL) a recorded pid whose command line still has every needle."""
    return bool(pid) and kill_pid(int(pid or 0), *needles, timeout=timeout)
