"""The pod network with the bridge CNI: one subnet per node, routed over the data links.

Like a host-gw network: every node's pods sit on its ``cni0`` bridge in their node's /24,
and each node routes the other nodes' /24s via their data addresses, so pod-to-pod
traffic between nodes crosses the lab's shaped data links. As with Flannel (whose
``net-conf.json`` feeds ``subnet.env``) the MTU is a knob in the cluster: the ConfigMap
``netrun-cni`` (key ``mtu``) is read by the DaemonSet ``netrun-cni``, whose pod on each
node renders that node's conflist from the ConfigMap and the node's subnet.env. Patch the
ConfigMap, restart the DaemonSet, and new pods get the new ``eth0`` MTU.
"""

from __future__ import annotations

import json
from typing import Any

from netrun.lab.k8s.images import TOOLS_IMAGE
from netrun.lab.k8s.layout import Cluster, Node
from netrun.lab.system import run

NAMESPACE = "kube-system"
NAME = "netrun-cni"
CONFLIST = "10-netrun-bridge.conflist"
DEFAULT_MTU = 1500
#: Bytes each CNI's pod packets carry on the data links beyond the pod's own: none for the
#: routed bridge, VXLAN's 50 (outer IP 20 + UDP 8 + VXLAN 8 + inner Ethernet 14) for Flannel.
OVERHEAD = {"bridge": 0, "flannel": 50}


def pod_mtu(link_mtu: int, cni: str) -> int:
    """The pod MTU a CNI takes on data links of ``link_mtu``, as Flannel computes its
    FLANNEL_MTU from the external interface's MTU."""
    return link_mtu - OVERHEAD[cni]


def conflist(subnet: str, gateway: str, mtu: str) -> dict[str, Any]:
    """The bridge conflist (host-local addresses from the node's subnet)."""
    return {
        "cniVersion": "1.0.0",
        "name": "netrun-bridge",
        "plugins": [
            {
                "type": "bridge",
                "bridge": "cni0",
                "isGateway": True,
                "ipMasq": False,
                "hairpinMode": True,
                "mtu": mtu,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": subnet, "gateway": gateway}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                },
            }
        ],
    }


def render_script() -> str:
    """What the DaemonSet's pod runs: the conflist with the node's subnet and the
    ConfigMap's MTU filled in, written atomically; then it idles."""
    template = json.dumps(conflist("@SUBNET@", "@GATEWAY@", "@MTU@"), indent=2)
    template = template.replace('"@MTU@"', "@MTU@")
    out = '"$NODE_DIR/cni/net.d"'
    return "\n".join(
        [
            "set -eu",
            'case "$MTU" in ""|*[!0-9]*) echo "ConfigMap netrun-cni: mtu $MTU is not a number"'
            " >&2; exit 1;; esac",
            '. "$NODE_DIR/run/subnet.env"',
            f"cat > {out}/.conflist.tmp <<'END'",
            template,
            "END",
            f'sed -i -e "s|@SUBNET@|$NETRUN_SUBNET|" -e "s|@GATEWAY@|$NETRUN_GATEWAY|" '
            f'-e "s|@MTU@|$MTU|" {out}/.conflist.tmp',
            f"mv {out}/.conflist.tmp {out}/{CONFLIST}",
            f'echo "rendered {CONFLIST}: subnet $NETRUN_SUBNET mtu $MTU"',
            "exec sleep infinity",
        ]
    )


def subnet_env(node: Node) -> str:
    return f"NETRUN_SUBNET={node.pod_cidr}\nNETRUN_GATEWAY={node.gateway}\n"


def write_subnet_env(node: Node) -> None:
    node.subnet_env.parent.mkdir(parents=True, exist_ok=True)
    node.subnet_env.write_text(subnet_env(node))


def routes(c: Cluster, node: Node) -> None:
    """Routes to every other node's pod subnet via that node's data address."""
    for peer in c.nodes:
        if peer.name == node.name:
            continue
        run(["ip", "-n", node.host.namespace, "route", "replace", peer.pod_cidr,
             "via", peer.host.data_ip, "dev", "data0"])  # fmt: skip


def manifests(c: Cluster, mtu: int = DEFAULT_MTU) -> list[dict[str, Any]]:
    """The ConfigMap that holds the MTU and the DaemonSet that renders each node's
    conflist from it (host network: it runs before the pod network exists)."""
    hosts_dir = str(c.lab.state_dir / "hosts")
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": NAME, "namespace": NAMESPACE},
        "data": {"mtu": str(mtu)},
    }
    container = {
        "name": "render",
        "image": TOOLS_IMAGE,
        "imagePullPolicy": "Never",
        "command": ["sh", "-c", render_script()],
        "env": [
            {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
            {"name": "NODE_DIR", "value": "/hosts/$(NODE_NAME)/k8s"},
            {"name": "MTU", "valueFrom": {"configMapKeyRef": {"name": NAME, "key": "mtu"}}},
        ],
        "volumeMounts": [{"name": "hosts", "mountPath": "/hosts"}],
    }
    daemon_set = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": {"app": NAME}},
        "spec": {
            "selector": {"matchLabels": {"app": NAME}},
            "template": {
                "metadata": {"labels": {"app": NAME}},
                "spec": {
                    "hostNetwork": True,
                    "automountServiceAccountToken": False,
                    "tolerations": [{"operator": "Exists"}],
                    "terminationGracePeriodSeconds": 1,
                    "containers": [container],
                    "volumes": [
                        {"name": "hosts", "hostPath": {"path": hosts_dir, "type": "Directory"}}
                    ],
                },
            },
        },
    }
    return [config_map, daemon_set]
