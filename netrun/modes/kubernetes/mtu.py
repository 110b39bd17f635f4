"""The CNI's MTU for a kubernetes-mode test, as the write-up sets it by hand: patched, the
CNI's DaemonSet restarted, checked in the test's pods, restored.

A test with ``mtu: N`` on the pod network runs with the nodes' data NICs at N (the run's
MTU settings: netrun.run.mtu, as for every mode) and the pods at ``cni_mtu`` (default N
less the CNI's encapsulation: netrun.modes.kubernetes.cni). netrun patches the CNI's
configuration (after an undo record that patches it back and restarts the DaemonSet
again), ``kubectl rollout restart``s the DaemonSet and waits for its rollout; where the
CNI keeps an existing overlay device's MTU (Flannel's flannel.1) it sets the device on
each node, undo-recorded too. Once the test's pods are Ready, each pod's ``eth0`` must say
the pod MTU and a don't-fragment ping of that size must cross from each pod to the other.

The setting outlives its test while the next test sets a pod MTU of its own or runs on
the host network (a restart of the CNI per test costs seconds), in a scope of the run's
ledger (the run family's ``Held``): it is restored after the last such test in a row,
before a pod test that wants the cluster's own MTU, and by the run's final sweep or
``netrun cleanup`` after a kill. A CNI netrun does not know fails the test with one line
naming the cluster's DaemonSets and what to do.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from netrun.cleanup import undo as undo_records
from netrun.core.options import Option, number
from netrun.errors import ModeError, MtuError
from netrun.modes.kubernetes.cni import KNOWN, PLACES, Cni, found
from netrun.tools.ip import path_failure, set_script

if TYPE_CHECKING:
    from netrun.cleanup.ledger import Scope
    from netrun.core.spec import TestSpec
    from netrun.hosts.host import Host
    from netrun.modes.base import RunContext
    from netrun.modes.kubernetes.kubectl import Kubectl
    from netrun.tools.ends import End

#: IPv4 (20) and ICMP (8) headers: a ping of MTU - 28 bytes fills a full-size packet.
ICMP_OVERHEAD = 28
#: How long a CNI DaemonSet's rollout may take (each node's pod restarts in turn).
ROLLOUT_TIMEOUT = 45
_MARK = "@@netrun-cni@@"

# fmt: off
OPTIONS: tuple[Option, ...] = (
    Option("cni_mtu", int, None, "kubernetes: the pods' MTU, set in the CNI's configuration "
           "for a pod-network test with mtu: (null: mtu: less the CNI's encapsulation: "
           "Flannel's VXLAN 50, Calico's VXLAN 50 or IP-in-IP 20, the lab's bridge CNI 0); "
           "restored after the test", nullable=True,
           check=number(576, strict=False, maximum=65535)),
)
# fmt: on


class Kubernetes(Protocol):
    """What of the kubernetes mode (netrun.modes.kubernetes.mode) this module uses."""

    @property
    def name(self) -> str: ...

    test: TestSpec
    ctx: RunContext
    details: dict[str, Any]
    namespace: str

    @property
    def server(self) -> Host: ...
    @property
    def client(self) -> Host: ...
    def value(self, name: str, host: Host | None = None) -> Any: ...
    def kubectl(self, host: Host) -> Kubectl: ...
    def node(self, role: str) -> str: ...
    def end(self, role: str) -> End: ...


@dataclass
class Held:
    """The run's CNI MTU setting (RunContext.family): what netrun set, where, and the
    scope of its undo records."""

    scope: Scope | None = None
    cni: Cni | None = None
    mtu: int | None = None
    #: (host name, device) whose MTU netrun set, with its value now.
    devices: dict[tuple[str, str], int] = field(default_factory=dict)


def target(mode: Kubernetes, cni: Cni | None) -> int | None:
    """The pod MTU the test wants: ``cni_mtu``, else ``mtu:`` less the CNI's overhead;
    None: the cluster's own (no ``mtu:``, or the host network)."""
    if mode.value("k8s_network") != "pod":
        return None
    given = mode.value("cni_mtu")
    if given is not None:
        return int(given)
    mtu = mode.test.options.get("mtu")
    if mtu is None:
        return None
    return int(mtu) - cni.overhead() if cni else -1


