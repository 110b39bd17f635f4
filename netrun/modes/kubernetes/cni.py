"""Where a cluster's CNI keeps its pod MTU, and the patch that changes it: data, no I/O.

Each CNI netrun knows keeps the MTU of the pods' ``eth0`` in one object of the cluster,
read by the DaemonSet that runs the CNI on every node; a ``kubectl rollout restart`` of
that DaemonSet makes new pods get the new MTU (the write-up's procedure for Calico):

- Flannel (upstream's kube-flannel.yml): ConfigMap ``kube-flannel-cfg``. Its
  ``net-conf.json`` ``Backend.MTU`` is the link MTU flanneld takes VXLAN's 50 bytes from
  (FLANNEL_MTU in subnet.env); its ``cni-conf.json`` delegate's ``mtu``, when set, is what
  the CNI plugin gives pods (it fills it from subnet.env only when absent). netrun sets
  both, so new pods get the MTU as soon as the init container installed the conflist.
- Calico's manifest install: ConfigMap ``kube-system/calico-config`` ``veth_mtu`` (feeds
  the install-cni container's CNI_MTU and felix's tunnel MTUs), DaemonSet ``calico-node``.
- Calico's operator install: the ``Installation`` named ``default``,
  ``spec.calicoNetwork.mtu``; the operator rolls ``calico-system/calico-node`` itself.
- The lab's bridge CNI (netrun.lab.k8s.cni): ConfigMap ``kube-system/netrun-cni`` key
  ``mtu``, DaemonSet ``netrun-cni``.

Patches are JSON merge patches: the one that restores puts back the values the patch
changed (a key that was absent is removed with null), so the object is as it was.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: VXLAN's bytes (outer IPv4 20, UDP 8, VXLAN 8, inner Ethernet 14); IP-in-IP's outer IPv4.
VXLAN = 50
IPIP = 20


@dataclass(frozen=True)
class Where:
    """One place a CNI may keep its MTU: the object ``kubectl get`` reads, its DaemonSet."""

    kind: str  # flannel | calico | calico-operator | bridge
    resource: str  # what kubectl gets: configmap, installations.operator.tigera.io
    namespace: str | None
    name: str
    daemonset: tuple[str, str]  # (namespace, name)
    #: The operator restarts the DaemonSet itself: netrun only waits for its rollout.
    restarts: bool = True

    def text(self) -> str:
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.resource} {where}"


#: Where netrun looks, in this order (the first found is the cluster's CNI).
PLACES = (
    Where("flannel", "configmap", "kube-flannel", "kube-flannel-cfg",
          ("kube-flannel", "kube-flannel-ds")),
    Where("flannel", "configmap", "kube-system", "kube-flannel-cfg",
          ("kube-system", "kube-flannel-ds")),
    Where("calico-operator", "installations.operator.tigera.io", None, "default",
          ("calico-system", "calico-node"), restarts=False),
    Where("calico", "configmap", "kube-system", "calico-config", ("kube-system", "calico-node")),
    Where("bridge", "configmap", "kube-system", "netrun-cni", ("kube-system", "netrun-cni")),
)  # fmt: skip

#: The CNIs netrun can set the MTU of, for the line naming one it cannot.
KNOWN = (
    "Flannel (kube-flannel-cfg), Calico (calico-config or its Installation), the lab's "
    "bridge CNI (netrun-cni)"
)


@dataclass(frozen=True)
class Cni:
    """A cluster's CNI as found: where its MTU lives and the object's current content
    (a ConfigMap's ``data``; an Installation's ``spec``)."""

    where: Where
    content: Mapping[str, Any]

    @property
    def kind(self) -> str:
        return self.where.kind

    def overhead(self) -> int:
        """The bytes the CNI adds to every pod packet on the nodes' links."""
        if self.kind == "flannel":
            return VXLAN
        if self.kind == "calico":
            backend = str(self.content.get("calico_backend", "bird"))
            return {"vxlan": VXLAN, "none": 0}.get(backend, IPIP)
        if self.kind == "calico-operator":
            pools = (self.content.get("calicoNetwork") or {}).get("ipPools") or [{}]
            encap = str(pools[0].get("encapsulation", "IPIP"))
            return VXLAN if encap.startswith("VXLAN") else 0 if encap == "None" else IPIP
        return 0

    def device(self) -> str | None:
        """The overlay device on each node whose MTU the CNI does not change once made
        (Flannel's flannel.1: flanneld keeps an existing device's MTU), so netrun sets it;
        None where the CNI sets its own (Calico's felix) or has none (the bridge)."""
        return "flannel.1" if self.kind == "flannel" else None

    def pod_mtu(self) -> int | None:
        """The pod MTU the configuration sets now; None: the CNI derives it from the node."""
        if self.kind == "bridge":
            return _int(self.content.get("mtu"))
        if self.kind == "calico":
            return _int(self.content.get("veth_mtu")) or None  # "0": auto-detected
        if self.kind == "calico-operator":
            return _int((self.content.get("calicoNetwork") or {}).get("mtu"))
        delegate = _flannel_delegate(_json(self.content.get("cni-conf.json")))
        if delegate is not None and _int(delegate.get("mtu")):
            return _int(delegate.get("mtu"))
        link = _backend_mtu(_json(self.content.get("net-conf.json")).get("Backend") or {})
        return link - VXLAN if link else None

    def patch(self, mtu: int) -> dict[str, Any]:
        """The merge patch giving new pods ``mtu``."""
        if self.kind == "bridge":
            return {"data": {"mtu": str(mtu)}}
        if self.kind == "calico":
            return {"data": {"veth_mtu": str(mtu)}}
        if self.kind == "calico-operator":
            return {"spec": {"calicoNetwork": {"mtu": mtu}}}
        data: dict[str, str] = {}
        net = _json(self.content.get("net-conf.json"))
        backend = net.setdefault("Backend", {})
        key = next((k for k in backend if k.lower() == "mtu"), "MTU")
        backend[key] = mtu + VXLAN
        data["net-conf.json"] = json.dumps(net, indent=2)
        cni = _json(self.content.get("cni-conf.json"))
        delegate = _flannel_delegate(cni)
        if delegate is not None:
            delegate["mtu"] = mtu
            data["cni-conf.json"] = json.dumps(cni, indent=2)
        return {"data": data}

    def restore(self) -> dict[str, Any]:
        """The merge patch putting back what ``patch`` changed."""
        if self.kind == "calico-operator":
            was = (self.content.get("calicoNetwork") or {}).get("mtu")
            return {"spec": {"calicoNetwork": {"mtu": was}}}
        changed = self.patch(0)["data"]
        return {"data": {k: self.content.get(k) for k in changed}}


