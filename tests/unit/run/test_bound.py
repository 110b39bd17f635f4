"""A test bound once (netrun.run.bound): its tool, its mode class and its option table,
looked up by name there and read from the bound test everywhere after."""

from __future__ import annotations

from pathlib import Path

import pytest

from netrun.hosts.host import Host
from netrun.modes.base import RunContext
from netrun.modes.docker.mode import DockerMode
from netrun.run.bound import bind_all
from netrun.scenario.loader import load_scenario
from netrun.tools import option_table
from netrun.tools.iperf2.tool import TOOL as IPERF2


def specs(tmp_path: Path):  # type: ignore[no-untyped-def]
    path = tmp_path / "s.yaml"
    path.write_text(
        "name: s\ntests:\n"
        "  - {name: a, mode: docker, tool: iperf2, server: alpha, client: bravo}\n"
        "  - {name: b, mode: baremetal, server: alpha, client: bravo}\n"
    )
    return load_scenario(path, hosts=("alpha", "bravo")).tests


def test_each_test_gets_its_tool_mode_and_options_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = bind_all(specs(tmp_path))
    a = found["a"]
    assert a.name == "a" and a.tool is IPERF2 and a.mode is DockerMode and a.spec.tool == "iperf2"
    assert a.options == option_table("iperf2", DockerMode.options)
    assert found["b"].tool.name == "iperf3" and found["b"].mode.name == "baremetal"

    # The mode it starts reads its options from the bound table: no lookup by name.
    def no_lookup(*_args: object) -> None:
        raise AssertionError("looked up by name again")

    monkeypatch.setattr("netrun.modes.base.option_table", no_lookup)
    host = Host("alpha", {"netrun_docker": "podman"})
    mode = a.start(host, host, RunContext("abcd1234"), {})
    assert isinstance(mode, DockerMode) and mode.value("docker") == "podman"
