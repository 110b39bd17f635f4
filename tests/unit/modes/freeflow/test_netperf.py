"""netrun.modes.freeflow.netperf: which netperf tests FreeFlow carries, and each repeat's
verdict on where its payload went.

Fixtures (tests/fixtures/netperf/freeflow_*) are real: netperf 2.7.1 between two
containers of the Docker lab through the real FreeFlow router and libfsocket.so (tcp
branch d4df2ed5cd01), 3 s each, and the byte counters netrun read around each repeat
(freeflow_path_bytes.json: the overlay device, the host NIC and the container's eth0 on
both ends, and the payload netperf moved each way).
"""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from netrun.modes.base import Mode
from netrun.modes.docker import carry
from netrun.modes.freeflow import netperf as ff_netperf
from netrun.modes.freeflow.mode import FreeFlow
from netrun.tools.netperf import stats
from netrun.tools.netperf.parse import NetperfError, parse
from tests.conftest import NETPERF_FIXTURES


def paths(test: str) -> dict[str, Any]:
    found = json.loads((NETPERF_FIXTURES / "freeflow_path_bytes.json").read_text())
    return found[test]


def payload(test: str, netperf_test: str) -> dict[str, int]:
    inst = parse((NETPERF_FIXTURES / f"freeflow_{test}.stdout").read_text())
    return stats.payload_bytes(netperf_test, [inst], None, None)


def test_udp_rr_is_refused_with_the_reason_and_tcp_tests_are_not() -> None:
    rule = ff_netperf.UDP_RR
    assert rule.matches("netperf", {"test": "UDP_RR"}.get)
    why = rule.why.format(test="t", mode="freeflow")
    assert "UDP_RR" in why and "SOCK_STREAM" in why
    assert "\n" not in why
    tcp = ("TCP_RR", "TCP_CRR", "TCP_STREAM")
    assert not any(rule.matches("netperf", {"test": t}.get) for t in tcp)


def test_tcp_rr_payload_is_the_histograms_transactions_each_way() -> None:
    assert payload("tcp_rr", "TCP_RR") == paths("tcp_rr")["payload_bytes"]
    assert payload("tcp_rr", "TCP_RR") == {"client": 113901, "server": 113901}


def test_tcp_rr_through_the_real_router_left_the_overlay() -> None:
    found = paths("tcp_rr")
    accelerated, crossed, why = carry.verdict(found["path_bytes"], found["payload_bytes"])
    assert (accelerated, crossed) == (True, False)
    assert "client to server" in why and "server to client" in why


def test_tcp_stream_is_judged_on_the_clients_sending_only() -> None:
    found = paths("tcp_stream")
    moved = payload("tcp_stream", "TCP_STREAM")
    assert moved["server"] == 0 and moved["client"] > 300e6  # 940 Mbit/s for 3 s
    accelerated, _, why = carry.verdict(found["path_bytes"], moved)
    assert accelerated is True and "server to client" not in why


def test_tcp_crr_handshakes_cross_the_overlay() -> None:
    found = paths("tcp_crr")
    accelerated, crossed, why = carry.verdict(found["path_bytes"], found["payload_bytes"])
    assert (accelerated, crossed) == (False, True)
    assert "crossed the overlay" in why


def test_no_payload_is_not_accelerated() -> None:
    assert carry.verdict(paths("tcp_rr")["path_bytes"], {"client": 0, "server": 0}) == (
        False, False, "the test moved no bytes",
    )  # fmt: skip


def test_an_unbound_data_socket_is_netperfs_refused_data_connection() -> None:
    # without a data port netserver listens unbound, FreeFlow tells the peer 0.0.0.0
    with pytest.raises(NetperfError) as err:
        parse((NETPERF_FIXTURES / "freeflow_unbound_data.stdout").read_text(), 1)
    assert "connect_data_socket failed: Connection refused" in err.value.output


def test_a_crr_repeat_that_crossed_says_why_and_the_others_are_left_alone() -> None:
    """FreeFlow's judgement of a path-counted repeat (FreeFlow.judged): TCP_CRR's
    handshakes cross the overlay, and its path check says so when it was not accelerated."""
    moved = payload("tcp_crr", "TCP_CRR")
    accelerated, _, why = carry.verdict(paths("tcp_crr")["path_bytes"], moved)
    assert judged("TCP_CRR", accelerated, why) == (
        why if accelerated else f"{why}; {ff_netperf.CRR.note}"
    )
    assert judged("TCP_CRR", True, "ok") == "ok"
    assert judged("TCP_RR", False, "crossed") == "crossed"
    assert FreeFlow.caveats == (ff_netperf.CRR,)


def judged(test: str, accelerated: bool, why: str) -> str:
    """FreeFlow.judged's path check of a netperf repeat of ``test`` (Mode.caveat reads
    the mode's caveats against the test's options)."""
    mode = SimpleNamespace(
        test=SimpleNamespace(tool="netperf"),
        caveats=FreeFlow.caveats,
        _option={"test": test}.get,
    )
    mode.caveat = lambda: Mode.caveat(mode)  # type: ignore[arg-type]
    details = {"path_check": why}
    FreeFlow.judged(mode, details, accelerated)  # type: ignore[arg-type]
    assert details["accelerated"] is accelerated
    return details["path_check"]
