"""The SSH transport: one paramiko connection per host, opened once, reused for the run.

Host keys are verified against known_hosts (fabric would auto-add any key); a new host is
trusted on first use only where the user asked for it."""

from __future__ import annotations

import contextlib
import logging
import socket
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from netrun.errors import Cancelled, ConnectError
from netrun.hosts.command import CommandResult, Interruptible
from netrun.hosts.privilege import checked, privileged
from netrun.hosts.ssh.channel import Started, collect, open_channel
from netrun.hosts.ssh.failures import connect_failure
from netrun.hosts.ssh.hostkeys import TrustOnFirstUse
from netrun.hosts.ssh.settings import SSHSettings

if TYPE_CHECKING:
    from paramiko import SSHClient

    from netrun.hosts.host import Host

log = logging.getLogger("netrun.hosts.transport")


class SSHTransport(Interruptible):
    """One host's SSH connection; thread-safe enough for one command at a time per thread."""

    def __init__(self, host: Host, settings: SSHSettings) -> None:
        self.host = host
        self.settings = settings
        self._conn: SSHClient | None = None

    # -- connecting -----------------------------------------------------------------------
    def connect(self) -> None:
        """Open the connection, verifying the host key; raise a ConnectError that says why."""
        import paramiko

        host, s = self.host, self.settings
        kwargs: dict[str, object] = {
            "banner_timeout": s.banner_timeout,
            "auth_timeout": s.auth_timeout,
            # paramiko's default for opening a channel (SFTP) is an hour
            "channel_timeout": s.connect_timeout,
            "allow_agent": False,
            "look_for_keys": host.key_file is None and host.password is None,
        }
        if host.key_file:
            key = Path(host.key_file).expanduser()
            if not key.is_file():
                raise ConnectError(
                    host.name,
                    f"private key {key} not found; fix ansible_ssh_private_key_file",
                )
            kwargs["key_filename"] = str(key)
        if host.password:
            kwargs["password"] = host.password
        user = host.user or _local_user()
        client = paramiko.SSHClient()
        known = Path(host.known_hosts).expanduser() if host.known_hosts else s.known_hosts
        if known.is_file():
            client.load_host_keys(str(known))
        elif s.accept_new_host_keys:
            known.parent.mkdir(parents=True, exist_ok=True)
            known.touch(mode=0o600)
            client.load_host_keys(str(known))
        if s.accept_new_host_keys:
            client.set_missing_host_key_policy(TrustOnFirstUse(known))
        else:
            client.set_missing_host_key_policy(paramiko.RejectPolicy())
        opened = False
        sock: socket.socket | None = None
        try:
            sock = _nodelay_socket(host.address, host.port, max(1, round(s.connect_timeout)))
            client.connect(
                host.address,
                port=host.port,
                username=user,
                sock=sock,
                **kwargs,  # type: ignore[arg-type]
            )
            opened = True
        except (paramiko.SSHException, OSError) as exc:  # TimeoutError is an OSError
            version = getattr(client.get_transport(), "remote_version", "")
            raise connect_failure(exc, host, user, known, version, s) from None
        finally:
            if not opened:  # stop paramiko's reader thread on a half-open connection
                with contextlib.suppress(Exception):
                    client.close()
                if sock is not None:
                    sock.close()
        transport = client.get_transport()
        if transport is not None and s.keepalive:
            transport.set_keepalive(s.keepalive)
        self._conn = client

    # -- commands -------------------------------------------------------------------------
    def run(
        self,
        argv: Sequence[str] | str,
        *,
        timeout: float,
        sudo: bool = False,
        check: bool = True,
    ) -> CommandResult:
        """Run one command with a deadline; raise CommandError when ``check`` and it failed."""
        self._may_start(self.host.name)
        line, stdin = privileged(self.host, argv, sudo)
        started = time.monotonic()
        log.debug("%s: run %s", self.host.name, line)
        exited, stdout, stderr = self._exec(line, timeout, stdin)
        result = CommandResult(
            self.host.name, line, exited, stdout, stderr, time.monotonic() - started
        )
        log.debug("%s: exit %s in %.3fs", self.host.name, exited, result.seconds)
        user = self.host.user or _local_user()
        return checked(result, self.host, sudo=sudo, check=check, user=user)

    def _exec(self, line: str, timeout: float, stdin: bytes) -> tuple[int, str, str]:
        """Exec on a fresh channel of the one connection, reading until exit or the deadline.

        We drive the paramiko channel ourselves rather than fabric's ``run``: invoke swallows
        Ctrl-C while a remote command runs, and netrun must stop and clean up at once.
        """
        cancelled = self._watch()  # before the channel opens: an interrupt() then stops it too
        chan, transport = self._open(line, stdin, eof=True)
        return collect(chan, transport, self.host.name, line, timeout, cancelled)

    def start(self, argv: Sequence[str] | str) -> Started:
        """Start a command and return at once, its stdin open for one line (``Started``).

        Not with a become password (sudo reads it from stdin): ConnectError, and the
        caller runs the command whole. An interrupt() after this stops its wait."""
        self._may_start(self.host.name)
        line, stdin = privileged(self.host, argv)
        if stdin:
            raise ConnectError(self.host.name, "cannot start a command fed a sudo password")
        log.debug("%s: start %s", self.host.name, line)
        cancelled = self._watch()
        chan, transport = self._open(line, b"", eof=False)
        return Started(chan, transport, self.host.name, line, cancelled)

    def _transport(self) -> Any:
        transport = self._conn.get_transport() if self._conn is not None else None
        if transport is None:
            raise ConnectError(self.host.name, "not connected")
        return transport

    def _open(self, line: str, stdin: bytes, *, eof: bool) -> tuple[Any, Any]:
        """A channel running ``line`` and its connection (netrun.hosts.ssh.channel.open_channel: a
        ConnectError that says why not); with ``eof``, its stdin ends after ``stdin``."""
        transport = self._transport()
        timeout = self.settings.connect_timeout
        chan = open_channel(transport, self.host.name, line, timeout, stdin, eof=eof)
        return chan, transport

    def open_channel(self, line: str) -> Any:
        """A channel running ``line``, its output read by the caller as it comes (the live
        sampler, netrun.run.sampler): no privilege, no deadline, so the command ends by itself."""
        if self._stopped:  # Ctrl-C or SIGTERM: nothing new starts
            raise Cancelled(self.host.name)
        return self._open(line, b"", eof=True)[0]

    def put(self, local: Path, remote: str, *, timeout: float) -> None:
        """Copy a file over SFTP on the same connection."""
        if self._conn is None:
            raise ConnectError(self.host.name, "not connected")
        import paramiko

        sftp = None
        try:
            sftp = self._conn.open_sftp()
            channel = sftp.get_channel()
            if channel is not None:
                channel.settimeout(timeout)
            sftp.put(str(local), remote)
        except (OSError, paramiko.SSHException) as exc:
            raise ConnectError(
                self.host.name,
                f"upload of {local} to {remote} failed: {exc or type(exc).__name__} "
                "(is the SFTP subsystem enabled in sshd?)",
            ) from None
        finally:
            if sftp is not None:
                sftp.close()

    def alive(self) -> bool:
        """False once the connection dropped (sshd killed, host rebooted, reset by a firewall)."""
        transport = self._conn.get_transport() if self._conn is not None else None
        return transport is not None and transport.is_active()

    def reconnect(self) -> None:
        """Replace a dropped connection with a fresh one; ConnectError if the host is gone.

        Used before a host's next test and for the run's final cleanup, so one dropped
        session fails one test rather than every later one and the run's leftovers.
        """
        old, self._conn = self._conn, None
        if old is not None:
            with contextlib.suppress(Exception):
                old.close()
        log.info("%s: connection lost; reconnecting", self.host.name)
        self.connect()

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            finally:
                self._conn = None


def _local_user() -> str:
    import getpass

    return getpass.getuser()


def _nodelay_socket(address: str, port: int, timeout: float) -> socket.socket:
    """The TCP connection to sshd, with TCP_NODELAY before the handshake: the handshake and
    every command are small request/reply packets, and with Nagle and delayed ACKs each
    waits ~40 ms for the peer's ACK (a handshake took 69 ms instead of 26 on the lab,
    2026-12-04; OpenSSH sets it too). Refused, unreachable or unknown: the OSError, as
    paramiko's own connect raises it (netrun.hosts.ssh.failures words it)."""
    sock = socket.create_connection((address, port), timeout=timeout)
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock
