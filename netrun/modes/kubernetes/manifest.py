"""What a kubernetes-mode test creates in the cluster: one namespace of its own and a pod
per end, pinned to its node, as one JSON ``List`` for ``kubectl apply -f -``.

Everything carries the run's labels (netrun.cleanup.labels: ``netrun``, ``netrun.run_id``),
so a killed run's namespaces are found by label. The pods run unprivileged (no
``privileged``, no privilege escalation, no service-account token); ``hostNetwork`` only
where ``network: host`` asks for it. Each pod only waits (``sleep``) for the commands
netrun execs in it, and ends by itself after its lifetime (``activeDeadlineSeconds``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from netrun.cleanup.labels import LABEL, RUN_LABEL

#: The label naming the test (its tag) within the run.
TEST_LABEL = "netrun.test"
#: The one container of an end's pod.
CONTAINER = "end"


def namespace_name(run_id: str, tag: str, prefix: str = "netrun") -> str:
    """The test's namespace: ``<prefix>-<run id>-<test tag>``, a DNS label (63 at most)."""
    return dns_label(f"{prefix}-{run_id}-{tag}")


def dns_label(text: str) -> str:
    """``text`` as a DNS-1123 label: lower case, [a-z0-9-], at most 63, no dash at an end."""
    label = re.sub(r"[^a-z0-9-]+", "-", text.lower())[:63]
    return label.strip("-") or "netrun"


def labels(run_id: str, tag: str) -> dict[str, str]:
    return {LABEL: "1", RUN_LABEL: run_id, TEST_LABEL: dns_label(tag)}


@dataclass(frozen=True)
class PodSpec:
    """One end's pod: its name, its node, and how it runs."""

    name: str
    node: str
    image: str
    pull: str
    host_network: bool
    lifetime: int
    #: The container's resources (requests, limits), its nodeSelector beside the node's
    #: name, its tolerations: as Kubernetes spells them (netrun.modes.kubernetes.podkeys).
    resources: Mapping[str, Any] | None = None
    node_selector: Mapping[str, str] | None = None
    tolerations: tuple[Mapping[str, Any], ...] = ()


def namespace(name: str, run_id: str, tag: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": labels(run_id, tag)},
    }


def pod(spec: PodSpec, namespace: str, run_id: str, tag: str) -> dict[str, Any]:
    """An end's pod, pinned to its node by node affinity on the node's name (what a
    DaemonSet's pods use: the scheduler still checks the node has room)."""
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [spec.node]}]}
    shaped: dict[str, Any] = {}  # what the scenario asks beyond the defaults
    if spec.node_selector:
        shaped["nodeSelector"] = dict(spec.node_selector)
    if spec.tolerations:
        shaped["tolerations"] = [dict(t) for t in spec.tolerations]
    resources = {k: {n: str(a) for n, a in v.items()} for k, v in (spec.resources or {}).items()}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": spec.name,
            "namespace": namespace,
            "labels": labels(run_id, tag),
        },
        "spec": {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
                }
            },
            "hostNetwork": spec.host_network,
            "automountServiceAccountToken": False,
            "enableServiceLinks": False,
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 0,
            "activeDeadlineSeconds": spec.lifetime,
            **shaped,
            "containers": [
                {
                    "name": CONTAINER,
                    "image": spec.image,
                    "imagePullPolicy": spec.pull,
                    "command": ["sleep", str(spec.lifetime)],
                    "securityContext": {"privileged": False, "allowPrivilegeEscalation": False},
                    **({"resources": resources} if resources else {}),
                }
            ],
        },
    }


def document(name: str, pods: list[PodSpec], run_id: str, tag: str) -> str:
    """The namespace and its pods as one ``List``, JSON for ``kubectl apply -f -``."""
    items = [namespace(name, run_id, tag), *(pod(p, name, run_id, tag) for p in pods)]
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": items}, sort_keys=True)


@dataclass(frozen=True)
class PodState:
    """What ``kubectl get pods -o json`` says of one pod: its addresses, node, readiness,
    and why it is not ready yet."""

    name: str
    node: str | None
    pod_ip: str | None
    host_ip: str | None
    ready: bool
    why: str


def pod_states(text: str) -> dict[str, PodState]:
    """Pod name -> its state, from ``kubectl get pods -o json``."""
    found = {}
    for item in json.loads(text).get("items") or []:
        meta, spec, status = item.get("metadata", {}), item.get("spec", {}), item.get("status", {})
        conditions = {c.get("type"): c for c in status.get("conditions") or []}
        ready = (conditions.get("Ready") or {}).get("status") == "True"
        name = str(meta.get("name"))
        found[name] = PodState(
            name, spec.get("nodeName"), status.get("podIP"), status.get("hostIP"), ready,
            "" if ready else not_ready(status, conditions),
        )  # fmt: skip
    return found


def not_ready(status: Mapping[str, Any], conditions: Mapping[str, Any]) -> str:
    """Why a pod is not Ready, in the cluster's own words: a container waiting (the image
    missing on the node: ErrImageNeverPull, ImagePullBackOff), or not scheduled (no node
    of that name, the node full)."""
    for container in status.get("containerStatuses") or []:
        waiting = (container.get("state") or {}).get("waiting")
        if waiting:
            return f"{waiting.get('reason')}: {waiting.get('message') or ''}".strip(": ")
        done = (container.get("state") or {}).get("terminated")
        if done:
            return f"its container ended ({done.get('reason')}, exit {done.get('exitCode')})"
    scheduled = conditions.get("PodScheduled") or {}
    if scheduled.get("status") == "False":
        return f"not scheduled ({scheduled.get('reason')}): {scheduled.get('message') or ''}"
    return str(status.get("reason") or status.get("phase") or "not ready")
