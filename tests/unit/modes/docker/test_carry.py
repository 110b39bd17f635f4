"""netrun.modes.docker.carry: the verdict on where a netperf repeat's payload went, each
way, in the path-bytes modes.

Fixtures are real: netperf 2.7.1 TCP_RR, two processes for 2 s, between two containers
of the Docker lab in flannel mode (flannel_tcp_rr_x2.stdout, the client container's
output as netrun read it), and the byte counters netrun read around that repeat
(flannel_path_bytes.json: the overlay device flannel.1, the host NIC and the container's
eth0 on both ends, and the payload netperf moved each way). FreeFlow's are judged in
tests/unit/modes/freeflow/test_netperf.py.
"""

from __future__ import annotations

import json
from typing import Any

from netrun.modes.docker import carry
from netrun.tools.netperf import stats
from netrun.tools.netperf import tool as netperf_tool
from tests.conftest import NETPERF_FIXTURES


def flannel(test: str) -> dict[str, Any]:
    found = json.loads((NETPERF_FIXTURES / "flannel_path_bytes.json").read_text())
    return found[test]


def test_flannel_tcp_rr_payload_is_both_processes_transactions_each_way() -> None:
    text = (NETPERF_FIXTURES / "flannel_tcp_rr_x2.stdout").read_text()
    found, _ = netperf_tool.results_of(text, text, 2, "bravo", 10.0)
    moved = stats.payload_bytes("TCP_RR", found, None, None)
    assert moved == flannel("tcp_rr")["payload_bytes"] == {"client": 18407, "server": 18407}


def test_flannel_tcp_rr_crossed_the_overlay_both_ways_and_is_not_accelerated() -> None:
    found = flannel("tcp_rr")
    accelerated, crossed, why = carry.verdict(found["path_bytes"], found["payload_bytes"])
    assert (accelerated, crossed) == (False, True)
    assert why.count("crossed the overlay device") == 2
    assert why.startswith("client to server: ") and "; server to client: " in why


def test_only_the_directions_that_moved_payload_are_judged() -> None:
    found = flannel("tcp_rr")
    _, crossed, why = carry.verdict(found["path_bytes"], {"client": 18407, "server": 0})
    assert crossed is True and "server to client" not in why
