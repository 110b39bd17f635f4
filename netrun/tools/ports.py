"""Whether a port is already taken on a host, asked of ``ss`` before a server starts there.

A server that cannot bind its port fails, and one that shares it (iperf2 sets
SO_REUSEADDR) loses the traffic: either way the run should say at once who holds the
port. ``holder_script`` is sh (to send alone or with other lines in one round trip) that
prints ``NETRUN_HOLDER <ss line>`` when the port is held; ``holder`` reads that answer.
"""

from __future__ import annotations

from typing import Literal

Protocol = Literal["tcp", "udp"]
MARK = "NETRUN_HOLDER"
#: How much of ss's ``users:(...)`` an error line quotes.
USERS_SHOWN = 120


def holder_script(port: int, protocol: Protocol) -> str:
    """sh printing ``NETRUN_HOLDER <ss line>`` when a socket of ``protocol`` listens on
    (UDP: is bound to) ``port``, nothing otherwise; it always exits 0."""
    flag = {"tcp": "t", "udp": "u"}[protocol]
    return (
        f"h=$(ss -Hln{flag}p 'sport = :{int(port)}' 2>/dev/null | head -n 1); "
        f'[ -z "$h" ] || echo "{MARK} $h"; true'
    )


def holder(stdout: str) -> str | None:
    """Who holds the port, by the output of ``holder_script``: ss's ``users:`` part (the
    programs and pids, shown to root), "another program" when ss does not say; None when
    the port is free."""
    if MARK not in stdout:
        return None
    line = stdout.split(MARK, 1)[1].split("\n", 1)[0]
    users = line.split("users:", 1)[1] if "users:" in line else "another program"
    return users[:USERS_SHOWN]