def enter(mode: Kubernetes) -> None:
    """Before the test's pods: the CNI at the test's pod MTU (or back to its own)."""
    held = mode.ctx.family(Held)
    if mode.value("k8s_network") != "pod":
        return  # hostNetwork pods: the node's own network, set by the run (mtu:)
    if target(mode, None) is None:
        if problems := restore(mode):  # this test measures the cluster's own pod MTU
            raise MtuError("; ".join(problems))
        return
    host, kubectl = mode.server, mode.kubectl(mode.server)
    cni = held.cni or read(mode, host, kubectl)
    want = target(mode, cni)
    assert want is not None
    mode.details.setdefault("cni", {}).update(want=want)
    if cni is None:
        return  # cni_mtu given: the pods are checked against it (check)
    mode.details["cni"].update(
        kind=cni.kind, config=cni.where.text(), was=cni.pod_mtu(), overhead=cni.overhead()
    )
    if held.mtu != want:
        apply(mode, held, cni, host, kubectl, want)
    if cni.device():
        for node in dict.fromkeys([mode.server, mode.client]):
            device(mode, held, node, cni.device() or "", want)


def read(mode: Kubernetes, host: Host, kubectl: Kubectl) -> Cni | None:
    """The cluster's CNI, from the first of PLACES that exists; None (when the test gives
    ``cni_mtu``, which it then only checks) or ModeError naming the cluster's DaemonSets
    when netrun knows none."""
    lines = []
    for i, where in enumerate(PLACES):
        ns = ["-n", where.namespace] if where.namespace else []
        get = kubectl.argv("get", where.resource, *ns, where.name, "-o", "json")
        lines.append(f"echo {_MARK}{i}; {shlex.join(get)} 2>/dev/null")
    listing = "{range .items[*]}{.metadata.namespace}/{.metadata.name}{' '}{end}"
    ds = kubectl.argv("get", "daemonsets", "-A", "-o", f"jsonpath={listing}")
    lines.append(f"echo {_MARK}ds; {shlex.join(ds)} 2>&1")
    res = host.run("\n".join(lines), timeout=60, check=False)
    parts = res.stdout.split(_MARK)[1:]
    daemonsets = ""
    for part in parts:
        key, _, text = part.partition("\n")
        if key == "ds":
            daemonsets = text.strip()
        elif (cni := found(key, text)) is not None:
            return cni
    if mode.value("cni_mtu") is not None:
        return None
    raise ModeError(
        f"test {mode.test.name}: the cluster's CNI (DaemonSets: {daemonsets[:200] or 'none'}) "
        f"is not one netrun can set the pod MTU of ({KNOWN}): set its MTU to match "
        f"mtu: {mode.test.options.get('mtu')} yourself and give the test cni_mtu: (the pods' "
        "MTU, which netrun then checks), or drop mtu: for k8s_network: pod"
    )


def apply(mode: Kubernetes, held: Held, cni: Cni, host: Host, kubectl: Kubectl, mtu: int) -> None:
    """The CNI's configuration at ``mtu`` and its DaemonSet rolled out again; the first
    change writes the record that restores the original."""
    scope = _scope(mode, held)
    where = cni.where
    change = _patch_script(kubectl, cni, cni.patch(mtu))
    if held.cni is None:
        undo = _patch_script(kubectl, cni, cni.restore())
        record = scope.record(host, undo, what=f"{where.text()} back to its own MTU")
        change = undo_records.guarded(record, change)
    held.cni, held.mtu = cni, None
    res = host.run(change, timeout=ROLLOUT_TIMEOUT + 30, check=False)
    if not res.ok:
        why = (res.stderr or res.stdout).strip().splitlines()[-1:] or ["no output"]
        raise MtuError(
            f"{host.name}: could not set the pod MTU {mtu} in {where.text()} and roll out "
            f"DaemonSet {'/'.join(where.daemonset)}: {why[0][:300]}"
        )
    held.mtu = mtu


def _patch_script(kubectl: Kubectl, cni: Cni, patch: dict[str, Any]) -> str:
    """sh: the merge patch, the DaemonSet's restart (unless an operator restarts it), and
    the wait for its rollout."""
    where = cni.where
    ns = ["-n", where.namespace] if where.namespace else []
    lines = [kubectl.argv("patch", where.resource, *ns, where.name, "--type", "merge",
                          "-p", json.dumps(patch))]  # fmt: skip
    ds_ns, ds = where.daemonset
    if where.restarts:
        lines.append(kubectl.argv("rollout", "restart", "-n", ds_ns, f"daemonset/{ds}"))
    lines.append(kubectl.argv("rollout", "status", "-n", ds_ns, f"daemonset/{ds}",
                              f"--timeout={ROLLOUT_TIMEOUT}s"))  # fmt: skip
    return " && ".join(shlex.join(line) + " >/dev/null" for line in lines)


