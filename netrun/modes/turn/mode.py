"""TURN: iperf2 from the client host to the server host through a TURN relay.

The way real-time media reaches a cluster (the STUNner write-up): a UDP listener on the
client host is tunnelled through a TURN allocation to the server's iperf2 port, over UDP or
TCP to the relay (``turn_transport``). The relay is a coturn netrun starts on the ``relay``
host for the test (fresh credentials, relaying only to the server's address), or an
existing TURN server (``turn_server: turn://HOST:PORT?transport=udp``, credentials from the
inventory's ``turn_user``/``turn_password`` or NETRUN_TURN_USER/NETRUN_TURN_PASSWORD).
Proof the relay carried the traffic: the iperf2 server saw the relayed address as its peer
(``details.peer_seen``), and the relay host's data NIC counted the packets.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from typing import Any, ClassVar
from urllib.parse import quote

from netrun.core.options import Option, expecting, integer
from netrun.core.programs import Program
from netrun.core.spec import Flow
from netrun.errors import HostError, ModeError, ToolError
from netrun.modes.base import Mode
from netrun.modes.turn import commands as turn
from netrun.modes.turn import relay as coturn
from netrun.modes.turn import remote
from netrun.tools.base import TOOL, PeersSeen
from netrun.tools.ends import Cannot, Carried, T, data_iface

URI = re.compile(r"turn://(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})(?:\?transport=(udp|tcp))?")
USER_ENV, PASSWORD_ENV = "NETRUN_TURN_USER", "NETRUN_TURN_PASSWORD"
#: First UDP port turncat listens on, on the client host's loopback.
TURNCAT_PORT = 47000
#: Seconds the tunnel outlives the client's run (its own bound, should netrun vanish).
TUNNEL_MARGIN = 30.0

# fmt: off
OPTIONS: tuple[Option, ...] = (
    Option("turn_transport", str, "udp", "the leg from the client to the relay: udp or tcp",
           choices=("udp", "tcp")),
    Option("turn_server", str, None, "an existing TURN server, turn://HOST:PORT?transport="
           "udp|tcp; null: netrun starts coturn on the relay host", nullable=True,
           check=expecting("turn://HOST:PORT or turn://HOST:PORT?transport=udp|tcp",
                           lambda v: URI.fullmatch(v) is not None)),
    Option("turn_port", int, 3478, "port of the coturn netrun starts on the relay host",
           check=integer(1, 65535), from_inventory=True),
    Option("turn_client", str, None, "the TURN client on the client host: netrun (netrun's "
           "tunnel) or turncat (STUNner's, where netrun_turncat names it); null: turncat "
           "where the host has one, else netrun", nullable=True, choices=("netrun", "turncat")),
)
# fmt: on


def external(uri: str) -> tuple[str, int, str | None]:
    """HOST, PORT and transport (None: not given) of ``turn_server``."""
    match = URI.fullmatch(uri)
    if match is None:
        raise ModeError(f"turn_server {uri!r}: expected turn://HOST:PORT?transport=udp|tcp")
    return match[1].strip("[]"), int(match[2]), match[3]


class SharedRelays(dict[tuple[int, tuple[Flow, ...]], tuple[remote.Relay, str, str]]):
    """The run's fan tests' relays: (test index, its flows) -> the coturn its first flow
    started, with its credentials, which every flow's tunnel allocates on."""


