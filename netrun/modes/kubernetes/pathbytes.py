"""Where a kubernetes-mode test's bytes went: the nodes' data NIC against the pod
network's device, read on both nodes just before and just after each measurement.

On the pod network a pod's bytes cross the CNI's device on its node (Flannel's
``flannel.1``, Calico's ``vxlan.calico`` or ``tunl0``, else the pods' bridge ``cni0``) and
then the node's data NIC; with ``k8s_network: host`` they cross the data NIC alone, which
is what makes the host network the bare-metal side of the overlay tax
(netrun.results.overlay_tax). Each end's record (``details.path_bytes``) holds both
devices' rx/tx deltas; ``details.path_check`` says in words whether each device carried
the test's bytes (at least CARRIED of them, in either direction: a bridge counts a pod's
sent bytes as received) or stayed out of it (below BYPASSED).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from netrun.hosts.host import Host
    from netrun.modes.kubernetes.mtu import Kubernetes

#: The pod network's device on a node, the first of these the node has.
OVERLAYS = ("flannel.1", "vxlan.calico", "tunl0", "cni0")
CARRIED = 0.9
BYPASSED = 0.1
T = TypeVar("T")
Counters = dict[str, tuple[int, int]]  # device -> (rx_bytes, tx_bytes)


def parse_net_dev(text: str) -> Counters:
    """rx/tx bytes per device of /proc/net/dev (its two header lines skipped)."""
    out: Counters = {}
    for line in text.splitlines():
        name, sep, rest = line.partition(":")
        fields = rest.split()
        if sep and len(fields) >= 9 and fields[0].isdigit() and fields[8].isdigit():
            out[name.strip()] = (int(fields[0]), int(fields[8]))
    return out


def read(host: Host) -> Counters:
    """The node's device counters now (the host's own network namespace: the node's)."""
    return parse_net_dev(host.run("cat /proc/net/dev", timeout=30, check=False).stdout)


def data_nic(mode: Kubernetes, host: Host) -> str | None:
    """The node's data NIC: netrun_iface, else what the probe found."""
    nic = getattr(getattr(mode.ctx.known.facts.get(host.name), "nic", None), "iface", None)
    return str(host.vars.get("netrun_iface") or nic or "") or None


def around(mode: Kubernetes, leg: Callable[[], T]) -> tuple[T, dict[str, Any]]:
    """``leg`` between two readings of both nodes; what it returned and the path bytes
    ({role: {host_nic, overlay: {device, rx_bytes, tx_bytes}}})."""
    hosts = {"client": mode.client, "server": mode.server}
    before = {role: read(host) for role, host in hosts.items()}
    value = leg()
    after = {role: read(host) for role, host in hosts.items()}
    path: dict[str, Any] = {}
    for role, host in hosts.items():
        overlay = next((d for d in OVERLAYS if d in after[role]), None)
        devices = {"host_nic": data_nic(mode, host), "overlay": overlay}
        path[role] = {k: delta(dev, before[role], after[role]) for k, dev in devices.items()}
    return value, {"path_bytes": path}


def delta(device: str | None, before: Counters, after: Counters) -> dict[str, Any]:
    old, new = (before.get(device), after.get(device)) if device else (None, None)
    if old is None or new is None:
        return {"device": device, "rx_bytes": None, "tx_bytes": None,
                "unavailable": f"no counters for {device or 'the device'}"}  # fmt: skip
    return {"device": device, "rx_bytes": new[0] - old[0], "tx_bytes": new[1] - old[1]}


def verdict(path: Mapping[str, Any], test_bytes: int, network: str) -> tuple[bool | None, str]:
    """(crossed the pod network's device, why): on both ends the data NIC must carry the
    test's bytes; on the pod network the device must too, on the host network it must
    stay out. None when the counters cannot tell."""
    if test_bytes <= 0:
        return None, "the test moved no bytes"
    share: dict[str, list[float]] = {"host_nic": [], "overlay": []}
    for role in ("client", "server"):
        for device in share:
            entry = (path.get(role) or {}).get(device) or {}
            moved = [v for v in (entry.get("rx_bytes"), entry.get("tx_bytes")) if v is not None]
            if not moved:
                return None, f"no {device} counters on the {role} node"
            share[device].append(max(moved) / test_bytes)
    nic, overlay = min(share["host_nic"]), min(share["overlay"])
    names = {d: (path["server"].get(d) or {}).get("device") for d in share}
    said = (f"the data NICs ({names['host_nic']}) carried {nic:.2f}, the pod network's "
            f"{names['overlay']} {max(share['overlay']):.2f} of the test's bytes")  # fmt: skip
    if nic < CARRIED:
        return None, f"{said}: the test's bytes did not cross the data links"
    if network == "pod":
        return overlay >= CARRIED, said
    crossed = max(share["overlay"]) >= BYPASSED
    return crossed, said + ("" if not crossed else ": the host network crossed it too")


def proven(
    mode: Kubernetes, leg: Callable[[], T], moved: Callable[[T], int | None]
) -> tuple[T, dict[str, Any]]:
    """``leg`` with its path bytes around it and the verdict on them (``moved``: the
    test's payload bytes from what the leg returned; None: no verdict, said so)."""
    value, details = around(mode, leg)
    network = str(mode.value("k8s_network"))
    if network == "host":  # the overlay tax's bare-metal side (netrun.results.overlay_tax)
        details["bare_side"] = "hostNetwork pods: the nodes' own network"
    test_bytes = moved(value)
    if test_bytes is None:
        details["path_check"] = "the tool does not say how many bytes it moved"
        return value, details
    crossed, why = verdict(details["path_bytes"], test_bytes, network)
    details.update(crossed_overlay=crossed, path_check=why)
    return value, details
