"""What a client killed at its deadline found stalled on the hosts: a link, a process.

An iperf3 measurement on the hosts themselves (netrun.tools.iperf3.onhost) bounds its
client; when the bound kills it, the one line says what was found, read in one round
trip on the server host (the server's /proc state, the data NIC's operstate) beside what
the client's own command read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from netrun.errors import HostError
from netrun.tools.ends import data_iface

if TYPE_CHECKING:
    from netrun.tools.base import Placement
    from netrun.tools.iperf3.run import ClientTimeout, Iperf3Server

#: What a /proc state letter means for a process we found stalled.
STATES = {
    "T": "stopped (SIGSTOP)",
    "t": "stopped by a debugger",
    "gone": "no longer running",
    "Z": "no longer running",
}


def stall_error(mode: Placement, exc: ClientTimeout, server: Iperf3Server) -> HostError:
    """A client killed at its deadline, with what was found stalled: a link, a process."""
    client, srv = mode.client, mode.server
    facts = mode.ctx.known.facts
    where = f"{srv.name} {srv.data_ip}:{server.port}"
    try:
        state, link = server.diagnose(data_iface(facts, srv))
    except HostError:
        state = link = None
    found = []
    if exc.state in STATES:
        found.append(f"the client on {client.name} was {STATES[exc.state]}")
    if state in STATES:
        found.append(f"the iperf3 server on {srv.name} was {STATES[state]}")
    for host, operstate in ((client, exc.link), (srv, link)):
        if operstate not in (None, "up", "unknown"):
            iface = data_iface(facts, host)
            found.append(f"lost the data path: {iface} on {host.name} is {operstate}")
    why = "; ".join(found) or f"lost the data path to {srv.name}, or the server stalled"
    return HostError(
        client.name,
        f"iperf3 client to {where} did not finish within {exc.timeout:g}s "
        f"(a {mode.test.duration:g}s test); killed it by pid: {why}",
    )
