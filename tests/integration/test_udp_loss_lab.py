"""Where a UDP test lost its datagrams, named by the report, on the emulated lab.

Issue 25: a 500M test that lost 17.8% in the receiver's socket buffer was "ok" with
nothing saying where. Here the receiver's buffer is made too small for the rate
(``window: 4K``: iperf3 sets it on both ends), so the receiving host counts the lost
datagrams as UDP receive-buffer errors; and a rule in the receiver's firewall drops 3%,
which no counter on either host sees. Each run's results.json must name the place, its
text report must say it, and netrun's received figure must agree with the receiving
NIC's own packet counter, read around the sample on the SSH connection netrun holds.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from netrun.tools.iperf3 import loss
from tests.integration.conftest import LabHandle
from tests.integration.helpers import (
    assert_nothing_left,
    entry,
    load_results,
    run_netrun,
    write_scenario,
)

pytestmark = pytest.mark.integration

DROP = ["INPUT", "-i", "data0", "-p", "udp", "-m", "statistic", "--mode", "random"]
DROP += ["--probability", "0.03", "-j", "DROP"]


@pytest.fixture
def lossy_receiver(lab: LabHandle) -> Iterator[None]:
    """alpha's firewall drops 3% of the UDP datagrams it receives on its data NIC."""
    ns = ["ip", "netns", "exec", lab.host("alpha").namespace, "iptables"]
    subprocess.run([*ns, "-A", *DROP], check=True)
    try:
        yield
    finally:
        subprocess.run([*ns, "-D", *DROP], check=True)


def run(tmp: Path, lab: LabHandle, tests: list[dict[str, Any]]) -> tuple[dict[str, Any], str]:
    scen = write_scenario(tmp, tests, name="udploss", defaults={"duration": 2})
    proc = run_netrun([scen, "-i", lab.inventory, "-o", "out", "--no-history"], cwd=tmp)
    assert proc.returncode == 0, proc.stderr
    assert_nothing_left(lab, tmp / "out")
    return load_results(tmp / "out"), proc.stdout


def check_received_against_the_nic(sample: dict[str, Any]) -> None:
    """The datagrams netrun says arrived reached the receiving NIC (the server's, bare
    metal in alpha's namespace), which also counts the ones its socket then dropped and
    a few control packets; and the sender's NIC sent what the sender said it sent."""
    ends = sample["details"]["counters"]
    assert ends["server"]["netns"] == ends["client"]["netns"] == "host"
    assert ends["server"]["iface"] == ends["client"]["iface"] == "data0"
    received = sample["packets"] - sample["lost_packets"]
    nic_rx = ends["server"]["nic_rx_packets"]
    assert received <= nic_rx <= sample["packets"] + 100, (received, nic_rx)
    sent = ends["client"]["udp_out_datagrams"]
    assert sample["packets"] <= sent <= sample["packets"] + 10


def test_a_receiver_that_cannot_keep_up_is_named(lab: LabHandle, tmp_path: Path) -> None:
    doc, text = run(tmp_path, lab, [entry("overrun", protocol="udp", bitrate="150M", window="4K")])
    (sample,) = doc["tests"]
    assert sample["status"] == "ok"
    assert sample["lost_packets"] > 0
    found = sample["details"]["loss"]
    assert found["place"] == loss.RECEIVER, found
    # the kernel counted (nearly) every lost datagram as a receive-buffer error
    rcvbuf = sample["details"]["counters"]["server"]["udp_rcvbuf_errors"]
    assert 0.9 * sample["lost_packets"] <= rcvbuf <= 1.1 * sample["lost_packets"] + 10
    assert "receiver-overrun" in sample["flags"]
    check_received_against_the_nic(sample)
    assert sample["details"]["intervals_of"] == "receiver"
    metrics = sample["metrics"]
    assert metrics["offered_bps"] == 150e6
    assert metrics["received_pct"] == pytest.approx(100 * sample["throughput_bps"] / 150e6)
    assert "loss overrun: receiver could not keep up" in text


def test_drops_no_host_counted_are_the_networks(
    lab: LabHandle, tmp_path: Path, lossy_receiver: None
) -> None:
    doc, text = run(tmp_path, lab, [entry("dropped", protocol="udp", bitrate="20M")])
    (sample,) = doc["tests"]
    assert sample["status"] == "ok" and sample["lost_packets"] > 0
    found = sample["details"]["loss"]
    assert found["places"] == [loss.NETWORK], found
    assert found["unaccounted"] == sample["lost_packets"]
    assert "dropped-on-path" in sample["flags"]
    check_received_against_the_nic(sample)
    assert "loss dropped: network or a queue dropped" in text


def test_a_sender_held_below_the_target_is_flagged(lab: LabHandle, tmp_path: Path) -> None:
    """2G asked of a 1 Gbit/s link: the shaper's back-pressure holds the sender near 960."""
    doc, text = run(tmp_path, lab, [entry("held", protocol="udp", bitrate="2G")])
    (sample,) = doc["tests"]
    assert sample["status"] == "ok"
    assert sample["sender_bps"] < 0.9 * 2e9
    assert "sender-below-target" in sample["flags"]
    assert sample["details"]["loss"]["place"] == loss.SENDER
    assert "sender-below-target" in text
