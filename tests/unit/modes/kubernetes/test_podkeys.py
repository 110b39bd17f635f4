"""The kubernetes mode's pod-shaping keys refuse what the API would, at planning, with one
line naming what is wrong."""

from __future__ import annotations

import pytest

from netrun.modes.kubernetes import podkeys


@pytest.mark.parametrize(
    "value",
    [
        {"requests": {"cpu": "100m", "memory": "64Mi"}},
        {"limits": {"cpu": 2, "memory": "1Gi", "ephemeral-storage": "1G"}},
        {"requests": {"cpu": "0.5"}, "limits": {"nvidia.com/gpu": 1}},
    ],
)
def test_resources_as_kubernetes_writes_them_pass(value: object) -> None:
    assert podkeys.check_resources(value) is None


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ({"request": {"cpu": 1}}, "only requests and limits"),
        ({"limits": {"cpu": "lots"}}, "not a quantity"),
        ({"limits": {"cpu": True}}, "not a quantity"),
        ({"limits": {}}, "must map resources"),
        ({"limits": {"bad name!": 1}}, "not a resource name"),
        ([], "must be a mapping"),
    ],
)
def test_wrong_resources_say_what_is_wrong(value: object, said: str) -> None:
    assert said in (podkeys.check_resources(value) or "")


def test_a_node_selector_maps_label_keys_to_string_values() -> None:
    assert podkeys.check_selector({"kubernetes.io/os": "linux", "pool": "bench"}) is None
    assert "label value is a string" in (podkeys.check_selector({"gpu": True}) or "")
    assert "not a label key" in (podkeys.check_selector({"a b": "x"}) or "")


def test_tolerations_are_pod_spec_tolerations() -> None:
    plane = "node-role.kubernetes.io/control-plane"
    ok = [
        {"key": plane, "operator": "Exists", "effect": "NoSchedule"},
        {"key": "k", "value": "v", "tolerationSeconds": 30},
    ]
    assert podkeys.check_tolerations(ok) is None
    assert "Exists or Equal" in (podkeys.check_tolerations([{"operator": "In"}]) or "")
    assert "effect must be" in (podkeys.check_tolerations([{"effect": "Never"}]) or "")
    assert "has colour" in (podkeys.check_tolerations([{"colour": "red"}]) or "")
    assert "must be a list" in (podkeys.check_tolerations({"key": "k"}) or "")


def test_the_namespace_prefix_is_a_short_dns_label() -> None:
    assert podkeys.PREFIX.fullmatch("netrun") and podkeys.PREFIX.fullmatch("team-a-bench")
    assert not podkeys.PREFIX.fullmatch("Team") and not podkeys.PREFIX.fullmatch("a-")
    assert not podkeys.PREFIX.fullmatch("x" * 31)
