"""Kubernetes, etcd and the CNI plugins, built once per version from the Go module proxy.

netrun/lab_assets/build-k8s.sh builds the wrapper module netrun/lab_assets/k8s (its go.mod
replaces every staging module of k8s.io/kubernetes with the published release) into one
multi-call binary ``kube`` (kube-apiserver, kube-controller-manager, kube-scheduler,
kubelet, kubectl by argv[0]), etcd at the version Kubernetes' go.mod names, and the bridge,
host-local, loopback and portmap CNI plugins. The result is cached under the lab's cache
(``$NETRUN_CACHE_DIR`` or /var/cache/netrun) in k8s/<version>, like the iperf3 builds.
The lab's own Flannel CNI plugin (the wrapper module's cmd/flannel, standard library only)
is added to a cached build that lacks it: seconds, not a rebuild. Go is the one every build
of the lab uses (netrun.lab.gotoolchain: the machine's own if new enough, else fetched).
"""

from __future__ import annotations

from pathlib import Path

from netrun.errors import NetrunError
from netrun.lab import build_cache, images
from netrun.lab.gotoolchain import go_binary
from netrun.lab.system import run

SCRIPT = images.ASSETS / "build-k8s.sh"
MODULE = images.ASSETS / "k8s"
#: A cold build on the project's 2-core machine (measured: see docs/kubernetes-lab.md).
TIMEOUT = 3 * 3600.0


def cache_root() -> Path:
    return build_cache.cache_dir("k8s")


def cached(version: str) -> Path:
    return cache_root() / version


def complete(build: Path) -> bool:
    names = ("kube", "etcd", "cni/bridge", "cni/host-local")
    return all((build / "bin" / name).is_file() for name in names)


def flannel_cni(built: Path) -> Path:
    """bin/cni/flannel of the cached build `built`, compiled from the wrapper module's
    cmd/flannel when missing (a build cached before the plugin existed has none)."""
    target = built / "bin" / "cni" / "flannel"
    if target.is_file():
        return target
    go = str(go_binary())
    tmp = target.with_name(".flannel.tmp")
    env = {"CGO_ENABLED": "0", "GOTOOLCHAIN": "local"}
    done = run([go, "build", "-C", str(MODULE), "-trimpath", "-ldflags", "-s -w", "-o", str(tmp),
                "./cmd/flannel"], env=env, check=False, timeout=600)  # fmt: skip
    if done.returncode != 0:
        raise NetrunError(f"the Flannel CNI plugin did not build: {done.stderr.strip()[-400:]}")
    tmp.rename(target)
    return target


def build(version: str, say: images.Say = None) -> Path:
    """The cached build of Kubernetes `version` (holding bin/); built when missing."""
    if complete(cached(version)):
        return cached(version)  # no Go looked for (or fetched) when the build is cached
    go = go_binary(say)
    return build_cache.build(
        f"kubernetes {version}", cached(version), MODULE,
        lambda _src, out: ["env", f"GO={go}", "sh", str(SCRIPT), version, str(out)],
        complete=complete, tools={str(go): "Go", "gcc": "gcc"}, timeout=TIMEOUT, say=say,
        how_long="about 15 CPU-minutes: 10 min on 2 idle cores, more when shared",
    )  # fmt: skip
