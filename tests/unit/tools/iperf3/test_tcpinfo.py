"""The sender's TCP internals (RTT, cwnd, snd_wnd, path MTU) on every iperf3 release as
captured on the lab (tests/fixtures/iperf3/<version>/, capture_versions.sh): read where the
version reports them, from the end that sent, and null with the reason where not."""

from __future__ import annotations

import json

import pytest

from netrun.tools.iperf3 import tcpinfo
from netrun.tools.iperf3.parse import parse
from netrun.tools.iperf3.result import Iperf3Result
from netrun.tools.iperf3.tool import METRICS, unavailable, values
from tests.conftest import IPERF3_FIXTURES

VERSIONS = ("3.5", "3.7", "3.9", "3.12", "3.16", "3.19.1", "3.21")
#: The releases whose JSON has max_snd_wnd (3.10+): of the captured ones, 3.12 on.
WITH_SND_WND = ("3.12", "3.16", "3.19.1", "3.21")


def load(version: str, case: str) -> tuple[Iperf3Result, dict]:
    text = (IPERF3_FIXTURES / version / f"{case}.json").read_text()
    return parse(text), json.loads(text)


def sender_blocks(end: dict) -> list[dict]:
    return [s["sender"] for s in end["streams"] if s["sender"].get("sender", True)]


@pytest.mark.parametrize("version", VERSIONS)
def test_a_forward_test_has_the_clients_figures_as_iperf3_reported_them(version: str) -> None:
    r, data = load(version, "tcp")
    found = values(r)
    (block,) = sender_blocks(data["end"])
    assert r.tcp_info_of == "client"
    assert found["rtt_mean_ms"] == pytest.approx(block["mean_rtt"] / 1000)
    assert found["rtt_max_ms"] == pytest.approx(block["max_rtt"] / 1000)
    assert found["snd_cwnd_max_bytes"] == block["max_snd_cwnd"]
    assert found["pmtu_bytes"] == 1500  # the capture's veth pair
    assert 0 < found["rtt_mean_ms"] <= found["rtt_max_ms"] < 1000
    # at least ten full-size segments in flight on a 200 Mbit/s path
    assert found["snd_cwnd_max_bytes"] >= 10 * 1448
    if version in WITH_SND_WND:
        assert found["snd_wnd_max_bytes"] == block["max_snd_wnd"] > 0
    else:
        assert "max_snd_wnd" not in block
        assert found["snd_wnd_max_bytes"] is None
        why = unavailable(r)["snd_wnd_max_bytes"]
        assert why == f"iperf3 {version} reports no snd_wnd (iperf3 3.10+)"


@pytest.mark.parametrize("version", VERSIONS)
def test_reverse_reads_the_servers_json_and_never_the_receivers_zeros(version: str) -> None:
    plain, data = load(version, "tcp_reverse")
    # the client received: its sender block is zeros, which are not a measurement
    (block,) = [s["sender"] for s in data["end"]["streams"]]
    assert block["max_rtt"] == block["max_snd_cwnd"] == 0
    for name in tcpinfo.NAMES:
        assert values(plain)[name] is None
        assert "reverse (-R): the sender is the server" in unavailable(plain)[name]
    r, data = load(version, "tcp_reverse_server_json")
    (block,) = sender_blocks(data["server_output_json"]["end"])
    assert r.tcp_info_of == "server"
    assert values(r)["rtt_max_ms"] == pytest.approx(block["max_rtt"] / 1000)
    assert values(r)["snd_cwnd_max_bytes"] == block["max_snd_cwnd"] > 0
    assert values(r)["pmtu_bytes"] == 1500


@pytest.mark.parametrize("version", VERSIONS)
def test_four_streams_mean_of_means_max_of_maxes(version: str) -> None:
    r, data = load(version, "tcp_4streams")
    blocks = sender_blocks(data["end"])
    assert len(blocks) == 4
    found = values(r)
    assert found["rtt_mean_ms"] == pytest.approx(sum(b["mean_rtt"] for b in blocks) / 4000)
    assert found["rtt_max_ms"] == pytest.approx(max(b["max_rtt"] for b in blocks) / 1000)
    assert found["snd_cwnd_max_bytes"] == max(b["max_snd_cwnd"] for b in blocks)


@pytest.mark.parametrize("version", VERSIONS[1:])  # --bidir: 3.7+
def test_bidir_reads_the_clients_sending_streams_not_its_ack_path(version: str) -> None:
    r, data = load(version, "tcp_bidir")
    streams = data["end"]["streams"]
    sending = [s["sender"] for s in streams if s["sender"]["sender"]]
    receiving = [s["sender"] for s in streams if not s["sender"]["sender"]]
    assert sending and receiving
    # the client's receiving socket: the ack path, tens of microseconds
    assert max(b["max_rtt"] for b in receiving) < 100
    found = values(r)
    assert found["rtt_max_ms"] == pytest.approx(max(b["max_rtt"] for b in sending) / 1000)
    assert found["rtt_max_ms"] > 1  # the loaded 200 Mbit/s queue's, not the ack path's


@pytest.mark.parametrize("version", VERSIONS)
def test_udp_has_none_and_says_tcp_internals_do_not_apply(version: str) -> None:
    r, _ = load(version, "udp_overload")
    assert r.tcp_info == {} and r.tcp_info_of is None
    for name in tcpinfo.NAMES:
        assert values(r)[name] is None
        assert unavailable(r)[name] == "UDP: TCP internals do not apply"


def test_a_system_without_tcp_info_reports_zeros_read_as_unavailable() -> None:
    data = json.loads((IPERF3_FIXTURES / "3.12" / "tcp.json").read_text())
    for stream in data["end"]["streams"]:
        stream["sender"].update(max_rtt=0, min_rtt=0, mean_rtt=0, max_snd_cwnd=0, max_snd_wnd=0)
    for item in data["intervals"]:
        for stream in item["streams"]:
            stream["pmtu"] = 0
    r = parse(json.dumps(data))
    assert r.tcp_info == {}
    why = unavailable(r)
    assert why["rtt_mean_ms"] == (
        "iperf3 3.12 reported no mean_rtt for the client's sending streams (zeros: no "
        "TCP_INFO on its system)"
    )
    assert "no pmtu" in why["pmtu_bytes"]


def test_declared_with_units_directions_and_tolerances() -> None:
    declared = {m.name: m for m in METRICS}
    assert declared["rtt_mean_ms"].better == "lower"
    # a bulk flow's RTT is the queue it fills: reported, not judged by default
    assert declared["rtt_mean_ms"].tolerance is None
    assert declared["rtt_max_ms"].tolerance is None
    assert declared["pmtu_bytes"].tolerance == 0  # any drop of the path MTU is a regression
    assert declared["snd_cwnd_max_bytes"].tolerance is None
    assert declared["snd_cwnd_max_bytes"].show(153488.0) == "150"  # KByte
    for name in tcpinfo.NAMES:
        assert "under -R the server's" in declared[name].description
