"""Saver.PROBE_START for containers: the run's first container test starts its
containers in the hosts' probes.

A single docker test waited for each host's probe, then started that end's container in
a round trip of its own, each paying the host's login cost. When the run's first test is
a docker or flannel test between two hosts of a tool whose client the mode runs
(Tool.resident_client), each end's start script (the run's first checks there, the
container's undo record, ``docker run`` and its time bound, the readiness wait:
netrun.modes.docker.launch) rides on that host's probe instead, as bare metal's first
server does (netrun.tools.savers.prestart). The test adopts what the script printed; if
it did not start the container (the probe failed, an image must be pulled...), the test
removes whatever it may have started, on the host's next command, and starts it as
usual, which then reports whatever is wrong. Its undo record is written before the
container starts, as always, so the final sweep (or the next run's, after SIGKILL)
removes it even if no test adopts it. FreeFlow's router starts there too, beside the
engine and image checks (ContainerMode.lead): the host works out its HOST_IP_PREFIX
itself (netrun.modes.freeflow.router).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import TYPE_CHECKING

from netrun.errors import NetrunError
from netrun.hosts.command import CommandResult
from netrun.modes.docker import engine, launch
from netrun.modes.docker.base import ContainerMode
from netrun.modes.docker.savers import client as armedexec
from netrun.modes.docker.savers import keep
from netrun.tools import docker as dk
from netrun.tools.savers.prestart import Prestart

if TYPE_CHECKING:
    from netrun.hosts.host import Host
    from netrun.inventory.model import Inventory
    from netrun.modes.base import Planned, RunContext


def plan(
    cls: type[ContainerMode], plans: Sequence[Planned], inventory: Inventory, ctx: RunContext
) -> list[Prestart]:
    """Each end's start script for the run's first test (of mode ``cls``), to ride on its
    host's probe."""
    first = plans[0]  # ctx.order.tests, set by the runner, sizes the containers' time bound
    test = first.spec
    if first.tool.resident_client is None:  # its armed client is the tool's
        return []
    if test.options.get("mtu") is not None or test.options.get("overlay_mtu") is not None:
        return []  # the containers start after the link MTU is set
    if test.server == test.client:
        return []
    if keep.key(test, first.tool) in ctx.family(
        keep.Parked
    ):  # it measures with kept containers: none to start
        return []
    mode = first.placed(inventory, ctx)
    if not isinstance(mode, cls):  # (the run's first test: its mode's)
        return []
    out = []
    try:
        for role in ("server", "client"):
            host = mode.hosts[role]
            checks = engine.first_checks(mode, host, mode.lead(role, host))
            if checks is None:
                return []
            # a subshell of its own: where it stops early (an image to pull), the probe
            # still prints the host's context, which it runs beside the start (settles)
            script = f"(\n{checks[0]}{mode.launch_body(role, host)}\n)"
            pre = Prestart(host.name, mode.names[role], script, ctx.ahead, settles=True)
            if role == "client":  # its first client's command starts before the probe
                pre.mode, pre.arm_tag = mode, armedexec.tag(mode, 1)
            out.append(pre)
            # the container's record, in a scope of its own until the test adopts it
            ctx.ahead.early[mode.names[role]] = (mode.bounds.pop_all("early"), checks[1], checks[2])
            ctx.known.docker_hosts.setdefault(host.name, mode.docker(host))  # swept at the end
    except NetrunError:
        return out
    return out


def adopt(mode: ContainerMode, role: str, host: Host) -> CommandResult | None:
    """What the start script printed in the host's probe, when it started the container;
    None to start it as usual (anything the early script may have started is removed on
    the host's next command first)."""
    name = mode.names[role]
    found = mode.ctx.ahead.early.pop(name, None)
    answer = mode.ctx.ahead.prestarted.pop((host.name, name), None)
    if found is None:
        return None
    bound, checked, first = found
    sections = launch.sections(answer or "")
    if answer is not None and sections.get("run", "").split("\n", 1)[0].strip() == "0":
        res = CommandResult(host.name, "(in the probe)", 0, answer, "", 0.0)
        if engine.read_checks(mode, host, res, checked, first):
            mode.started.append((host, name))
            mode.bounds.absorb(bound)
            return res
    rm = shlex.join(dk.rm_command([name], mode.docker(host)))
    bound.defer(then=[(host, rm)])  # journaled as undone once it ran
    return None