def device(mode: Kubernetes, held: Held, host: Host, dev: str, mtu: int) -> None:
    """The overlay device on ``host`` (a node) at ``mtu``; the first change records the
    device's own MTU to restore."""
    key = (host.name, dev)
    if held.devices.get(key) == mtu:
        return
    path = shlex.quote(f"/sys/class/net/{dev}/mtu")
    script = set_script(dev, mtu)
    if key not in held.devices:
        res = host.run(f"cat {path}", timeout=30, check=False)
        old = res.stdout.strip()
        if not res.ok or not old.isdigit():
            raise MtuError(f"{host.name}: no overlay device {dev} (is the CNI running there?)")
        record = _scope(mode, held).record(
            host, f"ip link set dev {shlex.quote(dev)} mtu {int(old)}",
            what=f"MTU of {dev} back to {old}", sudo=host.become,
        )  # fmt: skip
        script = undo_records.guarded(record, script)
    res = host.run(script, timeout=30, sudo=host.become, check=False)
    held.devices[key] = mtu
    if not res.ok:
        why = (res.stderr or res.stdout).strip()[-200:]
        raise MtuError(f"{host.name}: could not set the MTU of {dev} to {mtu}: {why}")


def _scope(mode: Kubernetes, held: Held) -> Scope:
    if held.scope is None:
        held.scope = mode.ctx.ledger.scope("k8s-cni")
    return held.scope


def check(mode: Kubernetes, seen: dict[str, int | None]) -> None:
    """After the pods are Ready: the pods' MTU is the ceiling's inner MTU (the pod
    network's framing); on a test that set it, each pod's eth0 must say it and a
    don't-fragment ping of that size must cross from each pod to the other."""
    if mode.value("k8s_network") != "pod":
        return
    mtus = [m for m in seen.values() if m]
    if mtus:
        mode.details["overlay_mtu"] = min(mtus)  # the ceiling's pod MTU (run.sample)
    want = (mode.details.get("cni") or {}).get("want")
    if want is None:
        return
    if "mtu" in mode.details:  # the run's MTU record: the report's cell shows node/pod
        mode.details["mtu"]["container"] = dict(seen)
    for role, mtu in seen.items():
        if mtu != want:
            cni = mode.details["cni"].get("config") or "the CNI's configuration"
            raise MtuError(
                f"test {mode.test.name}: pod {mode.namespace}/{role} on node "
                f"{mode.node(role)} has eth0 MTU {mtu}, not the {want} set in {cni}; check "
                "that the CNI's DaemonSet rolled out (kubectl rollout status) and that its "
                "pods read that configuration"
            )
    checked = [ping(mode, a, b, want) for a, b in (("client", "server"), ("server", "client"))]
    mode.details["cni"]["path_checked"] = checked
    if "mtu" in mode.details:
        mode.details["mtu"].setdefault("path_checked", []).extend(checked)


def ping(mode: Kubernetes, src: str, dst: str, mtu: int) -> str:
    """A don't-fragment ping of a full ``mtu``-byte packet from pod ``src`` to ``dst``."""
    end, peer = mode.end(src), mode.end(dst)
    argv = ["ping", "-n", "-M", "do", "-s", str(mtu - ICMP_OVERHEAD), "-c", "2", "-i", "0.2",
            "-W", "2", peer.address]  # fmt: skip
    res = end.run(shlex.join(end.wrap(argv)), timeout=30, check=False)
    if not res.ok:
        raise MtuError(
            path_failure(f"pod {src}", f"pod {dst}", mtu, res.stdout + res.stderr)
            + f"; {mode.details['cni'].get('config', 'the CNI')} sets it"
        )
    return f"pod {src} -> pod {dst} {mtu}"


def leave(mode: Kubernetes) -> list[str]:
    """After a test: restore the CNI unless the next test is a kubernetes test that sets
    a pod MTU itself (it patches over this one: one rollout, not two) or runs on the host
    network (which the CNI's MTU does not touch); the problems, one line each."""
    held = mode.ctx.family(Held)
    if held.scope is None or not len(held.scope):
        return []
    tests = list(mode.ctx.order.tests)
    names = [t.name for t in tests]
    after = tests[names.index(mode.test.name) + 1 :] if mode.test.name in names else []
    nxt = after[0] if after else None
    if nxt is not None and nxt.mode == mode.name and _sets_or_skips(nxt.options):
        return []
    return restore(mode)


def _sets_or_skips(options: Mapping[str, Any]) -> bool:
    """Whether a kubernetes test of ``options`` sets the pod MTU itself or runs on the
    host network."""
    if options.get("k8s_network", "pod") == "host":
        return True
    return options.get("mtu") is not None or options.get("cni_mtu") is not None


def restore(mode: Kubernetes) -> list[str]:
    """The CNI and the overlay devices as they were; the problems, one line each."""
    held = mode.ctx.family(Held)
    if held.scope is None:
        return []
    problems = held.scope.run()
    held.cni, held.mtu, held.devices = None, None, {}
    return problems
