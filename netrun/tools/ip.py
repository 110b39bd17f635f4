"""The ip and sysfs vocabulary of MTU changes: read, set and check a path's MTU in sh.

Shared by the run's MTU settings (netrun.run.mtu) and the container modes, which give a
container's interface the overlay's MTU (netrun.modes.docker.mtu).
"""

from __future__ import annotations

import re
import shlex

_MTU_SEEN = re.compile(r"mtu ?=? ?(\d+)")


def _sysfs(dev: str) -> str:
    return shlex.quote(f"/sys/class/net/{dev}/mtu")


def state_script(iface: str, overlay: str | None, address: str) -> str:
    """sh printing the uid, the interfaces carrying the SSH session (by the session's peer,
    and by the address netrun connects to) and the current MTUs, one key=value a line."""
    lines = [
        "echo uid=$(id -u)",
        'set -- $SSH_CONNECTION; [ -z "$1" ] || '
        'echo mgmt=$(ip -o route get "$1" 2>/dev/null | sed -n "s/.* dev \\([^ ]*\\).*/\\1/p")',
        f"echo mgmt=$(ip -o addr show 2>/dev/null | awk -v a={shlex.quote(address)} "
        "'{split($4, p, \"/\"); if (p[1] == a) print $2}')",
        f"echo mtu=$(cat {_sysfs(iface)} 2>/dev/null)",
    ]
    if overlay:
        lines.append(f"echo overlay=$(cat {_sysfs(overlay)} 2>/dev/null)")
    return "\n".join(lines)


def parse_state(text: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in text.splitlines():
        key, sep, value = line.strip().partition("=")
        if sep and value:
            out.setdefault(key, []).append(value)
    return out


def set_script(dev: str, mtu: int) -> str:
    """sh setting an MTU and reading it back (a driver may refuse or round it)."""
    d = shlex.quote(dev)
    return f'ip link set dev {d} mtu {int(mtu)} && [ "$(cat {_sysfs(dev)})" = {int(mtu)} ]'


def ping_script(source: str | None, target: str, size: int, netns_pid: int | None = None) -> str:
    """A don't-fragment ping of ``size`` payload bytes (from a container's netns by pid)."""
    argv = ["ping", "-n", "-M", "do", "-s", str(size), "-c", "3", "-i", "0.2", "-W", "2"]
    if source:
        argv += ["-I", source]
    argv.append(target)
    if netns_pid is not None:
        argv = ["nsenter", "-t", str(netns_pid), "-n", *argv]
    return shlex.join(argv)


def path_failure(src: str, dst: str, mtu: int, output: str) -> str:
    """The one line a path that does not carry ``mtu`` fails with."""
    seen = _MTU_SEEN.search(output)
    where = f"; the path reports MTU {seen.group(1)}" if seen else ""
    return (
        f"{src} -> {dst} does not carry {mtu}-byte packets (a switch port or the peer is at "
        f"a lower MTU{where})"
    )


def first_int(values: list[str] | None) -> int | None:
    text = (values or [""])[0]
    return int(text) if text.isdigit() else None
