"""What ``load:`` accepts: its defaults, and one line per bad key naming the fix."""

from __future__ import annotations

from netrun.tools.load import spec


def test_true_and_empty_give_four_tcp_streams_up() -> None:
    for value in (True, {}):
        assert spec.of({"load": value}) == spec.Load(4, "up", "tcp", None)
    assert spec.of({"load": None}) is None and spec.of({"load": False}) is None
    assert spec.of({}) is None


def test_a_mapping_sets_each_key() -> None:
    load = spec.of({"load": {"streams": 2, "direction": "both", "protocol": "udp",
                             "bitrate": "50M"}})  # fmt: skip
    assert load == spec.Load(2, "both", "udp", "50M")
    assert load.describe() == "2 udp stream(s) both at 50M"


def test_each_bad_key_is_its_own_line() -> None:
    found = spec.problems(
        "ping",
        {
            "load": {
                "streams": 0,
                "direction": "sideways",
                "protocol": "sctp",
                "bitrate": "fast",
                "x": 1,
            }
        },
    )
    assert found == [
        "load: unknown key 'x'; its keys: streams, direction, protocol, bitrate",
        "load.streams must be an integer from 1 to 128, got 0",
        "load.direction must be one of up, down, both, got 'sideways'",
        "load.protocol must be one of tcp, udp, got 'sctp'",
        "load.bitrate must be bits/s such as 100M or 500000, got 'fast'",
    ]
    assert spec.problems("ping", {"load": {"streams": True}}) == [
        "load.streams must be an integer from 1 to 128, got true"
    ]


def test_a_udp_load_needs_a_bitrate() -> None:
    found = spec.problems("ping", {"load": {"protocol": "udp"}})
    assert found == ["load.bitrate must be set for a udp load (iperf3 sends 1 Mbit/s without -b)"]
    assert spec.problems("ping", {"load": {"protocol": "udp", "bitrate": "1G"}}) == []


def test_netperf_needs_a_latency_test() -> None:
    bulk = spec.problems("netperf", {"test": "TCP_STREAM", "load": True})
    assert bulk and "TCP_RR" in bulk[0] and "TCP_STREAM" in bulk[0]
    assert spec.problems("netperf", {"test": "UDP_RR", "load": True}) == []
    assert spec.problems("iperf2", {"load": True}) == []  # a mode says where it cannot go


def test_the_option_checks_only_the_shape() -> None:
    check = spec.OPTION.check
    assert check is not None
    assert check(True) is None and check({"streams": 99999}) is None
    assert check(3) == "must be true, false or a mapping {streams, direction, protocol, bitrate}"
