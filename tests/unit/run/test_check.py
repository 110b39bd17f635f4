"""netrun check's plan: which hosts, tools and images a scenario needs (no connection)."""

from __future__ import annotations

from pathlib import Path

from netrun.inventory.loader import load_inventory
from netrun.run import check
from netrun.scenario.loader import load_scenario

INVENTORY = """all:
  hosts:
    alpha: {ansible_host: 127.0.0.1}
    bravo: {ansible_host: 127.0.0.1, netrun_image: 'lab/iperf3:local'}
    charlie: {ansible_host: 127.0.0.1}
"""
SCENARIO = """name: c
tests:
  - {name: bm, mode: baremetal, server: alpha, client: bravo}
  - {name: dk, mode: docker, server: alpha, client: bravo}
"""


def test_plan_names_each_hosts_tools_and_images(tmp_path: Path) -> None:
    (tmp_path / "inv.yaml").write_text(INVENTORY)
    (tmp_path / "s.yaml").write_text(SCENARIO)
    inventory = load_inventory(tmp_path / "inv.yaml")
    scenario = load_scenario(tmp_path / "s.yaml", hosts=tuple(inventory.hosts))
    hosts, needs, images = check.plan(inventory, list(scenario.tests))
    assert [h.name for h in hosts] == ["alpha", "bravo"], "charlie is in no test"
    assert needs.tools["alpha"] == ["iperf3", "docker"]
    assert images == {"alpha": ["networkstatic/iperf3"], "bravo": ["lab/iperf3:local"]}


def test_without_a_scenario_every_host_is_checked_for_iperf3(tmp_path: Path) -> None:
    (tmp_path / "inv.yaml").write_text(INVENTORY)
    hosts, needs, images = check.plan(load_inventory(tmp_path / "inv.yaml"), None, "alpha:bravo")
    assert [h.name for h in hosts] == ["alpha", "bravo"]
    assert needs.tools == {"alpha": ["iperf3"], "bravo": ["iperf3"]} and images == {}
