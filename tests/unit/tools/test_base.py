"""What every registered tool declares the same way: its samples' protocol and the name
of its raw files, checked against real captured output of each tool."""

from __future__ import annotations

import json

import pytest

from netrun.tools import get_tool, tools
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
