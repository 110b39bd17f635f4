"""One node per lab host: its own containerd and kubelet in the host's network namespace.

containerd starts in a mount namespace of its own (``unshare --mount --propagation
slave``), where the node's folders are bound over the two host paths a kubelet and the CNI
plugins write whatever their configuration says (/var/lib/cni and /var/log/containers);
the kubelet joins that mount namespace, so its volume mounts and containerd's container
mounts stay the node's own and vanish with it. Each kubelet has its own cgroup root
(cgroupfs driver, cgroup v1 allowed: ``failCgroupV1: false``) and asks for nothing that
needs CAP_SYS_RESOURCE (oomScoreAdj 0, maxOpenFiles at the hard limit, containerd's
restrict_oom_score_adj). Image GC and hard eviction are off: every node shares one disk.
"""

from __future__ import annotations

import contextlib
import resource
from pathlib import Path

import yaml

from netrun.lab.k8s import cgroups, process
from netrun.lab.k8s.images import PAUSE_IMAGE
from netrun.lab.k8s.layout import KUBELET_PORT, Cluster, Node

#: Host paths a node's programs write regardless of their configuration: each node binds
#: its own folder over them inside its mount namespace (the host's stay empty).
SHARED_PATHS = (Path("/var/lib/cni"), Path("/var/log/containers"))
#: The machine-wide sysctls a kubelet sets when they differ (protectKernelDefaults false)
#: or refuses to start over (true). The node's mount namespace sees a file with the value
#: bound over each, so the kubelet finds them set and this machine's stay as they are.
KERNEL_TUNABLES = {
    "vm/overcommit_memory": "1",
    "vm/panic_on_oom": "0",
    "kernel/panic": "10",
    "kernel/panic_on_oops": "1",
    "kernel/keys/root_maxkeys": "1000000",
    "kernel/keys/root_maxbytes": "25000000",
}


def containerd_toml(node: Node, runc: Path) -> str:
    d = node.dir / "containerd"
    return f"""version = 2
root = "{d / "root"}"
state = "{d / "state"}"
[grpc]
  address = "{node.sock}"
[ttrpc]
  address = "{node.sock}.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "{d / "opt"}"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{PAUSE_IMAGE}"
  restrict_oom_score_adj = true
  disable_apparmor = true
  netns_mounts_under_state_dir = true
  enable_cdi = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "{runc}"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{node.cni_bin_dir}"
    conf_dir = "{node.cni_conf_dir}"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "{d / "certs.d"}"
"""


def kubelet_yaml(c: Cluster, node: Node, ca: Path) -> str:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    config = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": node.host.mgmt_ip,
        "port": KUBELET_PORT,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": 10248,
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": str(ca)},
        },
        "authorization": {"mode": "Webhook"},
        "containerRuntimeEndpoint": f"unix://{node.sock}",
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": node.cgroup_root,
        "cgroupsPerQOS": True,
        "failCgroupV1": False,
        "failSwapOn": False,
        "oomScoreAdj": 0,
        "maxOpenFiles": hard if hard != resource.RLIM_INFINITY else 1 << 20,
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "evictionHard": {"memory.available": "1Mi"},
        "podLogsDir": str(node.dir / "pod-logs"),
        "resolvConf": "",
        "serializeImagePulls": False,
        "registerNode": True,
        "localStorageCapacityIsolation": False,
        "staticPodPath": "",
        "rotateCertificates": False,
        "serverTLSBootstrap": False,
    }
    return yaml.safe_dump(config, sort_keys=False)


def containerd_needles(node: Node) -> tuple[str, ...]:
    return ("containerd", str(node.containerd_config))


def kubelet_needles(node: Node) -> tuple[str, ...]:
    return ("kubelet", str(node.kubelet_config))


