"""What a run will do, from the files alone: each test's addresses, options, commands, time.

``--check-only`` and ``--list-tests`` used to show the management addresses (tests use the
data addresses), no option, no command and no duration, so a lab engineer could not tell
from the pre-flight what the night would measure or how long it would take. A Preview is
built the way the run builds it, with no host contacted: the data address of every role
(``netrun_data_ip``), every option after defaults, scenario, ``-e`` and the inventory, the
command each host runs (as the tool and mode build it; ``docker exec`` in a container mode)
and the expected time, summed over the run's rounds when tests run in parallel.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from netrun.core.mtuplan import overlay_problem
from netrun.core.options import option_for, show
from netrun.errors import NetrunError
from netrun.modes.base import Mode, RunContext
from netrun.run import rounds
from netrun.run.needs import tool_hosts
from netrun.run.plan import TestPlan, plan_test

if TYPE_CHECKING:
    from netrun.core.spec import TestSpec
    from netrun.inventory.model import Inventory

#: Seconds a run spends before its first test: connecting to and probing every host.
RUN_START_S = 2.0
#: Seconds a sample spends besides its traffic (server start, client start and end, the
#: reads around it). Measured on the emulated lab: 10 bare-metal samples of 2 s took 23.8 s
#: with the run's start, about 0.2 s a sample; a real lab's SSH round trips cost more.
SAMPLE_OVERHEAD_S = 0.5
#: Seconds a container test spends starting (and removing) its two containers, once a test
#: (a guess: an engine starts a container in 1-2 s, both ends at once, images present).
CONTAINER_START_S = 5.0
#: The run id container names carry in a preview (the run's own is made when it starts).
RUN_ID = "RUNID"


@dataclass(frozen=True)
class Preview:
    """One test as it will run."""

    test: TestSpec
    #: The test as the run plans it (netrun.run.plan): the expected time reads its mode.
    plan: TestPlan
    #: role -> (host name, data address)
    addresses: dict[str, tuple[str, str]]
    #: (key, value, set by the scenario, -e or the inventory rather than a default)
    options: list[tuple[str, Any, bool]]
    #: (role, command line) in the order they start; a note where the mode builds it later
    commands: list[tuple[str, str]]
    #: the whole test: every repeat with its known overheads
    seconds: float
    #: what refuses the test only once it starts (a mode that cannot carry it, an option
    #: an older iperf3 lacks), one line each
    refusals: list[str] = field(default_factory=list)
    #: the rules that will certainly refuse it (rules()): --check-only exits 2 on them
    refused: list[str] = field(default_factory=list)

    def lines(self, indent: str = "    ") -> list[str]:
        """The test's detail lines, under its one-line summary."""
        where = ", ".join(f"{r} {h} {ip}" for r, (h, ip) in self.addresses.items())
        set_ = " ".join(f"{k}={_value(v)}" for k, v, explicit in self.options if explicit)
        rest = " ".join(f"{k}={_value(v)}" for k, v, explicit in self.options if not explicit)
        repeat = int(self.test.options.get("repeat", 1))
        out = [f"{indent}data addresses: {where}"]
        out.append(f"{indent}options set: {set_ or '(none)'}")
        out.append(f"{indent}defaults: {rest}")
        out += [f"{indent}{role}: {cmd}" for role, cmd in self.commands]
        out += [f"{indent}{line}" for line in self.refusals]
        out.append(f"{indent}expected: {clock(self.seconds)} ({repeat} x {_each(self)})")
        return out


def _value(value: Any) -> str:
    """An option's value as YAML's flow style would write it: a load's mapping in full
    (``load={streams: 4, direction: both}``), where a one-line error says "a mapping"."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    return show(value).strip("'") if isinstance(value, str) else show(value)


def _each(p: Preview) -> str:
    repeat = int(p.test.options.get("repeat", 1))
    containers = _per_test(p.plan)
    return f"{clock((p.seconds - containers) / max(repeat, 1))} a sample" + (
        f", + {clock(containers)} containers" if containers else ""
    )


def clock(seconds: float) -> str:
    """0:07, 12:30, 1:02:03."""
    seconds = max(0, int(seconds + 0.5))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02}:{secs:02}" if hours else f"{minutes}:{secs:02}"


def _per_test(plan: TestPlan) -> float:
    return CONTAINER_START_S if plan.mode.containers else 0.0


def traffic_seconds(test: TestSpec) -> float:
    """A sample's measuring time: iperf's omit + duration, or ping's count x interval."""
    duration, count = test.options.get("duration"), test.options.get("count")
    if duration is not None:
        return float(duration) + float(test.options.get("omit") or 0)
    if count is not None:
        return float(count) * float(test.options.get("interval") or 1)
    return 0.0


def test_seconds(plan: TestPlan) -> float:
    """A test's expected time: repeat x (traffic + a sample's overhead), plus containers
    (its planned mode's); a ``load:`` test's sample is the idle traffic, then the load's
    run (ramp, loaded, a s: its tool's ``beside_seconds``)."""
    test = plan.spec
    each = traffic_seconds(test) + SAMPLE_OVERHEAD_S
    if plan.tool.beside_seconds is not None:
        each += plan.tool.beside_seconds(test)
    return int(test.options.get("repeat", 1)) * each + _per_test(plan)


test_seconds.__test__ = False  # type: ignore[attr-defined]  # not a pytest test


