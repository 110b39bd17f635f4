"""Saver.KEEP_CONTAINERS: containers kept from one test to the next of the same pair and
mode.

Starting a server and a client container costs a round trip per host and the containers'
start; the tests of a sweep (of a rate, a length, a duration...) or a scenario that
repeats one pair measure with the same containers, since nothing in them depends on the
keys such a sweep changes: its tool's options that only shape each repeat's client
(Tool.client_only) and the run's own (netrun.core.options.RUN_OPTIONS: repeat, timeout,
tolerances...). So when a test ends and the next test that touches its hosts wants the
same containers (same mode, hosts, tool and every option that shapes a container: image,
network, mtu, overlay_mtu, FreeFlow's...), the containers stay and that test adopts them;
otherwise they are removed. A test that failed or was interrupted never hands its
containers on.

``take``, at the start of a test's setup, is the one decision on which containers a test
measures with: the kept ones (``adopt`` gives the mode their names) or its own, started
then. Whatever names a container is built after it from the mode's names: the armed
client commands (netrun.modes.docker.savers.client, whose key in ctx.ahead.armed names the
container too) and the server's wait (netrun.modes.docker.savers.serverend).

Whatever happens, nothing outlives the run: each container's time bound (a watchdog on
the host, an undo record) covers the tests that may share it, every container carries the
run's label, and the run's final sweep (or, after a SIGKILL, the next run's or ``netrun
cleanup``) runs the records and removes the labelled containers.
"""

from __future__ import annotations

import copy
import logging
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from netrun.core.options import RUN_OPTIONS
from netrun.tools import docker as dk
from netrun.tools.savers.model import Saver

if TYPE_CHECKING:
    from netrun.cleanup.ledger import Scope
    from netrun.core.spec import TestSpec
    from netrun.hosts.host import Host
    from netrun.modes.base import RunContext
    from netrun.modes.docker.base import ContainerMode
    from netrun.tools.base import Tool

log = logging.getLogger(__name__)

#: The keys of every test that say how it is run and judged, never a container.
RUN_KEYS = frozenset(o.name for o in RUN_OPTIONS)


def key(test: TestSpec, tool: Tool) -> str | None:
    """What a test's containers depend on; None when they are never kept (``mtu:``: the
    containers' veths follow a link MTU that is restored after the test). ``tool``: the
    tool of the test the key is compared for (netrun.run.plan): a test of another tool has
    another key, whatever its tool's server."""
    opts = test.options
    if opts.get("mtu") is not None or opts.get("overlay_mtu") is not None:
        return None
    # a tool's resident server listens on its own fixed port in its container, or on the
    # test's port (Tool.resident_port)
    fixed = tool.resident_port is not None
    ignored = RUN_KEYS | tool.client_only | ({"port"} if fixed else set())
    shaped = sorted((k, repr(v)) for k, v in opts.items() if k not in ignored)
    return repr((test.mode, sorted(test.hosts_by_role.items()), test.tool, shaped))


@dataclass
class Kept:
    """A pair of running containers, and what the test that started them found out."""

    key: str
    #: (host, container name) of the containers.
    started: list[tuple[Host, str]]
    #: Their time bounds' undo records, kept for the next test (a scope of the run's
    #: ledger: Scope.pop_all), run when the containers go.
    records: Scope
    server_ip: str | None
    pids: dict[str, int | None]
    details: dict[str, Any]
    #: role -> container name.
    names: dict[str, str] = field(default_factory=dict)
    #: role -> the last counter reading on that end (pathbytes), or absent.
    counters: dict[str, Any] = field(default_factory=dict)
    #: The tests that used them, first first.
    tests: list[str] = field(default_factory=list)
    #: Host name -> the docker command there.
    docker: dict[str, str] = field(default_factory=dict)


class Parked(dict[str, Kept]):
    """The run's kept containers by keep key (one per run: RunContext.family)."""


def next_test(ctx: RunContext, test: TestSpec) -> TestSpec | None:
    """The next test, in run order, that touches any of ``test``'s hosts and has not run."""
    hosts = set(test.hosts)
    seen = False
    for other in ctx.order.tests:
        if other.name == test.name:
            seen = True
            continue
        if seen and other.name not in ctx.order.finished and hosts & set(other.hosts):
            return other
    return None


