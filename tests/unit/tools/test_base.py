"""What every registered tool declares the same way: its samples' protocol and the name
of its raw files, checked against real captured output of each tool."""

from __future__ import annotations

import json

import pytest

from netrun.tools import get_tool, tools
from netrun.tools.base import PeersSeen, SampleFigures
from netrun.tools.iperf2.parse import parse as iperf2_parse
from netrun.tools.iperf3.parse import parse as iperf3_parse
from netrun.tools.netperf.parse import parse as netperf_parse
from netrun.tools.ping.parse import parse as ping_parse
from tests.conftest import IPERF2_FIXTURES, IPERF3_FIXTURES, NETPERF_FIXTURES, PING_FIXTURES

#: One real raw output per tool, as its Measurement.raw holds it.
RAW = {
    "iperf3": IPERF3_FIXTURES / "3.12" / "tcp.json",
    "iperf2": IPERF2_FIXTURES / "2.1.8-normal.server.txt",
    "ping": PING_FIXTURES / "loss.stdout",
    "netperf": NETPERF_FIXTURES / "tcp_rr.stdout",
}


def is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("name", sorted(RAW))
def test_a_raw_file_is_named_for_what_the_tool_prints(name: str) -> None:
    tool = get_tool(name)
    assert tool.raw_suffix == (".json" if is_json(RAW[name].read_text()) else ".txt")


def test_every_tool_has_a_raw_sample_here() -> None:
    assert set(tools()) == set(RAW)


@pytest.mark.parametrize(
    ("name", "options", "protocol"),
    [
        ("iperf3", {"protocol": "udp"}, "udp"),
        ("iperf3", {}, "tcp"),
        ("ping", {}, "icmp"),
        ("iperf2", {}, "udp"),
        ("netperf", {"test": "UDP_RR"}, "udp"),
        ("netperf", {"test": "TCP_STREAM"}, "tcp"),
        ("netperf", {}, "tcp"),  # its default test, TCP_RR
    ],
)
def test_a_tests_protocol_is_its_option_else_the_tools_own(
    name: str, options: dict[str, str], protocol: str
) -> None:
    assert get_tool(name).protocol_for(options) == protocol


def parsed() -> dict[str, object]:
    """One parsed result per tool, from its raw sample above."""
    text = {name: path.read_text() for name, path in RAW.items()}
    return {
        "iperf3": iperf3_parse(text["iperf3"]),
        "iperf2": iperf2_parse(text["iperf2"]),
        "ping": ping_parse(text["ping"], 1),
        "netperf": netperf_parse(text["netperf"]),
    }


def test_what_a_result_can_say_is_its_declaration_not_its_tools_name() -> None:
    """The run reads a sample's top-level figures, interval series, release and ceiling
    from a result that fills them (iperf3's), and a relay mode proves its relay by a result
    that reports the peers its server saw (iperf2's): no mode or run step imports a tool's
    package to ask (tests/unit/test_architecture.py)."""
    found = parsed()
    assert {n for n, r in found.items() if isinstance(r, SampleFigures)} == {"iperf3"}
    assert {n for n, r in found.items() if isinstance(r, PeersSeen)} == {"iperf2"}
    iperf3 = found["iperf3"]
    assert isinstance(iperf3, SampleFigures) and iperf3.version == "3.12"
    assert iperf3.top_level()["throughput_bps"] == getattr(iperf3, "receiver_bps", None)
    series = iperf3.series()  # [start, end, bits/s] of each interval
    assert series and all(len(row) == 3 and row[0] < row[1] for row in series)
    iperf2 = found["iperf2"]
    assert isinstance(iperf2, PeersSeen) and iperf2.peers and iperf2.peer_seen
    metrics = getattr(iperf2, "metrics", {})
    assert iperf2.received == metrics["total"] - metrics["lost"] > 0
