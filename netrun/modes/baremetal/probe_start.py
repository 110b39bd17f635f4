"""The run's first iperf3 server, started in its host's probe: one round trip fewer.

A single bare-metal test waited for the probe of its server host, then started the
server there: two round trips one after the other, each paying the host's login cost.
When the run's first test is a bare-metal iperf3 test, its server's start script rides
on that probe instead (after the probe's own output, in a subshell). The measurement
adopts the server if the script printed NETRUN_READY, and starts one as usual otherwise,
which then reports whatever is wrong. The server's pid file is in the run folder like any
other, so the final sweep (or the next run's, after SIGKILL) kills it even if no test
adopts it: a probe that failed, a client host that could not be reached.

The test's client is started too, on its own host before that host's probe: it waits
for the server's port on its stdin, so its host's login cost is paid during the probes
(netrun.tools.iperf3.run.ArmedClient). Unused, it is abandoned and runs nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from netrun.modes import get_mode
from netrun.modes.baremetal.mode import BareMetal

if TYPE_CHECKING:
    from netrun.core.spec import TestSpec
    from netrun.hosts.host import Host
    from netrun.inventory.model import Inventory
    from netrun.modes.base import RunContext


class Arms(Protocol):
    """A test whose client can start before its host's probe (bare metal, containers)."""

    @property
    def client(self) -> Host: ...

    def arm_client(self, tag: str) -> Any: ...


MARK = "==netrun:prestart=="


@dataclass
class Prestart:
    """One server start script to run in one host's probe, and where its answer goes."""

    host: str
    tag: str
    script: str
    ctx: RunContext
    #: The test's mode, to arm its client on the client host (``arm``); None for a
    #: start that has no client to arm (the server end's container, netrun.modes.docker.early).
    mode: Arms | None = None
    #: The armed client's key in ctx.armed, when not ``tag`` (a container test's).
    arm_tag: str | None = None

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


def plan(
    test: TestSpec, inventory: Inventory, ctx: RunContext, lifetime: float = 0
) -> Prestart | None:
    """The prestart for a test (the run's first; the next, netrun.modes.baremetal.ahead), if it is a
    bare-metal iperf3 test; ``lifetime``: seconds its server must live before its test."""
    mode_class = get_mode(test.mode)
    if mode_class is not BareMetal or test.tool != "iperf3":
        return None
    by_role = {r: inventory.get(n) for r, n in test.hosts_by_role.items()}
    mode = mode_class(test, by_role["server"], by_role["client"], ctx, by_role)
    tag = f"{test.tag}r1"  # the tag its first measurement looks for
    server = mode.iperf3_server(tag)
    server.lifetime = (server.lifetime or 0) + lifetime
    return Prestart(test.server, tag, server.script(), ctx, mode)
