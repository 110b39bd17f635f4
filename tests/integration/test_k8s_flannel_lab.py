"""`netrun lab up --k8s --cni flannel`: real flanneld (the kube-flannel DaemonSet) as the pod
network, with netrun's own Flannel CNI plugin.

The same 2-host cluster as test_k8s_lab.py (its prefix and net index: the modules run one
after the other, and each proves its cluster gone), at the data links' default MTU 1500.
It proves: every node Ready once flanneld wrote its subnet file (FLANNEL_MTU = 1500 - 50);
pods' eth0 at 1450 and a don't-fragment ping of exactly 1450 bytes crosses from a pod on
alpha to one on bravo while one byte more is refused; iperf3 between those pods crosses
bravo's flannel.1 (VXLAN) and its data0 (byte counters); net-conf.json's Backend.mtu in the
ConfigMap, patched and the DaemonSet restarted, gives new pods its MTU less 50; and `lab
down` leaves nothing.
Needs the cached Kubernetes build (or Go) and flanneld (built from the Go module proxy).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from netrun.lab.k8s import kube_flannel
from netrun.lab.system import ip_json
from tests.integration.test_k8s_lab import (
    HOSTS,
    Cluster,
    _client,
    _finished,
    _servers,
    _skip_reason,
    assert_path_mtu,
    up_and_down,
)

LINK_MTU = 1500
POD_MTU = LINK_MTU - 50  # VXLAN: outer IP 20 + UDP 8 + VXLAN 8 + inner Ethernet 14

pytestmark = pytest.mark.skipif(_skip_reason() is not None, reason=str(_skip_reason()))


@pytest.fixture(scope="module")
def flannel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    yield from up_and_down(tmp_path_factory.mktemp("k8s-flannel"), "--cni", "flannel")


def test_flanneld_leases_each_node_its_pod_cidr_at_the_link_mtu_less_vxlan(
    flannel: Cluster,
) -> None:
    pods = json.loads(flannel.kubectl("-n", "kube-flannel", "get", "pods", "-o", "json"))
    running = {p["spec"]["nodeName"] for p in pods["items"] if p["status"]["phase"] == "Running"}
    assert running == set(HOSTS)
    for host in HOSTS:
        node = flannel.layout.node(host)
        env = dict(
            line.split("=", 1) for line in kube_flannel.subnet_file(node).read_text().split()
        )
        assert env["FLANNEL_MTU"] == str(POD_MTU)
        assert env["FLANNEL_SUBNET"] == node.pod_cidr.replace(".0/24", ".1/24")
        vxlan = ip_json("-d", "link", "show", "flannel.1", netns=node.host.namespace)[0]
        assert vxlan["linkinfo"]["info_data"]["id"] == 1 and vxlan["mtu"] == POD_MTU


def _counters(c: Cluster, host: str, dev: str) -> int:
    ns = c.layout.lab.host(host).namespace
    return int(ip_json("-s", "link", "show", dev, netns=ns)[0]["stats64"]["rx"]["bytes"])


def test_pod_traffic_crosses_flannel_1_and_the_data_links(flannel: Cluster) -> None:
    ips = _servers(flannel)
    assert_path_mtu(flannel, ips["bravo"], POD_MTU)
    before = {dev: _counters(flannel, "bravo", dev) for dev in ("flannel.1", "data0")}
    argv = ["iperf3", "-c", ips["bravo"], "-t", "2", "-J"]
    flannel.apply(_client("iperf3-client", "alpha", argv))
    received = json.loads(_finished(flannel, "iperf3-client"))["end"]["sum_received"]["bytes"]
    after = {dev: _counters(flannel, "bravo", dev) for dev in ("flannel.1", "data0")}
    assert received > 1_000_000
    # the inner frames on flannel.1, and the same again plus 50 bytes each on data0
    assert after["flannel.1"] - before["flannel.1"] >= received, (before, after, received)
    assert after["data0"] - before["data0"] >= after["flannel.1"] - before["flannel.1"]


def test_the_flannel_configmap_sets_new_pods_mtu(flannel: Cluster) -> None:
    """net-conf.json's Backend.mtu (the link MTU flannel takes its 50 bytes from), patched
    and the DaemonSet restarted: flanneld rewrites FLANNEL_MTU, new pods get it."""
    net_conf = kube_flannel.net_conf(flannel.layout, mtu=1400)
    patch = {"data": {"net-conf.json": json.dumps(net_conf)}}
    flannel.kubectl("-n", "kube-flannel", "patch", "configmap", kube_flannel.CONFIG,
                    "-p", json.dumps(patch))  # fmt: skip
    flannel.kubectl("-n", "kube-flannel", "rollout", "restart", f"daemonset/{kube_flannel.NAME}")
    flannel.kubectl("-n", "kube-flannel", "rollout", "status", f"daemonset/{kube_flannel.NAME}",
                    "--timeout", "120s")  # fmt: skip
    subnet = kube_flannel.subnet_file(flannel.layout.node("alpha"))
    flannel.wait("FLANNEL_MTU=1350", lambda: "FLANNEL_MTU=1350" in subnet.read_text(), 60)
    flannel.apply(_client("mtu-flannel", "alpha", ["ip", "-o", "link", "show", "eth0"]))
    assert "mtu 1350 " in _finished(flannel, "mtu-flannel")
