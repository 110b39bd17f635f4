"""Roles: a mode declares them, a test names a host per role, defaults and -e may set them;
needs: the tools each role's host must have, named with their packages."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from netrun.errors import ScenarioError, ToolError
from netrun.hosts.host import Host
from netrun.modes.baremetal.mode import BareMetal
from netrun.modes.turn.mode import Turn
from netrun.run.needs import (
    check_script,
    host_needs,
    missing_message,
    parse_missing,
    plan_needs,
    programs,
    refused,
    role_needs,
    tool_hosts,
)
from netrun.run.plan import TestPlan, plan_tests
from netrun.scenario.loader import load_scenario
from netrun.tools.base import TOOL
from netrun.tools.facts import PROBED, HostFacts, NicInfo

HOSTS = ("alpha", "bravo", "charlie")
MODES = {"baremetal": (), "trio": ()}
ROLES = {"trio": ("server", "client", "relay")}


def load(tmp_path: Path, text: str, **kw: object):  # type: ignore[no-untyped-def]
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return load_scenario(path, hosts=HOSTS, modes=MODES, roles=ROLES, **kw)  # type: ignore[arg-type]


def test_a_third_role_from_the_test_defaults_or_e(tmp_path: Path) -> None:
    text = (
        "defaults: {relay: charlie}\ntests:\n"
        "  - {name: a, mode: trio, server: alpha, client: bravo}\n"
        "  - {name: b, mode: trio, server: alpha, client: bravo, relay: alpha}\n"
        "  - {name: c, mode: baremetal, server: alpha, client: bravo}\n"
    )
    a, b, c = load(tmp_path, text).tests
    assert dict(a.hosts_by_role) == {"server": "alpha", "client": "bravo", "relay": "charlie"}
    assert b.hosts == ("alpha", "bravo")  # distinct hosts: what the test locks
    assert dict(c.hosts_by_role) == {"server": "alpha", "client": "bravo"}
    (a2, *_) = load(tmp_path, text, overrides={"relay": "bravo"}).tests
    assert a2.roles["relay"] == "bravo"


def test_role_problems_are_named(tmp_path: Path) -> None:
    text = (
        "tests:\n"
        "  - {name: a, mode: trio, server: alpha, client: bravo}\n"
        "  - {name: b, mode: baremetal, server: alpha, client: bravo, relay: charlie}\n"
        "  - {name: c, mode: trio, server: alpha, client: bravo, relay: zulu}\n"
    )
    with pytest.raises(ScenarioError) as err:
        load(tmp_path, text)
    text_ = str(err.value)
    assert "tests[0] 'a': missing key 'relay'" in text_
    assert "tests[1] 'b': unknown role 'relay' for mode 'baremetal'" in text_
    assert "tests[2] 'c': relay 'zulu' is not in the inventory" in text_


def test_needs_are_gathered_per_host_over_roles() -> None:
    needs = host_needs(
        [
            ({"server": "a", "client": "b"}, {"server": ("iperf3",), "client": ("iperf3",)}),
            ({"server": "c", "client": "b"}, {"server": ("docker",), "client": ("docker",)}),
        ]
    )
    assert needs == {"a": ["iperf3"], "b": ["iperf3", "docker"], "c": ["docker"]}


def test_the_needs_check_runs_for_real_and_names_packages() -> None:
    import subprocess

    host = Host("c", {"netrun_docker": "/nonexistent/docker"})
    known = programs()  # every registered tool's and mode's
    script = check_script(host, ["sh", "docker", "iperf3"], known)
    out = subprocess.run(["sh", "-c", script], capture_output=True, text=True).stdout
    missing = parse_missing(out)
    assert "docker" in missing and "sh" not in missing
    line = missing_message(host, ["docker"], lambda tool: "docker server", known)
    assert line.startswith("c: docker not found ('/nonexistent/docker', needed by docker server)")
    assert "apt-get install docker.io" in line and "dnf install docker-ce" in line
    assert "set netrun_docker" in line


def test_container_hosts_need_docker_not_iperf3(tmp_path: Path) -> None:
    from netrun.run.needs import plan_needs
    from netrun.run.plan import plan_tests

    path = tmp_path / "s.yaml"
    path.write_text(
        "tests:\n"
        "  - {name: c, mode: docker, server: alpha, client: bravo}\n"
        "  - {name: b, mode: baremetal, server: charlie, client: bravo}\n"
    )
    needs = plan_needs(list(plan_tests(load_scenario(path, hosts=HOSTS).tests).values()))
    assert needs.tools == {
        "alpha": ["docker"],
        "bravo": ["docker", "iperf3"],
        "charlie": ["iperf3"],
    }
    assert needs.needed_by[("bravo", "iperf3")] == "baremetal client"
    assert needs.needed_by[("alpha", "docker")] == "docker server"


def plans_of(tmp_path: Path, tests: str) -> list[TestPlan]:
    path = tmp_path / "s.yaml"
    path.write_text("defaults: {mode: baremetal}\ntests:\n" + tests)
    return list(plan_tests(load_scenario(path, hosts=HOSTS).tests).values())


def test_a_mode_leaves_the_tools_place_and_each_tool_fills_it(tmp_path: Path) -> None:
    """TOOL in a mode's needs is the test's tool's programs (Tool.programs): its declared
    needs for the role, else its own name; no mode names a tool's program."""
    plans = plans_of(
        tmp_path,
        "  - {name: i3, server: alpha, client: bravo}\n"
        "  - {name: i2, tool: iperf2, server: alpha, client: bravo}\n"
        "  - {name: p, tool: ping, server: alpha, client: bravo}\n"
        "  - {name: n, tool: netperf, server: alpha, client: bravo}\n"
        "  - {name: t, mode: turn, tool: iperf2, server: alpha, client: bravo, relay: charlie}\n"
        "  - {name: d, mode: docker, server: alpha, client: bravo}\n",
    )
    assert TOOL in BareMetal.needs["server"] and TOOL in Turn.needs["client"]
    got = {p.spec.name: dict(role_needs(p)) for p in plans}
    assert got == {
        "i3": {"server": ("iperf3",), "client": ("iperf3",)},
        "i2": {"server": ("iperf",), "client": ("iperf",)},
        "p": {"server": (), "client": ("ping",)},
        "n": {"server": ("netserver",), "client": ("netperf",)},
        "t": {"server": ("iperf",), "client": ("iperf", "python3"), "relay": ("turnserver",)},
        "d": {"server": ("docker",), "client": ("docker",)},
    }
    hosts = {p.spec.name: tool_hosts(p) for p in plans}
    assert hosts["i3"] == ["bravo", "alpha"] and hosts["p"] == ["bravo"]  # the client first
    assert hosts["t"] == ["bravo", "alpha"] and hosts["d"] == []  # docker: in containers


