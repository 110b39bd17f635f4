"""The iperf3 tool's declared metrics of one run: offered and received/offered beside
the sender's and the receiver's rates (issue 25), from captured iperf3 output."""

from __future__ import annotations

import pytest

from netrun.tools.iperf3 import tool
from netrun.tools.iperf3.parse import parse
from tests.conftest import IPERF3_FIXTURES


def test_offered_and_received_share_are_declared_and_computed() -> None:
    names = [m.name for m in tool.METRICS]
    assert {"offered_bps", "received_pct", "sender_bps", "throughput_bps"} <= set(names)
    r = parse((IPERF3_FIXTURES / "udp_shaped_server_json.stdout").read_text())
    found = tool.values(r, 400e6)
    assert found["offered_bps"] == 400e6
    assert found["received_pct"] == pytest.approx(100 * r.receiver_bps / 400e6)
    assert found["sender_bps"] == r.sender_bps


def test_an_unlimited_tcp_test_offers_nothing_and_says_why() -> None:
    r = parse((IPERF3_FIXTURES / "tcp_1stream.stdout").read_text())
    found = tool.values(r, None)
    assert found["offered_bps"] is None and found["received_pct"] is None
    assert "no bitrate" in tool.unavailable(r)["offered_bps"]
