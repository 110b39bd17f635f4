"""Small system helpers for the lab: run a command, poll until ready, check a pid."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from netrun.errors import NetrunError, tail

NETNS_DIR = Path("/run/netns")


def run_build(argv: Sequence[str], *, timeout: float) -> subprocess.CompletedProcess[str]:
    """A build script, in a session of its own: past ``timeout`` (or on any interrupt)
    its whole process group is killed, so no compiler it started (``go build``, make's
    children) outlives it as an orphan. NetrunError when it took too long."""
    with subprocess.Popen(
        list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    ) as proc:  # fmt: skip
        try:
            out, err = proc.communicate(timeout=timeout)
        except BaseException as exc:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            if isinstance(exc, subprocess.TimeoutExpired):
                raise NetrunError(f"{' '.join(argv)} took over {timeout:g}s") from exc
            raise
    return subprocess.CompletedProcess(list(argv), proc.returncode, out, err)


def run(
    argv: Sequence[str],
    *,
    check: bool = True,
    timeout: float = 60,
    input: bytes | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run a local command (no shell); a failure raises NetrunError naming it and its output.

    `env` adds variables to this process's environment for the command.
    """
    try:
        done = subprocess.run(
            list(argv),
            capture_output=True,
            text=input is None,
            input=input,
            timeout=timeout,
            check=False,
            env={**os.environ, **env} if env else None,
        )
    except FileNotFoundError as err:
        raise NetrunError(f"{argv[0]} not found: install it") from err
    except subprocess.TimeoutExpired as err:
        raise NetrunError(f"{' '.join(argv)} took over {timeout:g}s") from err
    if check and done.returncode != 0:
        out = done.stderr if isinstance(done.stderr, str) else done.stderr.decode(errors="replace")
        raise NetrunError(f"{' '.join(argv)} exited {done.returncode}: {tail(out)}")
    return done


def ip_json(*args: str, netns: str | None = None) -> list[dict[str, Any]]:
    """`ip -j ...` parsed; an empty list when the object (or namespace) does not exist."""
    argv = ["ip", "-j"] + (["-n", netns] if netns else []) + list(args)
    done = run(argv, check=False)
    if done.returncode != 0 or not done.stdout.strip():
        return []
    data = json.loads(done.stdout)
    return [entry for entry in data if entry]


def netns_exists(name: str) -> bool:
    return (NETNS_DIR / name).exists()


def netns_inode(name: str) -> int | None:
    """The inode that identifies namespace `name` (compare with /proc/<pid>/ns/net)."""
    try:
        return os.stat(NETNS_DIR / name).st_ino
    except OSError:
        return None


def pid_netns_inode(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino
    except OSError:
        return None


def cmdline(pid: int) -> list[str]:
    """The process's argv, or [] when it is gone (or a zombie)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def pid_matches(pid: int | None, *needles: str) -> bool:
    """True when `pid` is alive and its command line contains every needle.

    This guards against killing an unrelated process that reused a recorded pid.
    """
    if not pid:
        return False
    line = " ".join(cmdline(pid))
    return bool(line) and all(needle in line for needle in needles)


def read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def kill_pid(pid: int, *needles: str, timeout: float = 10) -> bool:
    """SIGTERM a recorded pid (after checking its cmdline), SIGKILL if it lingers."""
    if not pid_matches(pid, *needles):
        return False
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    if wait_until(lambda: not cmdline(pid), timeout=timeout, what="", raise_=False):
        return True
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return True
    wait_until(lambda: not cmdline(pid), timeout=5, what="", raise_=False)
    return True


def wait_until(
    check: Callable[[], bool],
    *,
    timeout: float,
    what: str,
    raise_: bool = True,
    interval: float = 0.05,
) -> bool:
    """Poll `check` until it is true (backing off to 0.5 s); raise after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        if check():
            return True
        if time.monotonic() >= deadline:
            if raise_:
                raise NetrunError(f"{what}: not ready after {timeout:g}s")
            return False
        time.sleep(interval)
        interval = min(interval * 1.5, 0.5)


def require_root() -> None:
    if os.geteuid() != 0:
        raise NetrunError("netrun lab must run as root: sudo netrun lab ...")


def require_tools(tools: dict[str, str]) -> None:
    """Raise naming every missing tool and the package that provides it."""
    missing = [
        f"{tool} not found: apt-get install {pkg}"
        for tool, pkg in tools.items()
        if not (Path(tool).exists() if tool.startswith("/") else shutil.which(tool))
    ]
    if missing:
        raise NetrunError("; ".join(missing))


def pids_in_netns(name: str) -> list[int]:
    """Processes living in network namespace `name` (matched by its inode)."""
    inode = netns_inode(name)
    if inode is None:
        return []
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and pid_netns_inode(int(entry.name)) == inode:
            found.append(int(entry.name))
    return found


def end_netns_processes(name: str, grace: float = 1.0) -> list[int]:
    """End what still runs inside a lab namespace before the namespace goes.

    Everything there was started through the lab's own sshd or dockerd, so it is the lab's:
    an SSH session whose controller vanished (its TCP peer deleted with a veth, so no FIN
    ever comes) would otherwise outlive the lab forever. SIGTERM, then SIGKILL after
    ``grace`` seconds.
    """
    pids = pids_in_netns(name)
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(cmdline(pid) for pid in pids):
        time.sleep(0.02)
    for pid in pids:
        if cmdline(pid):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    return pids
