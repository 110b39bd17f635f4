"""A test whose two ends are one: refused before it measures loopback as a network.

Two inventory names for one machine, a ``netrun_data_ip`` that is the client's own, a
loopback address, or two containers handed the same address (stock Docker gives every
host 172.17.0.0/16, so on a bridge network the second host's first container has the
first one's address and its client connects to itself) all measure the kernel's loopback,
tens of Gbit/s that a report would set beside the network's. netrun knows both ends'
addresses before the traffic starts: the server end's target, and every address the client
end holds (its host's ``ip -o addr show`` from the probe, its container's from docker
inspect). One target among them, or a loopback one, is one end; ``allow_same_host: true``
lets a test measure loopback on purpose (flagged same-host).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from netrun.core.spec import TestSpec
    from netrun.hosts.host import Host
    from netrun.tools.docker import ContainerInfo
    from netrun.tools.facts import HostFacts

#: What to change when two hosts are one (bare metal, TURN, the hosts under containers).
HOSTS_FIX = (
    "give each end its own host and netrun_data_ip (an address only that host holds), or "
    "set allow_same_host: true to measure loopback on purpose"
)


def _loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def one_end(
    test: TestSpec,
    target: str | None,
    own: Iterable[str],
    *,
    server_end: str,
    client_end: str,
    fix: str,
) -> str | None:
    """Why the test's client would reach itself, in one line naming both ends and what to
    change; None when ``target`` (the address the client sends to) is not one of ``own``
    (the client end's addresses) nor loopback, or the test allows it."""
    if not target or test.options.get("allow_same_host"):
        return None
    mine = set(own)
    if target not in mine and not _loopback(target):
        return None
    why = "a loopback address" if _loopback(target) else "the client end's own address"
    return (
        f"the server end ({server_end}, {target}) is {why}, so the client end "
        f"({client_end}) would connect to itself: loopback, not the network; {fix}"
    )


def hosts_problem(
    test: TestSpec, server: Host, client: Host, facts: Mapping[str, HostFacts]
) -> str | None:
    """The hosts' check, in every mode: the server host's data address among the client
    host's own (the probe read them); one inventory host for both ends is the scenario's
    own same-host rule (netrun.results.flags.same_host_problem), not this one."""
    if server.name == client.name:
        return None
    found = facts.get(client.name)
    own = getattr(found, "addresses", ()) or ()
    return one_end(
        test,
        server.data_ip,
        own,
        server_end=f"host {server.name}",
        client_end=f"host {client.name}",
        fix=HOSTS_FIX,
    )


def containers_problem(
    test: TestSpec, target: str, infos: Mapping[str, ContainerInfo], network: str
) -> str | None:
    """The containers' check, once both run: the server container's address (``target``)
    among the client container's own (docker inspect), as when one subnet on both hosts
    gave each the same address."""
    server, client = infos["server"], infos["client"]
    return one_end(
        test,
        target,
        client.ips.values(),
        server_end=f"server container {server.name} on {test.server}",
        client_end=f"client container {client.name} on {test.client}",
        fix=(
            f"network {network} gives both containers addresses from one subnet (stock "
            "Docker's bridge is 172.17.0.0/16 on every host); use a routable container "
            "network: an overlay (mode: flannel), or a network whose subnet differs per host"
        ),
    )
