"""The scenario keys that shape a kubernetes-mode test's namespace and pods, with their
checks: the namespace's prefix, the pods' resources, node selector and tolerations.

Each key's value goes into the manifest as Kubernetes spells it (manifest.pod), checked here
first so a wrong one is one line naming the key at planning, not an API error at setup. The
defaults ask for nothing: a BestEffort pod, no selector beyond the node's name, no
toleration (a tainted node, a control plane's, takes no test pod unless tolerated).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from netrun.core.options import Option, matching

#: A prefix the namespace name ``<prefix>-<run id>-<test tag>`` starts with (a DNS label).
PREFIX = re.compile(r"[a-z]([a-z0-9-]{0,28}[a-z0-9])?")
#: A resource quantity as Kubernetes writes one (100m, 0.5, 256Mi, 1G, 2e3).
QUANTITY = re.compile(r"[0-9]+(\.[0-9]+)?([eE][0-9]+|m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?")
#: A label key (an optional DNS prefix and a name) or a label value.
LABEL_KEY = re.compile(
    r"([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
)
LABEL_VALUE = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?")
TOLERATION_KEYS = ("key", "operator", "value", "effect", "tolerationSeconds")
OPERATORS = ("Exists", "Equal")
EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def check_resources(value: Any) -> str | None:
    """``{requests: {cpu: 100m, memory: 64Mi}, limits: {...}}``: quantities per resource."""
    if not isinstance(value, Mapping) or not value:
        return "must be a mapping of requests and/or limits, e.g. {requests: {cpu: 100m}}"
    for part, amounts in value.items():
        if part not in ("requests", "limits"):
            return f"has {part!r}: only requests and limits (Kubernetes' resources)"
        if not isinstance(amounts, Mapping) or not amounts:
            return f"{part} must map resources to quantities, e.g. {{cpu: 500m, memory: 256Mi}}"
        for name, amount in amounts.items():
            if not isinstance(name, str) or LABEL_KEY.fullmatch(name) is None:
                return f"{part} names {name!r}, not a resource name such as cpu or memory"
            if isinstance(amount, bool) or QUANTITY.fullmatch(str(amount)) is None:
                return f"{part}.{name} is {amount!r}, not a quantity such as 500m or 256Mi"
    return None


def check_selector(value: Any) -> str | None:
    """``{label: value}`` the pods' nodes must carry too."""
    if not isinstance(value, Mapping) or not value:
        return "must map node labels to values, e.g. {kubernetes.io/os: linux}"
    for key, label in value.items():
        if not isinstance(key, str) or LABEL_KEY.fullmatch(key) is None:
            return f"has {key!r}, not a label key"
        if not isinstance(label, str) or LABEL_VALUE.fullmatch(label) is None:
            return f"{key} is {label!r}: a label value is a string (quote true, 1)"
    return None


def check_tolerations(value: Any) -> str | None:
    """A list of tolerations as a pod spec writes them."""
    if not isinstance(value, list) or not value:
        return "must be a list of tolerations, e.g. [{key: dedicated, operator: Exists}]"
    for i, item in enumerate(value):
        if not isinstance(item, Mapping):
            return f"[{i}] must be a mapping (key, operator, value, effect)"
        extra = sorted(str(k) for k in item if k not in TOLERATION_KEYS)
        if extra:
            return f"[{i}] has {', '.join(extra)}: a toleration has {', '.join(TOLERATION_KEYS)}"
        if item.get("operator", "Equal") not in OPERATORS:
            return f"[{i}].operator must be Exists or Equal"
        if item.get("effect") not in (None, *EFFECTS):
            return f"[{i}].effect must be one of {', '.join(EFFECTS)}"
        seconds = item.get("tolerationSeconds")
        if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, int)):
            return f"[{i}].tolerationSeconds must be an integer"
        for k in ("key", "value"):
            if item.get(k) is not None and not isinstance(item.get(k), str):
                return f"[{i}].{k} must be a string"
    return None


# fmt: off
OPTIONS: tuple[Option, ...] = (
    Option("k8s_namespace_prefix", str, "netrun", "kubernetes: the test's namespace is "
           "<prefix>-<run id>-<test tag>, labelled with the run's labels whatever the prefix",
           check=matching(PREFIX.pattern, "a DNS label of 1-30 characters: a-z, 0-9, -"),
           from_inventory=True),
    Option("pod_resources", dict, None, "kubernetes: the ends' resources, e.g. {requests: "
           "{cpu: 500m, memory: 256Mi}, limits: {cpu: '2'}} (null: none asked, a BestEffort "
           "pod)", check=check_resources, nullable=True, from_inventory=True),
    Option("pod_node_selector", dict, None, "kubernetes: node labels the ends' nodes must "
           "carry besides their names, e.g. {kubernetes.io/os: linux} (null: the name alone)",
           check=check_selector, nullable=True, from_inventory=True),
    Option("pod_tolerations", list, None, "kubernetes: the ends' tolerations, e.g. [{key: "
           "node-role.kubernetes.io/control-plane, operator: Exists, effect: NoSchedule}] "
           "(null: none: a tainted node takes no test pod)",
           check=check_tolerations, nullable=True, from_inventory=True),
)
# fmt: on