def shared_bound(ctx: RunContext, test: TestSpec, tool: Tool) -> float:
    """Seconds the containers of ``test`` (of ``tool``) may be needed: every test that could
    share them, one after another (a generous bound: it only matters if the controller dies)."""
    k = key(test, tool)
    tests: Sequence[TestSpec] = [t for t in ctx.order.tests if k is not None and key(t, tool) == k]
    return sum(t.repeat * t.deadline for t in tests) or test.repeat * test.deadline


def take(ctx: RunContext, test: TestSpec, tool: Tool) -> Kept | None:
    """The kept containers this test can adopt (removed from the pool), if any. Kept ones
    on its hosts that it cannot adopt (a test between them failed before its setup) are
    removed on the hosts' next command: this test's container start."""
    k = key(test, tool)
    kept = ctx.family(Parked)
    found = kept.pop(k, None) if k is not None else None
    # (a copy: the tests of a parallel run park and take from their own threads)
    for other in [o for o in list(kept.values()) if set(test.hosts) & set(o.docker)]:
        if kept.pop(other.key, None) is other:
            _defer_removal(other.started, other.records, other.docker)
    if found is None:
        return None
    found.tests.append(test.name)
    return found


def park(ctx: RunContext, kept: Kept) -> None:
    ctx.family(Parked)[kept.key] = kept


def details_of(kept: Kept) -> dict[str, Any]:
    """The adopting test's copy of the starting test's details, saying it reused them."""
    details = copy.deepcopy(kept.details)
    details["containers_reused"] = {"from": kept.tests[0], "tests": len(kept.tests)}
    return details


def adopt(mode: ContainerMode, kept: Kept) -> None:
    """Measure with the containers an earlier test of this pair and mode started."""
    mode.started = list(kept.started)
    mode.bounds.absorb(kept.records)
    mode.names = dict(kept.names)
    mode.server_ip = kept.server_ip
    mode.pids = dict(kept.pids)
    mode.counters = dict(kept.counters)
    mode.kept_by = kept.tests
    mode.details = details_of(kept)
    mode.healthy = True


def hand_over(mode: ContainerMode) -> None:
    """At a test's end: park its containers when the next test on its hosts wants the same
    ones (and this one ended well), leave them to the run's final sweep when no later
    test uses these hosts, or else remove them on each host's next command (Host.defer)."""
    ctx, test = mode.ctx, mode.test
    ctx.order.finished.add(test.name)
    if not mode.started:
        return
    k = key(test, mode.tool)
    docker = {h.name: mode.docker(h) for h, _ in mode.started}
    after = next_test(ctx, test)
    same = k is not None and after is not None and key(after, mode.tool) == k
    same = same and mode.savers.allows(Saver.KEEP_CONTAINERS)
    nxt = after.name if after else None
    log.debug("%s: next on its hosts %s, same containers: %s", test.name, nxt, same)
    if not ctx.order.tests:  # a caller that did not say what runs next: remove now
        mode.undo_stack.absorb(mode.bounds)  # run by the test's undo
        _defer_removal(mode.started, mode.bounds, docker)
    elif same and k is not None and mode.healthy and not ctx.stopping.is_set():
        details = {n: v for n, v in mode.details.items() if n not in ("mtu", "containers_reused")}
        tests = list(mode.kept_by or [test.name])
        kept = mode.bounds.pop_all("kept")  # (contextlib.ExitStack.pop_all: not run now)
        park(
            ctx,
            Kept(k, list(mode.started), kept, mode.server_ip, dict(mode.pids),
                 details, names=dict(mode.names), counters=dict(mode.counters), tests=tests,
                 docker=docker),
        )  # fmt: skip
    elif after is not None:
        _defer_removal(mode.started, mode.bounds, docker)
    else:  # the final sweep runs the records and removes the run's labelled containers
        ctx.ledger.run.absorb(mode.bounds)
    mode.started.clear()


def _defer_removal(started: list[tuple[Host, str]], bounds: Scope, docker: dict[str, str]) -> None:
    """Remove the containers, then run their time bounds' records, on each host's next
    command (Scope.defer: journaled as undone once it ran)."""
    by_host: dict[str, tuple[Host, list[str]]] = {}
    for host, name in started:
        by_host.setdefault(host.name, (host, []))[1].append(name)
    rm = [
        (host, shlex.join(dk.rm_command(names, docker.get(host.name, "docker"))))
        for host, names in by_host.values()
    ]
    bounds.defer(then=rm)
