"""One results.json sample. ``nic`` says what a test ran at (issue 23): a run captured on
the lab before the fix said ``mtu: 1500`` for its ``mtu: 9000`` tests, the probe's value.
A netperf sample (from real netperf output) says its test's protocol, and a TCP_STREAM's
throughput is its top-level ``throughput_bps``."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from netrun.core import metrics
from netrun.core.measurement import Measurement
from netrun.hosts.host import Host
from netrun.inventory.model import Inventory
from netrun.results.schema import check
from netrun.run.plan import plan_test
from netrun.run.sample import TOP_LEVEL, at_test, build_sample, nic_dict, tool_version
from netrun.scenario.loader import load_scenario
from netrun.tools import tools
from netrun.tools.netperf.parse import parse
from netrun.tools.netperf.stats import figures
from tests.conftest import NETPERF_FIXTURES, RESULTS_FIXTURES

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


def netperf_sample(tmp_path: Path, test: str, *, fail: bool = False) -> dict[str, Any]:
    """A netperf sample built as the runner builds it, from real netperf output."""
    path = tmp_path / "s.yaml"
    row = f"{{name: t, mode: baremetal, tool: netperf, server: a, client: b, test: {test}}}"
    path.write_text(f"tests:\n  - {row}\n")
    (spec,) = load_scenario(path, hosts=["a", "b"]).tests
    inventory = Inventory(tmp_path / "inv.yaml", {n: Host(n, {}) for n in ("a", "b")}, {})
    if fail:
        return build_sample(plan_test(spec), 1, None, {}, inventory, error="netperf failed")
    text = (NETPERF_FIXTURES / f"{test.lower()}.stdout").read_text()
    found = [parse(text)]
    metrics, why, details = figures(test, found, "b")
    m = Measurement(text, found, details, metrics, why)
    return build_sample(plan_test(spec), 1, m, {}, inventory)


@pytest.mark.parametrize(
    ("test", "protocol"),
    [("TCP_RR", "tcp"), ("UDP_RR", "udp"), ("TCP_CRR", "tcp"), ("TCP_STREAM", "tcp")],
)
def test_a_netperf_sample_says_the_protocol_of_its_test(
    tmp_path: Path, test: str, protocol: str
) -> None:
    assert netperf_sample(tmp_path, test)["protocol"] == protocol
    assert netperf_sample(tmp_path, test, fail=True)["protocol"] == protocol  # no output needed


def test_a_netperf_stream_carries_its_throughput_at_the_top_and_nothing_of_another_side(
    tmp_path: Path,
) -> None:
    sample = netperf_sample(tmp_path, "TCP_STREAM")
    assert sample["throughput_bps"] == sample["metrics"]["throughput_bps"] == 2984.03e6
    assert sample["sender_bps"] is None and sample["retransmits"] is None
    assert sample["cpu_client_pct"] is None and sample["jitter_ms"] is None
    assert metrics.of_sample(sample)["throughput_bps"] == 2984.03e6
    rr = netperf_sample(tmp_path, "TCP_RR")
    assert rr["throughput_bps"] is None and "throughput_bps" in rr["details"]["unavailable"]


def test_every_tools_top_level_figures_are_schema_1_fields() -> None:
    schema1 = {m.name for m in metrics.SCHEMA1_METRICS}
    for tool in tools().values():
        assert set(tool.top_level) <= set(TOP_LEVEL) <= schema1, tool.name
        declared = {m.name for m in tool.metrics}
        assert set(tool.top_level) <= declared, tool.name
