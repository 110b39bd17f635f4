"""Why an SSH connection or a privileged command failed, in words a user can act on.

paramiko's and sudo's own messages name neither the cause nor the fix ("No existing
session", "a terminal is required"); these functions turn them into one line that does.
Kept apart from the transport so the classification is tested on captured messages alone.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from netrun.errors import AuthError, ConnectError, HostKeyError
from netrun.hosts.ssh.hostkeys import known_hosts_name

if TYPE_CHECKING:
    from pathlib import Path

    from netrun.hosts.host import Host
    from netrun.hosts.ssh.settings import SSHSettings

#: What a command on a dropped connection fails with (the message after the host name).
LOST = "SSH connection lost (sshd stopped, host down or network cut)"


def socket_reason(exc: OSError) -> str:
    """The OS's words for a failed TCP connect ("Connection refused").

    paramiko wraps a refused connect in NoValidConnectionsError, whose own text just
    repeats the address; the reason sits in its per-address errors.
    """
    errors = getattr(exc, "errors", None)
    if isinstance(errors, dict):
        for inner in errors.values():
            if isinstance(inner, OSError) and inner.strerror:
                return inner.strerror
    return exc.strerror or str(exc)


def handshake_failure(text: str, server_version: str, where: str, s: SSHSettings) -> str | None:
    """Why an SSH handshake stalled, for a paramiko error that says so; else None.

    paramiko reports a silent server either as a banner error or, when its own
    negotiation deadline fires first, as "No existing session": both mean the port
    accepted TCP and then never spoke SSH in time.
    """
    stalled = ("banner", "no existing session", "negotiation timed out")
    if not any(word in text.lower() for word in stalled):
        return None
    if not server_version:
        return (
            f"{where} accepted TCP but sent no SSH banner within "
            f"{min(s.connect_timeout, s.banner_timeout):g}s; is sshd healthy, and is "
            "ansible_port its port?"
        )
    return (
        f"{where} ({server_version}) did not finish the SSH handshake within "
        f"{s.connect_timeout:g}s; is sshd overloaded?"
    )


def connect_failure(
    exc: Exception, host: Host, user: str, known: Path, version: str, s: SSHSettings
) -> ConnectError:
    """The one-line error for a connect that raised ``exc`` (paramiko's or the socket's):
    a host key unknown or changed, a refused login, a stalled handshake, no answer, no
    route. ``known`` is the known_hosts file, ``version`` the server's banner if any."""
    import paramiko

    where = f"{host.address}:{host.port}"
    if isinstance(exc, paramiko.BadHostKeyException):
        return HostKeyError(
            host.name,
            f"host key for {where} has CHANGED (possible man-in-the-middle); if the host "
            f"was reinstalled, remove the old key with: ssh-keygen -f {shlex.quote(str(known))} -R "
            f"{shlex.quote(known_hosts_name(host))}",
        )
    if isinstance(exc, paramiko.SSHException):
        text = str(exc)
        if "not found in known_hosts" in text:
            return HostKeyError(
                host.name,
                f"host key for {where} is not in {known}; add it (ssh-keyscan -p "
                f"{host.port} {shlex.quote(host.address)} >> {shlex.quote(str(known))}) "
                "or run with --accept-new-host-keys",
            )
        if isinstance(exc, paramiko.AuthenticationException):
            return AuthError(
                host.name,
                f"SSH login as {user} to {where} was refused ({text}); check "
                "ansible_user and the key or password",
            )
        stalled = handshake_failure(text, version, where, s)
        return ConnectError(host.name, stalled or f"SSH to {where} failed: {text}")
    if isinstance(exc, TimeoutError):
        return ConnectError(
            host.name,
            f"no answer from {where} within {s.connect_timeout:g}s; check ansible_host "
            "and that the host is up",
        )
    reason = socket_reason(exc) if isinstance(exc, OSError) else str(exc)
    return ConnectError(
        host.name, f"cannot reach {where}: {reason}; check ansible_host/ansible_port"
    )
