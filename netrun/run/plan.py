"""One plan per test: a test resolved once, as its run starts, and carried from then on.

A TestSpec names its tool and its mode. ``plan_test`` looks both up by name, once, and
resolves everything that follows from them: the merged option table (the general options,
the tool's, the mode's), the MTUs the test wants (``mtu:``, by the mode's overlay and
containers) and, for a test of several flows (``pairs: {fanin: HOST}``), each flow's own
plan. The run (netrun.run.runner) plans every test as it starts and hands the plan on: the
fleet's probe starts and needs, the mode it starts (``TestPlan.start`` gives the mode its
tool and option table), the measurement, the flows, the MTU settings and each saved sample
read the tool and the mode from it. Nothing looks a tool or a mode up by name after
planning (tests/unit/run/test_plan_once.py closes both registries and runs every mode x
tool case).

The modes' own look-ahead (the first test's probe starts, the starts ahead:
``Mode.probe_starts``, ``Mode.start_ahead``, docker's kept containers) gets the plans too,
as netrun.modes.base.Planned, and builds later tests' modes from them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import TYPE_CHECKING

from netrun.core.mtuplan import MtuWant, wanted
from netrun.core.options import GENERAL_OPTIONS, Option, option_for
from netrun.core.spec import TestSpec
from netrun.errors import NetrunError
from netrun.modes import get_mode
from netrun.modes.base import Mode, RunContext
from netrun.tools import form, get_tool
from netrun.tools.base import Tool
from netrun.tools.savers.model import Savers

if TYPE_CHECKING:
    from netrun.hosts.host import Host
    from netrun.inventory.model import Inventory


@dataclass(frozen=True)
class TestPlan:
    """One test resolved: its spec, tool, mode class, option table, MTUs and flows."""

    __test__ = False  # not a pytest test class

    spec: TestSpec
    #: The test's tool in the form its options ask for (load: idle/loaded, netrun.tools.form).
    tool: Tool
    mode: type[Mode]
    #: Every option a test of this tool in this mode takes: the general ones, the tool's,
    #: the mode's (what netrun.tools.option_table builds by name).
    options: tuple[Option, ...]
    #: The MTUs the test runs at (``mtu:``), None when it sets none.
    mtu: MtuWant | None
    #: A test of several flows: each flow's own plan (``flow_specs``), in flow order.
    flows: tuple[TestPlan, ...] = ()

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def hosts(self) -> tuple[str, ...]:
        return self.spec.hosts

    @property
    def savers(self) -> Savers:
        """The round-trip savers its mode allows (netrun.tools.savers.model)."""
        return self.mode.savers

    def start(self, server: Host, client: Host, ctx: RunContext, hosts: Mapping[str, Host]) -> Mode:
        """The test's mode, placed on its hosts (nothing runs until its ``setup``)."""
        return self.mode(self.spec, server, client, ctx, hosts, table=self.options, tool=self.tool)

    def placed(self, inventory: Inventory, ctx: RunContext) -> Mode:
        """The test's mode on the inventory's hosts of its roles."""
        by_role = {r: inventory.get(n) for r, n in self.spec.hosts_by_role.items()}
        return self.start(by_role["server"], by_role["client"], ctx, by_role)


def plan_test(spec: TestSpec) -> TestPlan:
    """Look a test's tool and mode up by name, once; KeyError when either is not registered
    (a validated scenario names only registered ones)."""
    tool = get_tool(spec.tool)
    mode = get_mode(spec.mode)
    flows = tuple(_resolved(s, tool, mode) for s in flow_specs(spec, tool))
    return _resolved(spec, tool, mode, flows)


def _resolved(
    spec: TestSpec, tool: Tool, mode: type[Mode], flows: tuple[TestPlan, ...] = ()
) -> TestPlan:
    tool = form.of(tool, spec.options)  # load: its idle/loaded form
    mtu = wanted(spec, lambda _name: (mode.overlay_device, mode.containers))
    table = (*GENERAL_OPTIONS, *tool.options, *mode.options)
    return TestPlan(spec, tool, mode, table, mtu, flows)


def plan_tests(tests: Iterable[TestSpec]) -> dict[str, TestPlan]:
    """Test name -> its plan, each test planned once."""
    return {t.name: plan_test(t) for t in tests}


def flow_specs(test: TestSpec, tool: Tool) -> list[TestSpec]:
    """Each flow of a test of several (netrun.run.flows) as a test of its own: named
    ``TEST:client->server`` (its tag, hence its files and containers, from that name), its
    two hosts, its own port if ``port:`` is set, and its tool's flow defaults unless the
    test sets them (Tool.flow_defaults: iperf3 leaves FAN_OMIT_S of each flow's start out);
    [] for a test of one flow."""
    port = test.options.get("port")
    out = []
    for i, flow in enumerate(test.flows):
        options = dict(test.options)
        if port:
            options["port"] = int(port) + i
        for key, value in (tool.flow_defaults or {}).items():
            if key not in test.explicit:
                options[key] = value
        out.append(
            replace(
                test,
                name=f"{test.name}:{flow.label}",
                server=flow.server,
                client=flow.client,
                # a mode's other roles (turn's relay) serve every flow
                roles=MappingProxyType(
                    {**test.hosts_by_role, "server": flow.server, "client": flow.client}
                ),
                options=MappingProxyType(options),
                matrix=f"{test.name}:{i}",  # its own tag (TestSpec.tag)
                pairs="",
                flows=(),
                fan=test.flows,
            )
        )
    return out


def docker_commands(plans: Sequence[TestPlan], inventory: Inventory) -> dict[str, str]:
    """Host name -> the docker command its container tests will use (a scenario may set
    it), so the journal's sweep after a SIGKILL calls the same one."""
    found: dict[str, str] = {}
    for plan in plans:
        if not any(o.name == "docker" for o in plan.mode.options):
            continue
        for name in plan.hosts:
            with contextlib.suppress(NetrunError):
                host = inventory.get(name)
                found.setdefault(name, str(option_for(plan.spec, host, "docker", plan.options)))
    return found
