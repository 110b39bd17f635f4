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

The same command reads each node's kernel counters (netrun.hosts.counters: per-core CPU
and softirq time, the data NIC's and its qdisc's drops) into ``details.counters``, whence
the tool's CPU metrics. Its UDP and TCP counters are the node's own network namespace: on
the pod network the test's sockets are in the pods' namespaces, so those are left out
there (a loss is then not placed at the receiver's socket on the node's word).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from netrun.hosts import counters

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


#: The socket counters of a reading that are its network namespace's (the node's).
SOCKET_KEYS = tuple(k for k in counters.KEYS if k.startswith(("udp_", "tcp_")))


def read(host: Host, nic: str | None) -> tuple[Counters, counters.Reading | None]:
    """The node's device counters now (the host's own network namespace: the node's), and
    its kernel counters (``nic``'s drops, per-core CPU), in one command."""
    script = f"cat /proc/net/dev; {counters.script(nic)}"
    text = host.run(script, timeout=30, check=False).stdout
    return parse_net_dev(text.partition(counters.MARK)[0]), counters.parse(text)


def node_records(
    before: Mapping[str, counters.Reading | None],
    after: Mapping[str, counters.Reading | None],
    nics: Mapping[str, str | None],
    network: str,
) -> dict[str, Any]:
    """Each end's counter record (netrun.hosts.counters.record) of its node; on the pod
    network without the node's socket counters (SOCKET_KEYS), which are not the pods'."""
    out: dict[str, Any] = {}
    for role in before:
        entry = counters.record(before[role], after[role], iface=nics[role], netns="node")
        if network == "pod":
            for key in SOCKET_KEYS:
                entry.pop(key, None)
            entry["sockets_unavailable"] = (
                "the pods' own network namespaces: the node's UDP/TCP counters are not theirs"
            )
        out[role] = entry
    return out


def data_nic(mode: Kubernetes, host: Host) -> str | None:
    """The node's data NIC: netrun_iface, else what the probe found."""
    nic = getattr(getattr(mode.ctx.known.facts.get(host.name), "nic", None), "iface", None)
    return str(host.vars.get("netrun_iface") or nic or "") or None


def around(mode: Kubernetes, leg: Callable[[], T]) -> tuple[T, dict[str, Any]]:
    """``leg`` between two readings of both nodes; what it returned and the path bytes
    ({role: {host_nic, overlay: {device, rx_bytes, tx_bytes}}})."""
    hosts = {"client": mode.client, "server": mode.server}
    nics = {role: data_nic(mode, host) for role, host in hosts.items()}
    before = {role: read(host, nics[role]) for role, host in hosts.items()}
    value = leg()
    after = {role: read(host, nics[role]) for role, host in hosts.items()}
    path: dict[str, Any] = {}
    for role in hosts:
        (old, _), (new, _) = before[role], after[role]
        overlay = next((d for d in OVERLAYS if d in new), None)
        devices = {"host_nic": nics[role], "overlay": overlay}
        path[role] = {k: delta(dev, old, new) for k, dev in devices.items()}
    records = node_records(
        {r: before[r][1] for r in hosts}, {r: after[r][1] for r in hosts}, nics,
        str(mode.value("k8s_network")),
    )  # fmt: skip
    return value, {"path_bytes": path, "counters": records}


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
