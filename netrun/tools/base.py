"""What a tool is: its options, its metrics, and one measurement.

A test picks its tool with ``tool:`` (default iperf3). The scenario loader takes the tool's
options (so a ping test refuses iperf3's ``omit:``), the runner asks the tool to measure
and records the metrics it declares; reports, history and baselines read the declarations.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from netrun.core.metrics import Metric
from netrun.core.options import Option
from netrun.core.programs import Program
from netrun.tools.ends import Carried, End, Recorder, T, Workdirs
from netrun.tools.fan import Fan
from netrun.tools.savers.model import Savers

if TYPE_CHECKING:
    from netrun.core.measurement import Measurement
    from netrun.core.spec import TestSpec
    from netrun.hosts.command import CommandResult
    from netrun.hosts.host import Host
    from netrun.tools.savers.prestart import Prestart
    from netrun.tools.savers.state import Ahead


#: In a mode's ``needs`` (netrun.modes.base.Mode.needs): "the test's tool runs here, on the
#: host itself". The run (netrun.run.needs.role_needs) replaces it by the programs of the
#: test's tool for that role (Tool.programs), so a mode never names a tool it places.
TOOL = "<tool>"


class Knows(Protocol):
    """What the run learned of its hosts (netrun.modes.base.Known), as a tool reads it."""

    #: Host name -> what its probe read (netrun.tools.facts.HostFacts: its data NIC...).
    @property
    def facts(self) -> Mapping[str, object]: ...


class Shared(Workdirs, Protocol):
    """What a tool sees of the run's shared state (netrun.modes.base.RunContext): its
    folders and stop flag, what the probes found, and the round-trip savers' state
    (``ahead``: servers started in the probe or ahead, armed clients, the early sweep)
    that a tool's measurement on the hosts drives (netrun.tools.iperf3.onhost)."""

    @property
    def known(self) -> Knows: ...
    @property
    def ahead(self) -> Ahead: ...


class Placement(Recorder, Protocol):
    """What a tool's ``measure`` sees of the mode that placed its ends (every
    netrun.modes.base.Mode is one): tools sit below modes and know them only by this.
    A tool runs its commands through ``end(role)`` (netrun.tools.ends.End), never on
    ``server`` / ``client`` directly: those name the hosts (errors, clocks). As a
    Recorder it holds the test's undo records (``change``) and the run's folders."""

    #: The repeat being measured (a host's last measurement, a flow's client to stop).
    repeat: int
    #: Called once per measurement, just before the client starts (Mode.has_start_line).
    start_line: Callable[[], None]

    @property
    def ctx(self) -> Shared: ...
    @property
    def test(self) -> TestSpec: ...
    @property
    def savers(self) -> Savers: ...
    @property
    def server(self) -> Host: ...
    @property
    def client(self) -> Host: ...
    @property
    def details(self) -> dict[str, Any]: ...

    def value(self, name: str, host: Host | None = None) -> Any: ...

    def end(self, role: str) -> End: ...

    def carry(
        self,
        repeat: int,
        port: int,
        leg: Callable[[str, int], T],
        moved: Callable[[T], Mapping[str, int]] | None = None,
    ) -> Carried[T]: ...

    def dialled(self, port: int) -> tuple[str, int | None, str]: ...

    def resident_client(self, repeat: int) -> CommandResult:
        """One repeat's client of the test's tool (Tool.resident_client) at the client end,
        towards the server its end keeps for the whole test (End.resident), as the mode
        runs it: its command armed ahead, the client end's counters riding on it (a
        container's ``docker exec``: netrun.modes.docker.savers.client)."""
        ...

    def proving(self, measure: Callable[[], Measurement]) -> Measurement: ...


@runtime_checkable
class SampleFigures(Protocol):
    """A parsed result that fills a sample's schema 1 figures itself (iperf3's), read by
    netrun.run.sample: its top-level figures, packet counts and interval series, the release
    its output names, and what its goodput ceiling is computed from (blksize, tcp_mss:
    netrun.core.linerate.ceiling_of). A result without them (iperf2's, ping's, netperf's, a
    ``load:`` test's phases) leaves the figures to its tool's metrics (Tool.top_level), the
    release to the probe's (HostFacts.version) and the ceiling to the options."""

    @property
    def version(self) -> str | None: ...
    @property
    def blksize(self) -> int | None: ...
    @property
    def tcp_mss(self) -> int | None: ...
    @property
    def lost_packets(self) -> int | None: ...
    @property
    def packets(self) -> int | None: ...

    def top_level(self) -> Mapping[str, float | None]:
        """Its figures of a sample's top level, by name (``throughput_bps``: the
        receiver's rate, never the sender's in its place)."""
        ...

    def series(self) -> list[list[float]]:
        """``[start, end, bits/s]`` of each reporting interval (results.json's intervals)."""
        ...


