"""netperf under FreeFlow: what its library can carry, and the proof of each figure.

Read from FreeFlow's own source (tcp branch, libfsocket/preload.c), and seen on the lab
with the real router:

- ``socket()`` hands only ``AF_INET``/``AF_INET6`` ``SOCK_STREAM`` sockets to the router;
  a UDP socket stays a plain overlay socket. UDP_RR would measure the overlay under a
  FreeFlow label, so it is refused before the test (``refusal``).
- ``listen()`` listens on the host socket the router made without binding it: only a
  ``bind()`` asks the router to bind it to the host's address. netserver binds its data
  socket only when given a port ("bind only if we must", netperf's create_data_socket), so
  by default the peer is told 0.0.0.0 and its router's connect is refused ("send_omni:
  connect_data_socket failed: Connection refused"). Each netperf therefore names its
  data port (``-P ,PORT``, command.data_ports); the router still binds the host socket
  to an ephemeral port of the host's address.
- ``connect()`` first connects the overlay socket and reads the peer's host address
  over it (31 bytes), then has the router connect the host socket: every connection's
  setup crosses the overlay. TCP_RR and TCP_STREAM open one data connection (and the
  control connection, carried the same way), so their bytes leave the overlay; TCP_CRR
  opens one per transaction, so its handshakes cross the overlay for as long as it runs,
  and its path check says so.

Each repeat reads the byte counters of the overlay device, the container's interface and
the host NIC on both ends around it (netrun.modes.docker.pathbytes), and judges each
direction on the payload netperf moved that way (stats.payload_bytes).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from netrun.core.measurement import Measurement
from netrun.modes.docker import netperf as netperf_container
from netrun.modes.docker import pathbytes
from netrun.tools.netperf import command, stats
from netrun.tools.netperf.parse import Instance

if TYPE_CHECKING:
    from netrun.modes.docker.base import ContainerMode

#: netperf test -> why FreeFlow cannot carry it (libfsocket/preload.c).
REFUSED = {
    "UDP_RR": "FreeFlow's library hands only TCP sockets to its router (libfsocket socket(): "
    "SOCK_STREAM only), so UDP_RR would measure the plain overlay; measure it in mode "
    "flannel or docker",
}
#: Why a TCP_CRR repeat is not accelerated (its handshakes cross the overlay).
CRR_NOTE = (
    "TCP_CRR opens a connection per transaction, and FreeFlow sets each one up over the "
    "overlay first (libfsocket connect() reads the peer's host address over the overlay "
    "socket): the handshakes cross the overlay, the requests and responses do not"
)


def refusal(test: str) -> str | None:
    """Why netperf's ``test`` cannot run under FreeFlow, or None when it can."""
    why = REFUSED.get(test)
    return f"netperf test {test} cannot run in mode freeflow: {why}" if why else None


def measure(mode: ContainerMode, repeat: int) -> tuple[list[Instance], str, dict[str, Any]]:
    """One repeat between the containers, each netperf on its own data port, with the
    path bytes around it and the verdict on where the payload went."""
    count = int(mode.test.value("instances"))
    ports = command.data_ports(int(mode.value("port")), count)
    done: list[tuple[list[Instance], str, dict[str, Any]]] = []

    def run() -> Measurement:
        done.append(netperf_container.measure(mode, repeat, ports))
        return Measurement("", None, {})

    # netserver never says it served a test (serverwait counts iperf3's LISTENING lines):
    # without a count, the server end's reading after is taken as soon as the client ends
    # instead of after a wait for words that do not come (10 s a repeat)
    mode.counters.pop("served", None)
    m, path = pathbytes.around(mode, run)
    found, raw, extra = done[0]
    test = str(mode.test.value("test"))
    moved = stats.payload_bytes(
        test, found, mode.test.value("request_size"), mode.test.value("response_size")
    )
    accelerated, crossed, why = verdict(path, moved)
    if test == "TCP_CRR" and not accelerated:
        why = f"{why}; {CRR_NOTE}"
    extra.update(
        m.details,
        path_bytes=path,
        payload_bytes=moved,
        accelerated=accelerated,
        crossed_overlay=crossed,
        path_check=why,
    )
    return found, raw, extra


def verdict(path: dict[str, Any], moved: dict[str, int]) -> tuple[bool, bool, str]:
    """(accelerated, crossed_overlay, why) over each direction that moved payload: it is
    accelerated (crossed) only when every such direction is."""
    judged = [
        (sender, pathbytes.verdict(path, sent, sender))
        for sender, sent in moved.items()
        if sent > 0
    ]
    if not judged:
        return False, False, "the test moved no bytes"
    accelerated = all(v[0] for _, v in judged)
    crossed = all(v[1] for _, v in judged)
    why = "; ".join(f"{sender} to {_peer(sender)}: {v[2]}" for sender, v in judged)
    return accelerated, crossed, why


def _peer(end: str) -> str:
    return "server" if end == "client" else "client"
