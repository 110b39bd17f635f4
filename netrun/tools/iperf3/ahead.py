"""What starts before an iperf3 measurement on the hosts themselves: its server and its
armed client, built through the ends the mode placed (netrun.tools.ends.End).

Saver.PROBE_START and Saver.START_AHEAD: a test's server start script rides on its host's
probe (the run's first test) or runs while the test before runs (each next test), its
client armed beside it (Saver.ARMED_CLIENT); the measurement (netrun.tools.iperf3.onhost)
adopts what the script printed, and starts one as usual otherwise, which then reports
whatever is wrong. ``server_ahead`` is iperf3's Tool.server_ahead; the run reaches it
through the mode (Mode.probe_starts, Mode.start_ahead), which only gives the ends.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from netrun.hosts import counters
from netrun.tools.ends import data_iface
from netrun.tools.iperf3 import measure as iperf3_measure
from netrun.tools.iperf3.run import REMOTE_MARGIN, ArmedClient, Iperf3Server
from netrun.tools.savers.prestart import Prestart

if TYPE_CHECKING:
    from netrun.hosts.host import Host
    from netrun.tools.base import Placement


def reading(mode: Placement, host: Host, other: Host) -> str:
    """sh reading ``host``'s drop counters on its data NIC (toward ``other``)."""
    return counters.script(data_iface(mode.ctx.known.facts, host), toward=other.data_ip)


def deadline(mode: Placement) -> float:
    """How long a client run may take before netrun gives up on it (TestSpec.deadline)."""
    return float(mode.test.deadline)


def client_argv(mode: Placement, port: int | None) -> list[str]:
    """iperf3's client at the client end, to the server end's address."""
    json = iperf3_measure.server_json(mode)
    address = mode.end("server").address
    argv = iperf3_measure.client_argv(mode, address, port, server_output=json)
    return mode.end("client").wrap(argv)


def server(mode: Placement, tag: str) -> Iperf3Server:
    """The server of one measurement at the server end; one the run already started for
    it (its script rode on the host's probe, or ran ahead: RunContext.ahead.prestarted)
    is adopted."""
    end = mode.end("server")
    ahead = mode.ctx.ahead
    found = Iperf3Server(
        end.host,
        bind_ip=end.bind,
        workdir=end.workdir,
        tag=tag,
        binary=end.program("netrun_iperf3", "iperf3"),
        port=mode.value("port"),
        lifetime=deadline(mode),
        lazy_stop=True,
        json=iperf3_measure.server_json(mode),
    )
    found.read = reading(mode, mode.server, mode.client)  # its own start reads too
    if ahead.pipeline is not None:  # one started ahead: let its start finish
        ahead.pipeline.wait(end.host.name, tag)
    found.answer = ahead.prestarted.pop((end.host.name, tag), None)
    return found


def arm_client(mode: Placement, tag: str) -> ArmedClient:
    """The client of one measurement at the client end, started now: it waits for its
    server's port. On its host's last measurement it can sweep the host after it
    (netrun.tools.savers.sweep)."""
    end = mode.end("client")
    sweep = mode.ctx.ahead.early_sweep
    # armed during the probe: it may be its host's last (the probes have not told yet)
    last = sweep is not None and sweep.is_last(end.host, mode.test, mode.repeat, probed=False)
    return ArmedClient(
        end.host,
        client_argv(mode, None),
        workdir=end.workdir,
        tag=tag,
        timeout=deadline(mode),
        sweep=sweep.folder_gone(end.host) if last and sweep is not None else "",
        read=reading(mode, mode.client, mode.server),
    )


@dataclass(frozen=True)
class Arming:
    """A test's client to arm before its host's probe (netrun.tools.savers.prestart.Arms)."""

    mode: Placement

    @property
    def client(self) -> Host:
        return self.mode.end("client").host

    def arm_client(self, tag: str) -> ArmedClient:
        return arm_client(self.mode, tag)


def server_ahead(
    mode: Placement, lifetime: float = 0, after: str | None = None, now: bool = False
) -> Prestart:
    """A test's iperf3 server start (Tool.server_ahead), to run before its test (in its
    host's probe, or while the test before runs); ``lifetime``: seconds its server must
    live before its test. The server end's reading before rides on it
    (netrun.tools.iperf3.readings) with ``now`` (the probe: its test comes next) or
    ``after``, the pid file of the running test's process on that host: the reading is
    taken once it ended.

    A single bare-metal test waited for the probe of its server host, then started the
    server there: two round trips one after the other, each paying the host's login cost.
    The start script rides on the probe instead (after the probe's own output, in a
    subshell)."""
    test = mode.test
    tag = f"{test.tag}r1"  # the tag its first measurement looks for
    start = server(mode, tag)
    start.lifetime = (start.lifetime or 0) + lifetime
    wait_s = 0.0
    if after is None and not now:  # nothing tells when its test starts: none here
        start.read = ""
    elif after is not None:
        start.after = after
        start.after_s = wait_s = lifetime + REMOTE_MARGIN
    # its script waits for the probe's background jobs before its reading
    settles = bool(start.read)
    return Prestart(
        test.server,
        tag,
        start.script(),
        mode.ctx.ahead,
        Arming(mode),
        wait_s=wait_s,
        settles=settles,
    )
