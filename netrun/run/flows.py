"""Running a test of several flows at once: a fan-in's clients into one host, a fan-out's.

A test of ``pairs: {fanin: HOST}`` (netrun.scenario.pairs) holds every flow's hosts
(TestSpec.flows, TestSpec.hosts), so the scheduler never puts another test on any of them.
Each flow is a test of its own to its mode (its plan's ``flows``, netrun.run.plan.flow_specs:
the test's options, the flow's two hosts, its own name and tag, so its containers, run
files and undo records are its own, and its own port when the test fixes one), set up
(the first alone, as it starts what every flow shares on the fan host, then the others
at once);
each repeat then measures every flow at once, started together behind a barrier
(netrun.run.startline), over the same duration; and every flow is torn down, with each
undo, on every way out.

A flow that fails fails the repeat (or, in its setup, the test) with one line naming the
flow and its host. During a measurement the other flows are then stopped at once, each by
its mode's ``stop_flow`` (Mode.stop_flow), which ends that flow's own tool process alone:
bare metal kills its iperf3 client by pid file, the container modes what ``docker exec``
runs in its client container. An interrupt would not do: it cuts every command of the
hosts the flows share. Their errors give way to the failed flow's (a progress line says
``flow X stopped: flow Y failed``); every flow is torn down, with each undo, and the later
repeats run. A mode that cannot stop a flow (Mode's default) lets it run out its duration.
Ctrl-C and SIGTERM stop every host's running command (the run's ``interrupt``), as in a
parallel run.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from typing import TypeVar

from netrun.core.measurement import Measurement
from netrun.core.spec import Flow, TestSpec
from netrun.errors import Cancelled, HostError, Interrupted, ModeError, NetrunError, ToolError
from netrun.hosts.cpustat import CPU_METRICS
from netrun.hosts.shield import cleaning, shielded
from netrun.modes.base import Mode
from netrun.results.store import utcnow
from netrun.run.needs import refused
from netrun.run.plan import TestPlan
from netrun.run.request import Runner
from netrun.run.startline import BARRIER_S, StartLineBroken, once, spread
from netrun.tools.fan import AGGREGATE

T = TypeVar("T")
#: Seconds between the stops of a failed repeat's other flows (Mode.stop_flow): a client
#: not started yet at one stop is caught by the next.
STOP_EVERY_S = 1.0


class FlowError(ToolError):
    """One flow of a test failed: the line names the flow and the host."""


def _where(flow: Flow, exc: BaseException) -> str:
    """The one line of a flow's failure: which flow, on which host, what happened."""
    text = str(exc)
    named = [h for h in (flow.server, flow.client) if text.startswith(f"{h}: ")]
    host = exc.host if isinstance(exc, HostError | Cancelled) else (named or [flow.client])[0]
    if text.startswith(f"{host}: "):
        text = text[len(host) + 2 :]
    return f"flow {flow.label} failed on {host}: {text}"


