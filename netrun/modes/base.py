"""What a mode is: its options, and setup / measure / teardown around one test.

A mode is registered by name; the core never imports a mode by hand, so a new mode is a
new module plus one line in netrun/modes/__init__.py.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar

from netrun.cleanup import undo as undo_records
from netrun.cleanup.ledger import Ledger, Scope
from netrun.core.options import Option, option_for
from netrun.core.programs import Program
from netrun.modes import sameend
from netrun.tools import form, get_tool, option_table
from netrun.tools.base import TOOL, Tool
from netrun.tools.docker import EngineInfo
from netrun.tools.ends import Cannot, Carried, Caveat, End, HostEnd, T, refusal
from netrun.tools.facts import HostFacts
from netrun.tools.savers.model import NONE, Saver, Savers
from netrun.tools.savers.pipeline import Pipeline
from netrun.tools.savers.state import Ahead, StartsAhead

if TYPE_CHECKING:
    from netrun.core.measurement import Measurement
    from netrun.core.spec import TestSpec
    from netrun.hosts.command import CommandResult
    from netrun.hosts.host import Host
    from netrun.inventory.model import Inventory
    from netrun.tools.savers.prestart import Prestart


class Planned(Protocol):
    """A test as the run planned it (netrun.run.plan.TestPlan), as a mode's look-ahead reads
    it (``probe_starts``, ``start_ahead``, docker's kept containers): its spec, its tool,
    and its mode placed on the inventory's hosts, without looking either up by name."""

    @property
    def spec(self) -> TestSpec: ...
    @property
    def tool(self) -> Tool: ...
    def placed(self, inventory: Inventory, ctx: RunContext) -> Mode: ...


#: A mode family's own run-wide state (RunContext.family).
State = TypeVar("State")


@dataclass
class Known:
    """What the run has learned of its hosts, once per host and run."""

    #: Host name -> what its probe read (kernel, tools, the data NIC).
    facts: dict[str, HostFacts] = field(default_factory=dict)
    #: Host name -> Docker engine info, checked once per host and run.
    engines: dict[str, EngineInfo] = field(default_factory=dict)
    #: (host name, image) -> image id, checked once per host and run.
    images: dict[tuple[str, str], str] = field(default_factory=dict)
    #: Host name -> docker command, where a mode used Docker: the final sweep also
    #: removes the run's labelled containers there.
    docker_hosts: dict[str, str] = field(default_factory=dict)


@dataclass
class Order:
    """The run's tests in the order they run, and those done (container modes look ahead:
    netrun.modes.docker.savers.keep)."""

    tests: Sequence[TestSpec] = ()
    #: Names of the tests whose mode was torn down (what is left to run, for keep).
    finished: set[str] = field(default_factory=set)


@dataclass
class RunContext:
    """What every mode of one run shares, by family: what the run knows of its hosts
    (``known``), what it starts ahead to save round trips (``ahead``), its tests' order
    (``order``), its undo records (``ledger``), and the stop flag."""

    run_id: str
    known: Known = field(default_factory=Known)
    ahead: Ahead = field(default_factory=Ahead)
    order: Order = field(default_factory=Order)
    #: Set when the run is being interrupted: a mode's waits (busy-port backoff) end early.
    stopping: threading.Event = field(default_factory=threading.Event)
    #: The run's undo records, in scopes, each journaled as it is written and as it runs
    #: (the runner gives it the run's journal, so what a killed run changed is known).
    ledger: Ledger = field(init=False)
    #: Each mode family's own run-wide state, one object per type (``family``).
    _families: dict[type, object] = field(default_factory=dict, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __post_init__(self) -> None:
        self.ledger = Ledger(self.run_id)

    def family(self, kind: type[State]) -> State:
        """The run's one ``kind`` (a mode family's state, e.g. the containers docker keeps:
        netrun.modes.docker.savers.keep.Parked), made on first use; the family defines the type,
        so this layer never imports a mode."""
        with self._lock:
            found = self._families.get(kind)
            if found is None:
                found = self._families[kind] = kind()
        assert isinstance(found, kind)
        return found

    def workdir(self, host: Host) -> str:
        """The run's private folder on a host (``netrun-<run id>-<folder key>``, one per
        host even where hosts share a remote tmp); removed at the end of the run."""
        return self.ledger.workdir(host)


class Mode:
    """A way of placing a test's ends: set up once per test, the ends a tool measures
    through (``end``, netrun.tools.ends.End), tear down.

    ``teardown`` is always called, even after a failed ``setup`` or an interrupt, and must
    remove only what this mode started. ``details`` lands in results.json as the test's
    mode-specific metadata.
    """

    name: ClassVar[str] = ""
    options: ClassVar[tuple[Option, ...]] = ()
    #: The hosts a test of this mode names, one scenario key each (``relay: charlie``).
    roles: ClassVar[tuple[str, ...]] = ("server", "client")
    #: The tools it can measure with; None: any registered tool. The one place a mode/tool
    #: pairing is declared (a mode implements each tool's placement; tools never name modes).
    tools: ClassVar[tuple[str, ...] | None] = None
    #: What the mode cannot carry among the tools it runs (a UDP test through FreeFlow's
    #: TCP-only library, a load through a relay), as data: ``refusal`` reads it, so
    #: ``--check-only`` and the setup refuse it with the same line.
    cannot: ClassVar[tuple[Cannot, ...]] = ()
    #: Why a kind of test it carries fails its path check for a reason of the mode's own
    #: (FreeFlow's TCP_CRR), as data: ``caveat`` reads it.
    caveats: ClassVar[tuple[Caveat, ...]] = ()
    #: role -> the programs a host in that role must have (its own declared in ``installs``);
    #: TOOL: the test's tool runs there on the host itself (its programs replace it).
    needs: ClassVar[Mapping[str, tuple[str, ...]]] = {"server": (TOOL,), "client": (TOOL,)}
    #: What installs each program of its own in ``needs`` (docker, turnserver), for the
    #: line that names a missing one (netrun.run.needs); the tools declare theirs.
    installs: ClassVar[tuple[Program, ...]] = ()
    # What the mode supports, asked by the run (which never names a concrete mode):
    #: Its ends run in containers (an ``mtu:`` test also sets the containers' interfaces).
    containers: ClassVar[bool] = False
    #: Its path crosses an overlay device (Flannel's VXLAN), which ``mtu:`` sets too.
    overlay_device: ClassVar[bool] = False
    #: The round-trip savers it allows (netrun.tools.savers.model): the run takes one only
    #: where every test's mode allows it; none: every tool measures through its ends alone.
    savers: ClassVar[Savers] = NONE
    #: Its ``measure`` calls ``start_line`` once its server listens and its client is
    #: armed, just before the client starts: a test of several flows (netrun.run.flows)
    #: then lines the flows' clients up there, not before their servers' starts.
    has_start_line: ClassVar[bool] = False
    #: The repeat being measured, set by what measures (netrun.tools.iperf3.onhost,
    #: netrun.run.flows): a host's last measurement (netrun.tools.savers.sweep), a flow's
    #: client to stop.
    repeat: int = 1

    def last_on(self, host: Host, repeat: int, *, probed: bool = True) -> bool:
        """Whether ``repeat`` is ``host``'s last measurement of the run and the host may
        sweep itself after it (Saver.EARLY_SWEEP, netrun.tools.savers.sweep); with
        ``probed`` False (a client armed before the probes answered), only the first."""
        sweep = self.ctx.ahead.early_sweep
        return sweep is not None and sweep.is_last(host, self.test, repeat, probed=probed)

    @classmethod
    def probe_starts(
        cls, plans: Sequence[Planned], inventory: Inventory, ctx: RunContext
    ) -> list[Prestart]:
        """What starts in its hosts' probes when its test is the run's first (Saver.
        PROBE_START): its tool's server, its client armed (Tool.server_ahead); a container
        mode starts its containers instead."""
        if not cls.savers.allows(Saver.PROBE_START):
            return []
        first = server_ahead(plans[0], inventory, ctx, now=True)
        return [first] if first is not None else []

    @classmethod
    def start_ahead(
        cls,
        plans: Sequence[Planned],
        inventory: Inventory,
        ctx: RunContext,
        rounds: Sequence[Sequence[Planned]] | None,
    ) -> StartsAhead | None:
        """The run's starts ahead: each next test's server (its tool's Tool.server_ahead)
        while the one before runs, for a mode whose savers allow Saver.START_AHEAD."""
        if not cls.savers.allows(Saver.START_AHEAD):
            return None
        return Pipeline(plans, inventory, ctx, rounds, plan=server_ahead)

    def __init__(
        self,
        test: TestSpec,
        server: Host,
        client: Host,
        ctx: RunContext,
        hosts: Mapping[str, Host] | None = None,
        *,
        table: Sequence[Option] | None = None,
        tool: Tool | None = None,
    ) -> None:
        self.test = test
        self.server = server
        self.client = client
        self.ctx = ctx
        #: role -> Host for every role of the mode.
        self.hosts: dict[str, Host] = {"server": server, "client": client, **(hosts or {})}
        #: A fan flow's mode (TestSpec.fan): every host of its test by name, set by the
        #: test of several flows (netrun.run.flows), so what the flows share can serve all.
        self.fan_hosts: dict[str, Host] = {}
        self.details: dict[str, Any] = {}
        #: Undo records of this test's changes (its scope of the run's ledger), oldest
        #: first; ``undo`` runs them in reverse.
        self.undo_stack: Scope = ctx.ledger.scope()
        #: Every option the test takes (general, its tool's, this mode's): given by the
        #: run's plan (netrun.run.plan), else built at the first read.
        self._table = tuple(table) if table is not None else None
        #: The test's tool: given by the run's plan, else looked up at the first read.
        self._tool = tool
        #: Called once per measurement, just before the client starts (has_start_line).
        self.start_line: Callable[[], None] = _nothing
        self._ends: dict[str, End] = {}

    @property
    def tool(self) -> Tool:
        """The test's tool (its ``load:`` form included), as the run planned it."""
        if self._tool is None:
            self._tool = form.of(get_tool(self.test.tool), self.test.options)
        return self._tool

    def value(self, name: str, host: Host | None = None) -> Any:
        """An option's value; inventory-settable ones are read for ``host`` (default server)."""
        if self._table is None:
            self._table = option_table(self.test.tool, self.options)
        return option_for(self.test, host or self.server, name, self._table)

    def end(self, role: str) -> End:
        """The placed end of ``role`` a tool runs its commands through
        (netrun.tools.ends.End), made once per test by ``place``."""
        found = self._ends.get(role)
        if found is None:
            found = self._ends[role] = self.place(role)
        return found

    def place(self, role: str) -> End:
        """The end of ``role``: on its host itself, dialled at its data address (bare
        metal's placement); a mode that places its ends elsewhere overrides this."""
        return HostEnd(self, role, self.hosts[role])

    def carry(
        self,
        repeat: int,
        port: int,
        leg: Callable[[str, int], T],
        moved: Callable[[T], Mapping[str, int]] | None = None,
    ) -> Carried[T]:
        """Run a tool's client leg towards the server end's ``port``: ``leg(address,
        port)`` dials what this mode gives (here the server end's address itself; TURN
        a tunnel through its relay, proven after the leg). ``moved``: what the leg's
        result moved each way (sender role -> payload bytes), for a mode that proves its
        path by the bytes it counted along it (netrun.modes.docker.carry)."""
        return Carried(leg(self.end("server").address, port))

    def dialled(self, port: int) -> tuple[str, int | None, str]:
        """What a client leg dials for the server end's ``port``, as ``carry`` will give it,
        known from the files alone (a tool's preview): the address, the port (None: one
        only known when the leg runs) and a note on the way (here: none)."""
        return self.end("server").address, port, ""

    def setup(self) -> None:
        """Start what the mode needs before the first repeat (containers, routers...)."""

    def resident_client(self, repeat: int) -> CommandResult:
        """One repeat's client towards a server its end keeps for the whole test
        (Placement.resident_client); here no end keeps one."""
        raise NotImplementedError(f"mode {self.name} keeps no server at its ends")

    def proving(self, measure: Callable[[], Measurement]) -> Measurement:
        """One measurement through this mode's ends (``measure``: a tool's placed
        measurement), with whatever proof of its path the mode takes around it
        (kubernetes: both nodes' device counters); here none."""
        return measure()

    def teardown(self) -> None:
        """Remove what setup and measure started."""

    def stop_flow(self) -> bool:
        """Stop the measurement another thread runs now, by its own tool processes alone
        (another flow of its test failed: netrun.run.flows), so its ``measure`` ends soon,
        by an error its caller sets aside. Called again while that measure runs (its
        client may not have started at the first call), so a repeat must be harmless.
        Here: the tool's own stop (Tool.stop: its client's pid file at the client end);
        False when the tool has none, and the measurement runs out its duration (an
        interrupt would cut every command of the hosts the flows share)."""
        stop = self.tool.stop
        if stop is None:
            return False
        stop(self, f"{self.test.tag}r{self.repeat}")
        return True

    def preview(self) -> list[tuple[str, str]] | None:
        """(role, command line) of what each host will run, built from the files alone
        (``--check-only``, ``--list-tests``), by the test's tool through this mode's ends;
        None: built when the test starts."""
        preview = self.tool.preview
        return preview(self) if preview is not None else None

    @classmethod
    def alone(cls, test: TestSpec) -> str | None:
        """Why ``test`` must run with no other test at once in a parallel run (it changes
        something beyond its hosts that other tests share: netrun.run.scheduler); None: it
        holds its hosts alone."""
        return None

    def one_end(self) -> str | None:
        """Why the test's two ends are one (the server host's data address is the client
        host's own: netrun.modes.sameend), known from the probe before anything starts;
        a container mode checks its containers' addresses too, once they run."""
        return sameend.hosts_problem(self.test, self.server, self.client, self.ctx.known.facts)

    def refusal(self) -> str | None:
        """Why this mode cannot carry the test, known from the files alone (its setup raises
        it when the test starts; ``--check-only`` shows it before), from what it declares
        it ``cannot`` carry; None: it can."""
        t = self.test
        return refusal(self.name, self.cannot, t.name, t.tool, self._option)

    def caveat(self) -> str | None:
        """The note of the first of ``caveats`` about this test; None: none is."""
        t = self.test
        return next((c.note for c in self.caveats if c.matches(t.tool, self._option)), None)

    def _option(self, name: str) -> Any:
        """The test's value of ``name``, None for an option its tool has not."""
        try:
            return self.test.value(name)
        except KeyError:
            return None

    # -- changes and their undo -------------------------------------------------------------
    def change(
        self,
        host: Host,
        command: str,
        undo: str,
        *,
        what: str,
        timeout: float = 30,
        sudo: bool = False,
        per_run: bool = False,
        check: bool = True,
    ) -> CommandResult:
        """Make a change on ``host`` after recording how to undo it, there and in the
        journal. ``command`` and ``undo`` are sh the caller built with quoted tokens.

        The record and the change go in one round trip, the change only if the record was
        written. A ``per_run`` record (e.g. removing the run's containers) is left for the
        run's final sweep; the others are undone by ``undo`` at the end of the test.
        """
        script = self.recorded_change(host, command, undo, what=what, sudo=sudo, per_run=per_run)
        return host.run(script, timeout=timeout, sudo=sudo, check=check)

    def recorded_change(
        self,
        host: Host,
        command: str,
        undo: str,
        *,
        what: str,
        sudo: bool = False,
        per_run: bool = False,
    ) -> str:
        """The sh of ``change`` (record, then the change only if the record was written),
        for a caller that sends it within a larger script of its own."""
        scope = self.ctx.ledger.run if per_run else self.undo_stack
        return undo_records.guarded(scope.record(host, undo, what=what, sudo=sudo), command)

    def new_record(
        self, host: Host, undo: str, *, what: str, sudo: bool = False, per_run: bool = False
    ) -> str:
        """sh writing a new undo record on ``host`` (noted in the journal first)."""
        scope = self.ctx.ledger.run if per_run else self.undo_stack
        return undo_records.write_script(scope.record(host, undo, what=what, sudo=sudo))

    def undo(self) -> list[str]:
        """Run this test's undo records, newest first on each host, the hosts at once;
        the problems, one line each."""
        return self.undo_stack.run()


def server_ahead(
    plan: Planned,
    inventory: Inventory,
    ctx: RunContext,
    lifetime: float = 0,
    after: str | None = None,
    *,
    now: bool = False,
) -> Prestart | None:
    """A test's server start (its tool's Tool.server_ahead, through its mode's ends), in
    its host's probe (``now``) or while the test before runs; None: its tool or mode has none."""
    start = plan.tool.server_ahead
    if start is None:
        return None
    mode = plan.placed(inventory, ctx)
    if not mode.savers.allows(Saver.PROBE_START if now else Saver.START_AHEAD):
        return None
    return start(mode, lifetime, after, now)


def _nothing() -> None:
    """A lone test's start line: nothing to wait for."""
