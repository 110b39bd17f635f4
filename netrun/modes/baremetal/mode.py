"""Bare metal: iperf3 straight on the two hosts, over their data addresses.

This is the physical reference every other mode is compared with.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from netrun.core.measurement import Measurement
from netrun.errors import HostError
from netrun.hosts import counters
from netrun.hosts.command import CommandResult
from netrun.hosts.host import Host
from netrun.modes.base import Mode, Planned
from netrun.modes.savers.model import Saver, Savers
from netrun.modes.savers.pipeline import Pipeline
from netrun.modes.savers.prestart import Prestart
from netrun.tools.iperf3 import measure as iperf3_measure
from netrun.tools.iperf3 import parse as iperf3_parse
from netrun.tools.iperf3 import readings as iperf3_readings
from netrun.tools.iperf3 import result as iperf3_result
from netrun.tools.iperf3.run import (
    REMOTE_MARGIN,
    ArmedClient,
    ClientTimeout,
    Iperf3Server,
    client_pidfile,
    run_client,
)

if TYPE_CHECKING:
    from netrun.inventory.model import Inventory
    from netrun.modes.base import RunContext

#: What a /proc state letter means for a process we found stalled.
STATES = {
    "T": "stopped (SIGSTOP)",
    "t": "stopped by a debugger",
    "gone": "no longer running",
    "Z": "no longer running",
}


def reading(mode: Mode, host: Host, other: Host) -> str:
    """sh reading ``host``'s drop counters on its data NIC (toward ``other``)."""
    return counters.script(data_iface(mode, host), toward=other.data_ip)


def test_deadline(mode: Mode) -> float:
    """How long a client run may take before netrun gives up on it (TestSpec.deadline)."""
    return float(mode.test.deadline)


