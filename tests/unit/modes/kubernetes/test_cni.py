"""Where each CNI keeps its pod MTU, and the merge patches that set and restore it, read
from the objects as clusters hold them: Flannel's ConfigMap captured on the lab
(tests/fixtures/capture_k8s_cni.sh), Calico's manifest ConfigMap and operator
Installation written from their documented manifests (the lab runs no Calico)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from netrun.modes.kubernetes.cni import PLACES, Cni, found

FIXTURES = Path(__file__).parents[3] / "fixtures" / "kubernetes" / "cni"


def place(kind: str, namespace: str | None = None) -> str:
    """The index of the first place of ``kind`` (in ``namespace``), as read() keys it."""
    return str(next(i for i, w in enumerate(PLACES)
                    if w.kind == kind and namespace in (None, w.namespace)))  # fmt: skip


def load(name: str, kind: str, namespace: str | None = None) -> Cni:
    cni = found(place(kind, namespace), (FIXTURES / name).read_text())
    assert cni is not None
    return cni


def merged(content: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """A JSON merge patch (RFC 7386) applied, as the API server does."""
    out = dict(content)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merged(out[key], value)
        else:
            out[key] = value
    return out


def after(cni: Cni, patch: dict[str, Any]) -> Cni:
    top = "spec" if cni.kind == "calico-operator" else "data"
    return Cni(cni.where, merged({top: dict(cni.content)}, patch)[top])


def test_flannel_sets_the_backend_link_mtu_and_the_delegates_pod_mtu() -> None:
    cni = load("kube-flannel-cfg.json", "flannel", "kube-flannel")
    assert cni.where.daemonset == ("kube-flannel", "kube-flannel-ds")
    assert cni.overhead() == 50 and cni.device() == "flannel.1"
    assert cni.pod_mtu() is None  # flanneld derives it from the node's NIC
    patched = after(cni, cni.patch(8950))
    net = json.loads(patched.content["net-conf.json"])
    assert net["Backend"] == {"Type": "vxlan", "MTU": 9000}
    assert net["Network"] == json.loads(cni.content["net-conf.json"])["Network"]
    delegate = json.loads(patched.content["cni-conf.json"])["plugins"][0]["delegate"]
    assert delegate["mtu"] == 8950 and delegate["ipMasq"] is False
    assert patched.pod_mtu() == 8950
    assert after(patched, cni.restore()).content == cni.content


def test_flannel_keeps_the_spelling_of_a_backend_mtu_already_set() -> None:
    cni = load("kube-flannel-cfg.json", "flannel", "kube-flannel")
    net = json.loads(cni.content["net-conf.json"])
    net["Backend"]["mtu"] = 1400
    own = Cni(cni.where, {"net-conf.json": json.dumps(net)})
    assert own.pod_mtu() == 1350  # the link MTU less VXLAN's 50
    patched = json.loads(own.patch(5950)["data"]["net-conf.json"])
    assert patched["Backend"] == {"Type": "vxlan", "mtu": 6000}


def test_calico_manifest_patches_veth_mtu_as_the_write_up_does() -> None:
    cni = load("calico-config.json", "calico")
    assert cni.where.daemonset == ("kube-system", "calico-node") and cni.where.restarts
    assert cni.overhead() == 50  # calico_backend: vxlan
    assert cni.pod_mtu() is None  # veth_mtu "0": auto-detected
    assert cni.patch(5950) == {"data": {"veth_mtu": "5950"}}
    assert cni.restore() == {"data": {"veth_mtu": "0"}}
    bird = Cni(cni.where, {**cni.content, "calico_backend": "bird"})
    assert bird.overhead() == 20  # IP-in-IP: the write-up's 1480 on 1500
    assert cni.device() is None  # felix sets its own tunnel device


def test_calico_operator_patches_the_installation_and_lets_the_operator_roll_out() -> None:
    cni = load("calico-installation.json", "calico-operator")
    assert cni.where.resource == "installations.operator.tigera.io"
    assert cni.where.daemonset == ("calico-system", "calico-node")
    assert not cni.where.restarts
    assert cni.overhead() == 50  # VXLANCrossSubnet
    assert cni.patch(8950) == {"spec": {"calicoNetwork": {"mtu": 8950}}}
    assert cni.restore() == {"spec": {"calicoNetwork": {"mtu": None}}}  # removed again
    patched = after(cni, cni.patch(8950))
    assert patched.pod_mtu() == 8950
    assert after(patched, cni.restore()).content == cni.content


def test_the_labs_bridge_cni_patches_its_configmap_key() -> None:
    doc = {"kind": "ConfigMap", "metadata": {"name": "netrun-cni", "namespace": "kube-system"},
           "data": {"mtu": "1500"}}  # fmt: skip
    cni = found(place("bridge"), json.dumps(doc))
    assert cni is not None and cni.overhead() == 0 and cni.pod_mtu() == 1500
    assert cni.patch(9000) == {"data": {"mtu": "9000"}}
    assert cni.restore() == {"data": {"mtu": "1500"}}


@pytest.mark.parametrize("text", ["", "Error from server (NotFound)", "{}", "[1]"])
def test_an_object_not_there_is_no_cni(text: str) -> None:
    assert found(place("calico"), text) is None
