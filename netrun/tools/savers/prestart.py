"""Saver.PROBE_START: a start script that rides on a host's probe, one round trip fewer
for the run's first test (a bare-metal iperf3 server, a container), and the client armed
beside it (Saver.ARMED_CLIENT).

A mode offers its starts through ``Mode.probe_starts``; the run adds each to its host's
probe (netrun.run.fleet) and the measurement adopts what the script printed. Whatever it
started is in the run folder like any other start, so the final sweep (or the next run's,
after SIGKILL) removes it even if no test adopts it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from netrun.hosts.host import Host
    from netrun.tools.savers.state import Ahead, Armed


class Arms(Protocol):
    """A test whose client can start before its host's probe (bare metal, containers)."""

    @property
    def client(self) -> Host: ...

    def arm_client(self, tag: str) -> Armed: ...


MARK = "==netrun:prestart=="


@dataclass
class Prestart:
    """One server start script to run in one host's probe, and where its answer goes."""

    host: str
    tag: str
    script: str
    #: The run's savers' state (RunContext.ahead): where the answer and the armed client go.
    ctx: Ahead
    #: The test's mode, to arm its client on the client host (``arm``); None for a
    #: start that has no client to arm (the server end's container,
    #: netrun.modes.docker.savers.probe).
    mode: Arms | None = None
    #: The armed client's key in ctx.ahead.armed, when not ``tag`` (a container test's).
    arm_tag: str | None = None
    #: How long the script may wait on the host before it ends (for the test running
    #: there to end: netrun.tools.savers.pipeline), beyond its start's own time.
    wait_s: float = 0.0
    #: Whether the script lets the probe's background jobs end (sh ``wait``, or
    #: tools.context.SETTLE from a subshell of its own) before its reading: then the
    #: probe runs the host's context beside the start (netrun.run.fleet) instead of
    #: before it.
    settles: bool = False

    def extra(self) -> str:
        """The shell that follows the probe: a marker, then the start script."""
        return f"echo {MARK}\n{self.script}"

    def take(self, output: str) -> None:
        """Keep what the script printed (after the marker), for the measurement to adopt."""
        _, found, answer = output.partition(MARK + "\n")
        if found:
            self.ctx.prestarted[(self.host, self.tag)] = answer

    @property
    def client(self) -> str:
        return self.mode.client.name if self.mode is not None else ""

    def arm(self) -> None:
        """Start the test's client on its host before that host's probe, so that its
        login overlaps the probes (netrun.tools.iperf3.run.ArmedClient); the measurement fires it.
        """
        if self.mode is not None:
            tag = self.arm_tag or self.tag
            self.ctx.armed[(self.client, tag)] = self.mode.arm_client(tag)
