"""iperf3 3.5 to 3.21, each as captured: the receiver's figure is the receiver's, on every
version and case, or null with its reason; never the sender's.

Fixtures: tests/fixtures/iperf3/<version>/<case>.json, captured for real by
tests/fixtures/iperf3/capture_versions.sh between two namespaces at 200 Mbit/s, each with
<case>.nic.json: the receiving NICs' own byte counters over the run. A payload byte is
carried inside a frame, so the receiver's bytes are at most the NIC's, and at least the
NIC's less the headers (TCP: 66 of each 1514-byte frame, acks and the control connection;
UDP: 42 of each 1442-byte frame) and, for UDP, the datagrams the receiving socket dropped
(iperf3's own loss count).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from netrun.tools.iperf3 import tool as iperf3_tool
from netrun.tools.iperf3 import versions
from netrun.tools.iperf3.parse import parse
from tests.conftest import IPERF3_FIXTURES

VERSIONS = ("3.5", "3.7", "3.9", "3.12", "3.16", "3.19.1", "3.21")
CASES = (
    "tcp", "tcp_reverse", "tcp_reverse_server_json", "tcp_4streams", "tcp_bidir",
    "udp_overload", "udp_reverse", "udp_dropped_server_json", "udp_dropped",
)  # fmt: skip
#: How far under the NIC's bytes the receiver's may be: headers (TCP 66/1514 = 4.4%), acks
#: and control traffic; UDP's 42/1442 (2.9%) is taken off before its loss.
TCP_MARGIN = 0.06
UDP_PAYLOAD = 1400 / 1442
UDP_MARGIN = 0.02


def captured() -> list[tuple[str, str]]:
    return [(v, c) for v in VERSIONS for c in CASES if (IPERF3_FIXTURES / v / f"{c}.json").exists()]


def load(version: str, case: str) -> tuple[str, dict[str, int]]:
    folder = IPERF3_FIXTURES / version
    return (folder / f"{case}.json").read_text(), json.loads(
        (folder / f"{case}.nic.json").read_text()
    )


def nic_received(case: str, nic: dict[str, int]) -> int:
    """Bytes the receiving NIC(s) took in: the server's, the client's with -R, both with --bidir."""
    if "bidir" in case:
        return nic["client_rx_bytes"] + nic["server_rx_bytes"]
    return nic["client_rx_bytes"] if "reverse" in case else nic["server_rx_bytes"]


def test_every_version_and_case_is_captured() -> None:
    want = [(v, c) for v in VERSIONS for c in CASES if not (v == "3.5" and c == "tcp_bidir")]
    assert captured() == want  # 3.5 has no --bidir (3.7+)


@pytest.mark.parametrize(("version", "case"), captured())
def test_the_receiver_figure_is_the_receiving_nics(version: str, case: str) -> None:
    text, nic = load(version, case)
    result = parse(text)
    assert result.version == version
    wire = nic_received(case, nic)
    if result.bytes_received is None:  # a version that does not report it: why, not a guess
        assert result.receiver_bps is None
        assert "3.11" in result.unavailable["throughput_bps"]
        return
    assert result.receiver_bps is not None
    assert result.bytes_received <= wire
    if case.startswith("udp"):
        kept = 1 - (result.lost_percent or 0) / 100
        assert result.bytes_received >= wire * UDP_PAYLOAD * kept * (1 - UDP_MARGIN)
    else:
        assert result.bytes_received >= wire * (1 - TCP_MARGIN)


def counted_bps(data: dict[str, Any]) -> float:
    """The receiver's rate by the release's own counters: (packets - lost) x 1400 bytes
    over the receiver's seconds (end.sum before 3.11, end.sum_received after)."""
    end = data["end"]
    counts = end.get("sum_received") if "sum_received" in end else end["sum"]
    loss = end["sum"]
    return float((loss["packets"] - loss["lost_packets"]) * 1400 * 8 / counts["seconds"])


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("case", ["udp_dropped_server_json", "udp_dropped"])
def test_every_release_gives_the_udp_receivers_figure_never_the_senders(
    version: str, case: str
) -> None:
    """10% of the datagrams dropped at the receiver (capture_versions.sh): every release's
    receiver figure agrees with its own counters, and is well under the sender's; before
    3.11 it comes from the server's own JSON where netrun asked for it, else from the
    counters, and the result says which (issue 35)."""
    text, _ = load(version, case)
    data = json.loads(text)
    result = parse(text)
    assert result.receiver_bps is not None and result.sender_bps is not None
    assert result.receiver_bps == pytest.approx(counted_bps(data), rel=0.005)
    assert result.receiver_bps < 0.95 * result.sender_bps  # 10% or more did not arrive
    assert "throughput_bps" not in result.unavailable
    old = "sum_received" not in data["end"]
    said = " ".join(result.warnings)
    if old and case == "udp_dropped_server_json":
        assert f"receiver figure from {versions.FROM_SERVER}" in said
    elif old:
        assert f"receiver figure from {versions.FROM_COUNTERS}" in said
    else:
        assert "receiver figure from" not in said
    assert old == (version in ("3.5", "3.7", "3.9"))
    offered = 100e6
    assert iperf3_tool.values(result, offered)["received_pct"] == pytest.approx(
        100 * result.receiver_bps / offered
    )


