"""The iperf3 tool's declared metrics of one run: offered and received/offered beside
the sender's and the receiver's rates (issue 25), from captured iperf3 output."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import ClassVar

import pytest

from netrun.core.measurement import Measurement
from netrun.hosts.command import CommandResult
from netrun.modes.freeflow.mode import OVERLAY_SOCKET
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


def placed(text: str, details: dict[str, object]) -> object:
    """A container mode as iperf3's measure sees it: its client's run a fixed one, its
    proof around it saying ``details``."""

    class Placed:
        repeat = 0
        test = SimpleNamespace(options={"protocol": "tcp"})
        details: ClassVar[dict[str, object]] = {}

        def end(self, role: str) -> object:
            return SimpleNamespace(resident=True)  # its server kept: the mode runs the client

        def proving(self, measure: Callable[[], Measurement]) -> Measurement:
            found = measure()
            found.details.update(details)  # what the mode's proof says of the repeat
            return found

        def resident_client(self, repeat: int) -> CommandResult:
            return CommandResult("bravo", "iperf3 -c", 0, text, "", 2.0)

    return Placed()


def test_what_the_mode_says_iperf3_cannot_know_is_null_in_metrics_too() -> None:
    """FreeFlow's overlay socket (details.idle_socket): iperf3's TCP_INFO figures are
    there in its JSON, but not the flow's; the metric is null with the mode's reason (its
    retransmits showed 0)."""
    text = (IPERF3_FIXTURES / "3.12" / "tcp.json").read_text()
    r = parse(text)
    assert r.tcp_info["pmtu_bytes"] == 1500 and r.retransmits == 0
    m = tool.measure(placed(text, {"idle_socket": OVERLAY_SOCKET}), 1)  # type: ignore[arg-type]
    for name in ("retransmits", "rtt_mean_ms", "snd_cwnd_max_bytes", "pmtu_bytes"):
        assert m.metrics[name] is None, name
        assert m.details["unavailable"][name] == OVERLAY_SOCKET
    assert "tcp_info_of" not in m.details and "idle_socket" not in m.details
    assert m.metrics["throughput_bps"] == r.receiver_bps
    assert m.result.tcp_mss == r.tcp_mss is not None  # the data crossed that socket


def test_an_accelerated_repeat_has_no_mss_of_the_idle_socket() -> None:
    """Where the data left the overlay (details.accelerated), the MSS iperf3 read is the
    idle overlay socket's: the ceiling must not take it."""
    text = (IPERF3_FIXTURES / "3.12" / "tcp.json").read_text()
    details = {"idle_socket": OVERLAY_SOCKET, "accelerated": True}
    m = tool.measure(placed(text, details), 1)  # type: ignore[arg-type]
    assert m.result.tcp_mss is None
    plain = tool.measure(placed(text, {"accelerated": True}), 1)  # type: ignore[arg-type]
    assert plain.result.tcp_mss is not None  # no idle socket said: its own MSS


def test_what_a_run_moved_is_its_receivers_bytes_from_its_sender() -> None:
    """Tool.moved: the figure a path-counting mode judges its counters on."""
    r = parse((IPERF3_FIXTURES / "tcp_1stream.stdout").read_text())
    assert tool.TOOL.moved is not None
    assert tool.TOOL.moved(r) == {"client": r.bytes_received}
