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

from netrun.errors import Cancelled
from netrun.hosts.shield import in_cleanup


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