@runtime_checkable
class PeersSeen(Protocol):
    """A parsed result that reports the peers its server saw (iperf2's server report): what
    a relay mode proves its relay by (netrun.modes.turn: the relayed address must be the
    server's peer, and the relay's NIC must have counted what the server received)."""

    #: ``ADDR port N`` of each flow, as the server saw it.
    @property
    def peers(self) -> tuple[str, ...]: ...
    #: The one address every flow came from, else None.
    @property
    def peer_seen(self) -> str | None: ...
    #: Datagrams the server received (sent less lost; 0 when its report has no count).
    @property
    def received(self) -> int: ...


@dataclass(frozen=True)
class Latency:
    """Which of a tool's metrics are its latency's median and p99 (None: it reports no
    such percentile), and how many ms one of their units is; ``mean``: the metric (in
    ms) that stands in where it has no percentiles. What a latency-under-load test adds
    and the table that shows it read this, so neither names a tool."""

    p50: str | None
    p99: str | None
    per_ms: float = 1.0
    mean: str | None = None


@dataclass(frozen=True)
class Tool:
    """A measuring tool as the core sees it."""

    name: str
    options: tuple[Option, ...]
    metrics: tuple[Metric, ...]
    #: One repeat in a set-up mode; raises a NetrunError (ToolError) when it fails.
    measure: Callable[[Placement, int], Measurement]
    #: "running 10s": what the progress line says a repeat does.
    describe: Callable[[TestSpec], str]
    #: results.json's ``protocol`` for a test that has no protocol option.
    protocol: str = ""
    #: A test's ``protocol`` from its options, where it is set by another option (netperf:
    #: its ``test:``); None: the ``protocol`` above.
    protocol_of: Callable[[Mapping[str, Any]], str] | None = None
    #: Metrics of this tool that a sample also carries as its top-level field of the same
    #: name (a schema 1 field: netrun.core.metrics.SCHEMA1_METRICS), because they measure
    #: what that field means: ``throughput_bps`` is the rate the receiver got. iperf3's
    #: come from its result; a tool names only figures of the same side and kind.
    top_level: tuple[str, ...] = ()
    #: The name ending of a repeat's raw file (netrun.results.store.ResultsDir.save_raw),
    #: saying what it holds: ``.json`` for iperf3's -J output, ``.txt`` for a text report.
    raw_suffix: str = ".txt"
    #: Problems between options (each "key must ..."), after each option passed its own check.
    check: Callable[[Mapping[str, Any]], list[str]] | None = None
    #: role -> programs it runs on the hosts themselves, where a mode runs the tool there
    #: (bare metal: TOOL in the mode's needs, ``programs``); None: its own name, on every
    #: such role.
    needs: Mapping[str, tuple[str, ...]] | None = None
    #: (test options, [(host, its tool version)] of the hosts that run it) -> one line when
    #: a host's release lacks an option the test uses (checked before the test), else None.
    refuse: Callable[[Mapping[str, Any], Sequence[tuple[str, str | None]]], str | None] | None = (
        None
    )
    #: How flows of this tool measured at once add up (``pairs: {fanin: HOST}``,
    #: netrun.tools.fan); None: the tool cannot run a test of several flows.
    fan: Fan | None = None
    #: (role, command line) of each end's part of a test, built through the placement's
    #: ends from the files alone (``--check-only``); None: shown when the test starts.
    preview: Callable[[Placement], list[tuple[str, str]]] | None = None
    #: Stop the measurement of tag ``TEST-TAG r REPEAT`` another thread runs now, by its
    #: client's pid file (another flow of its test failed: netrun.run.flows); None: the
    #: tool cannot, and the measurement runs out its duration.
    stop: Callable[[Placement, str], None] | None = None
    #: The round-trip savers ride on its commands: (placement, lifetime, after, now) ->
    #: the start script of a test's server, to run before its test (in the host's probe
    #: with ``now``, or while the test before runs: netrun.tools.savers.prestart,
    #: netrun.tools.savers.pipeline), with its client armed; its client's last command
    #: may sweep the host (netrun.tools.savers.sweep). None: no saver rides on it.
    server_ahead: Callable[[Placement, float, str | None, bool], Prestart | None] | None = None
    #: (option, first release) of each option a test uses that an older release of the
    #: tool lacks (what ``refuse`` checks once the hosts' versions are known), for
    #: ``--check-only``; None: the tool has no such options.
    releases: Callable[[Mapping[str, Any]], list[tuple[str, str]]] | None = None
    #: Options set on each flow of a test of several flows unless the test sets them
    #: (iperf3: ``omit``, the flows' start spread left out of the result).
    flow_defaults: Mapping[str, Any] | None = None
    #: (its parsed result) -> what one repeat moved: sender role -> the payload bytes its
    #: receiver got, the figure a mode judges its path's byte counters on
    #: (Placement.proving: flannel, freeflow, kubernetes); None or empty: it does not say.
    moved: Callable[[Any], Mapping[str, int]] | None = None
    #: (placement, address, port) -> the argv (unwrapped) of one repeat's client towards
    #: the server its end keeps for the whole test (``resident``) at ``address:port``: what
    #: a mode that keeps one runs each repeat, armed ahead (Placement.resident_client);
    #: None: the tool runs its client itself (through ``carry``).
    resident_client: Callable[[Placement, str, int], list[str]] | None = None
    #: The port its resident server listens on at an end with a network namespace of the
    #: test's own (iperf3's 5201 in its container), whatever the test's ``port``; None:
    #: the test's port.
    resident_port: int | None = None
    #: (port) -> the argv of its server as one process for a whole test, that prints
    #: ``resident_ready`` once it listens: what an end that keeps one server per test
    #: runs (a container's PID 1, netrun.modes.docker); None: the tool keeps none.
    resident: Callable[[int], list[str]] | None = None
    #: What its resident server prints once it listens: an end that keeps it waits for
    #: this text in its output (a container's log) before the test measures.
    resident_ready: str = ""
    #: What its resident server prints once per test it served (its first when it starts
    #: listening: iperf3 -s says it listens again after each test): counted in its output,
    #: it tells an end's wait on the server's host that a repeat ended (Saver.SERVER_WAIT,
    #: and the host's early sweep riding on that wait); None: it prints nothing per test,
    #: and no saver waits on it.
    resident_served: str | None = None
    #: Its options that never shape the server an end keeps (``resident``): they shape
    #: each repeat's client run, or how the test is run and judged. Tests that differ only
    #: in them (and in the run's own keys, netrun.core.options.RUN_OPTIONS) may measure
    #: with the same kept server (a container kept for the next test,
    #: netrun.modes.docker.savers.keep).
    client_only: frozenset[str] = frozenset()
    #: Its headline is a throughput the receiving host's NIC counters show while it runs:
    #: a terminal's live line samples them during the test (netrun.run.sampler).
    live_nic: bool = False
    #: (role, command line) of what runs beside the tool's own commands, built through the
    #: placement's ends from the files alone (``--check-only``: ``load:``'s bulk flow,
    #: netrun.tools.load.tool); None: nothing runs beside them.
    beside_preview: Callable[[Placement], list[tuple[str, str]]] | None = None
    #: (test) -> seconds a repeat spends beyond the test's own traffic (``load:``: the
    #: load's run: its ramp, the loaded window and a second), for a run's expected time.
    beside_seconds: Callable[[TestSpec], float] | None = None
    #: Its latency metrics (``load:`` on it: what the load added); None: it has none.
    latency: Latency | None = None
    #: What installs each program it runs on the hosts (``needs``), for the line that
    #: names a missing one (netrun.run.needs): declared here, beside the programs.
    installs: tuple[Program, ...] = ()

    def programs(self, role: str) -> tuple[str, ...]:
        """The programs it runs on a host in ``role`` where a mode runs it there itself
        (what TOOL in a mode's needs stands for): its ``needs`` for the role (none: the
        role only answers, as ping's server), else its own name."""
        if self.needs is None:
            return (self.name,)
        return tuple(self.needs.get(role, ()))

    def protocol_for(self, options: Mapping[str, Any]) -> str:
        """results.json's ``protocol`` of a test run with ``options``: its protocol option,
        else what the tool's ``protocol_of`` derives from them, else the tool's ``protocol``."""
        if options.get("protocol"):
            return str(options["protocol"])
        if self.protocol_of is not None:
            return self.protocol_of(options)
        return self.protocol

    @property
    def starts_ahead(self) -> bool:
        """Whether the round-trip savers ride on its commands (``server_ahead``)."""
        return self.server_ahead is not None

    def headline(self) -> Metric:
        """The metric a progress line and a verdict's delta are about (the first declared)."""
        return self.metrics[0]
