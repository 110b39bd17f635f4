"""netrun.tools.facts against real ethtool / ip / probe output (tests/fixtures/capture.sh).

The probe fixtures are the real output of ``probe_script`` run inside the nr-cap-a
namespace: found by data IP, by a given iface, by the route to a peer, for an IP no
interface holds, a given iface that does not exist, and a host without iperf3 or ethtool.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from netrun.tools import facts
from netrun.tools.facts import (
    EthtoolInfo,
    parse_ethtool,
    parse_ethtool_driver,
    parse_ip_addr,
    parse_probe,
)
from tests.conftest import FACTS_FIXTURES


def out(name: str) -> str:
    """stdout and stderr of one capture, as a remote shell with 2>&1 would return them."""
    base = FACTS_FIXTURES / name
    return base.with_suffix(".stdout").read_text() + base.with_suffix(".stderr").read_text()


# -- ethtool --------------------------------------------------------------------------------
def test_ethtool_veth() -> None:
    assert parse_ethtool(out("ethtool_veth")) == EthtoolInfo(10000.0, "full", True)


def test_ethtool_speed_unknown() -> None:
    """An empty bridge prints "Speed: Unknown!" and "Duplex: Unknown! (255)"."""
    assert "Unknown!" in out("ethtool_bridge")
    assert parse_ethtool(out("ethtool_bridge")) == EthtoolInfo(None, None, False)


def test_ethtool_without_a_speed_line() -> None:
    assert parse_ethtool(out("ethtool_lo")) == EthtoolInfo(None, None, True)


def test_ethtool_driver() -> None:
    assert parse_ethtool_driver(out("ethtool_i_veth")) == "veth"
    assert parse_ethtool_driver(out("ethtool_i_lo")) is None  # "Operation not supported"


# -- ip -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("ip", "iface"),
    [
        ("10.203.0.1", "nr-cap-va"),
        ("127.0.0.1", "lo"),
        ("::1", "lo"),
        ("0:0::1", "lo"),  # another spelling of the same address
        ("10.203.0.50", None),
        ("not-an-ip", None),
    ],
)
def test_parse_ip_addr(ip: str, iface: str | None) -> None:
    assert parse_ip_addr(out("ip_addr"), ip) == iface


def test_route_and_link() -> None:
    assert facts.parse_ip_route(out("ip_route_get")) == "nr-cap-va"
    assert facts.parse_ip_link_mtu(out("ip_link")) == 1500
    assert facts.parse_ip_route("") is None and facts.parse_ip_link_mtu("") is None


# -- the whole probe ------------------------------------------------------------------------
def test_probe_found_by_data_ip() -> None:
    got = parse_probe(out("probe_by_ip"))
    assert got.kernel == out("uname_r").strip()
    assert (got.iperf3_version, got.iperf3_missing) == ("3.12", False)
    assert got.nic == facts.NicInfo("nr-cap-va", 10000.0, 1500, "veth", "full")
    assert got.problems == ()


def test_probe_given_iface() -> None:
    got = parse_probe(out("probe_given_iface"))
    assert got.nic == facts.NicInfo("lo", None, 65536, None, None)
    assert got.problems == ()  # no speed or driver on lo is normal, not a problem


def test_probe_found_by_route_to_peer() -> None:
    got = parse_probe(out("probe_by_peer"))
    assert "==netrun:route==" in out("probe_by_peer")
    assert got.nic.iface == "nr-cap-va" and got.nic.speed_mbps == 10000.0


def test_probe_no_interface_holds_the_ip() -> None:
    got = parse_probe(out("probe_no_iface"), data_ip="10.203.0.50")
    assert got.nic == facts.NicInfo(None)
    assert got.iperf3_version == "3.12"
    assert any("10.203.0.50" in p for p in got.problems)


def test_probe_given_iface_that_does_not_exist() -> None:
    got = parse_probe(out("probe_bad_iface"))
    assert got.nic == facts.NicInfo("nr-cap-nope")
    assert any("does not exist" in p for p in got.problems)


def test_probe_without_iperf3_or_ethtool() -> None:
    got = parse_probe(out("probe_missing"))
    assert got.iperf3_missing and got.iperf3_version is None
    assert got.nic == facts.NicInfo("nr-cap-va", None, 1500, None, None)
    assert got.problems == ("iperf3 is not installed (or not in PATH)",)


def test_probe_cut_short() -> None:
    """Transformation: the by-IP probe cut right after its iperf3 section."""
    text = out("probe_by_ip")
    got = parse_probe(text[: text.index("==netrun:addr==")])
    assert got.kernel and got.iperf3_version == "3.12"
    assert any("cut short" in p for p in got.problems)


def test_probe_of_nothing() -> None:
    got = parse_probe("")
    assert got.kernel is None and got.nic.iface is None and len(got.problems) >= 2


# -- the script itself ----------------------------------------------------------------------
def test_probe_script_quotes_every_value(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    evil = f"$(touch {marker}); `touch {marker}`"
    script = facts.probe_script(data_ip=evil, iface=evil, iperf3=evil, peer=evil)
    subprocess.run(["sh", "-c", script], capture_output=True, timeout=20)
    assert not marker.exists()


@pytest.mark.skipif(shutil.which("ip") is None, reason="iproute2 not installed")
def test_probe_script_runs_here_on_loopback() -> None:
    """Read-only commands against this machine's own lo: the script runs under plain sh."""
    script = facts.probe_script(data_ip="127.0.0.1", iface=None, iperf3="iperf3")
    done = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=20)
    got = parse_probe(done.stdout + done.stderr)
    assert got.nic.iface == "lo" and got.nic.mtu is not None
    assert got.kernel
