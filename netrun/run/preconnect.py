"""SSH connections opened while the controller still gets ready: one handshake off the
critical path.

Opening a connection (TCP, key exchange, login) changes nothing on a host, so it can
start once every input is checked: while the run's own start imports and prepares
what it needs, the hosts' sshd do their half of the handshake. The run then takes each
host's connection (or the error that says why there is none) instead of opening one
(netrun.hosts.transport.connect_all); one nobody takes is closed (``close``). Commands, and
so every change, still wait for the run's journal and lock.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING

from netrun.errors import ConnectError, NetrunError
from netrun.hosts.connect import open_transport

if TYPE_CHECKING:
    from netrun.core.spec import Scenario
    from netrun.hosts.host import Host
    from netrun.hosts.ssh.settings import SSHSettings
    from netrun.hosts.transport import Transport
    from netrun.inventory.model import Inventory


class Preconnect:
    """Each host's connection, opened in a (daemon) thread of its own, ``forks`` at once."""

    def __init__(self, hosts: Iterable[Host], settings: SSHSettings) -> None:
        self.settings = settings
        self._lock = threading.Lock()
        self._closed = False
        self._slots = threading.BoundedSemaphore(settings.forks)
        #: host name -> (done, the transport or the error)
        self._found: dict[str, tuple[threading.Event, list[Transport | NetrunError]]] = {}
        for host in hosts:
            done: threading.Event = threading.Event()
            box: list[Transport | NetrunError] = []
            self._found[host.name] = (done, box)
            threading.Thread(
                target=self._open, args=(host, done, box), daemon=True, name="preconnect"
            ).start()

    def _open(self, host: Host, done: threading.Event, box: list[Transport | NetrunError]) -> None:

        with self._slots:
            try:
                found: Transport | NetrunError = open_transport(host, self.settings)
            except NetrunError as exc:
                found = exc
            except Exception as exc:  # a bug: the run's own connect says it again
                found = ConnectError(host.name, f"SSH connection failed: {exc}")
        with self._lock:
            if self._closed and not isinstance(found, NetrunError):
                with contextlib.suppress(Exception):
                    found.close()
                found = ConnectError(host.name, "connection closed: the run ended")
            box.append(found)
        done.set()

    def take(self, host: Host) -> Transport | None:
        """The host's connection (ConnectError: why there is none); None if it was not
        opened here. Waits for it at most as long as a connection may take."""
        with self._lock:
            entry = self._found.pop(host.name, None)
        if entry is None:
            return None
        done, box = entry
        if not done.wait(self.settings.connect_deadline):
            raise ConnectError(host.name, f"no SSH connection to {host.name} in time")
        found = box[0]
        if isinstance(found, NetrunError):
            raise found
        return found

    def close(self) -> None:
        """Close every connection nobody took, once its handshake ended (a thread still in
        one when the interpreter exits can abort it: "FATAL: exception not rethrown")."""
        with self._lock:
            self._closed = True
            left, self._found = self._found, {}
        for done, box in left.values():
            done.wait(self.settings.connect_deadline)
            if box and not isinstance(box[0], NetrunError):
                with contextlib.suppress(Exception):
                    box[0].close()


def for_run(
    scenario: Scenario, inventory: Inventory, settings: SSHSettings, limit: str | None
) -> Preconnect:
    """Start connecting to the hosts of the tests a run will run (those within -l)."""
    allowed = {h.name for h in inventory.select(limit)} if limit else None
    tests = [t for t in scenario.tests if allowed is None or set(t.hosts) <= allowed]
    names = dict.fromkeys(n for t in tests for n in t.hosts)
    return Preconnect([inventory.get(n) for n in names], settings)
