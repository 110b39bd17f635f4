"""`netrun lab up --k8s`: a real Kubernetes cluster on the lab, and `lab down` leaves nothing.

One 2-host cluster for the module (prefix nrkt, net 12 - 3 * NETRUN_TEST_SLOT), brought up
with jumbo frames (``--mtu 9000``, the write-up's third case) and taken down through the
CLI. It proves: every node Ready; a DaemonSet's pods on every node; iperf3 from a pod on
alpha to a pod on bravo crosses the data links (bravo's data0 received at least the bytes
iperf3 counted); the data links and the pods' eth0 are at --mtu, and a don't-fragment ping
of that size crosses from a pod on alpha to one on bravo while one byte more does not; a
patched CNI ConfigMap plus a restarted CNI DaemonSet gives new pods the new MTU; and
`lab down` removes every process, mount, cgroup, iptables rule and file the cluster made.

The Kubernetes build (netrun.lab.k8s.build) is cached per version; with no cached build and
no Go toolchain the module skips (and when .ci/run's budget for the build ran out:
NETRUN_K8S_NO_BUILD). With Go and no cache it builds first: about 15 CPU-minutes
(docs/kubernetes-lab.md).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from netrun.lab import gotoolchain
from netrun.lab.k8s import build
from netrun.lab.k8s.layout import cluster
from netrun.lab.plan import K8S_VERSION, LabConfig, plan
from netrun.lab.system import ip_json
from tests.integration.conftest import SLOT, lab_skip_reason, sweep_stale_labs

PREFIX = f"nrkt{SLOT or ''}"
NET_INDEX = 12 - 3 * SLOT if SLOT <= 4 else 15
HOSTS = ("alpha", "bravo")
MTU = 9000


def _skip_reason() -> str | None:
    reason = lab_skip_reason()
    if reason:
        return reason
    for tool, pkg in {"containerd": "containerd", "ctr": "containerd", "runc": "runc",
                      "nsenter": "util-linux", "gcc": "gcc"}.items():  # fmt: skip
        if not shutil.which(tool):
            return f"{tool} not found: apt-get install {pkg}"
    cached = build.complete(build.cached(K8S_VERSION))
    if not cached and os.environ.get("NETRUN_K8S_NO_BUILD"):  # .ci/run's budget ran out
        return f"no Kubernetes {K8S_VERSION} build: {os.environ['NETRUN_K8S_NO_BUILD']}"
    if not cached and gotoolchain.local() is None:
        return (
            f"no Kubernetes {K8S_VERSION} build in {build.cached(K8S_VERSION)} and no Go "
            "toolchain to build one (install Go, or run netrun lab up --k8s once)"
        )
    return None


pytestmark = pytest.mark.skipif(_skip_reason() is not None, reason=str(_skip_reason()))


def netrun(*args: str, timeout: float = 4000) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "netrun", *args], capture_output=True, text=True, timeout=timeout
    )


def snapshot() -> dict[str, Any]:
    """What the cluster could leave on the machine outside its state folder."""
    iptables = subprocess.run(["iptables-save"], capture_output=True, text=True).stdout
    rules = sorted(line for line in iptables.splitlines() if not line.startswith("#"))
    return {
        "iptables": rules,
        "shared": {p: os.path.exists(p) for p in ("/var/lib/cni", "/var/log/containers")},
        "cgroups": sorted(str(p) for p in Path("/sys/fs/cgroup").glob(f"*/{PREFIX}-*")),
    }


class Cluster:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.state_dir = tmp / "state"
        self.inventory = tmp / "inventory.yaml"
        cfg = LabConfig(hosts=len(HOSTS), prefix=PREFIX, net_index=NET_INDEX,
                        state_dir=self.state_dir, inventory=self.inventory, k8s=True)  # fmt: skip
        self.layout = cluster(plan(cfg))
        self.kubeconfig = self.layout.admin_kubeconfig
        self.kubectl_bin = build.cached(K8S_VERSION) / "bin" / "kubectl"

    def kubectl(self, *args: str, input: str | None = None, check: bool = True) -> str:
        done = subprocess.run(
            [str(self.kubectl_bin), "--kubeconfig", str(self.kubeconfig), *args],
            capture_output=True, text=True, input=input, timeout=120,
        )  # fmt: skip
        if check and done.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)}: {done.stderr[-800:]}")
        return done.stdout

    def apply(self, doc: dict[str, Any]) -> None:
        self.kubectl("apply", "-f", "-", input=json.dumps(doc))

    def wait(self, what: str, check: Any, timeout: float = 180) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = check()
            if found:
                return found
            time.sleep(1)
        raise AssertionError(f"{what}: not after {timeout:g}s")

    def pods(self, selector: str) -> list[dict[str, Any]]:
        items = json.loads(self.kubectl("get", "pods", "-l", selector, "-o", "json"))["items"]
        return list(items)

    def data0(self, host: str) -> dict[str, int]:
        ns = self.layout.lab.host(host).namespace
        stats = ip_json("-s", "link", "show", "data0", netns=ns)[0]["stats64"]
        return {"rx": stats["rx"]["bytes"], "tx": stats["tx"]["bytes"]}


def up_and_down(tmp: Path, *options: str) -> Iterator[Cluster]:
    """A cluster brought up with `options` through the CLI, yielded, then taken down with
    proof that nothing is left: no process, mount, file, cgroup or iptables rule."""
    sweep_stale_labs(PREFIX)
    c = Cluster(tmp)
    before = snapshot()
    started = time.monotonic()
    up = netrun("lab", "up", "--k8s", "--hosts", str(len(HOSTS)), "--rate", "400mbit",
                *options, "--prefix", PREFIX, "--net-index", str(NET_INDEX),
                "--state-dir", str(c.state_dir), "--inventory", str(c.inventory))  # fmt: skip
    try:
        assert up.returncode == 0, up.stderr[-3000:]
        print(f"lab up --k8s {' '.join(options)}: {time.monotonic() - started:.0f}s",
              file=sys.stderr)  # fmt: skip
        yield c
    finally:
        down = netrun("lab", "down", "--state-dir", str(c.state_dir),
                      "--inventory", str(c.inventory), timeout=300)  # fmt: skip
    assert down.returncode == 0, down.stderr[-3000:]
    left = [
        pid for pid in os.listdir("/proc") if pid.isdigit() and str(c.state_dir) in _cmdline(pid)
    ]  # fmt: skip
    assert left == [], f"processes left: {left}"
    mounts = [
        line
        for pid in os.listdir("/proc")
        if pid.isdigit()
        for line in _mountinfo(pid)
        if str(c.state_dir) in line
    ]
    assert mounts == [], f"mounts left: {mounts[:5]}"
    assert not c.state_dir.exists() and not c.inventory.exists()
    assert snapshot() == before


@pytest.fixture(scope="module")
def k8s(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    yield from up_and_down(tmp_path_factory.mktemp("k8s"), "--mtu", str(MTU))


def _cmdline(pid: str) -> str:
    """A process's command line; "" for one that ended since /proc was listed."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""