def preview(test: TestSpec, inventory: Inventory) -> Preview:
    """The test as it will run on the inventory's hosts; nothing is contacted."""
    return _preview(plan_test(test), inventory)


def _preview(plan: TestPlan, inventory: Inventory) -> Preview:
    test = plan.spec
    if plan.flows:  # several flows at once: each flow's commands (netrun.run.flows)
        return _flows_preview(plan, inventory)
    hosts = {role: inventory.get(name) for role, name in test.hosts_by_role.items()}
    table = plan.options
    server = hosts["server"]
    options = []
    for opt in table:
        value = option_for(test, server, opt.name, table)
        inventory_set = opt.from_inventory and f"netrun_{opt.name}" in server.vars
        if value is not None:
            options.append((opt.name, value, opt.name in test.explicit or inventory_set))
    mode = plan.start(server, hosts["client"], RunContext(RUN_ID), hosts)
    return Preview(
        test=test,
        plan=plan,
        addresses={role: (h.name, h.data_ip) for role, h in hosts.items()},
        options=options,
        commands=commands(mode) + load_commands(mode),
        seconds=test_seconds(plan),
        refusals=refusals(plan, mode),
        refused=rules(plan, mode),
    )


def _flows_preview(plan: TestPlan, inventory: Inventory) -> Preview:
    """A fan-in's (fan-out's) preview: the fan host, then each flow's other end, and each
    flow's commands named by the flow."""
    test = plan.spec
    parts = [_preview(flow, inventory) for flow in plan.flows]
    side = "client" if test.pairs == "fanout" else "server"
    other = "server" if side == "client" else "client"
    addresses = {side: parts[0].addresses[side]}
    for i, part in enumerate(parts, 1):
        addresses[f"{other}{i}"] = part.addresses[other]
    found = [
        (f"{role} {p.test.client}->{p.test.server}", c) for p in parts for role, c in p.commands
    ]
    said = list(dict.fromkeys(line for p in parts for line in p.refusals))
    refused = list(dict.fromkeys(line for p in parts for line in p.refused))
    seconds = test_seconds(plan)
    return Preview(test, plan, addresses, parts[0].options, found, seconds, said, refused)


def commands(mode: Mode) -> list[tuple[str, str]]:
    """(role, command line) of each host's part, as the mode and its tool build them."""
    try:
        found = mode.preview()
    except (NetrunError, KeyError, ValueError) as exc:  # a value only the run can work out
        return [("commands", f"built when the test starts ({exc})")]
    return found or [("commands", f"built by mode {mode.name} when the test starts")]


def load_commands(mode: Mode) -> list[tuple[str, str]]:
    """What runs beside the tool's commands (its ``beside_preview``: a ``load:`` test's
    bulk iperf3 flow, both ends, placed as the run places it, on the hosts or in a
    container mode's containers); none without."""
    beside = mode.tool.beside_preview
    if beside is None:
        return []
    try:
        return beside(mode)
    except (NetrunError, KeyError, ValueError) as exc:  # a value only the run can work out
        return [("load", f"built when the test starts ({exc})")]


def rules(plan: TestPlan, mode: Mode) -> list[str]:
    """The rules that refuse the test whatever the hosts say, known from the files alone,
    each the same code the run refuses it with: the mode's own (FreeFlow and UDP: its
    ``refusal``, which its setup raises) and the overlay's MTU against ``mtu:`` (the one
    netrun.run.mtu raises)."""
    out = [why] if (why := mode.refusal()) else []
    if why := overlay_problem(plan.spec, plan.mtu):
        out.append(why)
    return out


def refusals(plan: TestPlan, mode: Mode) -> list[str]:
    """What refuses the test once it starts, one line each: the certain rules (rules()),
    and each iperf3 option an older release lacks (the hosts' versions are read when the
    run starts, so that one may pass)."""
    out = [f"refused when it starts: {why}" for why in rules(plan, mode)]
    hosts = tool_hosts(plan) if plan.tool.refuse is not None else []
    if plan.tool.releases is not None and hosts:
        for option, since in plan.tool.releases(plan.spec.options):
            out.append(
                f"needs {plan.tool.name} {since}+ on {', '.join(hosts)} for {option}: a host "
                "with an older one refuses the test when it starts"
            )
    return out


def run_seconds(plans: Sequence[TestPlan], width: int) -> float:
    """The run's expected time: its start, then each round's longest test (one test a
    round when tests run one after another)."""
    by_name = {p.spec.name: p for p in plans}
    scheduled = rounds.plan([p.spec for p in plans], width)
    return RUN_START_S + sum(max(test_seconds(by_name[t.name]) for t in r) for r in scheduled if r)


def total_line(plans: Sequence[TestPlan], width: int) -> str:
    """The run's expected time as one line, with what it is made of."""
    seconds = run_seconds(plans, width)
    scheduled = rounds.plan([p.spec for p in plans], width)
    how = "one after another" if width <= 1 else f"in {len(scheduled)} rounds"
    count = f"{len(plans)} test" + ("" if len(plans) == 1 else "s")
    return (
        f"expected total: {clock(seconds)} for {count} {how} (a test: repeat x (traffic"
        f" + ~{SAMPLE_OVERHEAD_S:g} s), + ~{CONTAINER_START_S:g} s in containers; + ~"
        f"{RUN_START_S:g} s to connect)"
    )


def previews(tests: Sequence[TestSpec], inventory: Inventory) -> list[Preview]:
    """Every test's preview, in order."""
    return [preview(t, inventory) for t in tests]