class Turn(Mode):
    """iperf2 client -> tunnel -> TURN relay -> iperf2 server."""

    #: Whether this flow started its fan test's shared relay (SharedRelays).
    owns_relay = False

    name = "turn"
    options = OPTIONS
    roles = ("server", "client", "relay")
    tools = ("iperf2",)  # the tunnel carries iperf2's UDP/TCP; validation refuses the rest
    cannot = (
        Cannot(
            "test {test}: mode turn cannot carry a load: the load's bulk iperf3 flow needs "
            "a TCP control connection, which the relay's tunnel does not carry, so it would "
            "run straight between the hosts, not through the relay; drop load:, and load the "
            "relay with pairs: {{fanin: HOST}} (its iperf2 flows cross it at once), or "
            "measure latency under load in mode baremetal",
            load=True,
        ),
    )
    needs: ClassVar[Mapping[str, tuple[str, ...]]] = {
        "server": (TOOL,),  # the tool's own programs (Tool.programs)
        "client": (TOOL, "python3"),  # python3: netrun's TURN tunnel (commands.py)
        "relay": ("turnserver",),
    }
    installs = (
        Program("turnserver", "netrun_turnserver", "coturn", "coturn"),
        Program("python3", "netrun_python", "python3", "python3"),
    )

    def dialled(self, port: int) -> tuple[str, int | None, str]:
        """The client's leg dials netrun's tunnel on its own host, on a port known when
        the tunnel opens, through the relay."""
        relay = self.hosts["relay"]
        via = (
            f"  (-p: the port of netrun's TURN tunnel on {self.client.name}, through relay "
            f"{relay.name} {relay.data_ip}:{self.value('turn_port')} over "
            f"{self.value('turn_transport')})"
        )
        return "127.0.0.1", None, via

    @classmethod
    def needs_for(cls, options: Mapping[str, Any]) -> Mapping[str, tuple[str, ...]]:
        """An existing TURN server (turn_server) needs nothing on the relay host."""
        if options.get("turn_server"):
            return {**cls.needs, "relay": ()}
        return cls.needs

    def setup(self) -> None:
        if why := self.refusal():
            raise ModeError(why)
        transport = str(self.value("turn_transport"))
        uri = self.test.options.get("turn_server")
        if uri:
            host, port, given = external(str(uri))
            if given and given != transport:
                raise ModeError(
                    f"turn_server says transport={given} but turn_transport is {transport} "
                    f"(udp when unset): set turn_transport: {given} or drop ?transport="
                )
            self.user, self.password = self._external_credentials()
            self.relay = remote.Relay(host, port, "external")
        elif self.test.fan and (found := self.ctx.family(SharedRelays).get(self.fan_key())):
            self.relay, self.user, self.password = found  # a fan test's one relay
        else:
            self.user, self.password = coturn.credentials()
            lifetime = float(self.test.deadline) * int(self.test.value("repeat")) + 120
            self.relay = remote.start_relay(
                self, self.hosts["relay"], port=int(self.value("turn_port", self.hosts["relay"])),
                peers=self.peers(), user=self.user, password=self.password,
                lifetime=lifetime,
            )  # fmt: skip
            if self.test.fan:  # the other flows' tunnels use it; its undo stays this flow's
                self.ctx.family(SharedRelays)[self.fan_key()] = (
                    self.relay,
                    self.user,
                    self.password,
                )
                self.owns_relay = True
        self.turncat = self.turn_client()
        if self.turncat:  # STUNner's own, on the client host
            remote.private_dir(self, self.client, "turn-tunnel")
        else:
            self.script, self.auth = remote.install_tunnel(
                self, self.client, self.user, self.password
            )
        self.details["relay"] = {
            "kind": self.relay.kind,
            "host": self.relay.host.name if self.relay.host else None,
            "address": self.relay.address,
            "port": self.relay.port,
            "transport": transport,
        }
        self.details["tunnel"] = {"transport": transport, **self.tunnel_kind()}

    def turn_client(self) -> str | None:
        """The client host's turncat when ``turn_client`` asks for it (or, unset, when the
        host has one); None: netrun's tunnel."""
        found = str(self.client.vars.get("netrun_turncat") or "") or None
        wanted = self.test.options.get("turn_client")
        if wanted == "turncat" and found is None:
            raise ModeError(
                f"turn_client: turncat, but host {self.client.name} has no netrun_turncat: set "
                "it to STUNner's turncat there (netrun lab turncat builds one), or use "
                "turn_client: netrun"
            )
        return None if wanted == "netrun" else found

    def fan_key(self) -> tuple[int, tuple[Flow, ...]]:
        """Which fan test's relay this flow shares (SharedRelays)."""
        return (self.test.index, self.test.fan)

    def peers(self) -> list[str]:
        """The addresses the relay may reach: this test's server, or every flow's server
        of a fan test (a fan-out's each): nothing else, so the relay is no open proxy."""
        servers = [self.fan_hosts[f.server] for f in self.test.fan if f.server in self.fan_hosts]
        return sorted({self.server.data_ip, *(h.data_ip for h in servers)})

    def teardown(self) -> None:
        """A fan test's relay is forgotten with the flow that started it (its undo stops it)."""
        if self.owns_relay:
            self.ctx.family(SharedRelays).pop(self.fan_key(), None)
            self.owns_relay = False
        super().teardown()

    def tunnel_kind(self) -> dict[str, Any]:
        """Which tunnel runs, and its version (turncat's is the path: it prints none)."""
        if self.turncat:
            return {"kind": "turncat", "version": None, "path": self.turncat,
                    "version_unavailable": "turncat has no version option"}  # fmt: skip
        return {"kind": "netrun", "version": turn.tunnel_version()}

    def _external_credentials(self) -> tuple[str, str]:
        """turn_user/turn_password from the client's inventory vars, else the environment."""
        v = self.client.vars
        user = v.get("turn_user") or os.environ.get(USER_ENV)
        password = v.get("turn_password") or os.environ.get(PASSWORD_ENV)
        if not user or not password:
            raise ModeError(
                f"turn_server needs credentials: set turn_user and turn_password for "
                f"{self.client.name} in the inventory, or {USER_ENV} and {PASSWORD_ENV}"
            )
        return str(user), str(password)

    def carry(
        self,
        repeat: int,
        port: int,
        leg: Callable[[str, int], T],
        moved: Callable[[T], Mapping[str, int]] | None = None,
    ) -> Carried[T]:
        """Tunnel up, the client's leg through it (dialling the tunnel's listening end on
        the client host), tunnel down; fail if the relay was bypassed (the iperf2 server's
        report names its peer: the relay's address, not the client's)."""
        for key in ("peer_seen", "relayed_address", "relay_counters"):
            self.details.pop(key, None)
        relay_host = self.relay.host or (
            self.hosts["relay"] if self.hosts["relay"].data_ip == self.relay.address else None
        )
        iface = data_iface(self.ctx.known.facts, relay_host) if relay_host else None
        before = remote.nic_counters(relay_host, iface) if relay_host and iface else None
        tunnel = self.start_tunnel(repeat)
        banner = tunnel.banner
        relayed = f"{banner.relayed}:{banner.relayed_port}" if banner else None
        self.details["relayed_address"] = relayed
        # on an exception (an interrupt too) the undo records stop the tunnel at teardown
        try:
            value = leg("127.0.0.1", banner.listen_port if banner else self.listen_port)
        except ToolError:  # iperf2 failed: the relay's log may say why
            self.keep_relay_log()
            raise
        stats = remote.stop_tunnel(tunnel)
        self.details["tunnel"] = {**self.details.get("tunnel", {}), "exit": stats or None}
        self.keep_relay_log()
        after = remote.nic_counters(relay_host, iface) if relay_host and iface else None
        result = value[0] if isinstance(value, tuple) else value
        if not isinstance(result, PeersSeen):  # tools=("iperf2",): not reached
            raise ModeError("mode turn proves its relay by iperf2's report only")
        extra: dict[str, Any] = {"peer_seen": result.peer_seen, "relayed_address": relayed}
        extra["relay_counters"] = counters(relay_host, iface, before, after, result)
        if self.test.fan and relay_host and "unavailable" not in extra["relay_counters"]:
            # the flows cross the relay at once: its NIC counted every flow's packets
            extra["relay_counters"]["flows_at_once"] = len(self.test.fan)
        self.details.update(extra)
        self.check_relayed(result, relayed)
        return Carried(value, extra, f"\n--- tunnel ---\n{banner}\n{stats}\n")

    def keep_relay_log(self) -> None:
        """The managed relay's last log lines, credentials taken out, into the details."""
        if self.relay.host and self.relay.logfile:
            self.details["relay_log"] = remote.relay_log(
                self.relay.host, self.relay.logfile, self.password, self.user
            )

    def start_tunnel(self, repeat: int) -> remote.Tunnel:
        """netrun's tunnel (its banner names the relayed address), or the host's turncat."""
        tag = f"{self.test.tag}r{repeat}"  # a fan flow's own (flows may share a client)
        transport = str(self.value("turn_transport"))
        port = int(self.value("port"))
        if self.turncat:
            # turncat needs a set port: one per test and repeat, away from iperf's
            flow = next((i for i, f in enumerate(self.test.fan) if f.client == self.client.name
                         and f.server == self.server.name), 0)  # fmt: skip
            self.listen_port = TURNCAT_PORT + (self.test.index * 10 + repeat) % 1000 + 1000 * flow
            argv = turn.turncat_command(
                self.turncat, listen_port=self.listen_port, server=self.relay.address,
                server_port=self.relay.port, transport=transport, peer=self.server.data_ip,
                peer_port=port, user=self.user, password=self.password,
            )  # fmt: skip
            secrets = (self.password, quote(self.password, safe=""), self.user)
            return remote.start_turncat(self, self.client, argv, self.listen_port, tag, *secrets)
        argv = turn.tunnel_command(
            self.script, listen="127.0.0.1", listen_port=0, server=self.relay.address,
            server_port=self.relay.port, transport=transport,
            peer=self.server.data_ip, peer_port=port,
            seconds=float(self.test.deadline) + TUNNEL_MARGIN, auth_file=self.auth,
            python=str(self.client.vars.get("netrun_python") or "python3"),
        )  # fmt: skip
        return remote.start_tunnel(self, self.client, argv, tag)

    def check_relayed(self, result: PeersSeen, relayed: str | None) -> None:
        """Fail the test unless the iperf2 server's peer was the relay, not the client."""
        seen = {p.replace(" port ", ":") for p in result.peers}
        shown = ", ".join(sorted(seen)) or "no peer"
        if relayed is not None:  # netrun's tunnel: the exact relayed address and port
            if result.peer_seen != relayed.rsplit(":", 1)[0] or relayed not in seen:
                raise HostError(
                    self.server.name,
                    f"traffic bypassed the relay: the iperf2 server saw {shown} "
                    f"but the relayed address is {relayed}",
                )
            return
        # turncat prints no relayed address: a managed relay relays from its own address;
        # of an existing one (STUNner: a pod address) we know only it is not the client's
        client = {self.client.data_ip, self.client.address}
        if self.relay.kind == "managed":
            ok = result.peer_seen == self.relay.address
        else:
            ok = result.peer_seen is not None and result.peer_seen not in client
        if not ok:
            raise HostError(
                self.server.name,
                f"traffic bypassed the relay: the iperf2 server saw {shown}, not the relay",
            )


def counters(
    host: Any, iface: str | None, before: dict[str, int] | None, after: dict[str, int] | None,
    result: PeersSeen,
) -> dict[str, Any]:  # fmt: skip
    """The relay NIC's packet counts over the test. Each datagram leaves the relay in a
    packet of its own to the server; over TURN-TCP several may arrive in one segment."""
    if host is None:
        return {"unavailable": "the TURN server is not an inventory host: its NIC is not read"}
    if before is None or after is None or iface is None:
        return {"host": host.name, "unavailable": f"could not read {iface}'s counters"}
    rx = after["rx_packets"] - before["rx_packets"]
    tx = after["tx_packets"] - before["tx_packets"]
    received = result.received
    return {"host": host.name, "iface": iface, "rx_packets": rx, "tx_packets": tx,
            "server_received": received, "crossed": rx > 0 and tx >= received}  # fmt: skip


MODE = Turn
