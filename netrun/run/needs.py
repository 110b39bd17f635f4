"""What each host must have installed for the tests it takes part in, checked before any test.

A mode declares, per role, the programs it runs there (``Mode.needs``): TOOL where the
test's tool runs on the host itself (bare metal), replaced by that tool's programs
(``Tool.programs``: iperf3, iperf, ping...); docker where the tool runs in containers;
turnserver, kubectl. The runner gathers one set per host over all of its tests and the
probe checks exactly those, so a container host needs no iperf3 and a missing program is
named with its install command, which the tool or mode that runs it declares beside it
(``Tool.installs``, ``Mode.installs``: netrun.core.programs).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from netrun.core.programs import Program
from netrun.errors import ToolError
from netrun.hosts.host import Host
from netrun.modes import mode_programs
from netrun.run.plan import TestPlan
from netrun.tools import facts as facts_tool
from netrun.tools import tools as registered_tools
from netrun.tools.base import TOOL

if TYPE_CHECKING:
    from netrun.tools.facts import HostFacts


#: The run's own programs, beside those the tools and modes declare (Tool.installs,
#: Mode.installs).
OWN = (Program("ip", None, "iproute2", "iproute", version_flag="-V"),)


def programs() -> dict[str, Program]:
    """Program name -> its declaration: the run's own, every registered tool's and every
    registered mode's (the first declaration of a name wins): the inventory variables a
    run may be given (netrun.job), read before the tests are planned. A run's own checks
    read ``Needs.programs``, from its plans."""
    every = Needs()  # the run's own already
    every.know((*(p for t in registered_tools().values() for p in t.installs), *mode_programs()))
    return every.programs


SECTION = "==netrun:needs=="
MARK = "netrun-missing"


def program(host: Host, tool: str, known: Mapping[str, Program]) -> str:
    """The command that runs ``tool`` on ``host``: its ``netrun_<tool>`` path (the variable
    ``known``, the run's programs, names), else the name."""
    found = known.get(tool)
    value = host.vars.get(found.var) if found and found.var else None
    return str(value or tool)


def host_needs(
    tests: Iterable[tuple[Mapping[str, str], Mapping[str, tuple[str, ...]]]],
) -> dict[str, list[str]]:
    """host name -> tools, over every (role -> host, role -> tools) pair of the run's tests."""
    found: dict[str, dict[str, None]] = {}
    for hosts, needs in tests:
        for role, name in hosts.items():
            for tool in needs.get(role, ()):
                found.setdefault(name, {})[tool] = None
    return {name: list(tools) for name, tools in found.items()}


def check_script(host: Host, tools: Iterable[str], known: Mapping[str, Program]) -> str:
    """sh lines printing one ``netrun-missing TOOL`` line per tool not found on the host."""
    lines = [f"echo {shlex.quote(SECTION)}"]
    for tool in tools:
        exe = shlex.quote(program(host, tool, known))
        lines.append(f"command -v {exe} >/dev/null 2>&1 || echo {MARK} {shlex.quote(tool)}")
    return "\n".join(lines) + "\n"


def parse_missing(output: str) -> list[str]:
    """The tools ``check_script`` reported missing."""
    inside, missing = False, []
    for line in output.splitlines():
        line = line.strip()
        if line == SECTION:
            inside = True
        elif line.startswith("==netrun:"):
            inside = False
        elif inside and line.startswith(MARK + " "):
            missing.append(line.split(" ", 1)[1])
    return missing


def missing_message(
    host: Host, missing: Iterable[str], why: Callable[[str], str], known: Mapping[str, Program]
) -> str:
    """One line naming each missing tool, what needs it, and how to install it (what
    ``known``, the run's programs, says of it)."""
    parts = []
    for tool in missing:
        found = known.get(tool)
        where = program(host, tool, known)
        fix = (
            f"install it (Debian/Ubuntu: apt-get install {found.debian}; "
            f"RHEL/Fedora: dnf install {found.rhel})"
            if found
            else "install it"
        )
        override = f" or set {found.var} to its path" if found and found.var else ""
        parts.append(f"{tool} not found ('{where}', needed by {why(tool)}); {fix}{override}")
    return f"{host.name}: " + "; ".join(parts)


@dataclass
class Needs:
    """The tools each host must have for this run, and which mode and role needs each."""

    #: host name -> tools, in first-needed order.
    tools: dict[str, list[str]] = field(default_factory=dict)
    #: (host name, tool) -> "<mode> <role>", for the message.
    needed_by: dict[tuple[str, str], str] = field(default_factory=dict)
    #: host name -> tools the last probe found missing.
    missing: dict[str, list[str]] = field(default_factory=dict)
    #: program name -> what installs it, from the run's tests' tools and modes
    #: (Tool.installs, Mode.installs) and the run's own.
    programs: dict[str, Program] = field(default_factory=lambda: {p.name: p for p in OWN})

    def know(self, declared: Iterable[Program]) -> None:
        """Add programs a test's tool or mode declares (the first of a name stays)."""
        for prog in declared:
            self.programs.setdefault(prog.name, prog)

    def check(self, host: Host, found: HostFacts) -> None:
        """Raise one ToolError naming every tool the host lacks, and how to install it."""
        missing = list(self.missing.get(host.name, []))
        wanted = self.tools.get(host.name, [])
        probed = facts_tool.PROBED  # the probe reads its version
        if probed in wanted and found.version(probed) is None and probed not in missing:
            missing.insert(0, probed)  # found, but it does not answer --version
        if missing:
            why = self.needed_by.get
            said = missing_message(host, missing, lambda t: why((host.name, t), "?"), self.programs)
            raise ToolError(said)


def role_needs(plan: TestPlan) -> Mapping[str, tuple[str, ...]]:
    """role -> programs for one test: its mode's needs, where the test's tool's programs
    for the role (Tool.programs: ping runs only on the client) replace TOOL."""
    test, mode, tool = plan.spec, plan.mode, plan.tool
    needs_for = getattr(mode, "needs_for", None)  # needs that depend on the test's options
    by_role = needs_for(test.options) if needs_for else mode.needs
    if test.options.get("mtu") is not None:  # netrun.run.mtu sets it (ip) and checks it (ping)
        by_role = {r: (*tools, "ip", "ping") for r, tools in by_role.items()}
    return {
        role: tuple(
            dict.fromkeys(
                p for name in tools for p in (tool.programs(role) if name == TOOL else (name,))
            )
        )
        for role, tools in by_role.items()
    }


def _tool_roles(plan: TestPlan) -> dict[str, str]:
    """host name -> its role, for the hosts that run the test's tool themselves (their
    role needs the tool's programs there), the client first: the options are its."""
    by_role, tool = role_needs(plan), plan.tool
    roles = sorted(plan.spec.hosts_by_role.items(), key=lambda rn: rn[0] != "client")
    found: dict[str, str] = {}
    for role, name in roles:
        if any(p in by_role.get(role, ()) for p in tool.programs(role)):
            found.setdefault(name, role)
    return found


def tool_hosts(plan: TestPlan) -> list[str]:
    """The hosts that run the test's tool themselves, the client first."""
    return list(_tool_roles(plan))


def refused(plan: TestPlan, facts: Mapping[str, HostFacts]) -> str | None:
    """One line when a host that runs the test's tool itself has a release without an
    option the test uses (Tool.refuse: each host with the version the probe read of the
    tool's programs there), else None."""
    if plan.tool.refuse is None:
        return None
    hosts = [
        (name, _version(facts.get(name), plan.tool.programs(role)))
        for name, role in _tool_roles(plan).items()
    ]
    return plan.tool.refuse(plan.spec.options, hosts)


def _version(found: HostFacts | None, programs: Iterable[str]) -> str | None:
    """The first version the probe read of ``programs`` on a host (None: not probed)."""
    if found is None:
        return None
    return next((v for p in programs if (v := found.version(p)) is not None), None)


def plan_needs(plans: Sequence[TestPlan]) -> Needs:
    """What each host of these tests needs, from each test's mode and tool and the host's
    roles."""
    needs = Needs()
    for b in plans:
        needs.know((*b.mode.installs, *b.tool.installs))
    declared = [(b.spec.hosts_by_role, role_needs(b)) for b in plans]
    needs.tools = host_needs(declared)
    tests = [b.spec for b in plans]
    for test, (hosts, by_role) in reversed(list(zip(tests, declared, strict=True))):
        for role, name in hosts.items():
            for tool in by_role.get(role, ()):
                needs.needed_by[(name, tool)] = f"{test.mode} {role}"
    return needs


def probe_host(
    host: Host,
    needs: Needs,
    extra: str = "",
    on_output: Callable[[str], None] | None = None,
) -> HostFacts:
    """The host's facts, and which of its needed tools are missing (kept in ``needs``),
    in one round trip. ``extra`` (a script in a subshell, after the probe's own output)
    rides on that round trip; ``on_output`` gets the whole output."""

    wanted = needs.tools.get(host.name, [])
    known = needs.programs
    script = check_script(host, wanted, known) + facts_tool.probe_script(
        data_ip=host.data_ip, iface=host.iface, iperf3=program(host, facts_tool.PROBED, known)
    )
    if extra:
        script += f"\n(\n{extra}\n)\n"
    res = host.run(script, timeout=30, check=False)
    if on_output is not None:
        on_output(res.stdout)
    needs.missing[host.name] = [t for t in wanted if t in parse_missing(res.stdout)]
    return facts_tool.parse_probe(res.stdout, data_ip=host.data_ip)
