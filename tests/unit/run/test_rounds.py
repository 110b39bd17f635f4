"""--list-tests' line for a test of several flows: how many flows, each one's label, and
one flow as one ("1 flow", as --check-only says), not "1 flows at once"."""

from __future__ import annotations

from pathlib import Path

from netrun.run.rounds import listing
from netrun.scenario.loader import load_scenario

HOSTS = ["alpha", "bravo", "charlie", "delta"]


def test_a_fan_says_how_many_flows_one_in_the_singular(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        "name: s\ntests:\n"
        "  - {name: in, mode: baremetal, hosts: all, pairs: {fanin: delta}, clients: 2}\n"
        "  - {name: one, mode: baremetal, hosts: all, pairs: {fanout: alpha}, clients: 1}\n"
    )
    lines = listing(load_scenario(path, hosts=HOSTS), None, 1)
    assert lines[1] == "  in[2->delta]: baremetal, 2 flows at once: alpha->delta, bravo->delta"
    assert lines[2] == "  one[alpha->1]: baremetal, 1 flow: alpha->bravo"