def _mountinfo(pid: str) -> list[str]:
    try:
        return Path(f"/proc/{pid}/mountinfo").read_text().splitlines()
    except OSError:
        return []


def test_every_node_is_ready_and_status_names_the_kubeconfig(k8s: Cluster) -> None:
    nodes = json.loads(k8s.kubectl("get", "nodes", "-o", "json"))["items"]
    ready = {
        n["metadata"]["name"]: {c["type"]: c["status"] for c in n["status"]["conditions"]}["Ready"]
        for n in nodes
    }
    assert ready == {h: "True" for h in HOSTS}
    version = {n["status"]["nodeInfo"]["kubeletVersion"] for n in nodes}
    assert version == {f"v{K8S_VERSION}"}
    status = netrun("lab", "status", "--state-dir", str(k8s.state_dir), timeout=120)
    assert status.returncode == 0, status.stdout + status.stderr
    assert f"2/2 node(s) Ready; kubectl --kubeconfig {k8s.kubeconfig}" in status.stdout
    assert f", data MTU {MTU}" in status.stdout.splitlines()[0]


IPERF_DS = {
    "apiVersion": "apps/v1",
    "kind": "DaemonSet",
    "metadata": {"name": "iperf3", "namespace": "default"},
    "spec": {
        "selector": {"matchLabels": {"app": "iperf3"}},
        "template": {
            "metadata": {"labels": {"app": "iperf3"}},
            "spec": {
                "automountServiceAccountToken": False,
                "terminationGracePeriodSeconds": 1,
                "containers": [
                    {
                        "name": "server",
                        "image": "docker.io/netrun-lab/k8s-tools:latest",
                        "imagePullPolicy": "Never",
                        "command": ["iperf3", "-s"],
                    }
                ],
            },
        },
    },
}


