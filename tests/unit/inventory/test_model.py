"""Scenario roles that name a group or a host pattern, and the shipped scenario/inventory pairs.

Everything here is offline: --check-only connects to nothing, and inventories/lab.yaml (a
physical lab's addresses) is only ever validated, never run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from netrun.errors import InventoryError, ScenarioError
from netrun.inventory.loader import load_inventory
from netrun.inventory.model import resolve_role
from netrun.lab import inventory as lab_inventory
from netrun.lab.plan import LabConfig, plan
from netrun.scenario.loader import load_scenario
from tests.conftest import ROOT

SCENARIOS = sorted((ROOT / "scenarios").glob("*.yaml"))
EXAMPLE = ROOT / "inventories" / "lab.yaml"
INVENTORY = """\
all:
  children:
    servers: {hosts: {alpha: {ansible_host: 10.0.0.1}}}
    clients: {hosts: {bravo: {ansible_host: 10.0.0.2}}}
    rack: {hosts: {alpha:, bravo:, charlie: {ansible_host: 10.0.0.3}}}
    empty: {}
"""


@pytest.fixture
def inv(tmp_path: Path):
    path = tmp_path / "inv.yml"
    path.write_text(INVENTORY)
    return load_inventory(path)


def test_a_host_a_group_and_a_pattern_resolve_to_one_host(inv) -> None:
    assert resolve_role(inv, "charlie").name == "charlie"
    assert resolve_role(inv, "servers").name == "alpha"
    assert resolve_role(inv, "rack:!servers:!clients").name == "charlie"
    assert resolve_role(inv, "rack[1]").name == "bravo"
    assert resolve_role(inv, "b*").name == "bravo"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("rack", "'rack' resolves to 3 hosts (alpha, bravo, charlie); a role needs exactly one"),
        ("serverz", "'serverz' is not in the inventory; did you mean 'servers'?"),
        ("empty", "'empty' resolves to no host: host pattern 'empty' matches nothing"),
        ("rack:&nope*", "'rack:&nope*' resolves to no host: host pattern 'nope*' matches"),
    ],
)
def test_none_or_several_hosts_is_an_error_saying_what(inv, value: str, message: str) -> None:
    with pytest.raises(InventoryError) as err:
        resolve_role(inv, value)
    assert str(err.value).startswith(message), str(err.value)


def test_limit_applies_before_resolution(inv) -> None:
    assert resolve_role(inv, "rack", limit="charlie").name == "charlie"
    assert resolve_role(inv, "rack", limit="alpha,clients:!alpha").name != "charlie"
    with pytest.raises(InventoryError, match="resolves to 2 hosts"):
        resolve_role(inv, "rack", limit="servers,clients")
    # A group with no member within -l resolves as without it; the test is skipped later.
    assert resolve_role(inv, "servers", limit="bravo").name == "alpha"


def _scenario(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(body)
    return path


def test_scenario_roles_resolve_and_minus_e_overrides(tmp_path: Path, inv) -> None:
    path = _scenario(
        tmp_path,
        "defaults: {server: servers, client: clients}\n"
        "tests:\n  - {name: a, mode: baremetal}\n"
        "  - {name: b, mode: baremetal, client: 'rack[2]'}\n",
    )

    def resolve(value: str) -> str:
        return resolve_role(inv, value).name

    modes = {"baremetal": ()}
    tests = load_scenario(path, modes=modes, resolve=resolve).tests
    assert [(t.server, t.client) for t in tests] == [("alpha", "bravo"), ("alpha", "charlie")]
    # (-e server=charlie would put test b's server and client on one host: refused)
    over = load_scenario(path, modes=modes, resolve=resolve, overrides={"client": "charlie"})
    assert [t.client for t in over.tests] == ["charlie", "charlie"]


def test_scenario_error_names_what_the_role_resolved_to(tmp_path: Path, inv) -> None:
    path = _scenario(tmp_path, "tests:\n  - {name: a, mode: baremetal, server: rack, client: x}\n")
    with pytest.raises(ScenarioError) as err:
        load_scenario(path, modes={"baremetal": ()}, resolve=lambda v: resolve_role(inv, v).name)
    assert err.value.problems == [
        f"{path}: tests[0] 'a': server 'rack' resolves to 3 hosts (alpha, bravo, charlie);"
        " a role needs exactly one: name a host, a one-host group, or a pattern such as rack[0]",
        f"{path}: tests[0] 'a': client 'x' is not in the inventory",
    ]


def _lab_inventory(tmp_path: Path, docker: bool) -> Path:
    """The inventory `netrun lab up` writes, rendered offline (no lab is started)."""
    config = LabConfig(prefix="nrx", net_index=6, state_dir=tmp_path / "state", docker=docker)
    path = tmp_path / f"local-{docker}.yaml"
    path.write_text(lab_inventory.render(plan(config)))
    return path


def _check_only(scenario: Path, inventory: Path) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "netrun", str(scenario), "-i", str(inventory), "--check-only"]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env, cwd=ROOT)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[p.stem for p in SCENARIOS])
@pytest.mark.parametrize("which", ["inventories/lab.yaml", "lab", "docker-lab"])
def test_every_shipped_scenario_fits_both_inventories(
    tmp_path: Path, scenario: Path, which: str
) -> None:
    if which == "inventories/lab.yaml":
        inventory, server, client = EXAMPLE, "node80", "node36"
    else:
        inventory = _lab_inventory(tmp_path, docker=which == "docker-lab")
        server, client = "alpha", "bravo"
    results = ROOT / "results"  # `make demo` may have left runs there: compare, not exist
    before = set(results.iterdir()) if results.exists() else set()
    done = _check_only(scenario, inventory)
    assert done.returncode == 0, done.stderr
    assert "nothing was contacted" in done.stdout and "not in the inventory" not in done.stderr
    lines = done.stdout.splitlines()
    tests = [t for t in lines if t.startswith("  ") and not t.startswith("    ")]
    if scenario.stem == "mesh":  # generated pairs of every host: each pair is both roles
        pairs = [re.search(r"\[(\S+)->(\S+)\]: .*, server (\S+) .*client (\S+) ", t) for t in tests]
        assert tests and all(m and m[1] == m[4] and m[2] == m[3] for m in pairs), tests
        assert any(m and {m[1], m[2]} == {server, client} for m in pairs), tests
    elif scenario.stem == "fanin":  # one test of flows into (out of) the first host
        fans = [re.search(r"\[(\d+)->(\S+)\]|\[(\S+)->(\d+)\]", t) for t in tests]
        assert len(tests) == 2 and all(m and server in (m[2], m[3]) for m in fans), tests
    else:
        assert tests and all(f"server {server} " in t and f"client {client} " in t for t in tests)
    after = set(results.iterdir()) if results.exists() else set()
    assert after == before, "--check-only made a results folder"


def test_check_only_still_reports_a_misfit(tmp_path: Path) -> None:
    path = tmp_path / "inv.ini"
    path.write_text("[servers]\nalpha ansible_host=10.0.0.1\n")  # no clients group
    done = _check_only(ROOT / "scenarios" / "baremetal.yaml", path)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"netrun: error: {ROOT / 'scenarios' / 'baremetal.yaml'}: defaults: client 'clients'"
        " is not in the inventory"
    ]
