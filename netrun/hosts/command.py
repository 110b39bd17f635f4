"""One command for a host: its line (every token quoted, under the host's privilege) and
its result.

Every transport (SSH, local) builds a command's line and judges its result the same way:
``sudo -n`` (or ``sudo -S`` fed the become password) so nothing ever waits on a prompt,
and sudo's own refusal told apart from the command's failure (netrun.hosts.ssh.failures).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from netrun.errors import BecomeError, Cancelled, CommandError, ConnectError
from netrun.hosts.group import in_cleanup
from netrun.hosts.ssh.failures import sudo_refusal

if TYPE_CHECKING:
    from netrun.hosts.host import Host


@dataclass(frozen=True)
class CommandResult:
    """What one remote command did (after invoke's Result: command, exited, stdout, stderr)."""

    host: str
    command: str
    exited: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def ok(self) -> bool:
        return self.exited == 0


def command_line(argv: Sequence[str] | str) -> str:
    """A list is a command: every token is quoted. A str is a script we built and quoted."""
    return argv if isinstance(argv, str) else shlex.join(argv)


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


class Interruptible:
    """What an interrupt does to a transport's commands (each transport inherits it)."""

    #: Bumped by interrupt(): commands running then stop, unless they are cleanup.
    _generation = 0
    #: Set by interrupt(): a command that is not cleanup does not start any more.
    _stopped = False

    def interrupt(self, running: bool = True) -> None:
        """Start no new command but cleanup; with ``running``, also stop the commands
        running now (another thread's) so their tests can tear down.

        Used when a run is interrupted: the main thread gets the signal, the workers'
        commands would otherwise run to their deadlines. A command stopped mid-way may
        still finish on the host (a ``docker run``), which is why a sequential run only
        refuses new commands and lets running steps end before its teardown.
        """
        if running:
            self._generation += 1
        self._stopped = True

    def _may_start(self, host: str) -> None:
        """Cancelled once interrupted, unless the command is cleanup (e.g. a long docker
        pull after Ctrl-C does not start)."""
        if self._stopped and not in_cleanup():
            raise Cancelled(host)

    def _watch(self) -> Callable[[], bool]:
        """Polled by a running command: True once interrupt() stops the commands running
        now (those started before it, not after)."""
        generation = self._generation
        return lambda: self._generation != generation