@pytest.mark.parametrize("version", ["3.5", "3.7", "3.9"])
def test_udp_before_3_11_without_its_counters_says_why(version: str) -> None:
    """With neither the server's JSON nor the counters (a datagram length it did not
    report) the figure is null with that reason, never the sender's; and received_pct
    names the same reason, not a bitrate the test had."""
    data = json.loads(load(version, "udp_overload")[0])
    data["start"]["test_start"].pop("blksize")
    result = parse(json.dumps(data))
    assert result.receiver_bps is None and result.bytes_received is None
    assert result.sender_bps == pytest.approx(data["end"]["sum"]["bits_per_second"], rel=0.01)
    assert result.lost_percent == data["end"]["sum"]["lost_percent"]  # the receiver's loss
    why = iperf3_tool.unavailable(result, 400e6)
    assert f"iperf3 {version}" in why["throughput_bps"] and "-R" in why["throughput_bps"]
    assert why["received_pct"] == f"no receiver figure: {why['throughput_bps']}"
    assert "offered_bps" not in why
    assert iperf3_tool.values(result)["throughput_bps"] is None


def test_an_unlimited_tcp_test_has_no_offered_rate() -> None:
    result = parse(load("3.12", "tcp")[0])
    why = iperf3_tool.unavailable(result, None)
    no_rate = "no bitrate: an unlimited TCP test offers whatever the path takes"
    assert why["received_pct"] == why["offered_bps"] == no_rate


@pytest.mark.parametrize("version", ["3.5", "3.7", "3.9"])
def test_udp_reverse_before_3_11_is_the_clients_own_intervals(version: str) -> None:
    text, _ = load(version, "udp_reverse")
    data = json.loads(text)
    result = parse(text)
    kept = [i["sum"] for i in data["intervals"] if not i["sum"].get("omitted")]
    assert result.bytes_received == sum(s["bytes"] for s in kept)
    assert result.bytes_received < data["end"]["sum"]["bytes"]  # the sender's, with the lost


@pytest.mark.parametrize("version", ["3.12", "3.16", "3.21"])
def test_interval_sum_is_what_3_11_calls_sum_received(version: str) -> None:
    """The rule the older versions' -R figure is computed by, checked where both exist."""
    data = json.loads(load(version, "udp_reverse")[0])
    got = versions.udp_receiver({"sum": data["end"]["sum"]}, data["intervals"], True, version)
    assert got[0]["sum_received"]["bytes"] == data["end"]["sum_received"]["bytes"]


@pytest.mark.parametrize("version", ["3.7", "3.9"])
def test_bidir_before_3_11_sums_both_directions_from_the_streams(version: str) -> None:
    text, nic = load(version, "tcp_bidir")
    data = json.loads(text)
    result = parse(text)
    one_way = data["end"]["sum_received"]["bits_per_second"]  # the last stream's only
    assert result.bidir_bps is not None
    forward, back = result.bidir_bps
    assert result.receiver_bps == pytest.approx(forward + back)
    assert result.receiver_bps > 1.8 * one_way
    # each half against its own receiving NIC: client-to-server lands on the server
    assert forward <= nic["server_rx_bytes"] * 8 / 2 * 1.01
    assert any("end.streams" in w for w in result.warnings)


def test_bidir_3_12_is_read_as_reported() -> None:
    data = json.loads(load("3.12", "tcp_bidir")[0])
    result = parse(json.dumps(data))
    assert result.bidir_bps == (
        data["end"]["sum_received"]["bits_per_second"],
        data["end"]["sum_received_bidir_reverse"]["bits_per_second"],
    )
    assert not versions.old_bidir(data["end"])


@pytest.mark.parametrize(
    ("version", "threaded"), [("3.15", False), ("3.16", True), ("3.19.1", True), ("x", None)]
)
def test_threaded_streams_from_3_16(version: str, threaded: bool | None) -> None:
    assert versions.threaded(version) is threaded


def test_release_reads_the_version_forms() -> None:
    assert versions.release("3.19.1") == (3, 19, 1)
    assert versions.release("iperf 3.5 (cJSON 1.5.2)") == (3, 5)
    assert versions.release(None) is None


def test_fixture_paths_exist() -> None:
    assert Path(IPERF3_FIXTURES / "3.5" / "version.txt").read_text().startswith("iperf 3.5")
