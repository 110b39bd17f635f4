"""iperf3 on the hosts themselves, with the round-trip savers riding on its commands:
the measurement of a mode whose ends are its hosts and that allows the savers
(``Mode.savers``: bare metal).

Its client starts first, armed (netrun.tools.iperf3.ahead: its login overlaps the
server's start, or the probe's); its server was started in the probe or while the test
before ran, or starts now; the server end's readings ride on commands sent anyway
(netrun.tools.iperf3.readings); while the client runs, the next test's start ahead
(netrun.tools.savers.pipeline) or the server host's early sweep (netrun.tools.savers.sweep)
is sent. The run's saver state is the placement's ``ctx.ahead``: nothing here asks which
mode placed the ends.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from netrun.core.measurement import Measurement
from netrun.hosts import counters
from netrun.tools.ends import data_iface
from netrun.tools.iperf3 import ahead
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
from netrun.tools.iperf3.stall import stall_error

if TYPE_CHECKING:
    from netrun.hosts.command import CommandResult
    from netrun.hosts.host import Host
    from netrun.tools.base import Placement


def measure(mode: Placement, repeat: int) -> Measurement:
    """One iperf3 run, retried as iperf3's own loop says (busy port, lost setup)."""

    def once(tag: str) -> Measurement:
        mode.repeat = repeat
        return measure_once(mode, tag)

    return iperf3_measure.retrying(mode, repeat, once, mode.ctx.stopping)


def last_on(mode: Placement, host: Host, *, probed: bool = True) -> bool:
    """Whether the repeat measured is ``host``'s last of the run and the host may sweep
    itself after it (Saver.EARLY_SWEEP)."""
    sweep = mode.ctx.ahead.early_sweep
    return sweep is not None and sweep.is_last(host, mode.test, mode.repeat, probed=probed)


def measure_once(mode: Placement, tag: str) -> Measurement:
    mode.details.pop("warnings", None)
    # The client starts first: its login overlaps the server's start (or the probe's).
    saved = mode.ctx.ahead
    if saved.pipeline is not None:  # its client may be armed ahead, with its server
        saved.pipeline.wait(mode.server.name, tag)
    found = saved.armed.pop((mode.client.name, tag), None)
    armed = found if isinstance(found, ArmedClient) else ahead.arm_client(mode, tag)
    try:
        return _measure_once(mode, tag, armed)
    finally:
        armed.abandon()


def _measure_once(mode: Placement, tag: str, armed: ArmedClient) -> Measurement:
    with ahead.server(mode, tag) as server:
        assert server.port is not None
        mode.details["server_port"] = server.port
        end = iperf3_readings.ServerEnd(
            mode.server,
            server.read,
            ahead.deadline(mode) + REMOTE_MARGIN,
            server.pidfile(),
            server.said,
        )
        try:
            res = _run_client(mode, tag, armed, server, end)
        except ClientTimeout as exc:
            end.abandon()
            raise stall_error(mode, exc, server) from None
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
            raise exc.on(mode.client.name) from None
        ends = {"client": iperf3_readings.pair(mine), "server": end.collect()}
        if result.warnings:
            mode.details["warnings"] = list(result.warnings)
        details = {**mode.details, "counters": end_counters(ends)}
        return Measurement(res.stdout, result, details)


def _run_client(
    mode: Placement,
    tag: str,
    armed: ArmedClient,
    server: Iperf3Server,
    end: iperf3_readings.ServerEnd,
) -> CommandResult:
    """Fire the armed client (or run one) and, while it runs, start what rides on it:
    the next test's start, the server host's sweep, the server end's reading after."""
    assert server.port is not None
    srv, cli, saved = mode.server, mode.client, mode.ctx.ahead
    iface = data_iface(mode.ctx.known.facts, cli)
    sweep = saved.early_sweep
    sweep_client = last_on(mode, cli)
    # Same host both ends: the client's own sweep covers it, after both ended.
    sweep_server = last_on(mode, srv) and srv is not cli

    def then() -> None:  # while the client runs: the next test's start, and
        covered: set[str] = set()  # the server host's sweep
        if saved.pipeline is not None:
            running = {
                srv.name: server.pidfile(),
                cli.name: client_pidfile(mode.ctx.workdir(cli), tag),
            }
            covered = saved.pipeline.ahead(mode.test, mode.repeat, ahead.deadline(mode), running)
        if srv.name in covered:
            end.after_from(lambda: _reading_after(mode))
        elif sweep_server and sweep is not None:
            lifetime = ahead.deadline(mode) + REMOTE_MARGIN
            swept = sweep.server_sweep(srv, server.pidfile(), server.logfile, lifetime, end.read)
            if swept is not None:
                end.after_from(swept.output)
        end.otherwise()

    mode.start_line()  # server listening, client armed: the flows' start
    end.before_client()
    fired = armed.fire(server.port, iface, sweep=sweep_client, then=then)
    if armed.swept and sweep is not None:
        sweep.sent(cli, lambda: True)
    if fired is not None:
        return fired
    end.otherwise()
    return run_client(
        cli,
        ahead.client_argv(mode, server.port),
        workdir=mode.ctx.workdir(cli),
        tag=tag,
        timeout=ahead.deadline(mode),
        iface=iface,
        read=ahead.reading(mode, cli, srv),
    )


def _reading_after(mode: Placement) -> str:
    pipeline = mode.ctx.ahead.pipeline
    found = pipeline.reading_after(mode.test, mode.server.name) if pipeline else None
    return found or ""


def end_counters(
    ends: dict[str, tuple[counters.Reading | None, counters.Reading | None]],
) -> dict[str, dict[str, Any]]:
    """Each end's counter deltas (the host's network namespace: the ends run there).
    The server end's reading before may come from its start in the probe, a little
    ahead of the test (counters.judge_windows)."""
    out = {}
    for role, (before, after) in ends.items():
        either = before or after
        iface = either.iface if either is not None else None
        out[role] = counters.record(before, after, iface=iface, netns="host")
    counters.judge_windows(out)
    return out
