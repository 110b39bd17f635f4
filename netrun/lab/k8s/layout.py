"""The cluster's names, addresses, ports and files, derived from the lab's plan (pure).

The control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler) runs in
the root namespace and listens only on the lab's management gateway (10.201.n.1), which
is this lab's own: two labs beside each other never share a port. Every lab host is a
node named after it; its kubelet and containerd live in the host's network namespace
with their own files under the host's folder and their own cgroup root.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from netrun.lab.plan import POD_NET, POD_SUBNET, LabHost, LabPlan

ETCD_CLIENT_PORT = 2379
ETCD_PEER_PORT = 2380
APISERVER_PORT = 6443
KUBELET_PORT = 10250
#: The /20 of pods holds 16 /24s: host i's pods get the i-th, the last is for services.
SERVICE_SLOT = 15


def _net(base: int, slot: int) -> str:
    return POD_SUBNET.format(lease=base + slot)


@dataclass(frozen=True)
class Node:
    """One lab host as a Kubernetes node."""

    host: LabHost
    pod_cidr: str
    cgroup_root: str  # under every cgroup v1 controller's hierarchy, e.g. /nrk-alpha

    @property
    def name(self) -> str:
        return self.host.name

    @property
    def dir(self) -> Path:
        return self.host.dir / "k8s"

    @property
    def sock(self) -> Path:
        return self.dir / "containerd.sock"

    @property
    def containerd_config(self) -> Path:
        return self.dir / "containerd.toml"

    @property
    def kubelet_dir(self) -> Path:
        return self.dir / "kubelet"

    @property
    def kubelet_config(self) -> Path:
        return self.dir / "kubelet.yaml"

    @property
    def kubeconfig(self) -> Path:
        return self.dir / "kubelet.kubeconfig"

    @property
    def cni_conf_dir(self) -> Path:
        return self.dir / "cni" / "net.d"

    @property
    def cni_bin_dir(self) -> Path:
        return self.dir / "cni" / "bin"

    @property
    def subnet_env(self) -> Path:
        """What the CNI's DaemonSet reads for this node's pod subnet (as flannel's)."""
        return self.dir / "run" / "subnet.env"

    @property
    def gateway(self) -> str:
        """The node's cni0 address: the pod subnet's .1."""
        return self.pod_cidr.rsplit(".", 1)[0] + ".1"


@dataclass(frozen=True)
class Cluster:
    """Everything `netrun lab up --k8s` makes, by name."""

    lab: LabPlan
    nodes: tuple[Node, ...]

    @property
    def dir(self) -> Path:
        return self.lab.state_dir / "k8s"

    @property
    def pki(self) -> Path:
        return self.dir / "pki"

    @property
    def address(self) -> str:
        """Where every control-plane component listens: the management gateway."""
        return self.lab.mgmt_gateway

    @property
    def server(self) -> str:
        return f"https://{self.address}:{APISERVER_PORT}"

    @property
    def etcd_url(self) -> str:
        return f"http://{self.address}:{ETCD_CLIENT_PORT}"

    @property
    def admin_kubeconfig(self) -> Path:
        return self.dir / "admin.kubeconfig"

    @property
    def pod_network(self) -> str:
        return POD_NET.format(base=16 * self.lab.config.net_index)

    @property
    def service_range(self) -> str:
        return _net(16 * self.lab.config.net_index, SERVICE_SLOT)

    @property
    def service_ip(self) -> str:
        """The `kubernetes` service's address: the service range's .1."""
        return self.service_range.rsplit(".", 1)[0] + ".1"

    @property
    def logs(self) -> Path:
        return self.dir / "logs"

    def node(self, name: str) -> Node:
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(name)


def cluster(lab: LabPlan) -> Cluster:
    base = 16 * lab.config.net_index
    nodes = tuple(
        Node(host=h, pod_cidr=_net(base, h.index), cgroup_root=f"/{h.namespace}") for h in lab.hosts
    )
    return Cluster(lab=lab, nodes=nodes)