class FlowTest:
    """One test of several flows, as the runner's ``_run_test`` runs a test of one."""

    def __init__(self, run: Runner, plan: TestPlan, label: str) -> None:
        self.run = run
        self.plan = plan
        self.test = plan.spec
        self.label = label
        #: Each flow's plan (its own spec, the test's tool and mode).
        self.flows = plan.flows
        self.modes: list[Mode] = []
        #: When each flow of the repeat being measured passed its start line (monotonic).
        self.passed: list[float] = []
        #: The last ``_each``'s flows stopped for another's failure, one line each.
        self.stopped: list[str] = []

    def _start(self) -> None:
        inventory = self.run.req.inventory
        for b in self.flows:
            server, client = inventory.get(b.spec.server), inventory.get(b.spec.client)
            by_role = {role: inventory.get(h) for role, h in b.spec.hosts_by_role.items()}
            mode = b.start(server, client, self.run.ctx, by_role)
            mode.fan_hosts = {n: inventory.get(n) for n in self.test.hosts}
            self.modes.append(mode)

    def _each(
        self,
        pool: ThreadPoolExecutor,
        step: Callable[[int], T],
        only: range | None = None,
        *,
        stop: bool = False,
    ) -> list[T]:
        """``step(i)`` for every flow (or those ``only`` names) at once; the first failure
        (in flow order) raised as the flow's one line, after every flow's step ended.
        With ``stop`` (a measurement), a failure stops the other flows (``_stop_others``),
        whose own errors then give way to it (each one's line in ``stopped``)."""
        which = range(len(self.modes)) if only is None else only
        futures = [pool.submit(step, i) for i in which]
        halted: dict[int, int] = {}
        try:
            if stop:
                halted = self._stop_others(futures, which)
            wait(futures)
        except BaseException:  # Ctrl-C: stop what runs, let each flow end, then go on
            with shielded():
                self.run.interrupt()
                wait(futures)
            raise
        out = []
        flows = self.test.flows
        self.stopped = [
            f"flow {flows[which[k]].label} stopped: flow {flows[which[f]].label} failed"
            for k, f in sorted(halted.items())
        ]
        # a flow that failed before the start line broke it for the others, and one that
        # failed stopped them: its own error is the one raised
        later = [
            k in halted or isinstance(f.exception(), StartLineBroken) for k, f in enumerate(futures)
        ]
        order = sorted(range(len(futures)), key=lambda k: later[k])
        for k in order:
            flow, fut = self.test.flows[which[k]], futures[k]
            exc = fut.exception()
            if isinstance(exc, Cancelled):
                raise exc
            if isinstance(exc, NetrunError):
                raise FlowError(_where(flow, exc)) from exc
            if exc is not None:
                raise exc
            out.append(fut.result())
        return out

    def _stop_others(self, futures: list[Future[T]], which: range) -> dict[int, int]:
        """Wait for the flows' steps; once one failed, stop each other one still running
        (its mode's ``stop_flow``: its own tool processes, never the hosts' other commands),
        again every STOP_EVERY_S until it ended, so none runs out its duration. Each
        stopped flow's index (in ``futures``) -> the failed one's."""
        failed: int | None = None
        halted: dict[int, int] = {}
        cannot: set[int] = set()
        while pending := [f for f in futures if not f.done()]:
            if failed is None:
                failed = next((k for k, f in enumerate(futures) if _failed(f)), None)
            if failed is None:
                wait(pending, return_when=FIRST_EXCEPTION)
                continue
            for k, fut in enumerate(futures):
                if fut.done() or k == failed or k in cannot:
                    continue
                try:
                    stoppable = self.modes[which[k]].stop_flow()
                except NetrunError:
                    stoppable = False
                if stoppable:
                    halted[k] = failed
                else:
                    cannot.add(k)
            wait(pending, timeout=STOP_EVERY_S if len(cannot) < len(pending) else None)
        return halted

    def run_test(self) -> None:
        """Set every flow up, measure each repeat with all at once, tear all down."""
        run, test = self.run, self.test
        repeat = 1
        pool = ThreadPoolExecutor(max_workers=len(test.flows), thread_name_prefix="flow")
        try:
            self._start()
            run.progress(f"{self.label}: setting up {_flows(len(self.modes))}")
            if why := unsupported(self.plan):
                raise ToolError(why)
            for b, mode in zip(self.flows, self.modes, strict=True):
                if why := mode.refusal():  # what the mode cannot carry (Mode.cannot)
                    raise ModeError(why)
                if why := refused(b, run.ctx.known.facts) or mode.one_end():  # one end: loopback
                    raise ToolError(why)
            hosts = {n: run.req.inventory.get(n) for n in test.hosts}
            run.mtu.enter(self.plan, hosts, self.modes[0])  # the hosts' own MTUs back
            # the first flow alone: what the flows share on the fan host (a FreeFlow router,
            # the image and engine checks) is started once, then the others' at once
            self._each(pool, lambda i: self.modes[i].setup(), only=range(1))
            self._each(pool, lambda i: self.modes[i].setup(), only=range(1, len(self.modes)))
            for repeat in range(1, test.repeat + 1):
                if run.ctx.stopping.is_set():
                    raise Cancelled(test.server)
                suffix = f" repeat {repeat}/{test.repeat}" if test.repeat > 1 else ""
                run.req.events.start(test, repeat)
                at_once = " at once" if len(self.modes) > 1 else ""
                run.progress(f"{self.label}{suffix}: {_flows(len(self.modes))}{at_once}")
                self._measure(pool, repeat, self.label + suffix)
        except Cancelled:
            run.add_sample(self.plan, repeat, None, error="interrupted", mode=self._mode())
        except NetrunError as exc:
            for r in range(repeat, test.repeat + 1):
                run.add_sample(self.plan, r, None, error=str(exc), mode=self._mode())
            run.progress(f"{self.label}: FAILED {exc}")
        except (KeyboardInterrupt, Interrupted):
            run.add_sample(self.plan, repeat, None, error="interrupted", mode=self._mode())
            raise
        except Exception as exc:
            run.add_sample(
                self.plan, repeat, None, error=f"internal error: {exc!r}", mode=self._mode()
            )
            raise
        finally:
            with shielded(), cleaning():  # an interrupt must not cut a teardown short
                pool.shutdown(wait=True)
                self._teardown()

    def _mode(self) -> Mode | None:
        return self.modes[0] if self.modes else None

    def _teardown(self) -> None:
        """Every flow's teardown and undo (newest first), then the MTU's; each problem one
        line."""
        problems: list[str] = []
        for flow, mode in zip(self.test.flows, self.modes, strict=False):
            try:
                mode.teardown()
            except NetrunError as exc:
                problems.append(f"flow {flow.label}: {exc}")
            problems += [f"flow {flow.label}: {p}" for p in mode.undo()]
        problems += self.run.mtu.leave(self.test)
        for problem in problems:
            self.run.note_error(f"teardown of {self.test.name}: {problem}")
            self.run.progress(f"{self.label}: teardown problem: {problem}")

    def _measure(self, pool: ThreadPoolExecutor, repeat: int, label: str) -> None:
        """One repeat: every flow at once, then one sample of their sum."""
        run = self.run
        started = utcnow()
        hook, run.req.measuring = run.req.measuring, lambda: None
        hook()
        line = threading.Barrier(len(self.modes), timeout=BARRIER_S)
        self.passed = []

        def one(i: int) -> Measurement:
            mode = self.modes[i]
            mode.repeat = repeat  # its stop_flow's measurement
            try:
                if type(mode).has_start_line:  # its server up and client armed first
                    mode.start_line = once(line, self.passed)
                else:  # a flow that failed first breaks it: StartLineBroken, not a traceback
                    once(line, self.passed)()
                return self.flows[i].tool.measure(mode, repeat)
            except BaseException:  # the others must not wait out BARRIER_S for it
                line.abort()
                raise

        try:
            found = self._each(pool, one, stop=True)
        except Cancelled:
            raise
        except NetrunError as exc:
            # which flows the failure stopped, for results.json as for the progress lines
            halted = {"stopped_flows": list(self.stopped)} if self.stopped else None
            run.add_sample(
                self.plan, repeat, None, error=str(exc), mode=self.modes[0], started=started,
                extra=halted,
            )  # fmt: skip
            run.progress(f"{label}: FAILED {exc}")
            for what in self.stopped:
                run.progress(f"{label}: {what}")
            return
        m, raw = self._aggregate(found, repeat)
        rec = run.add_sample(self.plan, repeat, m, mode=self.modes[0], raw=raw, started=started)
        agg = AGGREGATE
        fair = rec["metrics"].get("fairness_jain")
        flags = f" [{', '.join(rec['flags'])}]" if rec["flags"] else ""
        run.progress(
            f"{label}: {agg.name} {agg.show(rec['metrics'].get(agg.name))} {agg.shown_unit}"
            f", fairness {'unavailable' if fair is None else f'{fair:.3f}'}{flags}"
        )

    def _aggregate(self, found: list[Measurement], repeat: int) -> tuple[Measurement, str | None]:
        """The flows' sum as one measurement, as the test's tool adds them up (its ``fan``),
        each flow's figures and raw file in ``details.flows``; the first flow's raw file is
        the sample's ``raw``."""
        test = self.test
        tool = self.plan.tool
        fan = tool.fan
        if fan is None:  # validation refuses it (netrun.scenario.pairs.flow_problem)
            raise ToolError(f"tool {test.tool} cannot sum the flows of pairs: {test.pairs}")
        flows = []
        specs = [f.spec for f in self.flows]
        for spec, mode, m in zip(specs, self.modes, found, strict=True):
            raw = self.run.out.save_raw(spec.name, repeat, m.raw, self.flows[0].tool.raw_suffix)
            rec = fan.record(spec.client, spec.server, m, raw)
            rec.update(metrics=dict(m.metrics), counters=m.details.get("counters"))
            if "containers" in mode.details:  # each flow's own (the sample's are the first's)
                rec["containers"] = mode.details["containers"]
            flows.append(rec)
        total = fan.combine(found, test.options)
        why = dict(total.unavailable)
        declared = {x.name for x in self.flows[0].tool.metrics}  # iperf2 has no CPU figures
        for name in ("cpu_client_pct", "cpu_server_pct", *(m.name for m in CPU_METRICS)):
            if name in declared:
                why[name] = "each flow's own is in details.flows (the flows share hosts)"
        details: dict[str, object] = {
            "flows": flows,
            "fan": {
                "kind": test.pairs,
                "host": centre(test),
                "count": len(flows),
                "start_spread_s": spread(self.passed, len(flows)),
                "omit_s": specs[0].options.get("omit"),  # each flow's left-out start
            },
            **total.details,
        }
        return Measurement("", total.result, details, total.metrics, why), flows[0]["raw"]


def _failed(fut: Future[T]) -> bool:
    """Whether a flow's step ended in a failure of its own (not a start line another broke,
    nor the run's interrupt)."""
    if not fut.done():
        return False
    exc = fut.exception()
    return exc is not None and not isinstance(exc, StartLineBroken | Cancelled)


def _flows(count: int) -> str:
    """``1 flow``, ``3 flows``: a fan of one host is a flow, not "1 flows"."""
    return f"{count} flow" if count == 1 else f"{count} flows"


def unsupported(plan: TestPlan) -> str | None:
    """What a test of several flows cannot do yet, as its one line (before anything starts)."""
    test = plan.spec
    if plan.mtu is not None:
        return f"mtu: with pairs: {test.pairs} is not supported yet: drop mtu: from the test"
    if plan.mode.containers and test.options.get("network") == "host":
        return (
            f"pairs: {test.pairs} with network: host: each flow's server container would"
            " listen on the same port of the host; use a bridge or overlay network"
        )
    return None


def centre(test: TestSpec) -> str:
    """The host every flow of a fan-in goes into (a fan-out's comes from): its NIC is the
    bottleneck the aggregate is held against."""
    return test.client if test.pairs == "fanout" else test.server