def facts(version: str | None) -> HostFacts:
    return HostFacts("6.1", version, version is None, NicInfo("eth0"))


def test_a_probed_program_that_does_not_answer_its_version_is_missing(tmp_path: Path) -> None:
    """The probe reads PROBED's version (iperf3 --version): a host that needs it and whose
    copy did not answer lacks it, named first; a host that does not need it is not asked."""
    needs = plan_needs(plans_of(tmp_path, "  - {name: a, server: alpha, client: bravo}\n"))
    assert PROBED == "iperf3" and facts("3.12").version(PROBED) == "3.12"
    assert facts("3.12").version("iperf") is None
    needs.check(Host("alpha"), facts("3.12"))
    with pytest.raises(ToolError, match=r"^bravo: iperf3 not found \('iperf3', needed by "):
        needs.check(Host("bravo"), facts(None))
    needs.check(Host("charlie"), facts(None))


def test_a_tools_refusal_gets_the_probed_version_of_each_host_that_runs_it(
    tmp_path: Path,
) -> None:
    (plan,) = plans_of(tmp_path, "  - {name: a, server: alpha, client: bravo}\n")
    seen: list[list[tuple[str, str | None]]] = []

    def refuse(options: object, hosts: list[tuple[str, str | None]]) -> str | None:
        seen.append(list(hosts))
        return None

    plan = replace(plan, tool=replace(plan.tool, refuse=refuse))
    assert refused(plan, {"alpha": facts("3.9"), "bravo": facts("3.16")}) is None
    assert refused(plan, {"alpha": facts("3.9")}) is None  # bravo not probed (yet)
    assert seen == [[("bravo", "3.16"), ("alpha", "3.9")], [("bravo", None), ("alpha", "3.9")]]