class BareMetal(Mode):
    """iperf3 server on the server host's data IP, client on the client host."""

    name = "baremetal"
    options = ()
    has_start_line = True
    #: Its first server started in the probe, each next one while the test before runs,
    #: its clients armed before their servers, each host swept by its last client or server.
    savers = Savers.of(Saver.PROBE_START, Saver.ARMED_CLIENT, Saver.START_AHEAD, Saver.EARLY_SWEEP)

    def measure(self, repeat: int) -> Measurement:
        """One iperf3 run, retried as iperf3's own loop says (busy port, lost setup)."""

        def once(tag: str) -> Measurement:
            self.repeat = repeat
            return self.measure_once(tag)

        return iperf3_measure.retrying(self, repeat, once, self.ctx.stopping)

    def client_argv(self, port: int | None) -> list[str]:
        """iperf3's client at the client end, to the server end's address."""
        json = iperf3_measure.server_json(self)
        address = self.end("server").address
        return iperf3_measure.client_argv(self, address, port, server_output=json)

    # -- what the run asks of the mode (netrun.run.fleet, netrun.run.runner) ---------------
    @classmethod
    def probe_starts(
        cls, plans: Sequence[Planned], inventory: Inventory, ctx: RunContext
    ) -> list[Prestart]:
        """The run's first test's iperf3 server, started in its host's probe (one round
        trip fewer, with the server end's reading before), and its client armed before
        the client host's probe."""
        first = cls.server_ahead(plans[0], inventory, ctx, now=True)
        return [first] if first is not None else []

    @classmethod
    def start_ahead(
        cls,
        plans: Sequence[Planned],
        inventory: Inventory,
        ctx: RunContext,
        rounds: Sequence[Sequence[Planned]] | None,
    ) -> Pipeline:
        """Each next test's server and client, started while the one before runs."""
        return Pipeline(plans, inventory, ctx, rounds, plan=cls.server_ahead)

    @classmethod
    def server_ahead(
        cls,
        plan: Planned,
        inventory: Inventory,
        ctx: RunContext,
        lifetime: float = 0,
        after: str | None = None,
        *,
        now: bool = False,
    ) -> Prestart | None:
        """A test's iperf3 server start, to run before its test (in its host's probe, or
        while the test before runs), if it is an iperf3 test; ``lifetime``: seconds its
        server must live before its test. The server end's reading before rides on it
        (netrun.tools.iperf3.readings) with ``now`` (the probe: its test comes next) or
        ``after``, the pid file of the running test's process on that host: the reading
        is taken once it ended.

        A single bare-metal test waited for the probe of its server host, then started the
        server there: two round trips one after the other, each paying the host's login
        cost. The start script rides on the probe instead (after the probe's own output, in
        a subshell); the measurement adopts the server if the script printed NETRUN_READY,
        and starts one as usual otherwise, which then reports whatever is wrong."""
        if not plan.tool.starts_ahead:
            return None
        test = plan.spec
        mode = plan.placed(inventory, ctx)
        if not isinstance(mode, cls):  # (the run's first test, or one started ahead: its)
            return None
        tag = f"{test.tag}r1"  # the tag its first measurement looks for
        server = mode.iperf3_server(tag)
        server.lifetime = (server.lifetime or 0) + lifetime
        wait_s = 0.0
        if after is None and not now:  # nothing tells when its test starts: none here
            server.read = ""
        elif after is not None:
            server.after = after
            server.after_s = wait_s = lifetime + REMOTE_MARGIN
        # its script waits for the probe's background jobs before its reading
        settles = bool(server.read)
        return Prestart(
            test.server, tag, server.script(), ctx.ahead, mode, wait_s=wait_s, settles=settles
        )

    def iperf3_server(self, tag: str) -> Iperf3Server:
        """The server of one measurement; one the run already started for it (its script
        rode on the host's probe, RunContext.prestarted) is adopted."""
        server = Iperf3Server(
            self.server,
            bind_ip=self.server.data_ip,
            workdir=self.ctx.workdir(self.server),
            tag=tag,
            binary=self.ctx.iperf3(self.server),
            port=self.test.value("port"),
            lifetime=test_deadline(self),
            lazy_stop=True,
            json=iperf3_measure.server_json(self),
        )
        server.read = reading(self, self.server, self.client)  # its own start reads too
        if self.ctx.ahead.pipeline is not None:  # one started ahead: let its start finish
            self.ctx.ahead.pipeline.wait(self.server.name, tag)
        server.answer = self.ctx.ahead.prestarted.pop((self.server.name, tag), None)
        return server

    def arm_client(self, tag: str) -> ArmedClient:
        """The client of one measurement, started now: it waits for its server's port.
        On its host's last measurement it can sweep the host after it
        (netrun.modes.savers.sweep)."""
        # armed during the probe: it may be its host's last (the probes have not told yet)
        last = self.last_on(self.client, self.repeat, probed=False)
        sweep = self.ctx.ahead.early_sweep
        return ArmedClient(
            self.client,
            self.client_argv(None),
            workdir=self.ctx.workdir(self.client),
            tag=tag,
            timeout=test_deadline(self),
            sweep=sweep.folder_gone(self.client) if last and sweep is not None else "",
            read=reading(self, self.client, self.server),
        )

    def measure_once(self, tag: str) -> Measurement:
        self.details.pop("warnings", None)
        # The client starts first: its login overlaps the server's start (or the probe's).
        if self.ctx.ahead.pipeline is not None:  # its client may be armed ahead, with its server
            self.ctx.ahead.pipeline.wait(self.server.name, tag)
        found = self.ctx.ahead.armed.pop((self.client.name, tag), None)
        armed = found if isinstance(found, ArmedClient) else self.arm_client(tag)
        try:
            return self._measure_once(tag, armed)
        finally:
            armed.abandon()

    def _measure_once(self, tag: str, armed: ArmedClient) -> Measurement:
        with self.iperf3_server(tag) as server:
            assert server.port is not None
            self.details["server_port"] = server.port
            end = iperf3_readings.ServerEnd(
                self.server,
                server.read,
                test_deadline(self) + REMOTE_MARGIN,
                server.pidfile(),
                server.said,
            )
            try:
                res = self._run_client(tag, armed, server, end)
            except ClientTimeout as exc:
                end.abandon()
                raise stall_error(self, exc, server) from None
            except BaseException:  # the server end's reading is no use now: it ends
                end.abandon()
                raise
            res, mine = iperf3_readings.split(res)
            try:
                result = iperf3_parse.parse(res.stdout, res.exited, stderr=res.stderr)
            except iperf3_result.Iperf3Error as exc:
                # no test ran: do not wait for a server that never served (its one-shot
                # iperf3 exits only when the test's undo stops it)
                end.abandon()
                if exc.kind == "busy":  # the server answered busy: another client holds it
                    exc.busy = {server.port: None}
                    raise
                raise exc.on(self.client.name) from None
            ends = {"client": iperf3_readings.pair(mine), "server": end.collect()}
            if result.warnings:
                self.details["warnings"] = list(result.warnings)
            details = {**self.details, "counters": end_counters(ends)}
            return Measurement(res.stdout, result, details)

    def _run_client(
        self, tag: str, armed: ArmedClient, server: Iperf3Server, end: iperf3_readings.ServerEnd
    ) -> CommandResult:
        """Fire the armed client (or run one) and, while it runs, start what rides on it:
        the next test's start, the server host's sweep, the server end's reading after."""
        assert server.port is not None
        iface = data_iface(self, self.client)
        sweep = self.ctx.ahead.early_sweep
        sweep_client = self.last_on(self.client, self.repeat)
        # Same host both ends: the client's own sweep covers it, after both ended.
        sweep_server = self.last_on(self.server, self.repeat) and self.server is not self.client

        def then() -> None:  # while the client runs: the next test's start, and
            covered: set[str] = set()  # the server host's sweep
            if self.ctx.ahead.pipeline is not None:
                running = {
                    self.server.name: server.pidfile(),
                    self.client.name: client_pidfile(self.ctx.workdir(self.client), tag),
                }
                covered = self.ctx.ahead.pipeline.ahead(
                    self.test, self.repeat, test_deadline(self), running
                )
            if self.server.name in covered:
                end.after_from(lambda: self._reading_after())
            elif sweep_server and sweep is not None:
                lifetime = test_deadline(self) + REMOTE_MARGIN
                swept = sweep.server_sweep(
                    self.server, server.pidfile(), server.logfile, lifetime, end.read
                )
                if swept is not None:
                    end.after_from(swept.output)
            end.otherwise()

        self.start_line()  # server listening, client armed: the flows' start
        end.before_client()
        fired = armed.fire(server.port, iface, sweep=sweep_client, then=then)
        if armed.swept and sweep is not None:
            sweep.sent(self.client, lambda: True)
        if fired is not None:
            return fired
        end.otherwise()
        return run_client(
            self.client,
            self.client_argv(server.port),
            workdir=self.ctx.workdir(self.client),
            tag=tag,
            timeout=test_deadline(self),
            iface=iface,
            read=reading(self, self.client, self.server),
        )

    def _reading_after(self) -> str:
        pipeline = self.ctx.ahead.pipeline
        found = pipeline.reading_after(self.test, self.server.name) if pipeline else None
        return found or ""


