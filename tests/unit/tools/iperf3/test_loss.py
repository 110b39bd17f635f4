"""Where a UDP test lost its datagrams, from iperf3 output and counter readings captured
together on the lab (tests/fixtures/iperf3/*_server_json, tests/fixtures/counters)."""

from __future__ import annotations

from typing import Any

from netrun.hosts import counters
from netrun.tools.iperf3 import loss
from netrun.tools.iperf3.parse import parse
from tests.conftest import COUNTERS_FIXTURES, IPERF3_FIXTURES


def ends(name: str) -> dict[str, dict[str, Any]]:
    out = {}
    for end in ("client", "server"):
        before, after = (
            counters.parse((COUNTERS_FIXTURES / f"{name}_{end}_{when}.txt").read_text())
            for when in ("before", "after")
        )
        out[end] = counters.record(before, after, iface="data0", netns="host")
    return out


def attribute(fixture: str, counters_of: str, offered: float) -> dict[str, Any]:
    r = parse((IPERF3_FIXTURES / f"{fixture}.stdout").read_text())
    found = ends(counters_of)
    return loss.attribute(
        offered_bps=offered,
        sender_bps=r.sender_bps,
        lost=r.lost_packets,
        sender=found["client"],
        receiver=found["server"],
    )


def test_a_400m_test_on_a_200m_link_names_the_sender_and_the_receiver() -> None:
    """The shaper's back-pressure held the sender at 192 Mbit/s; the receiver's socket
    then lost 1563 datagrams, all counted as receive-buffer errors."""
    found = attribute("udp_shaped_server_json", "udp_shaped", 400e6)
    assert found["places"] == [loss.SENDER, loss.RECEIVER]
    assert found["place"] == loss.SENDER
    assert found["lost_datagrams"] == found["receiver_errors"] == 1563
    assert found["unaccounted"] == 0
    assert "sent 192.1 of 400.0 Mbit/s offered" in found["why"]


def test_drops_no_host_counted_are_the_networks() -> None:
    """3% dropped by an iptables rule at the receiver: no counter on either host saw them."""
    found = attribute("udp_50m_dropped_server_json", "udp_dropped", 50e6)
    assert found["places"] == [loss.NETWORK]
    assert found["unaccounted"] == found["lost_datagrams"] == 375


def test_queue_drops_are_named() -> None:
    found = loss.attribute(
        offered_bps=100e6,
        sender_bps=99e6,
        lost=1000,
        sender={"qdisc_dropped": 990, "nic_tx_dropped": 0},
        receiver={"udp_rcvbuf_errors": 0, "udp_in_errors": 0, "nic_rx_dropped": 0},
    )
    assert found["places"] == [loss.NETWORK]
    assert "sender qdisc 990" in found["why"]


def test_without_counters_the_place_of_loss_is_not_guessed() -> None:
    found = loss.attribute(
        offered_bps=50e6, sender_bps=50e6, lost=10, sender=None, receiver={"unavailable": "x"}
    )
    assert found["places"] == [] and found["place"] is None
    assert "not read" in found["why"]


def test_nothing_lost_nothing_named() -> None:
    found = loss.attribute(offered_bps=50e6, sender_bps=49.9e6, lost=0, sender={}, receiver={})
    assert found == {"lost_datagrams": 0, "places": [], "place": None, "why": None}