def prepare(c: Cluster, node: Node, runc: Path, cni_bin: Path, ca: Path) -> None:
    """The node's folders and configuration files, its CNI plugins and cgroup root."""
    for sub in ("containerd", "kubelet", "pod-logs", "run", "cni/net.d", "cni/bin",
                "cni/lib", "container-logs"):  # fmt: skip
        (node.dir / sub).mkdir(parents=True, exist_ok=True)
    for plugin in cni_bin.iterdir():
        link = node.cni_bin_dir / plugin.name
        if not link.exists():
            link.symlink_to(plugin)
    node.containerd_config.write_text(containerd_toml(node, runc))
    node.kubelet_config.write_text(kubelet_yaml(c, node, ca))
    cgroups.create(node.cgroup_root)


def ensure_shared_paths(made: list[str]) -> None:
    """The mount points the nodes bind over; `made` records those this lab created."""
    for path in SHARED_PATHS:
        if not path.exists():
            path.mkdir(parents=True)
            made.append(str(path))


def _tunable_files(node: Node) -> list[tuple[Path, Path]]:
    """(file holding the kubelet's wanted value, the /proc/sys file it is bound over)."""
    found = []
    for name, value in KERNEL_TUNABLES.items():
        target = Path("/proc/sys") / name
        with contextlib.suppress(OSError):
            if target.read_text().strip() == value:
                continue
        source = node.dir / "sysctl" / name.replace("/", ".")
        source.parent.mkdir(parents=True, exist_ok=True)
        source.write_text(value + "\n")
        found.append((source, target))
    return found


def start_containerd(node: Node) -> int:
    pairs = [(node.dir / sub, path) for sub, path in zip(("cni/lib", "container-logs"),
                                                          SHARED_PATHS, strict=True)]  # fmt: skip
    pairs += _tunable_files(node)
    binds = " && ".join(f"mount --bind {src} {dst}" for src, dst in pairs)
    script = f"{binds} && exec containerd --config {node.containerd_config}"
    argv = ["nsenter", f"--net=/run/netns/{node.host.namespace}",
            "unshare", "--mount", "--propagation", "slave", "sh", "-c", script]  # fmt: skip
    return process.start(argv, node.dir / "containerd.log")


def start_kubelet(node: Node, bin_dir: Path, containerd_pid: int) -> int:
    argv = [
        "nsenter", f"--net=/run/netns/{node.host.namespace}",
        f"--mount=/proc/{containerd_pid}/ns/mnt",
        str(bin_dir / "kubelet"),
        "--config", str(node.kubelet_config),
        "--kubeconfig", str(node.kubeconfig),
        "--root-dir", str(node.kubelet_dir),
        "--hostname-override", node.name,
        "--node-ip", node.host.mgmt_ip,
        "--v", "1",
    ]  # fmt: skip
    return process.start(argv, node.dir / "kubelet.log")


def stop(node: Node, pids: dict[str, int]) -> list[str]:
    """Kubelet, then the pods (by the node's cgroups), containerd, its shims; then the
    node's cgroups. Returns what was removed."""
    removed = []
    if process.stop(pids.get("kubelet"), *kubelet_needles(node)):
        removed.append(f"kubelet {node.name} (pid {pids.get('kubelet')})")
    left = cgroups.pids(node.cgroup_root)
    if process.stop(pids.get("containerd"), *containerd_needles(node)):
        removed.append(f"containerd {node.name} (pid {pids.get('containerd')})")
    gone = cgroups.remove(node.cgroup_root)
    if gone:
        removed.append(f"{len(gone)} cgroup(s) under {node.cgroup_root} on {node.name}")
    if left:
        removed.append(f"{len(left)} pod process(es) on {node.name}")
    return removed


def release_shared_paths(made: list[str]) -> list[str]:
    """Remove the mount points this lab created, unless some mount namespace still binds
    something over one (another lab's node)."""
    removed = []
    for raw in made:
        path = Path(raw)
        if _mounted_anywhere(path):
            continue
        with contextlib.suppress(OSError):
            path.rmdir()
            removed.append(raw)
    return removed


def _mounted_anywhere(path: Path) -> bool:
    target = f" {path} "
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if target in (entry / "mountinfo").read_text():
                return True
    return False
