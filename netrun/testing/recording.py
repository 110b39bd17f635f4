"""A transport that records commands instead of running them: for unit tests of a mode's
command sequence (what it runs on which host, in which order). Integration tests stay real.

Each command gets the answer of the first rule whose pattern occurs in it, else exit 0 and
no output; ``commands`` keeps (host, command line) in order.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from netrun.errors import CommandError
from netrun.hosts.command import CommandResult, command_line


@dataclass
class Reply:
    """What a recorded command answers."""

    stdout: str = ""
    stderr: str = ""
    exited: int = 0


@dataclass
class RecordingTransport:
    """Stands in for a host's connection; shares its log with the other hosts' recorders."""

    host: str
    log: list[tuple[str, str]] = field(default_factory=list)
    rules: list[tuple[re.Pattern[str], Reply]] = field(default_factory=list)
    interrupted: int = 0

    def answer(self, pattern: str, reply: Reply) -> None:
        self.rules.append((re.compile(pattern), reply))

    @property
    def commands(self) -> list[str]:
        """This host's command lines, in order."""
        return [line for host, line in self.log if host == self.host]

    def run(
        self, argv: Sequence[str] | str, *, timeout: float, sudo: bool = False, check: bool = True
    ) -> CommandResult:
        line = command_line(argv)
        self.log.append((self.host, line))
        reply = next((r for p, r in self.rules if p.search(line)), Reply())
        result = CommandResult(self.host, line, reply.exited, reply.stdout, reply.stderr, 0.0)
        if check and not result.ok:
            raise CommandError(self.host, line, reply.exited, reply.stdout, reply.stderr)
        return result

    def put(self, local: Path, remote: str, *, timeout: float) -> None:
        self.log.append((self.host, f"put {local} {remote}"))

    def interrupt(self, running: bool = True) -> None:
        self.interrupted += 1

    def alive(self) -> bool:
        return True

    def reconnect(self) -> None:
        self.log.append((self.host, "reconnect"))

    def close(self) -> None:
        """Nothing to close."""
