"""A test planned once (netrun.run.plan): its tool, its mode class, its option table, its
MTUs and its flows, looked up by name there and read from the plan everywhere after (the
whole run: tests/unit/run/test_plan_once.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from netrun.core.mtuplan import MtuWant
from netrun.hosts.host import Host
from netrun.inventory.model import Inventory
from netrun.modes.base import RunContext
from netrun.modes.docker.mode import DockerMode
from netrun.run.plan import docker_commands, plan_tests
from netrun.scenario.loader import load_scenario
from netrun.tools import option_table
from netrun.tools.iperf2.tool import TOOL as IPERF2
from netrun.tools.iperf3.flows import FAN_OMIT_S


def specs(tmp_path: Path):  # type: ignore[no-untyped-def]
    path = tmp_path / "s.yaml"
    path.write_text(
        "name: s\ntests:\n"
        "  - {name: a, mode: docker, tool: iperf2, server: alpha, client: bravo}\n"
        "  - {name: b, mode: baremetal, server: alpha, client: bravo}\n"
        "  - {name: m, mode: flannel, server: alpha, client: bravo, mtu: 9000}\n"
        "  - {name: f, mode: baremetal, hosts: 'alpha,bravo,charlie', pairs: {fanin: alpha}}\n"
    )
    return load_scenario(path, hosts=("alpha", "bravo", "charlie")).tests


def test_each_test_gets_its_tool_mode_and_options_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = plan_tests(specs(tmp_path))
    a = found["a"]
    assert a.name == "a" and a.tool is IPERF2 and a.mode is DockerMode and a.spec.tool == "iperf2"
    assert a.options == option_table("iperf2", DockerMode.options)
    assert found["b"].tool.name == "iperf3" and found["b"].mode.name == "baremetal"

    # The mode it starts reads its options and its tool from the plan: no lookup by name.
    def no_lookup(*_args: object) -> None:
        raise AssertionError("looked up by name again")

    monkeypatch.setattr("netrun.modes.base.option_table", no_lookup)
    monkeypatch.setattr("netrun.modes.base.get_tool", no_lookup)
    host = Host("alpha", {"netrun_docker": "podman"})
    mode = a.start(host, host, RunContext("abcd1234"), {})
    assert isinstance(mode, DockerMode) and mode.value("docker") == "podman"
    assert mode.tool is IPERF2


def test_the_plan_holds_the_mtus_and_each_flows_own_plan(tmp_path: Path) -> None:
    found = plan_tests(specs(tmp_path))
    assert found["m"].mtu == MtuWant(9000, 8950, 8950)  # flannel: an overlay, containers
    assert found["b"].mtu is None and not found["b"].flows
    (fan,) = [p for name, p in found.items() if name.startswith("f[")]
    assert [f.name for f in fan.flows] == [f"{fan.name}:{h}->alpha" for h in ("bravo", "charlie")]
    assert all(f.tool.name == "iperf3" and f.mode is fan.mode for f in fan.flows)
    assert {f.spec.options["omit"] for f in fan.flows} == {FAN_OMIT_S}  # Tool.flow_defaults


def test_the_docker_command_each_host_sweeps_with_comes_from_the_plans(tmp_path: Path) -> None:
    hosts = {"alpha": Host("alpha", {"netrun_docker": "podman"}), "bravo": Host("bravo")}
    inventory = Inventory(tmp_path / "i.yaml", hosts, {})
    found = docker_commands(list(plan_tests(specs(tmp_path)).values()), inventory)
    assert found == {"alpha": "podman", "bravo": "docker"}
