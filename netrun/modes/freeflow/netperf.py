"""netperf under FreeFlow: what its library can carry, and the proof of each figure.

Read from FreeFlow's own source (tcp branch, libfsocket/preload.c), and seen on the lab
with the real router:

- ``socket()`` hands only ``AF_INET``/``AF_INET6`` ``SOCK_STREAM`` sockets to the router;
  a UDP socket stays a plain overlay socket. UDP_RR would measure the overlay under a
  FreeFlow label, so it is refused before the test (``UDP_RR``, a Mode.cannot record;
  iperf3's UDP likewise, netrun.modes.freeflow.sockets).
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
direction on the payload netperf moved that way (stats.payload_bytes), as in flannel mode
(netrun.modes.docker.carry); here it also says whether it left the overlay. netperf names
each process's data port at a FreeFlow end (End.needs_bind).
"""

from __future__ import annotations

from netrun.modes.freeflow.sockets import STREAM_ONLY
from netrun.tools.ends import Cannot, Caveat

#: netperf's UDP_RR, refused before its containers start (Mode.cannot; libfsocket/preload.c).
UDP_RR = Cannot(
    "netperf test UDP_RR cannot run in mode freeflow: " + STREAM_ONLY.format(what="UDP_RR"),
    tool="netperf",
    options={"test": "UDP_RR"},
)
#: Why a TCP_CRR repeat is not accelerated (its handshakes cross the overlay): added to
#: its path check when it is not (Mode.caveats).
CRR = Caveat(
    tool="netperf",
    options={"test": "TCP_CRR"},
    note="TCP_CRR opens a connection per transaction, and FreeFlow sets each one up over "
    "the overlay first (libfsocket connect() reads the peer's host address over the overlay "
    "socket): the handshakes cross the overlay, the requests and responses do not",
)