def end_counters(
    ends: dict[str, tuple[counters.Reading | None, counters.Reading | None]],
) -> dict[str, dict[str, Any]]:
    """Each end's counter deltas (the host's network namespace: bare metal runs there).
    The server end's reading before may come from its start in the probe, a little
    ahead of the test (counters.judge_windows)."""
    out = {}
    for role, (before, after) in ends.items():
        either = before or after
        iface = either.iface if either is not None else None
        out[role] = counters.record(before, after, iface=iface, netns="host")
    counters.judge_windows(out)
    return out


def data_iface(mode: Mode, host: Host) -> str | None:
    """The data NIC the probe found on ``host`` (or netrun_iface), to check it after a stall."""
    nic = getattr(mode.ctx.known.facts.get(host.name), "nic", None)
    return getattr(nic, "iface", None) or host.iface


def stall_error(mode: BareMetal, exc: ClientTimeout, server: Iperf3Server) -> HostError:
    """A client killed at its deadline, with what was found stalled: a link, a process."""
    client, srv = mode.client, mode.server
    where = f"{srv.name} {srv.data_ip}:{server.port}"
    try:
        state, link = server.diagnose(data_iface(mode, srv))
    except HostError:
        state = link = None
    found = []
    if exc.state in STATES:
        found.append(f"the client on {client.name} was {STATES[exc.state]}")
    if state in STATES:
        found.append(f"the iperf3 server on {srv.name} was {STATES[state]}")
    for host, operstate in ((client, exc.link), (srv, link)):
        if operstate not in (None, "up", "unknown"):
            iface = data_iface(mode, host)
            found.append(f"lost the data path: {iface} on {host.name} is {operstate}")
    why = "; ".join(found) or f"lost the data path to {srv.name}, or the server stalled"
    return HostError(
        client.name,
        f"iperf3 client to {where} did not finish within {exc.timeout:g}s "
        f"(a {mode.test.duration:g}s test); killed it by pid: {why}",
    )


MODE = BareMetal
