"""What FreeFlow's library hands to its router, and so which tests it cannot carry.

FreeFlow's libfsocket (tcp branch, libfsocket/preload.c) takes over ``socket()`` only for
``AF_INET``/``AF_INET6`` ``SOCK_STREAM`` sockets; a UDP socket stays a plain overlay socket.
A UDP test in mode freeflow would therefore measure the plain overlay under a FreeFlow
label: netperf's UDP_RR (netrun.modes.freeflow.netperf) and iperf3 with ``protocol: udp``
are refused before their containers start, each with one line.
"""

from __future__ import annotations

from netrun.tools.ends import Cannot

#: Why FreeFlow cannot carry a UDP test, and where to measure one instead.
STREAM_ONLY = (
    "FreeFlow's library hands only TCP sockets to its router (libfsocket socket(): "
    "SOCK_STREAM only), so {what} would measure the plain overlay; measure it in mode "
    "flannel or docker"
)


#: iperf3's UDP, refused before its containers start (Mode.cannot).
IPERF3_UDP = Cannot(
    "test {test}: iperf3 protocol udp cannot run in mode freeflow: "
    + STREAM_ONLY.format(what="iperf3 UDP"),
    tool="iperf3",
    options={"protocol": "udp"},
)