def found(kind: str, text: str) -> Cni | None:
    """The CNI whose object ``kubectl get -o json`` printed ``text`` (``kind`` names the
    place in PLACES by its index); None when the object is not there."""
    where = PLACES[int(kind)]
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    if not isinstance(doc, dict) or doc.get("metadata", {}).get("name") != where.name:
        return None
    content = doc.get("spec") if where.kind == "calico-operator" else doc.get("data")
    return Cni(where, copy.deepcopy(content or {}))


def _int(value: Any) -> int | None:
    text = str(value).strip() if value is not None else ""
    return int(text) if text.isdigit() else None


def _json(text: Any) -> dict[str, Any]:
    try:
        doc = json.loads(str(text)) if text else {}
    except ValueError:
        return {}
    return doc if isinstance(doc, dict) else {}


def _flannel_delegate(conf: dict[str, Any]) -> dict[str, Any] | None:
    """The flannel plugin's ``delegate`` (made if absent) in a conflist or a lone conf."""
    found = conf.get("plugins")
    plugins: list[Any] = found if isinstance(found, list) else [conf]
    for plugin in plugins:
        if isinstance(plugin, dict) and plugin.get("type") == "flannel":
            delegate = plugin.setdefault("delegate", {})
            return delegate if isinstance(delegate, dict) else None
    return None


def _backend_mtu(backend: Mapping[str, Any]) -> int | None:
    return next((_int(v) for k, v in backend.items() if k.lower() == "mtu"), None)
