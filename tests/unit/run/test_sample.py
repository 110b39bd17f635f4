"""``nic`` in results.json says what a test ran at (issue 23): a run captured on the lab
before the fix said ``mtu: 1500`` for its ``mtu: 9000`` tests, the probe's value."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from netrun.results.schema import check
from netrun.run.sample import at_test, nic_dict, tool_version
from tests.conftest import RESULTS_FIXTURES

FIXTURE = RESULTS_FIXTURES / "mtu-lab" / "results.json"


def probed(mtu: int) -> SimpleNamespace:
    nic = SimpleNamespace(iface="data0", speed_mbps=10000.0, mtu=mtu, driver="veth")
    return SimpleNamespace(nic=nic)


def test_a_test_at_mtu_9000_says_9000_and_keeps_the_probes_value() -> None:
    doc = json.loads(FIXTURE.read_text())
    for sample in doc["tests"]:
        want = sample["details"]["mtu"]["underlay"]
        for side in ("client", "server"):
            nic = at_test(nic_dict(probed(1500)), sample[side], sample["details"]["mtu"])
            assert nic["mtu"] == want and nic["mtu_at_probe"] == 1500, sample["name"]


def test_a_test_without_mtu_says_the_probes_value() -> None:
    nic = nic_dict(probed(1500))
    assert (
        at_test(nic, "alpha", None)
        == nic
        == {
            "iface": "data0",
            "speed_mbps": 10000.0,
            "mtu": 1500,
            "mtu_at_probe": 1500,
            "driver": "veth",
        }
    )
    # a host whose data NIC the test did not change (another host's, an overlay only)
    mtu = {"underlay": 9000, "original": {"bravo": {"data0": 1500}}}
    assert at_test(nic, "alpha", mtu)["mtu"] == 1500
    assert nic_dict(None)["mtu_at_probe"] is None


def test_results_of_either_version_load(tmp_path: Path) -> None:
    old = json.loads(FIXTURE.read_text())  # no mtu_at_probe
    assert check(old, FIXTURE)["tests"][0]["nic"]["client"]["mtu"] == 1500
    new = json.loads(FIXTURE.read_text())
    new["tests"][0]["nic"]["client"]["mtu_at_probe"] = 1500
    check(new, FIXTURE)


def test_tool_version_is_the_jsons_else_the_clients_probe() -> None:
    test = SimpleNamespace(tool="iperf3", client="bravo")
    facts = {"bravo": SimpleNamespace(iperf3_version="3.12")}
    assert tool_version(test, SimpleNamespace(version="3.9"), facts) == "3.9"  # type: ignore[arg-type]
    assert tool_version(test, None, facts) == "3.12"  # type: ignore[arg-type]
    ping = SimpleNamespace(tool="ping", client="bravo")
    assert tool_version(ping, None, facts) is None  # type: ignore[arg-type]
