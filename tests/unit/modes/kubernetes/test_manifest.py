"""What a kubernetes-mode test creates: its namespace and pods, labelled, pinned, unprivileged."""

from __future__ import annotations

import json

from netrun.lab.k8s.images import TOOLS_IMAGE as LAB_TOOLS_IMAGE
from netrun.modes.kubernetes import manifest
from netrun.modes.kubernetes.mode import TOOLS_IMAGE


def spec(role: str = "server", node: str = "bravo", host: bool = False) -> manifest.PodSpec:
    return manifest.PodSpec(role, node, TOOLS_IMAGE, "IfNotPresent", host, 330)


def test_the_default_image_is_the_labs_tools_image() -> None:
    assert TOOLS_IMAGE == LAB_TOOLS_IMAGE


def test_the_namespace_is_the_tests_own_and_a_dns_label() -> None:
    assert manifest.namespace_name("1a2b3c4d", "t0") == "netrun-1a2b3c4d-t0"
    long = manifest.namespace_name("1a2b3c4d", "t12p" + "F" * 80)
    assert len(long) <= 63 and long == long.lower() and not long.endswith("-")
    assert manifest.dns_label("t_1.x") == "t-1-x"


def test_everything_carries_the_runs_labels() -> None:
    doc = json.loads(manifest.document("ns", [spec(), spec("client", "alpha")], "1a2b", "t0"))
    assert [i["kind"] for i in doc["items"]] == ["Namespace", "Pod", "Pod"]
    for item in doc["items"]:
        labels = item["metadata"]["labels"]
        assert labels == {"netrun": "1", "netrun.run_id": "1a2b", "netrun.test": "t0"}
    assert all(i["metadata"]["namespace"] == "ns" for i in doc["items"][1:])


def test_a_pod_is_pinned_to_its_node_unprivileged_and_bounded() -> None:
    pod = manifest.pod(spec(), "ns", "1a2b", "t0")["spec"]
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"] == [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["bravo"]}]}
    ]
    (container,) = pod["containers"]
    assert container["securityContext"] == {"privileged": False, "allowPrivilegeEscalation": False}
    assert container["imagePullPolicy"] == "IfNotPresent" and container["image"] == TOOLS_IMAGE
    assert container["command"] == ["sleep", "330"] and pod["activeDeadlineSeconds"] == 330
    assert pod["hostNetwork"] is False and pod["automountServiceAccountToken"] is False


def test_host_network_only_where_asked() -> None:
    assert manifest.pod(spec(host=True), "ns", "1a2b", "t0")["spec"]["hostNetwork"] is True


def test_the_scenarios_resources_selector_and_tolerations_reach_the_pod() -> None:
    shaped = manifest.PodSpec(
        "server", "bravo", TOOLS_IMAGE, "IfNotPresent", False, 330,
        resources={"requests": {"cpu": "500m", "memory": "256Mi"}, "limits": {"cpu": 2}},
        node_selector={"kubernetes.io/os": "linux"},
        tolerations=({"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"},),
    )  # fmt: skip
    pod = manifest.pod(shaped, "ns", "1a2b", "t0")["spec"]
    assert pod["containers"][0]["resources"] == {
        "requests": {"cpu": "500m", "memory": "256Mi"},
        "limits": {"cpu": "2"},  # a quantity is a string in the manifest
    }
    assert pod["nodeSelector"] == {"kubernetes.io/os": "linux"}
    assert pod["tolerations"] == [
        {"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}
    ]
    # by default none of them: a BestEffort pod, pinned by its node's name alone
    plain = manifest.pod(spec(), "ns", "1a2b", "t0")["spec"]
    assert "nodeSelector" not in plain and "tolerations" not in plain
    assert "resources" not in plain["containers"][0]


def test_a_namespace_prefix_starts_the_name_and_the_labels_stay() -> None:
    assert manifest.namespace_name("1a2b3c4d", "t0", "lab-nr") == "lab-nr-1a2b3c4d-t0"
