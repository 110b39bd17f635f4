"""Roles: a mode declares them, a test names a host per role, defaults and -e may set them;
needs: the tools each role's host must have, named with their packages."""

from __future__ import annotations

from pathlib import Path

import pytest

from netrun.errors import ScenarioError
from netrun.hosts.host import Host
from netrun.run.needs import check_script, host_needs, missing_message, parse_missing
from netrun.scenario.loader import load_scenario

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
    script = check_script(host, ["sh", "docker", "iperf3"])
    out = subprocess.run(["sh", "-c", script], capture_output=True, text=True).stdout
    missing = parse_missing(out)
    assert "docker" in missing and "sh" not in missing
    line = missing_message(host, ["docker"], lambda tool: "docker server")
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
