"""How netrun talks to a host, as the layers above see it: a Transport runs a command and
copies a file; a Started command waits for one line on its stdin.

The SSH transport (netrun.hosts.ssh.transport) is built on paramiko's SSHClient, as
fabric's Connection is, with three changes to fabric's defaults: host keys are verified
against known_hosts, every command has a deadline, and privilege uses ``sudo -n`` (or
``sudo -S`` fed the become password) so nothing ever waits on a prompt. The local one
(netrun.hosts.local) runs on the controller itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from netrun.hosts.command import CommandResult


class Transport(Protocol):
    """Anything that can run a command on a host and copy a file to it."""

    def run(
        self, argv: Sequence[str] | str, *, timeout: float, sudo: bool = False, check: bool = True
    ) -> CommandResult: ...

    def put(self, local: Path, remote: str, *, timeout: float) -> None: ...

    def interrupt(self, running: bool = True) -> None: ...

    def alive(self) -> bool: ...

    def reconnect(self) -> None: ...

    def close(self) -> None: ...


class Started(Protocol):
    """A command started on a host, waiting for one line on its stdin (a Transport's
    ``start``; netrun.hosts.ssh.channel.Started is the SSH one)."""

    #: The command line it runs, and when it started (time.monotonic()).
    line: str
    started: float

    def send(self, text: str) -> None: ...

    def wait(self, timeout: float) -> tuple[int, str, str]: ...

    def read_until(self, marker: str, timeout: float) -> str: ...

    def abandon(self) -> None: ...
