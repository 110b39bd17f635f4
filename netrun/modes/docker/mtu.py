"""A container's interface at the overlay's MTU, when a test sets ``mtu:``."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from netrun.errors import MtuError
from netrun.tools.ip import first_int, parse_state, set_script

if TYPE_CHECKING:
    from netrun.hosts.host import Host
    from netrun.modes.base import Mode


def follow_container(mode: Mode, host: Host, pid: int | None, mtu: int) -> None:
    """Give a started container's interface and its host-side veth the overlay's MTU (they
    go with the container). A Linux bridge follows its ports' MTU by itself; only one that
    stays lower (its MTU was set by hand) is raised, as an undo record of the test.
    Needs root on the host (nsenter)."""
    if pid is None:
        raise MtuError(f"{host.name}: the container's pid is unknown, cannot set its MTU")
    script = (
        # /sys shows the session's netns: read the peer's ifindex from ip's eth0@ifN
        f"i=$(nsenter -t {int(pid)} -n ip -o link show dev eth0 | "
        "sed -n 's/^[0-9]*: eth0@if\\([0-9]*\\).*/\\1/p'); p=; "
        'for d in /sys/class/net/*; do [ "$(cat "$d/ifindex")" = "$i" ] && p=${d##*/}; done; '
        '[ -n "$p" ] || exit 4; '
        f'ip link set dev "$p" mtu {int(mtu)} && '
        f"nsenter -t {int(pid)} -n ip link set dev eth0 mtu {int(mtu)} || exit 5; "
        'b=$(readlink "/sys/class/net/$p/master"); '
        '[ -z "$b" ] || printf "bridge=%s\\nbridge_mtu=%s\\n" "${b##*/}" '
        '"$(cat "/sys/class/net/${b##*/}/mtu")"'
    )
    res = host.run(script, timeout=30, sudo=host.become, check=False)
    if not res.ok:
        why = "cannot find its veth" if res.exited == 4 else (res.stderr.strip()[-200:] or "?")
        raise MtuError(f"{host.name}: could not set the container's MTU to {mtu}: {why}")
    state = parse_state(res.stdout)
    bridge = (state.get("bridge") or [""])[0]
    old = first_int(state.get("bridge_mtu"))
    if bridge and old is not None and old < mtu:
        done = mode.change(
            host,
            set_script(bridge, mtu),
            f"ip link set dev {shlex.quote(bridge)} mtu {old}",
            what=f"MTU of {bridge} back to {old}",
            sudo=host.become,
            check=False,
        )
        if not done.ok:
            raise MtuError(f"{host.name}: could not set the MTU of {bridge} to {mtu}")
