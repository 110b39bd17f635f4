"""The pod network with real Flannel (``--cni flannel``): upstream's kube-flannel.yml, offline.

As on a real cluster, flanneld runs as the DaemonSet ``kube-flannel-ds`` (host network,
NET_ADMIN and NET_RAW, ``--kube-subnet-mgr``): it takes each node's lease from the node's
``spec.podCIDR``, makes ``flannel.1`` (VXLAN, VNI 1, port 8472) on the node's ``data0``,
programs the other nodes' routes, neighbours and fdb entries from their annotations, and
writes the node's subnet file with ``FLANNEL_MTU`` = data0's MTU - 50. Its init container
installs ``cni-conf.json`` from the ConfigMap ``kube-flannel-cfg`` as the node's conflist,
whose ``flannel`` plugin (netrun's own: the wrapper module's cmd/flannel, since the proxy
does not serve flannel-io/cni-plugin) delegates to bridge with the lease and that MTU.
A DaemonSet rather than lab processes because that is what clusters run, and it is what
makes the ConfigMap the MTU knob: patch ``net-conf.json``'s ``Backend.mtu`` (or the
delegate's ``mtu`` in ``cni-conf.json``), restart the DaemonSet, and new pods get it.

Differences from upstream, each for this machine: the image is built here (flanneld and a
shell, pinned); no kube-proxy, so ``KUBERNETES_SERVICE_HOST`` names the apiserver itself
(as Calico's kubernetes-services-endpoint does); each node's files sit in its own folder
(the subnet file, the CNI plugin's data dir), since the lab's nodes share one filesystem;
``--ip-masq=false`` and ``--iptables-forward-rules=false`` with the delegate's ``ipMasq``
off, so pod-to-pod traffic keeps its addresses and no iptables binary is needed; no
portmap plugin (the lab's tests use pod IPs, no host ports).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from netrun.lab import images as lab_images
from netrun.lab.k8s.images import Archive, write_archive
from netrun.lab.k8s.layout import Cluster, Node

NAMESPACE = "kube-flannel"
NAME = "kube-flannel-ds"
CONFIG = "kube-flannel-cfg"
CONFLIST = "10-flannel.conflist"
IMAGE = "docker.io/netrun-lab/flannel:{version}"
#: What the image holds beside flanneld: the install-cni init container's shell tools.
TOOLS = ["sh", "cat", "sed", "mkdir", "mv"]
API_PORT = 6443


def subnet_file(node: Node) -> Path:
    """Where flanneld writes this node's lease (upstream: /run/flannel/subnet.env)."""
    return node.dir / "run" / "flannel" / "subnet.env"


def data_dir(node: Node) -> Path:
    """The CNI plugin's saved delegate configs (upstream: /var/lib/cni/flannel)."""
    return node.dir / "cni" / "flannel"


def image(version: str) -> str:
    return IMAGE.format(version=version)


def build_image(work: Path, flanneld: Path, version: str) -> Archive:
    """flanneld at /opt/bin/flanneld, as upstream's image has it, and the init's tools."""
    root = work / "flannel-root"
    lab_images.build_root(root, TOOLS, {"/opt/bin/flanneld": flanneld})
    return write_archive(work / "flannel.tar", image(version), lab_images.tar_root(root),
                         ["/opt/bin/flanneld"])  # fmt: skip


def cni_conf(c: Cluster) -> dict[str, Any]:
    """cni-conf.json: the flannel plugin delegating to bridge. @NODE_DIR@ is filled per node
    by the init container (the nodes share one filesystem)."""
    return {
        "name": "cbr0",
        "cniVersion": "1.0.0",
        "plugins": [
            {
                "type": "flannel",
                "subnetFile": "@NODE_DIR@/run/flannel/subnet.env",
                "dataDir": "@NODE_DIR@/cni/flannel",
                "delegate": {"hairpinMode": True, "isDefaultGateway": True, "ipMasq": False},
            },
        ],
    }


