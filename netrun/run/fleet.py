"""The hosts of a run, before its tests: connect, probe, sweep what killed runs left.

A part of netrun.run.runner's Run (a mixin: it reads the run's request, context and
results): every host is connected and probed at once (up to ``forks``), each as soon as
it answers; the run's first server and client start in the same round trips
(netrun.tools.savers.prestart); then what a SIGKILLed run of this controller left on those
hosts is swept (the journal). A host that fails fails only its own tests. Each probe
first takes the host's lease (netrun.hosts.lease): a host another run measures stops the
run, or makes it wait for all its hosts at once (netrun.run.leases).
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from netrun.cleanup import owner
from netrun.cleanup.scripts import docker_command
from netrun.cleanup.sweep import sweep_stale
from netrun.errors import HostLeased, NetrunError
from netrun.hosts import lease
from netrun.hosts.connect import connect_all
from netrun.hosts.group import on_each
from netrun.hosts.host import remote_tmp
from netrun.hosts.shield import cleaning
from netrun.modes.base import RunContext
from netrun.results.store import Document
from netrun.run import leases
from netrun.run.needs import Needs, plan_needs, probe_host, program
from netrun.run.plan import TestPlan, docker_commands
from netrun.run.request import RunRequest
from netrun.tools import context as host_context
from netrun.tools.savers import prestart
from netrun.tools.savers.model import Saver

if TYPE_CHECKING:
    from netrun.hosts.host import Host


class Fleet:
    """Connecting, probing and reviving the run's hosts (mixed into netrun.run.runner.Run)."""

    req: RunRequest
    ctx: RunContext
    doc: Document
    needs: Needs
    host_errors: dict[str, str]
    connected: list[Host]
    _lock: threading.RLock
    _prestarts: dict[str, prestart.Prestart]
    _arms: dict[str, prestart.Prestart]
    progress: Callable[[str], None]
    host_failed: Callable[[str, NetrunError], None]
    #: Who this run is, in the lease files of its hosts (netrun.hosts.lease.holder).
    lease_holder: str = ""

    def _connect(self, plans: list[TestPlan]) -> None:
        names = list(dict.fromkeys(n for p in plans for n in p.hosts))
        hosts = [self.req.inventory.get(n) for n in names]
        if not hosts:
            return
        # a flow test's hosts need what each flow's mode needs (netrun.run.flows)
        self.needs = plan_needs([f for p in plans for f in (p.flows or (p,))])
        if self.req.journal is not None:
            docker = docker_commands(plans, self.req.inventory)
            self.req.journal.begin(
                self.ctx.run_id,
                [(h, remote_tmp(h), docker.get(h.name) or docker_command(h)) for h in hosts],
            )

        # The first test's mode starts what it can in the hosts' probes (after journal.begin:
        # a container's start is an undo record): an iperf3 server, containers.
        self._prestarts, self._arms = {}, {}
        first = plans[0]
        rides = not first.flows and first.savers.allows(Saver.PROBE_START)
        starts = first.mode.probe_starts(plans, self.req.inventory, self.ctx) if rides else []
        for pre in starts:  # (a flow test's servers are its flows', started in its setup)
            self._prestarts.setdefault(pre.host, pre)
            if pre.mode is not None:  # the client host's: its client is armed too
                self._arms.setdefault(pre.client, pre)
        self.lease_holder = lease.holder(self.ctx.run_id)
        self.progress(f"connecting to {len(hosts)} host(s): {', '.join(names)}")
        # Each host is probed as soon as it is connected (one worker per host, forks at once).
        opened = self.req.preconnect.take if self.req.preconnect else None
        try:
            result = connect_all(
                hosts, self.req.settings, then=self._probe, then_deadline=60, early=opened
            )
        finally:  # interrupted during the probes: what they started is swept at the end
            self.connected = [h for h in hosts if h.transport is not None]
        held = {n: e.held[n] for n, e in result.failed.items() if isinstance(e, HostLeased)}
        for name, err in result.failed.items():
            if name not in held:
                self.host_failed(name, err)
        if held:
            held = self._take_over(held)
        if held:
            self._wait_for_hosts(held)
        self._sweep_stale()

    def _take_over(self, held: dict[str, str]) -> dict[str, str]:
        """End the leases that dead runs of this controller still hold (the journal says
        their process is gone) and probe those hosts again; the hosts still held."""
        journal = self.req.journal
        dead = {e.run_id for e in journal.stale(exclude=self.ctx.run_id)} if journal else set()
        ended = leases.dead_holders(held, dead)
        if not ended:
            return held
        hosts = [h for h in self.connected if h.name in ended]

        def end_and_probe(host: Host) -> None:
            self.progress(
                f"{host.name}: run {ended[host.name]} of this controller no longer runs; "
                "its lease there ended"
            )
            host.run(lease.release_script(ended[host.name]), timeout=30, check=False)
            self._probe(host)

        forks = self.req.settings.forks
        again = on_each(hosts, end_and_probe, deadline=60, max_workers=forks)
        still = {n: e.held[n] for n, e in again.failed.items() if isinstance(e, HostLeased)}
        for name, err in again.failed.items():
            if name not in still:
                self.host_failed(name, err)
        return {n: who for n, who in held.items() if n not in ended} | still

    def _wait_for_hosts(self, held: dict[str, str]) -> None:
        """Another run measures on the ``held`` hosts: refuse (HostLeased), or wait
        for all of this run's hosts at once and probe the held ones then."""
        ready = [h for h in self.connected if h.name not in self.host_errors]
        leases.wait_for_hosts(
            ready,
            held,
            run_id=self.ctx.run_id,
            who=self.lease_holder,
            wait_s=self.req.wait_for_hosts,
            forks=self.req.settings.forks,
            progress=self.progress,
            stopping=self.ctx.stopping.is_set,
        )
        again = [h for h in ready if h.name in held]
        for name, err in on_each(again, self._probe, deadline=60).failed.items():
            self.host_failed(name, err)

    def _sweep_stale(self) -> None:
        """Remove what dead runs of this controller left on the hosts this run uses."""
        if self.req.journal is None:
            return
        ready = [h for h in self.connected if h.name in self.ctx.known.facts]
        ready = [h for h in ready if h.name not in self.host_errors]
        forks = self.req.settings.forks
        swept = sweep_stale(self.req.journal, self.ctx.run_id, ready, forks)
        for line in swept:
            self.progress(f"swept what an earlier, killed run left: {line}")
        if swept:
            with self._lock:
                self.doc.setdefault("swept", []).extend(swept)
        # An undo may have changed what the probe read (an MTU back to normal): read again.
        undone = [h for h in ready if any(f"{h.name}: run " in s and "undone:" in s for s in swept)]
        again = on_each(undone, self._probe, deadline=60, max_workers=forks)
        for name, err in again.failed.items():
            self.host_failed(name, err)

    def _revive(self, name: str) -> None:
        """Reconnect a host whose connection dropped in an earlier test.

        If that fails the host is marked failed, so its later tests fail at once, naming why.
        """
        host = self.req.inventory.get(name)
        if name in self.host_errors or host.transport is None or host.transport.alive():
            return
        try:
            host.transport.reconnect()
            # the lease ended with the old connection's watcher: take it again
            answer = leases.take(host, self.ctx.run_id, self.lease_holder)
            if answer.state == "held":
                raise HostLeased({name: answer.detail})
        except NetrunError as exc:
            self.host_failed(name, exc)

    def _probe(self, host: Host) -> None:
        """Read kernel, the probed program's version (netrun.tools.facts.PROBED) and the
        data NIC, and check the tools the host's roles need (and only those), in one round
        trip."""
        pre = self._prestarts.pop(host.name, None)  # once: not on a second probe
        arm = self._arms.pop(host.name, None)
        if arm is not None:
            arm.arm()
        end = (
            self.ctx.ahead.early_sweep
        )  # which folder the host keeps run folders in (netrun.tools.savers.sweep)
        # the run folder's owner mark first: a cleanup on this kernel spares a live run
        mark = owner.mark_script(self.ctx.workdir(host))
        # the host's lease before anything else: a host another run measures runs none of it
        take = lease.acquire_script(self.ctx.run_id, self.lease_holder)
        # the host's context, once per run, before a start script (which takes what follows)
        known = (self.doc["hosts"].get(host.name) or {}).get("context")
        progs = self.needs.programs
        tools = {t: program(host, t, progs) for t in self.needs.tools.get(host.name, [])}
        flags = {t: progs[t].version_flag for t in tools if t in progs}
        read = None if known else host_context.context_script(tools, flags=flags)
        after = None
        if read and pre is not None and pre.settles:  # beside the server's start
            path = f"{self.ctx.workdir(host)}/{host_context.FILE}"
            read, after = host_context.beside(read, path)
        parts = (take, mark, end and end.probe_script(host), read, pre and pre.extra(), after)
        extra = "\n".join(x for x in parts if x)
        said: list[str] = []

        def output(text: str) -> None:
            said.append(text)
            if end is not None:
                end.note(host, text)
            if pre is not None:
                pre.take(text)

        # A probe that starts a server runs whole, as a start ahead does
        # (netrun.tools.savers.pipeline).
        with cleaning() if pre is not None else contextlib.nullcontext():
            found = probe_host(host, self.needs, extra=extra, on_output=output)
        answer = lease.parse("".join(said), self.ctx.run_id) or lease.Answer(
            "none", "the probe did not say"
        )
        if answer.state == "held":
            raise HostLeased({host.name: answer.detail})
        if answer.state == "none":
            self.progress(
                f"{host.name}: no lease ({answer.detail}): a run of another "
                "controller measuring this host at the same time is not detected"
            )
        self.ctx.known.facts[host.name] = found
        context = known or host_context.parse_context("".join(said))
        self.doc["hosts"][host.name] = dataclasses.asdict(found) | {"context": context}
        self.needs.check(host, found)