def _client(name: str, node: str, command: list[str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": name}},
        "spec": {
            "nodeName": node,
            "restartPolicy": "Never",
            "automountServiceAccountToken": False,
            "containers": [
                {
                    "name": "c",
                    "image": "docker.io/netrun-lab/k8s-tools:latest",
                    "imagePullPolicy": "Never",
                    "command": command,
                }
            ],
        },
    }


def _finished(k8s: Cluster, name: str) -> str:
    def done() -> str | None:
        pods = k8s.pods(f"app={name}")
        phase = pods[0]["status"].get("phase") if pods else None
        return phase if phase in ("Succeeded", "Failed") else None

    phase = k8s.wait(f"pod {name}", done, timeout=120)
    logs = k8s.kubectl("logs", name)
    assert phase == "Succeeded", logs
    return logs


def _servers(k8s: Cluster) -> dict[str, str]:
    """Node -> pod IP of the iperf3 DaemonSet's pod there, once one runs on every node."""
    k8s.apply(IPERF_DS)

    def servers() -> dict[str, str] | None:
        pods = k8s.pods("app=iperf3")
        found = {
            p["spec"].get("nodeName"): p["status"].get("podIP")
            for p in pods
            if p["status"].get("phase") == "Running"
        }
        return found if set(found) == set(HOSTS) and all(found.values()) else None

    return dict(k8s.wait("the iperf3 DaemonSet on every node", servers))


def test_pod_traffic_between_nodes_crosses_the_data_links(k8s: Cluster) -> None:
    ips = _servers(k8s)
    for host in HOSTS:  # each pod's address is in its own node's subnet
        assert ips[host].rsplit(".", 1)[0] == k8s.layout.node(host).pod_cidr.rsplit(".", 1)[0]
    before = k8s.data0("bravo")
    k8s.apply(_client("iperf3-client", "alpha", ["iperf3", "-c", ips["bravo"], "-t", "2", "-J"]))
    result = json.loads(_finished(k8s, "iperf3-client"))
    after = k8s.data0("bravo")
    received = result["end"]["sum_received"]["bytes"]
    assert received > 1_000_000
    assert after["rx"] - before["rx"] >= received, (before, after, received)
    # shaped at 400 Mbit/s: the pods' traffic went through bravo's tbf-limited link
    assert result["end"]["sum_received"]["bits_per_second"] < 420e6


def test_the_node_mtu_is_the_pods_path_mtu_across_nodes(k8s: Cluster) -> None:
    for host in HOSTS:
        ns = k8s.layout.lab.host(host).namespace
        assert ip_json("link", "show", "data0", netns=ns)[0]["mtu"] == MTU
    assert_path_mtu(k8s, _servers(k8s)["bravo"], MTU)


def assert_path_mtu(k8s: Cluster, dst: str, mtu: int) -> None:
    """A pod on alpha: its eth0 is at `mtu`, a don't-fragment ping of exactly `mtu` bytes
    reaches `dst` (a pod on bravo), and one byte more is refused."""
    payload = mtu - 28  # IPv4 20 + ICMP 8: a packet of exactly mtu bytes
    script = (
        "ip -o link show eth0; "
        f"ping -c 2 -W 3 -M do -s {payload} {dst}; echo fits=$?; "
        f"ping -c 1 -W 3 -M do -s {payload + 1} {dst}; echo over=$?"
    )
    k8s.apply(_client("pmtu", "alpha", ["sh", "-c", script]))
    logs = _finished(k8s, "pmtu")
    assert f"mtu {mtu} " in logs, logs
    assert "fits=0" in logs and f"{payload + 8} bytes from {dst}" in logs, logs
    assert "over=0" not in logs and "message too long" in logs.lower(), logs


def test_the_cni_configmap_sets_new_pods_mtu(k8s: Cluster) -> None:
    logs = _finished_mtu(k8s, "mtu-a")
    assert f"mtu {MTU} " in logs
    k8s.kubectl("-n", "kube-system", "patch", "configmap", "netrun-cni", "-p",
                json.dumps({"data": {"mtu": "1400"}}))  # fmt: skip
    k8s.kubectl("-n", "kube-system", "rollout", "restart", "daemonset/netrun-cni")
    k8s.kubectl("-n", "kube-system", "rollout", "status", "daemonset/netrun-cni",
                "--timeout", "120s")  # fmt: skip
    conflist = k8s.layout.node("alpha").cni_conf_dir / "10-netrun-bridge.conflist"
    k8s.wait("the re-rendered conflist", lambda: '"mtu": 1400' in conflist.read_text(), 60)
    assert "mtu 1400" in _finished_mtu(k8s, "mtu-b")


def _finished_mtu(k8s: Cluster, name: str) -> str:
    k8s.apply(_client(name, "alpha", ["ip", "-o", "link", "show", "eth0"]))
    return _finished(k8s, name)
