"""A Host owns its name, its merged variables and (once connected) its connection.

Variables arrive already merged by the inventory (all < parent group < child group < host).
The properties below read the Ansible connection keys, old aliases included, so nothing
else in netrun needs to know Ansible's spelling.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from netrun.errors import Cancelled, ConnectError
from netrun.hosts.command import CommandResult, command_line

if TYPE_CHECKING:
    from netrun.hosts.transport import Started, Transport


def _first(values: Mapping[str, Any], *keys: str) -> Any:
    """The first key set; callers list the old ssh aliases first because Ansible's ssh
    connection takes the last name of its list (ansible_ssh_user beats ansible_user)."""
    for key in keys:
        if values.get(key) is not None:
            return values[key]
    return None


@dataclass(eq=False)
class Host:
    """One inventory host: name, merged vars, groups, and its transport once connected."""

    name: str
    vars: dict[str, Any] = field(default_factory=dict)
    groups: tuple[str, ...] = ()
    transport: Transport | None = field(default=None, repr=False)
    #: Quiet cleanup scripts that ride on this host's next command (see ``defer``).
    _deferred: list[str] = field(default_factory=list, repr=False)
    #: Told once the command that carried the deferred scripts has run (``defer``'s ``sent``).
    _deferred_sent: list[Callable[[], None]] = field(default_factory=list, repr=False)
    _deferred_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    #: Commands run so far (netrun.tools.savers.sweep: did anything run after a host's early sweep?)
    commands: int = field(default=0, repr=False)

    # -- connection keys -------------------------------------------------------------
    @property
    def address(self) -> str:
        """Management address: ansible_host (or the old ansible_ssh_host), else the name."""
        return str(_first(self.vars, "ansible_ssh_host", "ansible_host") or self.name)

    @property
    def connection(self) -> str:
        """How netrun reaches the host: ansible_connection, ``ssh`` unless set (``local``:
        the controller itself, without sshd)."""
        return str(self.vars.get("ansible_connection") or "ssh")

    @property
    def port(self) -> int:
        return int(_first(self.vars, "ansible_ssh_port", "ansible_port") or 22)

    @property
    def user(self) -> str | None:
        value = _first(self.vars, "ansible_ssh_user", "ansible_user")
        return None if value is None else str(value)

    @property
    def key_file(self) -> str | None:
        value = _first(self.vars, "ansible_ssh_private_key_file", "ansible_private_key_file")
        return None if value is None else str(value)

    @property
    def password(self) -> str | None:
        value = _first(self.vars, "ansible_ssh_password", "ansible_ssh_pass", "ansible_password")
        return None if value is None else str(value)

    @property
    def become(self) -> bool:
        value = self.vars.get("ansible_become", False)
        if isinstance(value, str):
            return value.strip().lower() in {"1", "yes", "true", "on"}
        return bool(value)

    @property
    def become_method(self) -> str:
        return str(self.vars.get("ansible_become_method") or "sudo")

    @property
    def become_user(self) -> str:
        return str(self.vars.get("ansible_become_user") or "root")

    @property
    def become_password(self) -> str | None:
        value = _first(self.vars, "ansible_become_pass", "ansible_become_password")
        return None if value is None else str(value)

    # -- netrun's own keys -------------------------------------------------------------
    @property
    def data_ip(self) -> str:
        """Data-plane address tests use; the management address unless set apart."""
        return str(self.vars.get("netrun_data_ip") or self.address)

    @property
    def iface(self) -> str | None:
        value = self.vars.get("netrun_iface")
        return None if value is None else str(value)

    @property
    def link_speed_mbps(self) -> float | None:
        value = self.vars.get("netrun_link_speed_mbps")
        return None if value is None else float(value)

    @property
    def known_hosts(self) -> str | None:
        value = self.vars.get("netrun_known_hosts")
        return None if value is None else str(value)

    def secrets(self) -> list[str]:
        """Strings that must never be printed or logged."""
        turn = self.vars.get("turn_password")  # an external TURN server's (mode: turn)
        return [str(s) for s in (self.password, self.become_password, turn) if s]

    # -- commands ------------------------------------------------------------------------
    def run(
        self,
        argv: list[str] | str,
        *,
        timeout: float,
        sudo: bool = False,
        check: bool = True,
    ) -> CommandResult:
        """Run a command on this host through its transport (see netrun.hosts.transport).

        Deferred cleanup (``defer``) runs first, in the same round trip, output discarded.
        """
        if self.transport is None:
            raise ConnectError(self.name, "not connected")
        self.commands += 1
        argv, pending = self._with_deferred(argv)
        try:
            result = self.transport.run(argv, timeout=timeout, sudo=sudo, check=check)
        except (ConnectError, Cancelled):  # it may not have run: the next command retries it
            self._restore(pending)
            raise
        except Exception:  # it ran (and failed, e.g. check=True): so did what rode on it
            _tell(pending[1])
            raise
        _tell(pending[1])
        return result

    def _with_deferred(
        self, argv: list[str] | str
    ) -> tuple[list[str] | str, tuple[list[str], list[Callable[[], None]]]]:
        """``argv`` after the deferred scripts (taken), and those scripts with whom to
        tell once they ran."""
        with self._deferred_lock:
            pending, self._deferred = self._deferred, []
            sent, self._deferred_sent = self._deferred_sent, []
        if not pending:
            return argv, (pending, sent)
        line = "{ " + "\n".join(pending) + "\n} >/dev/null 2>&1; " + command_line(argv)
        return line, (pending, sent)

    def _restore(self, pending: tuple[list[str], list[Callable[[], None]]]) -> None:
        if pending[0]:
            with self._deferred_lock:
                self._deferred[:0] = pending[0]
                self._deferred_sent[:0] = pending[1]

    def start(self, argv: list[str] | str) -> Started | None:
        """Start a command that waits for one line on its stdin (netrun.hosts.ssh.channel.Started);
        None where that cannot be (no such transport, a become password on stdin, a
        dropped connection): the caller then runs the command whole, which reports why."""
        start = getattr(self.transport, "start", None)
        if start is None or self.become_password:
            return None
        self.commands += 1
        argv, pending = self._with_deferred(argv)  # they run before it waits on stdin
        try:
            started: Started = start(argv)
        except ConnectError:
            self._restore(pending)
            return None
        except Cancelled:
            self._restore(pending)
            raise
        _tell(pending[1])
        return started

    def defer(self, script: str, sent: Callable[[], None] | None = None) -> None:
        """Run ``script`` (its output and status ignored) at the start of this host's next
        command, rather than in a round trip of its own.

        For teardown that nothing waits on, such as killing an iperf3 server that exits by
        itself after its one test: it rides on the next test's server start or on the
        run's final sweep, which every run ends with. Its pid file stays in the run folder
        until then, so a sweep after SIGKILL still finds it.

        ``sent`` is called once the command that carried ``script`` has run on the host
        (netrun.cleanup.ledger journals a deferred undo record as undone then).
        """
        with self._deferred_lock:
            self._deferred.append(script)
            if sent is not None:
                self._deferred_sent.append(sent)

    def __str__(self) -> str:
        return self.name


def _tell(sent: list[Callable[[], None]]) -> None:
    for call in sent:
        call()


def remote_tmp(host: Host) -> str:
    """Where runs keep their folders on a host (netrun_remote_tmp, default /tmp)."""
    return str(host.vars.get("netrun_remote_tmp") or "/tmp").rstrip("/") or "/"


def folder_key(name: str) -> str:
    """A host's part of its run folder's name and its containers' ``netrun.host`` label:
    its inventory ``name`` where that is safe
    in a file name, else a safe form of it plus a hash (two names never share a key).

    Hosts that share a filesystem (one machine's namespaces or containers, NFS homes)
    would otherwise share one run folder, and so each other's records and pid files."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:40] or "_"
    if safe == name:
        return safe
    return f"{safe}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"
