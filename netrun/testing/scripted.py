"""A recording transport whose host answers like a real one: every part of a command it
knows gets its captured answer, in the order the parts occur in the command.

netrun sends one host several things in one round trip (the probe, the lease, the first
server's start), so a command is answered by every rule whose pattern occurs in it, not only
the first: their outputs are joined in the order the patterns occur, and the command exits
with the first non-zero status among them.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from netrun.errors import CommandError
from netrun.hosts.command import CommandResult, command_line
from netrun.testing.recording import RecordingTransport, Reply


@dataclass
class ScriptedTransport(RecordingTransport):
    """Records every command (as RecordingTransport) and answers each with its known parts."""

    #: rule index -> the later answers of a rule that answers differently each time
    #: (``answer_each``: a log that grows between two reads).
    later: dict[int, list[Reply]] = field(default_factory=dict)

    def answer_each(self, pattern: str, replies: Sequence[Reply]) -> None:
        """Answer the first match of ``pattern`` with ``replies[0]``, the next with
        ``replies[1]``..., and every match after the last with the last."""
        self.later[len(self.rules)] = list(replies[1:])
        self.answer(pattern, replies[0])

    def reply(self, line: str) -> Reply:
        """The joined answer of every rule whose pattern occurs in ``line``."""
        found = sorted(
            (match.start(), index)
            for index, (pattern, _reply) in enumerate(self.rules)
            if (match := pattern.search(line))
        )
        parts = [self._take(index) for _at, index in found]
        exited = next((r.exited for r in parts if r.exited), 0)
        return Reply("".join(r.stdout for r in parts), "".join(r.stderr for r in parts), exited)

    def _take(self, index: int) -> Reply:
        pattern, reply = self.rules[index]
        later = self.later.get(index)
        if later:
            self.rules[index] = (pattern, later.pop(0))
        return reply

    def run(
        self, argv: Sequence[str] | str, *, timeout: float, sudo: bool = False, check: bool = True
    ) -> CommandResult:
        line = command_line(argv)
        self.log.append((self.host, line))
        reply = self.reply(line)
        result = CommandResult(self.host, line, reply.exited, reply.stdout, reply.stderr, 0.0)
        if check and not result.ok:
            raise CommandError(self.host, line, reply.exited, reply.stdout, reply.stderr)
        return result

    def start(self, argv: Sequence[str] | str) -> ScriptedStart:
        """A command waiting for a line on its stdin (what the SSH transport's start
        gives: netrun.hosts.transport.Started)."""
        line = command_line(argv)
        self.log.append((self.host, line))
        return ScriptedStart(self, line)


@dataclass
class ScriptedStart:
    """A command started on a scripted host (netrun.hosts.transport.Started): its line is
    recorded when it starts, the line sent to its stdin when sent (as ``<stdin> TEXT``),
    and it answers at once."""

    transport: ScriptedTransport
    line: str
    started: float = field(default_factory=time.monotonic)

    def send(self, text: str) -> None:
        self.transport.log.append((self.transport.host, f"<stdin> {text.rstrip()}"))

    def wait(self, timeout: float) -> tuple[int, str, str]:
        reply = self.transport.reply(self.line)
        return reply.exited, reply.stdout, reply.stderr

    def read_until(self, marker: str, timeout: float) -> str:
        return self.transport.reply(self.line).stdout

    def abandon(self) -> None:
        self.transport.log.append((self.transport.host, "<abandoned>"))
