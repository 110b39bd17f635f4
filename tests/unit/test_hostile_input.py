"""Values built to inject shell commands are refused by validation, one line naming the key.

Every inventory variable and scenario option that reaches a remote shell has a strict
pattern; the shell quoting (shlex) behind it is the second line of defence, tested in
tests/unit/tools/iperf3/test_parse.py. tests/integration/test_faults_input.py drives the same values
through the CLI.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from netrun.errors import InventoryError, ScenarioError
from netrun.inventory.loader import load_inventory
from netrun.scenario.loader import load_scenario
from netrun.tools.docker import is_image_reference
from tests.conftest import RESULTS_FIXTURES

INJECT = "x;touch /tmp/netrun-pwned"


def inventory_problems(tmp_path: Path, **host_vars: Any) -> list[str]:
    path = tmp_path / "inv.yaml"
    path.write_text(yaml.safe_dump({"all": {"hosts": {"alpha": host_vars}}}))
    with pytest.raises(InventoryError) as info:
        load_inventory(path)
    return info.value.problems


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("netrun_iface", "eth0;touch /tmp/netrun-pwned"),
        ("netrun_iface", "eth0\n"),  # "$" would have let a trailing newline through
        ("netrun_iface", "$(reboot)"),
        ("netrun_iperf3", "iperf3;id"),
        ("netrun_iperf3", "iperf3\n"),
        ("netrun_iperf3", "-iperf3"),
        ("netrun_iperf3", "`id`"),
        ("netrun_remote_tmp", "/tmp;id"),
        ("netrun_remote_tmp", "/tmp/$(id)"),
        ("netrun_remote_tmp", "/tmp\n"),
        ("netrun_data_ip", "10.0.0.1;id"),
        ("netrun_data_ip", "fe80::1%$(id)"),
        ("ansible_host", "alpha\n"),
        ("ansible_host", "a b"),
        ("ansible_become_user", "root;id"),
        ("ansible_port", "22;id"),
        ("ansible_port", "²"),
        ("ansible_port", "9" * 5000),
    ],
)
def test_inventory_refuses_injection(tmp_path: Path, key: str, value: str) -> None:
    [line] = inventory_problems(tmp_path, **{key: value})
    assert line.startswith(f"{tmp_path / 'inv.yaml'}: host 'alpha': {key} must be "), line
    assert "\n" not in line and len(line) < 300, line


def test_inventory_still_takes_good_values(tmp_path: Path) -> None:
    path = tmp_path / "inv.yaml"
    good = {
        "netrun_iface": "enp1s0f0.100",
        "netrun_iperf3": "/usr/local/bin/iperf3",
        "netrun_remote_tmp": "/var/tmp/netrun",
        "netrun_data_ip": "fe80::1%eth0",
        "ansible_host": "node1.lab.example",
        "ansible_become_user": "bench-user",
        "ansible_port": "2222",
    }
    path.write_text(yaml.safe_dump({"all": {"hosts": {"alpha": good}}}))
    assert load_inventory(path)["alpha"].vars == good


@pytest.mark.parametrize(
    ("mode", "key", "value"),
    [
        ("docker", "image", INJECT),
        ("docker", "image", "alpine:$(id)"),
        ("docker", "image", "alpine\n"),
        ("docker", "image", "--privileged"),
        ("docker", "image", "Alpine"),
        ("docker", "network", INJECT),
        ("docker", "docker", INJECT),
        ("flannel", "flannel_iface", INJECT),
        ("flannel", "flannel_subnet_env", "/run/x;id"),
        ("freeflow", "router_image", INJECT),
        ("freeflow", "router_name", INJECT),
        ("freeflow", "freeflow_dir", "/freeflow;id"),
        ("freeflow", "vnet_prefix", "10.0.0.0/8;id"),
        ("baremetal", "bitrate", "1G;id"),
        ("baremetal", "length", "$(id)"),
        ("baremetal", "window", "128K\n"),
        ("baremetal", "port", "5201;id"),
        ("baremetal", "tolerance", "5%;id"),
    ],
)
def test_scenario_refuses_injection(tmp_path: Path, mode: str, key: str, value: str) -> None:
    path = tmp_path / "s.yaml"
    test = {"name": "t", "mode": mode, "server": "alpha", "client": "bravo", key: value}
    path.write_text(yaml.safe_dump({"tests": [test]}))
    with pytest.raises(ScenarioError) as info:
        load_scenario(path, hosts=["alpha", "bravo"])
    [line] = info.value.problems
    assert line.startswith(f"{path}: tests[0] 't': {key} must "), line


@pytest.mark.parametrize(
    "ref",
    [
        "networkstatic/iperf3",
        "netrun-lab/iperf3:latest",
        "freeflow/freeflow:tcp",
        "registry.example.com:5000/team/iperf3:3.12",
        "[::1]:5000/iperf3",
        "alpine@sha256:" + "0" * 64,
        "my_org/a__b-c.d:v1.0-rc_2",
    ],
)
def test_image_references_docker_accepts(ref: str) -> None:
    assert is_image_reference(ref)


@pytest.mark.parametrize(
    "ref",
    ["", "-x", "a b", "a;b", "a:b:c", "alpine:", "a//b", "a/", "x" * 256, "a@sha256:1", "a\n"],
)
def test_image_references_docker_refuses(ref: str) -> None:
    assert not is_image_reference(ref)


def test_override_with_an_impossible_date_is_a_plain_error() -> None:
    """Found by the fuzzer: yaml reads 2024-13-45 as a date and raised ValueError."""
    from netrun.core.options import parse_overrides

    with pytest.raises(ScenarioError) as info:
        parse_overrides(["bitrate=2024-13-45"])
    assert info.value.problems == [
        "-e bitrate=2024-13-45: the value is not a valid YAML scalar; quote it"
    ]


@pytest.mark.parametrize("value", [".inf", ".nan", "1" + "0" * 400, "0"])
def test_link_speed_must_be_finite(tmp_path: Path, value: str) -> None:
    """An infinite line rate passed and then broke results.json (allow_nan=False)."""
    path = tmp_path / "inv.yaml"
    path.write_text(f"all:\n  hosts:\n    alpha:\n      netrun_link_speed_mbps: {value}\n")
    with pytest.raises(InventoryError) as info:
        load_inventory(path)
    [line] = info.value.problems
    assert "netrun_link_speed_mbps must be a number > 0 and <= 10000000" in line


# -- results.json read back (report, history import, --baseline FILE, --resume) -------------
RESULTS = RESULTS_FIXTURES / "baremetal-3" / "results.json"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda d: d["tests"][0].update(throughput_bps="fast"), "tests[0].throughput_bps"),
        (lambda d: d["tests"][0].update(mode=None), "tests[0].mode"),
        (lambda d: d["tests"][0].update(intervals=[[0, 1]]), "tests[0].intervals"),
        (lambda d: d["tests"][0].update(options=[]), "tests[0].options"),
        (lambda d: d.update(tests={}), "tests"),
        (lambda d: d.update(hosts={"alpha": {"nic": "eth0"}}), "hosts.alpha.nic"),
        (lambda d: d.update(errors="boom"), "errors"),
    ],
)
def test_results_of_the_wrong_shape_are_one_line(tmp_path: Path, change: Any, field: str) -> None:
    import json

    from netrun.errors import NetrunError
    from netrun.results import store as results

    doc = json.loads(RESULTS.read_text())
    change(doc)
    path = tmp_path / "results.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(NetrunError) as info:
        results.load(path)
    assert str(info.value).startswith(f"{path}: {field} has the wrong type"), info.value


def test_results_nan_and_deep_nesting_are_one_line(tmp_path: Path) -> None:
    import json

    from netrun.errors import NetrunError
    from netrun.results import store as results

    doc = json.loads(RESULTS.read_text())
    doc["tests"][0]["throughput_bps"] = float("nan")  # json.dumps writes NaN, loads reads it
    path = tmp_path / "results.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(NetrunError, match=r"tests\[0\]\.throughput_bps has the wrong type"):
        results.load(path)
    path.write_text('{"schema": 1, "tests": ' + "[" * 100_000)
    with pytest.raises(NetrunError, match="nested too deeply"):
        results.load(path)


def test_results_missing_optional_fields_are_filled(tmp_path: Path) -> None:
    import json

    from netrun.results import store as results

    doc = json.loads(RESULTS.read_text())
    for key in ("retransmits", "intervals", "nic", "details", "repeat"):
        doc["tests"][0].pop(key)
    path = tmp_path / "results.json"
    path.write_text(json.dumps(doc))
    sample = results.load(path)["tests"][0]
    assert sample["retransmits"] is None and sample["intervals"] == [] and sample["repeat"] == 1


@pytest.mark.parametrize("run_id", ["x;touch /tmp/netrun-pwned", "1a2b3c4d\n", "$(id)", "../.."])
def test_resumed_run_id_that_is_not_one_is_refused(tmp_path: Path, run_id: str) -> None:
    """A run id stands unquoted in the sweep's glob: one read from --resume's file is checked,
    and the runner and the sweep script refuse one as well."""
    import json

    from netrun.cleanup.scripts import cleanup_script
    from netrun.cli.main import job_inputs, run_parser
    from netrun.errors import InputError
    from netrun.job import prepare
    from netrun.results.store import new_document
    from netrun.run.runner import Run

    inv = tmp_path / "inv.yaml"
    inv.write_text(
        "all:\n  hosts:\n    alpha: {ansible_host: 127.0.0.1}\n"
        "    bravo: {ansible_host: 127.0.0.2}\n"
    )
    scen = tmp_path / "s.yaml"
    scen.write_text(
        "name: s\ntests:\n  - {name: t, mode: baremetal, server: alpha, client: bravo}\n"
    )
    previous = tmp_path / "results.json"
    argv = [str(scen), "-i", str(inv), "--resume", str(previous)]
    previous.write_text(json.dumps(new_document("s", "1a2b3c4d", "0")))
    req, _ = prepare(job_inputs(run_parser().parse_args(argv)))
    assert req.run_id == "1a2b3c4d"
    previous.write_text(json.dumps(new_document("s", run_id, "0")))
    with pytest.raises(InputError, match=r"--resume .*: run_id .* not a netrun run id"):
        prepare(job_inputs(run_parser().parse_args(argv)))
    req.run_id = run_id
    with pytest.raises(InputError, match="not a netrun run id"):
        Run(req)
    with pytest.raises(ValueError, match="not a netrun run id"):
        cleanup_script("/tmp", run_id)
