"""Bare metal asks for the server's JSON where it holds a figure the client's lacks."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from netrun.tools.iperf3.measure import server_json


@pytest.mark.parametrize(
    ("protocol", "reverse", "bidir", "asks"),
    [
        ("udp", False, False, True),  # the server receives: its interval series
        ("udp", True, False, False),  # the client receives: its own series
        ("tcp", True, False, True),  # the server sends: its TCP_INFO (tools/iperf3/tcpinfo)
        ("tcp", False, False, False),  # the client sends: its own TCP_INFO
        ("tcp", True, True, False),  # --bidir: the client's sums and sending half
        ("udp", False, True, False),
    ],
)
def test_server_json_for_the_receiver_series_and_the_senders_internals(
    protocol: str, reverse: bool, bidir: bool, asks: bool
) -> None:
    test = SimpleNamespace(protocol=protocol, reverse=reverse, options={"bidir": bidir})
    assert server_json(SimpleNamespace(test=test)) is asks  # type: ignore[arg-type]
