"""netrun.modes.sameend on real captured output: the lab's probe of a namespace (its
``ip -o addr show``, tests/fixtures/context/veth) and a docker-mode run on the lab whose
two hosts' daemons had one network with one subnet (tests/fixtures/results/same-end-docker,
from tests/integration/test_trusted_figures_lab.py): both containers got 10.203.201.2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from netrun.core.spec import TestSpec
from netrun.inventory.loader import load_inventory
from netrun.inventory.model import Inventory
from netrun.modes import sameend
from netrun.tools.docker import ContainerInfo
from netrun.tools.facts import parse_probe
from tests.conftest import CONTEXT_FIXTURES, RESULTS_FIXTURES

PROBE = (CONTEXT_FIXTURES / "veth.stdout").read_text()


def spec(**options: Any) -> TestSpec:
    return TestSpec("t", "baremetal", "alpha", "bravo", 0, options, frozenset(options))


def inventory(tmp: Path, alpha_ip: str) -> Inventory:
    path = tmp / f"inv-{alpha_ip}.yaml"
    path.write_text(
        "all:\n  hosts:\n"
        f"    alpha: {{ansible_host: 192.0.2.1, netrun_data_ip: '{alpha_ip}'}}\n"
        "    bravo: {ansible_host: 192.0.2.2, netrun_data_ip: 10.203.33.1}\n"
    )
    return load_inventory(path)


def test_the_probe_reads_every_address_of_the_namespace() -> None:
    facts = parse_probe(PROBE, data_ip="10.203.33.1")
    assert "10.203.33.1" in facts.addresses and "127.0.0.1" in facts.addresses
    assert "::1" in facts.addresses


def test_a_server_whose_data_address_is_the_clients_own_is_one_end(tmp_path: Path) -> None:
    facts = {"bravo": parse_probe(PROBE, data_ip="10.203.33.1")}
    inv = inventory(tmp_path, "10.203.33.1")  # alpha's data address is bravo's: one namespace
    found = sameend.hosts_problem(spec(), inv.get("alpha"), inv.get("bravo"), facts)
    assert found == (
        "the server end (host alpha, 10.203.33.1) is the client end's own address, so the "
        "client end (host bravo) would connect to itself: loopback, not the network; "
        + sameend.HOSTS_FIX
    )
    loop = inventory(tmp_path, "127.0.0.1")
    said = sameend.hosts_problem(spec(), loop.get("alpha"), loop.get("bravo"), {})
    assert said is not None and said.startswith(
        "the server end (host alpha, 127.0.0.1) is a loopback address"
    )
    other = inventory(tmp_path, "10.203.33.2")  # an address bravo does not hold: a network path
    assert sameend.hosts_problem(spec(), other.get("alpha"), other.get("bravo"), facts) is None
    allowed = spec(allow_same_host=True)  # loopback on purpose: flagged same-host instead
    assert sameend.hosts_problem(allowed, inv.get("alpha"), inv.get("bravo"), facts) is None


def test_two_containers_with_one_address_are_one_end() -> None:
    doc = json.loads((RESULTS_FIXTURES / "same-end-docker" / "results.json").read_text())
    sample = next(t for t in doc["tests"] if t["name"] == "same-ip")
    seen = sample["details"]["containers"]
    infos = {
        role: ContainerInfo(c["id"], c["name"], True, "running", None, None, c["image_id"],
                            c["ips"], "")
        for role, c in seen.items()
    }  # fmt: skip
    test = TestSpec("same-ip", "docker", "alpha", "bravo", 0, {}, frozenset())
    target = sample["details"]["server_ip"]
    found = sameend.containers_problem(test, target, infos, "nrsame")
    assert found == sample["error"]  # what the run said on the lab
    apart = {**infos, "client": ContainerInfo("x", "c", True, "running", None, None, "",
                                              {"nrsame": "10.203.201.3"}, "")}  # fmt: skip
    assert sameend.containers_problem(test, target, apart, "nrsame") is None