def net_conf(c: Cluster, mtu: int | None = None) -> dict[str, Any]:
    """net-conf.json: the cluster's pod network over VXLAN; ``mtu`` (the link MTU flannel
    subtracts its 50 bytes from) only when asked, else data0's own."""
    backend: dict[str, Any] = {"Type": "vxlan"}
    if mtu is not None:
        backend["mtu"] = mtu
    return {"Network": c.pod_network, "EnableNFTables": False, "Backend": backend}


def install_script(host_dir: str) -> str:
    """The init container: the node's conflist from cni-conf.json, written atomically."""
    out = '"/hosts/$NODE_NAME/k8s/cni/net.d"'
    return "\n".join(
        [
            "set -eu",
            f'sed "s|@NODE_DIR@|{host_dir}/$NODE_NAME/k8s|g" /etc/kube-flannel/cni-conf.json'
            f" > {out}/.flannel.tmp",
            f"mv {out}/.flannel.tmp {out}/{CONFLIST}",
            'mkdir -p "/hosts/$NODE_NAME/k8s/run/flannel"',
            f'echo "installed {CONFLIST}"',
        ]
    )


def manifests(c: Cluster, version: str) -> list[dict[str, Any]]:
    """kube-flannel.yml's objects for this lab (see the module's docstring)."""
    hosts_dir = str(c.lab.state_dir / "hosts")
    labels = {"app": "flannel", "k8s-app": "flannel", "tier": "node"}
    node_name = {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}
    mounts = [
        {"name": "hosts", "mountPath": "/hosts"},
        {"name": "flannel-cfg", "mountPath": "/etc/kube-flannel/"},
    ]
    flanneld = {
        "name": "kube-flannel",
        "image": image(version),
        "imagePullPolicy": "Never",
        "command": ["/opt/bin/flanneld"],
        "args": [
            "--kube-subnet-mgr",
            "--iface=data0",
            "--ip-masq=false",
            "--iptables-forward-rules=false",
            "--subnet-file=/hosts/$(NODE_NAME)/k8s/run/flannel/subnet.env",
        ],
        "securityContext": {"privileged": False, "capabilities": {"add": ["NET_ADMIN", "NET_RAW"]}},
        "env": [
            node_name,
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {
                "name": "POD_NAMESPACE",
                "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}},
            },
            # no kube-proxy here: the in-cluster client reaches the apiserver directly
            {"name": "KUBERNETES_SERVICE_HOST", "value": c.address},
            {"name": "KUBERNETES_SERVICE_PORT", "value": str(API_PORT)},
        ],
        "volumeMounts": mounts,
    }
    install = {
        "name": "install-cni",
        "image": image(version),
        "imagePullPolicy": "Never",
        "command": ["sh", "-c", install_script(hosts_dir)],
        "env": [node_name],
        "volumeMounts": mounts,
    }
    return [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": NAMESPACE, "labels": {"k8s-app": "flannel"}},
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "flannel"},
            "rules": [
                {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},
                {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]},
                {"apiGroups": [""], "resources": ["nodes/status"], "verbs": ["patch"]},
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "flannel"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "flannel",
            },
            "subjects": [{"kind": "ServiceAccount", "name": "flannel", "namespace": NAMESPACE}],
        },
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": "flannel", "namespace": NAMESPACE},
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": CONFIG, "namespace": NAMESPACE, "labels": labels},
            "data": {
                "cni-conf.json": json.dumps(cni_conf(c), indent=2),
                "net-conf.json": json.dumps(net_conf(c), indent=2),
            },
        },
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": labels},
            "spec": {
                "selector": {"matchLabels": {"app": "flannel"}},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "hostNetwork": True,
                        "serviceAccountName": "flannel",
                        "tolerations": [{"operator": "Exists"}],
                        "terminationGracePeriodSeconds": 1,
                        "initContainers": [install],
                        "containers": [flanneld],
                        "volumes": [
                            {"name": "hosts", "hostPath": {"path": hosts_dir, "type": "Directory"}},
                            {"name": "flannel-cfg", "configMap": {"name": CONFIG}},
                        ],
                    },
                },
            },
        },
    ]
