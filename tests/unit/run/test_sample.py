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
from netrun.tools import get_tool, tools
from netrun.tools.facts import HostFacts, NicInfo
from netrun.tools.iperf2.parse import parse as parse_iperf2
from netrun.tools.iperf3.parse import parse as parse_iperf3
from netrun.tools.iperf3.tool import values as iperf3_values
from netrun.tools.netperf.parse import parse
from netrun.tools.netperf.stats import figures
from tests.conftest import IPERF2_FIXTURES, IPERF3_FIXTURES, NETPERF_FIXTURES, RESULTS_FIXTURES

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
    facts = {"bravo": HostFacts("6.1", "3.12", False, NicInfo("data0"))}
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


def sample_of(tmp_path: Path, row: str, m: Measurement, facts: dict[str, Any]) -> dict[str, Any]:
    path = tmp_path / "s.yaml"
    path.write_text(f"tests:\n  - {{name: t, mode: baremetal, server: a, client: b, {row}}}\n")
    (spec,) = load_scenario(path, hosts=["a", "b"]).tests
    inventory = Inventory(tmp_path / "inv.yaml", {n: Host(n, {}) for n in ("a", "b")}, {})
    return build_sample(plan_test(spec), 1, m, facts, inventory)


def test_a_result_that_fills_the_figures_gives_them_and_another_leaves_them_to_its_metrics(
    tmp_path: Path,
) -> None:
    """An iperf3 sample's top-level figures, packet counts, series, release and ceiling are
    its result's (netrun.tools.base.SampleFigures); an iperf2 sample's are its declared
    metrics (Tool.top_level: none), and its release the probe's of iperf2: none, the probe reads
    iperf3's alone (HostFacts.version)."""
    probe = HostFacts("6.1", "3.9", False, NicInfo("data0", 10000.0, 1500))
    facts = {"a": probe, "b": probe}
    text = (IPERF3_FIXTURES / "3.12" / "udp_dropped.json").read_text()
    r = parse_iperf3(text)
    m = Measurement(text, r, {}, iperf3_values(r))
    s = sample_of(tmp_path, "tool: iperf3, protocol: udp", m, facts)
    own = (r.receiver_bps, r.sender_bps, r.retransmits, r.cpu_client_pct, r.cpu_server_pct)
    assert [s[k] for k in TOP_LEVEL] == [*own, r.jitter_ms]
    assert (s["lost_packets"], s["packets"]) == (r.lost_packets, r.packets) != (None, None)
    assert s["intervals"] == [[i.start, i.end, i.bits_per_second] for i in r.intervals] != []
    assert s["tool_version"] == r.version == "3.12" and s["iperf3_version"]["client"] == "3.9"
    assert s["goodput_ceiling_mbps"] and str(r.blksize) in s["ceiling_basis"]
    text = (IPERF2_FIXTURES / "2.1.8-loss.server.txt").read_text()
    r2 = parse_iperf2(text)
    m = Measurement(text, r2, {}, {k: v for k, v in r2.metrics.items() if v is not None})
    s = sample_of(tmp_path, "tool: iperf2", m, facts)
    own = get_tool("iperf2").top_level  # none: its jitter_ms stays a metric
    assert all(s[k] == r2.metrics[k] for k in own) and r2.metrics["jitter_ms"] is not None
    assert all(s[k] is None for k in TOP_LEVEL if k not in own)
    assert s["lost_percent"] == r2.metrics["lost_percent"]
    assert (s["lost_packets"], s["packets"], s["intervals"]) == (None, None, [])
    assert s["tool_version"] is None and s["iperf3_version"]["client"] == "3.9"
