"""Which pod MTU a kubernetes test wants, and which next test keeps the CNI's setting."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from netrun.modes.kubernetes import mtu
from netrun.modes.kubernetes.cni import PLACES, Cni


def mode(**options: Any) -> Any:
    values = {"k8s_network": "pod", "cni_mtu": None, **options}
    test = SimpleNamespace(options=options)
    return SimpleNamespace(test=test, value=lambda name, host=None: values.get(name))


FLANNEL = Cni(PLACES[0], {})
BRIDGE = Cni(next(w for w in PLACES if w.kind == "bridge"), {"mtu": "1500"})


@pytest.mark.parametrize(
    ("options", "cni", "want"),
    [
        ({"mtu": 9000}, FLANNEL, 8950),
        ({"mtu": 9000}, BRIDGE, 9000),
        ({"mtu": 1500, "cni_mtu": 1480}, FLANNEL, 1480),
        ({"cni_mtu": 1400}, None, 1400),  # set by hand: only checked
        ({}, FLANNEL, None),  # the cluster's own
        ({"mtu": 9000, "k8s_network": "host"}, FLANNEL, None),  # the nodes' NICs only
    ],
)
def test_the_pod_mtu_a_test_wants(options: dict[str, Any], cni: Cni | None, want: int) -> None:
    assert mtu.target(mode(**options), cni) == want


@pytest.mark.parametrize(
    ("options", "keeps"),
    [
        ({"mtu": 6000}, True),  # patches over it: one rollout, not two
        ({"cni_mtu": 1400}, True),
        ({"k8s_network": "host", "mtu": 1500}, True),  # the CNI's MTU does not matter there
        ({}, False),  # wants the cluster's own
        ({"k8s_network": "pod"}, False),
    ],
)
def test_which_next_test_keeps_the_setting(options: dict[str, Any], keeps: bool) -> None:
    assert mtu._sets_or_skips(options) is keeps
