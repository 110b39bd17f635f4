"""`netrun lab up --k8s`: a real Kubernetes cluster whose nodes are the lab's hosts.

Order of `up`: the binaries (cached build), certificates, images; the control plane,
waited for until the apiserver is ready; on each host its containerd (images imported,
pinned) and kubelet; each node's pod subnet (Node.spec.podCIDR, subnet.env, routes over
the data links); the CNI's ConfigMap and DaemonSet; then every node Ready. Every pid is
recorded in lab.json before it is waited for, so `down` removes a half-made cluster too.
`down` stops kubelets, pods (by the nodes' cgroups), containerds and their shims, then the
control plane, and removes the cgroups and the host mount points the lab made.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from netrun.lab import flannel, runtime, system
from netrun.lab.k8s import build, cni, control, images, kube_flannel, node, pki, process
from netrun.lab.k8s.layout import Cluster, Node, cluster
from netrun.lab.plan import LabPlan
from netrun.lab.system import run, wait_until

READY_TIMEOUT = 240.0
#: command -> the Debian package that has it (checked before `up` makes anything)
TOOLS = {
    "containerd": "containerd",
    "containerd-shim-runc-v2": "containerd",
    "ctr": "containerd",
    "/usr/sbin/runc": "runc",
    "nsenter": "util-linux",
    "unshare": "util-linux",
    "gcc": "gcc",
}
Say = Callable[[str], None]


def runc_wrapper(lab: LabPlan) -> Path:
    """The lab's runc wrapper (drops CAP_SYS_RESOURCE), shared with the Docker lab."""
    return runtime.install(lab.state_dir)


def kubectl(c: Cluster, bin_dir: Path, *args: str, input: bytes | None = None,
            check: bool = True, timeout: float = 60) -> str:  # fmt: skip
    """kubectl as the lab's admin (the kubeconfig `lab status` names)."""
    argv = [str(bin_dir / "kubectl"), "--kubeconfig", str(c.admin_kubeconfig), *args]
    done = run(argv, input=input, check=check, timeout=timeout)
    out = done.stdout
    return out.decode(errors="replace") if isinstance(out, bytes) else out


def apply(c: Cluster, bin_dir: Path, docs: list[dict[str, Any]]) -> None:
    text = yaml.safe_dump_all(docs, sort_keys=False).encode()
    kubectl(c, bin_dir, "apply", "-f", "-", input=text)


def _ready(c: Cluster, bin_dir: Path) -> bool:
    argv = [str(bin_dir / "kubectl"), "--kubeconfig", str(c.admin_kubeconfig),
            "get", "--raw", "/readyz"]  # fmt: skip
    return run(argv, check=False, timeout=10).returncode == 0


def node_conditions(c: Cluster, bin_dir: Path) -> dict[str, bool]:
    """Node name -> Ready, for every node the apiserver knows."""
    done = run([str(bin_dir / "kubectl"), "--kubeconfig", str(c.admin_kubeconfig),
                "get", "nodes", "-o", "json"], check=False, timeout=20)  # fmt: skip
    if done.returncode != 0:
        return {}
    found = {}
    for item in json.loads(done.stdout).get("items", []):
        conds = {x["type"]: x["status"] for x in item.get("status", {}).get("conditions", [])}
        found[item["metadata"]["name"]] = conds.get("Ready") == "True"
    return found


