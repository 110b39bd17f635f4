"""Running a scenario: connect every host, probe them (netrun.run.fleet), run each test, save
as we go (each sample built by netrun.run.sample).

The runner never prints: it reports progress through a callback and returns the results
document. Per-host failures are collected, not raised: a host that cannot be reached fails
only the tests that need it. Whatever happens (a failure, Ctrl-C, SIGTERM), every mode is
torn down, every host's run folder is swept and results.json is written.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Mapping
from typing import Any

from netrun import __version__
from netrun.cleanup.journal import host_key
from netrun.cleanup.scripts import RUN_ID, cleanup_command, cleanup_script
from netrun.cleanup.sweep import close_all, sweep_hosts
from netrun.core import metrics
from netrun.core.measurement import Measurement
from netrun.core.mtuplan import order
from netrun.core.spec import TestSpec
from netrun.errors import (
    Cancelled,
    HostError,
    HostLeased,
    InputError,
    Interrupted,
    ModeError,
    NetrunError,
    ToolError,
)
from netrun.hosts.group import stop_on_signal
from netrun.hosts.host import Host, folder_key, remote_tmp
from netrun.hosts.shield import cleaning, shielded
from netrun.modes.base import Mode, RunContext
from netrun.results import flags
from netrun.results.saver import Saver
from netrun.results.stats import samples_by_test
from netrun.results.store import ResultsDir, new_document, utcnow
from netrun.run import sampler
from netrun.run.fleet import Fleet
from netrun.run.flows import FlowTest
from netrun.run.mtu import MtuSettings
from netrun.run.needs import Needs, refused
from netrun.run.plan import TestPlan, plan_tests
from netrun.run.request import RunRequest
from netrun.run.rounds import plan
from netrun.run.sample import build_sample
from netrun.run.scheduler import run_parallel
from netrun.tools.savers import prestart
from netrun.tools.savers.choice import arrange

log = logging.getLogger("netrun.run.runner")
SERVER_CLIENT = ("server", "client")


class Run(Fleet):
    """One execution of a scenario against an inventory."""

    def __init__(self, req: RunRequest) -> None:
        if not RUN_ID.fullmatch(req.run_id):  # it names folders and labels in remote shells
            raise InputError(f"run id {req.run_id[:40]!r}: not a netrun run id (hex digits)")
        self.req = req
        self.ctx = RunContext(run_id=req.run_id)
        self.ctx.ledger.journal = req.journal  # every undo record journaled, and its runs
        self.out = ResultsDir(req.outdir)
        self.doc = new_document(req.scenario.name, req.run_id, __version__)
        self.doc["scenario_file"] = str(req.scenario.path)
        #: Each test's plan: its tool, mode, options, MTUs and flows, resolved once
        #: (netrun.run.plan); nothing after this looks a tool or a mode up by name.
        self.plans = plan_tests(req.scenario.tests)
        # What each metric is (unit, direction): a saved run renders without netrun's tools.
        for p in self.plans.values():
            for metric in (
                *p.tool.metrics,
                *(p.tool.fan.metrics if p.flows and p.tool.fan else ()),
            ):
                metrics.declare(self.doc["metrics"], p.tool.name, metric)
        self.host_errors: dict[str, str] = {}
        #: Samples stay in scenario order, however parallel tests finish (the table's order).
        self._position = {t.name: i for i, t in enumerate(req.scenario.tests)}
        self.connected: list[Host] = []
        self.done: set[str] = set()
        #: The tools each host's roles need (set once the tests are known).
        self.needs = Needs()
        #: The MTUs tests set (mtu:), restored after their group and at the end.
        self.mtu = MtuSettings(self.ctx, [], grouped=False)
        #: host name -> the first test's server start, to ride on its probe
        #: (netrun.tools.savers.prestart).
        self._prestarts: dict[str, prestart.Prestart] = {}
        #: host name -> the first test, whose client is armed before that host's probe.
        self._arms: dict[str, prestart.Prestart] = {}
        #: Held while the results document changes or is saved (parallel tests share it).
        self._lock = threading.RLock()
        self.saver = Saver(self.out, self.doc, self._lock)
        self._progress_lock = threading.Lock()
        if req.resume is not None:
            self._adopt(req.resume)

    def _adopt(self, previous: dict[str, Any]) -> None:
        """Keep the samples of every test that fully passed in an interrupted run."""
        by_name = samples_by_test(previous)
        wanted = {t.name: t.repeat for t in self.req.scenario.tests}
        for name, samples in by_name.items():
            ok = [s for s in samples if s.get("status") == "ok"]
            if name in wanted and len(ok) >= wanted[name]:
                self.done.add(name)
                self.doc["tests"].extend(ok[: wanted[name]])
        self.doc["started"] = previous.get("started", self.doc["started"])
        self.doc["resumed"] = [*previous.get("resumed", []), utcnow()]
        self.doc["hosts"] = dict(previous.get("hosts", {}))

    # -- top level ------------------------------------------------------------------------
    def execute(self) -> dict[str, Any]:
        tests = self._selected_tests()
        # saved before the first test: a killed run's report names what it did not reach
        self.doc["planned"] = [t.name for t in tests]
        self.out.save(self.doc)
        try:
            with stop_on_signal(self._refuse_new_commands):
                self._run(tests)
            self.doc["status"] = "finished"
        except HostLeased as exc:  # another run measures on its hosts: nothing ran
            self.doc["status"] = "refused"
            self.doc["errors"].append(str(exc))
            raise
        except (KeyboardInterrupt, Interrupted) as exc:
            term = isinstance(exc, Interrupted) and exc.code != 130
            self.doc["status"] = "interrupted"
            self.doc["errors"].append(f"run interrupted by {'SIGTERM' if term else 'SIGINT'}")
            self._not_run(tests)
            raise
        except Exception as exc:  # a bug: still record it, tear down and save
            self.doc["status"] = "error"
            self.doc["errors"].append(f"internal error: {type(exc).__name__}: {exc}")
            self._not_run(tests)
            raise
        finally:
            with shielded(), cleaning():
                self._finish()
        return self.doc

    def _not_run(self, tests: list[TestSpec]) -> None:
        """Name the tests the run never reached (reports and JUnit list them as not run)."""
        ran = {s["name"] for s in self.doc["tests"]}
        self.doc["not_run"] = [t.name for t in tests if t.name not in ran]

    def _run(self, tests: list[TestSpec]) -> None:
        self.req.events.plan(tests)
        width = self.req.parallel or self.req.scenario.parallel
        plans = [self.plans[t.name] for t in tests]
        if width == 1:  # a sweep sets each MTU once for the tests that share it
            plans = order(plans, [p.mtu for p in plans])
        rounds = None if width == 1 else self._rounds(plans, width)
        ordered = plans if rounds is None else [p for r in rounds for p in r]
        # each host swept by its last test, each next server started ahead, where allowed
        first = ordered[0].mode if ordered else Mode  # (Mode's start_ahead: none)
        ahead = functools.partial(first.start_ahead, ordered, self.req.inventory, self.ctx, rounds)
        arrange(self.ctx, ordered, sequential=width == 1, start_ahead=ahead)
        self.ctx.order.tests = [p.spec for p in plans]  # containers kept for the next test
        self._connect(ordered)
        self.mtu = MtuSettings(self.ctx, plans, grouped=width == 1)
        if width > 1 and len(plans) > 1:
            self._run_parallel(plans, width)
        else:
            for number, p in enumerate(plans, 1):
                self._run_test(p, number, len(plans))

    def interrupt(self, running: bool = True) -> None:
        """Ctrl-C or SIGTERM: no new command starts, and with ``running`` (a parallel
        run's workers) the running ones stop; teardown, undo and sweep commands
        (shield.cleaning) are never refused or cut short."""
        self.ctx.stopping.set()
        for host in self.connected:
            if host.transport is not None:
                host.transport.interrupt(running)

    def _refuse_new_commands(self) -> None:
        """A signal in any run: a step in another thread (the other host's docker pull)
        starts nothing more; what runs ends (and is torn down), bounded by its deadline."""
        self.interrupt(running=False)

    def _selected_tests(self) -> list[TestSpec]:
        tests = [t for t in self.req.scenario.tests if t.name not in self.done]
        if self.done:
            self.progress(f"resuming: {len(self.done)} test(s) already passed, kept")
        if not self.req.limit:
            return tests
        allowed = {h.name for h in self.req.inventory.select(self.req.limit)}
        kept = [t for t in tests if all(h in allowed for h in t.hosts)]
        self.doc["skipped"] = [t.name for t in tests if t not in kept]
        return kept

    def progress(self, line: str) -> None:
        """Report a line; parallel tests call it from their own threads, the callback one
        line at a time (print() writes the text and its newline separately)."""
        with self._progress_lock:
            self.req.progress(line)

    def host_failed(self, name: str, err: NetrunError) -> None:
        self.host_errors[name] = str(err)
        self.note_error(str(err))
        self.progress(f"FAILED {err}")

    def note_error(self, message: str) -> None:
        with self._lock:
            self.doc["errors"].append(message)
        self.saver.changed()

    # -- many tests at once ---------------------------------------------------------------
    @staticmethod
    def _rounds(plans: list[TestPlan], width: int) -> list[list[TestPlan]]:
        """The rounds of a parallel run (netrun.run.rounds), as the tests' plans."""
        by_name = {p.name: p for p in plans}
        return [[by_name[t.name] for t in r] for r in plan([p.spec for p in plans], width)]

    def _run_parallel(self, plans: list[TestPlan], width: int) -> None:
        """Up to ``width`` tests at once, never two on one host, round by round (netrun.run.rounds,
        netrun.run.scheduler)."""
        rounds = self._rounds(plans, width)
        self.progress(f"{len(plans)} tests planned in {len(rounds)} rounds")
        ordered = [p for r in rounds for p in r]
        run_parallel(
            ordered, width, self._run_test, self.interrupt, shielded,
            alone=lambda p: p.mode.alone(p.spec) is not None,
        )  # fmt: skip

    # -- one test -------------------------------------------------------------------------
    def _run_test(self, p: TestPlan, number: int, total: int) -> None:
        """One test from its plan: set up, each repeat measured and saved, torn down (a
        test of several flows: netrun.run.flows)."""
        test = p.spec
        extra = "".join(
            f", {r} {h}" for r, h in test.hosts_by_role.items() if r not in SERVER_CLIENT
        )
        where = flags.direction(
            {"client": test.client, "server": test.server, "options": test.options,
             "hosts": test.hosts_by_role, "flows": [[f.client, f.server] for f in test.flows]}
        )  # fmt: skip
        # The console counts samples (netrun.run.progress), not tests: [number/total] is gone.
        label = f"{test.name} ({test.mode}, {where}{extra})"
        for name in test.hosts:
            self._revive(name)
        broken = [self.host_errors[n] for n in test.hosts if n in self.host_errors]
        if broken:
            for repeat in range(1, test.repeat + 1):
                self.add_sample(p, repeat, None, error=broken[0])
            self.progress(f"{label}: FAILED {broken[0]}")
            return
        if p.flows:  # several flows at once (pairs: {fanin: HOST})
            FlowTest(self, p, label).run_test()
            return
        server = self.req.inventory.get(test.server)
        client = self.req.inventory.get(test.client)
        by_role = {r: self.req.inventory.get(n) for r, n in test.hosts_by_role.items()}
        mode = p.start(server, client, self.ctx, by_role)
        repeat = 1
        try:
            self.progress(f"{label}: setting up")
            if why := mode.refusal():  # what the mode cannot carry (Mode.cannot)
                raise ModeError(why)
            if why := refused(p, self.ctx.known.facts) or mode.one_end():  # before it starts
                raise ToolError(why)
            self.mtu.enter(p, by_role, mode)
            mode.setup()
            self.mtu.check_containers(p, mode)
            for repeat in range(1, test.repeat + 1):
                if self.ctx.stopping.is_set():
                    raise Cancelled(test.client)
                suffix = f" repeat {repeat}/{test.repeat}" if test.repeat > 1 else ""
                self.req.events.start(test, repeat)
                self.progress(f"{label}{suffix}: {p.tool.describe(test)}")
                self._measure(mode, p, repeat, label + suffix)
        except Cancelled:
            self.add_sample(p, repeat, None, error="interrupted", mode=mode)
        except NetrunError as exc:
            for r in range(repeat, test.repeat + 1):
                self.add_sample(p, r, None, error=str(exc), mode=mode)
            self.progress(f"{label}: FAILED {exc}")
        except (KeyboardInterrupt, Interrupted):
            self.add_sample(p, repeat, None, error="interrupted", mode=mode)
            raise
        except Exception as exc:
            self.add_sample(p, repeat, None, error=f"internal error: {exc!r}", mode=mode)
            raise
        finally:
            with shielded(), cleaning():  # an interrupt must not cut a teardown short
                try:
                    mode.teardown()
                except NetrunError as exc:
                    self.note_error(f"teardown of {test.name}: {exc}")
                    self.progress(f"{label}: teardown problem: {exc}")
                for problem in [*mode.undo(), *self.mtu.leave(test)]:  # newest first
                    self.note_error(f"teardown of {test.name}: {problem}")
                    self.progress(f"{label}: teardown problem: {problem}")

    def _measure(self, mode: Mode, p: TestPlan, repeat: int, label: str) -> None:
        started = utcnow()
        test, tool = p.spec, p.tool
        hook, self.req.measuring = self.req.measuring, lambda: None
        hook()
        try:
            with sampler.watch(
                self.req.events, test, repeat, self.req.inventory, self.ctx.known.facts, tool
            ):
                m = tool.measure(mode, repeat)  # the live line's figure meanwhile
        except Cancelled:
            raise  # the test records it as interrupted
        except ToolError as exc:
            raw = (
                self.out.save_raw(test.name, repeat, exc.output, tool.raw_suffix)
                if exc.output
                else None
            )
            self.add_sample(p, repeat, None, error=str(exc), mode=mode, raw=raw, started=started)
            self.progress(f"{label}: FAILED {exc}")
            return
        except NetrunError as exc:
            self.add_sample(p, repeat, None, error=str(exc), mode=mode, started=started)
            self.progress(f"{label}: FAILED {exc}")
            return
        raw = self.out.save_raw(test.name, repeat, m.raw, tool.raw_suffix)
        rec = self.add_sample(p, repeat, m, mode=mode, raw=raw, started=started)
        flag = ""
        if rec["details"].get("accelerated") is False:
            flag = f" NOT ACCELERATED: {rec['details'].get('path_check')}"
        flag += f" [{', '.join(rec['flags'])}]" if rec["flags"] else ""
        head = tool.headline()
        shown = head.show(rec["metrics"].get(head.name))
        self.progress(f"{label}: {head.name} {shown} {head.shown_unit or head.unit}{flag}")

    def add_sample(
        self,
        p: TestPlan,
        repeat: int,
        m: Measurement | None,
        *,
        error: str | None = None,
        mode: Mode | None = None,
        raw: str | None = None,
        started: str | None = None,
        extra: Mapping[str, object] | None = None,
    ) -> dict[str, Any]:
        """Add one sample (netrun.run.sample) of a planned test to the results, in scenario
        order, and save."""
        rec = build_sample(
            p, repeat, m, self.ctx.known.facts, self.req.inventory,
            error=error, mode=mode, raw=raw, started=started, extra=extra,
            contexts=self.doc.get("hosts"),
        )  # fmt: skip
        with self._lock:
            self.doc["tests"].append(rec)
            order = self._position
            self.doc["tests"].sort(key=lambda s: (order.get(s["name"], -1), s.get("repeat") or 0))
        self.saver.changed()
        self.req.events.done(p.spec, repeat, rec)
        return rec

    # -- the end ----------------------------------------------------------------------------
    def _finish(self) -> None:
        """Sweep every host's run folder (servers by recorded pid), close, save."""
        self.saver.flush()  # what the last tests recorded, before the sweep can take long
        if self.ctx.ahead.pipeline is not None:  # starts ahead under way end before the sweep
            self.ctx.ahead.pipeline.join_all()
        for armed in list(self.ctx.ahead.armed.values()):  # clients of tests that never ran
            armed.abandon()

        def script(host: Host) -> str:
            docker = self.ctx.known.docker_hosts.get(host.name)
            key = folder_key(host.name)
            return cleanup_script(remote_tmp(host), self.ctx.run_id, docker=docker, host=key)

        # A host whose probe failed ran nothing: sweeping it would only repeat that failure.
        probed = [h for h in self.connected if h.name in self.ctx.known.facts]
        for problem in self.mtu.restore_all():
            self.note_error(f"MTU restore: {problem}")
        end = self.ctx.ahead.early_sweep
        if end is not None and not self.ctx.stopping.is_set():  # swept by their last test
            probed = [h for h in probed if not end.done(h)]
        swept = sweep_hosts(probed, script, retry=True, forks=self.req.settings.forks)
        self.ctx.ledger.swept(swept.lines)  # each swept host's records ran there
        for name, err in swept.failed.items():
            reason = err.message if isinstance(err, HostError) else str(err)
            fix = cleanup_command(self.req.inventory.paths, name, self.ctx.run_id)
            self.note_error(
                f"{name}: cleanup failed ({reason}); what this run started there may still be "
                f"running: once {name} is reachable, run: {fix}"
            )
        close_all(self.connected)
        if self.req.journal is not None:
            by_name = {h.name: h for h in probed}
            self.req.journal.end(
                self.ctx.run_id, [host_key(by_name[n]) for n in swept.failed if n in by_name]
            )
        self.doc["finished"] = utcnow()
        self.saver.changed()
        self.saver.flush()
