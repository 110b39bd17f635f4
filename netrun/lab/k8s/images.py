"""The cluster's images, built here and imported into every node's containerd, pinned.

No registry is reachable, so nothing may ever be pulled: the pause image is kubernetes'
own build/pause/linux/pause.c (from the k8s.io/kubernetes module in the Go module cache)
compiled statically with gcc, and the tools image is the lab's iperf3 root
(netrun.lab.images) plus the few programs the CNI's DaemonSet uses. Each is written as a
docker-archive (manifest.json, config, one layer), the format `ctr images import` reads,
and labelled ``io.cri-containerd.pinned=pinned`` so the kubelet's image GC keeps it.
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from dataclasses import dataclass
from pathlib import Path

from netrun.errors import NetrunError
from netrun.lab import images as lab_images
from netrun.lab.system import run

#: The name containerd's sandbox_image and the kubelet's pod-infra image both use.
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"
TOOLS_IMAGE = "docker.io/netrun-lab/k8s-tools:latest"
PINNED_LABEL = "io.cri-containerd.pinned=pinned"
#: What the tools image holds: iperf3, iperf and ping (don't-fragment path MTU checks) for
#: tests, ss (netserver's and iperf2's port checks), the rest for the CNI renderer; with
#: the lab's netperf build, netperf and netserver too (build_tools).
TOOLS = ["iperf3", "iperf", "ping", "ss", "sh", "cat", "grep", "sed", "sleep", "mkdir", "mv",
         "ip", "ls"]  # fmt: skip


@dataclass(frozen=True)
class Archive:
    """One image as a docker-archive file ready for `ctr images import`."""

    name: str
    path: Path


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o644
    tar.addfile(info, io.BytesIO(data))


def write_archive(path: Path, name: str, layer: bytes, entrypoint: list[str]) -> Archive:
    """A one-layer docker-archive of `layer` (an uncompressed rootfs tar) named `name`."""
    diff_id = "sha256:" + hashlib.sha256(layer).hexdigest()
    config = {
        "architecture": "amd64",
        "os": "linux",
        "config": {"Entrypoint": entrypoint, "Labels": {"netrun.lab": "local-build"}},
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        "history": [{"created_by": "netrun lab (built locally, never pulled)"}],
    }
    config_bytes = json.dumps(config, sort_keys=True).encode()
    config_name = hashlib.sha256(config_bytes).hexdigest() + ".json"
    layer_name = diff_id.split(":")[1] + "/layer.tar"
    manifest = [{"Config": config_name, "RepoTags": [name], "Layers": [layer_name]}]
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w") as tar:
        _add(tar, config_name, config_bytes)
        _add(tar, layer_name, layer)
        _add(tar, "manifest.json", json.dumps(manifest).encode())
    return Archive(name, path)


def pause_source() -> Path:
    """build/pause/linux/pause.c of the newest k8s.io/kubernetes in the Go module cache
    (the build put it there)."""
    mod = Path("/root/go/pkg/mod/k8s.io")
    found = sorted(mod.glob("kubernetes@v*/build/pause/linux/pause.c"))
    if not found:
        raise NetrunError(
            f"no k8s.io/kubernetes module under {mod} for the pause image: run the k8s build"
        )
    return found[-1]


def build_pause(work: Path, source: Path | None = None) -> Archive:
    """The pause image from kubernetes' pause.c, linked statically (it runs on its own)."""
    root = work / "pause-root"
    root.mkdir(parents=True, exist_ok=True)
    run(["gcc", "-Os", "-Wall", "-static", "-DVERSION=v3.10-netrun", "-o",
         str(root / "pause"), str(source or pause_source())])  # fmt: skip
    return write_archive(work / "pause.tar", PAUSE_IMAGE, lab_images.tar_root(root), ["/pause"])


def build_tools(work: Path, netperf: Path | None = None) -> Archive:
    """iperf3, iperf, a shell and what the CNI renderer DaemonSet runs; with ``netperf``
    (the lab's netperf build: bin/netperf, bin/netserver, netrun.lab.netperf) those two."""
    root = work / "tools-root"
    extra = {f"/usr/bin/{p}": netperf / "bin" / p for p in ("netperf", "netserver")} if (
        netperf) else {}  # fmt: skip
    lab_images.build_root(root, TOOLS, extra)
    return write_archive(work / "tools.tar", TOOLS_IMAGE, lab_images.tar_root(root), ["iperf3"])


def build(work: Path, netperf: Path | None = None) -> list[Archive]:
    work.mkdir(parents=True, exist_ok=True)
    return [build_pause(work), build_tools(work, netperf)]


def import_pinned(address: str, archive: Archive) -> None:
    """Import into the k8s.io namespace of the containerd at `address`, pinned."""
    base = ["ctr", "--address", address, "-n", "k8s.io"]
    run([*base, "images", "import", "--no-unpack", str(archive.path)], timeout=120)
    run([*base, "images", "label", archive.name, PINNED_LABEL], timeout=30)
