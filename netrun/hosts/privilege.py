"""A command under the host's privilege: sudo -n (or -S fed the become password), and
sudo's own refusal told apart from the command's failure. Every transport uses it."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import TYPE_CHECKING

from netrun.errors import BecomeError, CommandError, ConnectError
from netrun.hosts.command import CommandResult, command_line

if TYPE_CHECKING:
    from netrun.hosts.host import Host


def become_prefix(host: Host) -> tuple[str, bool]:
    """The privilege prefix for a host, and whether the password goes to stdin."""
    if host.become_method != "sudo":
        raise ConnectError(
            host.name,
            f"ansible_become_method '{host.become_method}' is not supported; use sudo",
        )
    user = shlex.quote(host.become_user)
    if host.become_password:
        return f"sudo -S -p '' -H -u {user} -- ", True
    return f"sudo -n -H -u {user} -- ", False


def privileged(host: Host, argv: Sequence[str] | str, sudo: bool = False) -> tuple[str, bytes]:
    """The line that runs ``argv`` on ``host``, under its privilege prefix when ``sudo``
    or ansible_become asks for it, and what its stdin gets (the become password)."""
    line = command_line(argv)
    if not (sudo or host.become):
        return line, b""
    prefix, feed = become_prefix(host)
    stdin = b""
    if feed:  # sudo reads no password when it needs none (root, NOPASSWD): the
        # line would stay on stdin for the command to read (and print); give it none.
        line = f"exec </dev/null; {line}"
        stdin = f"{host.become_password}\n".encode()
    return prefix + "sh -c " + shlex.quote(line), stdin


def checked(
    result: CommandResult, host: Host, *, sudo: bool, check: bool, user: str
) -> CommandResult:
    """``result`` as its caller gets it: BecomeError when sudo itself refused ``user``
    (the command never ran: even check=False callers must not read it), CommandError
    when ``check`` and the command failed."""
    if (sudo or host.become) and not result.ok:
        refused = sudo_refusal(result.exited, result.stderr, user)
        if refused:
            raise BecomeError(host.name, refused)
    if check and not result.ok:
        raise CommandError(host.name, result.command, result.exited, result.stdout, result.stderr)
    return result


#: sudo's own refusal messages (lower case) and the fix for each.
_SUDO_REFUSALS = (
    (
        ("a password is required", "a terminal is required"),
        "set ansible_become_password, or allow NOPASSWD sudo for {user}",
    ),
    (
        ("incorrect password", "no password was provided", "sorry, try again"),
        "sudo rejected ansible_become_password; fix it",
    ),
    (
        ("not in the sudoers", "not allowed to execute", "may not run sudo"),
        "{user} may not use sudo there; grant it in sudoers or set ansible_become: false",
    ),
    (("must have a tty",), "sudoers has 'Defaults requiretty'; lift it for {user}"),
)


def sudo_refusal(exited: int, stderr: str, user: str) -> str | None:
    """A one-line reason and fix when sudo itself refused (so the command never ran)."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    if exited == 127:
        for line in lines:
            if "sudo" in line and "not found" in line:
                fix = "install it or set ansible_become: false"
                return f"sudo is not installed ({line[:120]}); {fix}"
        return None
    if exited != 1:
        return None
    for words, fix in _SUDO_REFUSALS:
        for line in lines:
            if any(word in line.lower() for word in words):
                return f"sudo refused ({line[:160]}); {fix.format(user=user)}"
    return None