def up(lab: LabPlan, data: dict[str, Any], save: Callable[[], None], say: Say) -> None:
    cfg = lab.config
    built = build.build(cfg.k8s_version, say)
    bin_dir = built / "bin"
    c = cluster(lab)
    k8s = data.setdefault("k8s", {"pids": {}, "made": [], "build": str(built)})
    pids: dict[str, Any] = k8s["pids"]
    c.dir.mkdir(parents=True, exist_ok=True)
    creds = pki.make_all(c)
    netperf = data.get("netperf", {}).get("build")  # the lab's build, if any (lab.core.up)
    archives = images.build(c.dir / "images", Path(netperf) if netperf else None)
    if cfg.cni == "flannel":  # flanneld from the Go module proxy, the CNI plugin our own
        build.flannel_cni(built)
        flanneld = flannel.build(flannel.VERSION, say)
        archives.append(kube_flannel.build_image(c.dir / "images", flanneld, flannel.VERSION))
    runc = runc_wrapper(lab)

    for name in control.COMPONENTS:
        if not process.alive(pids.get(name), *control.needles(c, name)):
            pids[name] = control.start(c, bin_dir, creds, name)
            save()
        if name == "kube-apiserver":
            wait_until(lambda: _ready(c, bin_dir), timeout=120,
                       what=f"kube-apiserver (see {c.logs / 'kube-apiserver.log'})")  # fmt: skip
    say(f"kubernetes {cfg.k8s_version}: control plane at {c.server}")

    node.ensure_shared_paths(k8s["made"])
    save()
    for n in c.nodes:
        _node_up(c, n, bin_dir, built, runc, creds.ca.cert, archives, pids, save)
        say(f"{n.name}: containerd {pids[n.name]['containerd']}, "
            f"kubelet {pids[n.name]['kubelet']}, pods {n.pod_cidr}")  # fmt: skip
    wait_until(
        lambda: set(node_conditions(c, bin_dir)) >= {n.name for n in c.nodes},
        timeout=READY_TIMEOUT,
        what="nodes registering (see each host's kubelet.log)",
    )
    for n in c.nodes:
        if cfg.cni == "bridge":  # Flannel's own subnet file and routes come from flanneld
            cni.write_subnet_env(n)
            cni.routes(c, n)
        patch = {"spec": {"podCIDR": n.pod_cidr, "podCIDRs": [n.pod_cidr]}}
        kubectl(c, bin_dir, "patch", "node", n.name, "-p", json.dumps(patch), check=False)
    wait_until(
        lambda: _has_service_account(c, bin_dir),
        timeout=60,
        what="kube-system's default service account (kube-controller-manager)",
    )
    if cfg.cni == "flannel":
        apply(c, bin_dir, kube_flannel.manifests(c, flannel.VERSION))
    else:
        apply(c, bin_dir, cni.manifests(c, cni.pod_mtu(cfg.mtu, cfg.cni)))
    started = time.monotonic()
    wait_until(
        lambda: all(node_conditions(c, bin_dir).get(n.name) for n in c.nodes),
        timeout=READY_TIMEOUT,
        what="every node Ready (see each host's kubelet.log)",
    )
    if cfg.cni == "flannel":  # Ready needs only the conflist; pods need flanneld's lease
        wait_until(
            lambda: all(kube_flannel.subnet_file(n).exists() for n in c.nodes),
            timeout=READY_TIMEOUT,
            what="flanneld's subnet file on every node (kubectl -n kube-flannel logs)",
        )
    say(
        f"kubernetes: {len(c.nodes)} node(s) Ready "
        f"({time.monotonic() - started:.0f}s after the CNI); kubeconfig {c.admin_kubeconfig}"
    )


def _has_service_account(c: Cluster, bin_dir: Path) -> bool:
    argv = [str(bin_dir / "kubectl"), "--kubeconfig", str(c.admin_kubeconfig),
            "-n", cni.NAMESPACE, "get", "serviceaccount", "default"]  # fmt: skip
    return run(argv, check=False, timeout=10).returncode == 0


def _node_up(c: Cluster, n: Node, bin_dir: Path, built: Path, runc: Path, ca: Path,
             archives: list[images.Archive], pids: dict[str, Any],
             save: Callable[[], None]) -> None:  # fmt: skip
    mine = pids.setdefault(n.name, {})
    node.prepare(c, n, runc, built / "bin" / "cni", ca)
    if not process.alive(mine.get("containerd"), *node.containerd_needles(n)):
        mine["containerd"] = node.start_containerd(n)
        save()
    wait_until(lambda: n.sock.exists(), timeout=60,
               what=f"containerd on {n.name} (see {n.dir / 'containerd.log'})")  # fmt: skip
    for archive in archives:
        images.import_pinned(str(n.sock), archive)
    if not process.alive(mine.get("kubelet"), *node.kubelet_needles(n)):
        mine["kubelet"] = node.start_kubelet(n, bin_dir, mine["containerd"])
        save()


def down(lab: LabPlan, data: dict[str, Any]) -> list[str]:
    """Everything the cluster made, nodes first; returns what was removed."""
    k8s = data.get("k8s") or {}
    pids: dict[str, Any] = k8s.get("pids", {})
    c = cluster(lab)
    removed: list[str] = []
    for n in c.nodes:
        removed += node.stop(n, pids.get(n.name, {}))
        for pid in _shims(n):
            if process.stop(pid, "containerd-shim", str(n.sock)):
                removed.append(f"containerd-shim {n.name} (pid {pid})")
    for name in reversed(control.COMPONENTS):
        if process.stop(pids.get(name), *control.needles(c, name)):
            removed.append(f"{name} (pid {pids.get(name)})")
    removed += [f"mount point {p}" for p in node.release_shared_paths(k8s.get("made", []))]
    return removed


def _shims(n: Node) -> list[int]:
    return [
        pid
        for pid in system.pids_in_netns(n.host.namespace)
        if process.alive(pid, "containerd-shim", str(n.sock))
    ]


def status(lab: LabPlan, data: dict[str, Any]) -> tuple[Path, dict[str, bool]]:
    """The admin kubeconfig and each node's Ready (empty when the apiserver is down)."""
    c = cluster(lab)
    built = Path((data.get("k8s") or {}).get("build", build.cached(lab.config.k8s_version)))
    if not (built / "bin" / "kubectl").exists():  # a half-made lab: no node is Ready
        return c.admin_kubeconfig, {}
    return c.admin_kubeconfig, node_conditions(c, built / "bin")
