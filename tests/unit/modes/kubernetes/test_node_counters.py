"""Each node's kernel counters around a kubernetes test (pathbytes.read's one command): the
per-core CPU and the data NIC's drops kept, the node's socket counters left out on the pod
network. The readings are real: pathbytes.read's script run on a Debian 12 machine (its
eth0) one second apart, 2026-12-03."""

from __future__ import annotations

from netrun.hosts import counters
from netrun.modes.kubernetes.pathbytes import SOCKET_KEYS, node_records, parse_net_dev
from tests.conftest import FIXTURES

BEFORE = (FIXTURES / "kubernetes" / "node_reading_before.stdout").read_text()
AFTER = (FIXTURES / "kubernetes" / "node_reading_after.stdout").read_text()


def records(network: str) -> dict[str, dict[str, object]]:
    old, new = counters.parse(BEFORE), counters.parse(AFTER)
    return node_records({"server": old}, {"server": new}, {"server": "eth0"}, network)


def test_one_command_gives_the_devices_and_the_kernel_counters() -> None:
    devices = parse_net_dev(BEFORE.partition(counters.MARK)[0])
    assert "eth0" in devices and "lo" in devices
    reading = counters.parse(BEFORE)
    assert reading is not None and reading.iface == "eth0" and reading.cpu is not None


def test_the_host_network_keeps_the_nodes_socket_counters_and_cpu() -> None:
    entry = records("host")["server"]
    assert entry["netns"] == "node" and entry["iface"] == "eth0"
    assert isinstance(entry["cpu"], dict) and "softirq_pct" in entry["cpu"]
    assert all(key in entry for key in SOCKET_KEYS)
    assert entry["nic_rx_bytes"] is not None


def test_the_pod_network_leaves_the_nodes_socket_counters_out() -> None:
    entry = records("pod")["server"]
    assert not any(key in entry for key in SOCKET_KEYS)
    assert "pods' own network namespaces" in str(entry["sockets_unavailable"])
    assert isinstance(entry["cpu"], dict) and entry["nic_rx_bytes"] is not None
