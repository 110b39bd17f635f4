"""Connecting to hosts: the transport an inventory host asks for (ansible_connection), and
every host of a run connected at once, each failure kept per host (pyinfra's connect)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from netrun.errors import ConnectError
from netrun.hosts.group import GroupResult, on_each
from netrun.hosts.local import LocalTransport
from netrun.hosts.ssh.settings import SSHSettings
from netrun.hosts.ssh.transport import SSHTransport
from netrun.hosts.transport import Transport

if TYPE_CHECKING:
    from netrun.hosts.host import Host


#: ansible_connection values netrun can use (a kubectl transport will join them).
CONNECTIONS = ("ssh", "local")


def open_transport(host: Host, settings: SSHSettings) -> Transport:
    """The one place a host's transport is chosen, by ``ansible_connection`` (default ssh);
    connected, or a ConnectError naming the host."""
    kind = host.connection
    if kind == "local":
        local = LocalTransport(host)
        local.connect()
        return local
    if kind not in ("ssh", "paramiko", "smart"):
        raise ConnectError(
            host.name,
            f"ansible_connection {kind!r} is not supported; use one of {', '.join(CONNECTIONS)}",
        )
    ssh = SSHTransport(host, settings)
    ssh.connect()
    return ssh


def connect_all(
    hosts: Iterable[Host],
    settings: SSHSettings,
    then: Callable[[Host], None] | None = None,
    then_deadline: float = 0,
    early: Callable[[Host], Transport | None] | None = None,
) -> GroupResult:
    """Connect up to ``settings.forks`` hosts at once; each host's transport is set on
    success, and a host that fails is only named in ``failed``.

    ``then`` (the probe) runs on each host as soon as it is connected, in the same worker:
    a fast host is probed while a slow one still connects, with no barrier between."""

    def connect(host: Host) -> None:  # ``early``: a connection already opened (preconnect)
        host.transport = (early(host) if early else None) or open_transport(host, settings)
        if then is not None:
            then(host)

    deadline = settings.connect_deadline + (then_deadline if then is not None else 0)
    return on_each(hosts, connect, deadline=deadline, max_workers=settings.forks)
