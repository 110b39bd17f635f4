"""k8s-netperf on the lab's cluster: the program built once per version, its image served.

k8s-netperf (github.com/cloud-bulldozer/k8s-netperf) is what many Kubernetes users run to
compare pod and host networks. `netrun lab k8s-netperf` builds it with
netrun/lab_assets/build-k8s-netperf.sh into ``<cache>/k8s-netperf/<version>/bin/k8s-netperf``
(its source from a clone or bundle: the Go module proxy refuses that module here, 403, while
it serves every module it requires; Go from netrun.lab.gotoolchain, its caches shared with
the lab's other Go builds). With ``--serve`` it then readies the running k8s lab the way
k8s-netperf expects a cluster to be, reading nothing of ours:

- its pods run ``quay.io/cloud-bulldozer/k8s-netperf:latest`` with ``imagePullPolicy:
  Always``, and exec ``/bin/bash``, ``sleep``, ``cat`` and ``iperf3`` in it: the lab builds
  an image of that name from its own tools (the iperf3 tests only: no netperf, no uperf)
  and serves it from each node's loopback (netrun.lab.k8s.registry);
- it picks nodes by ``node-role.kubernetes.io/worker=`` (two at least) and prefers
  ``netperf=client`` / ``netperf=server`` for its two ends: the client host's node and the
  server host's node are labelled so.

It makes its own namespace ``netperf`` with a ServiceAccount and deletes it when done.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from netrun.errors import NetrunError
from netrun.lab import build_cache, images
from netrun.lab.core import running
from netrun.lab.freeflow import CACHE_ENV, DEFAULT_CACHE
from netrun.lab.gotoolchain import go_binary
from netrun.lab.k8s import registry
from netrun.lab.k8s.layout import cluster
from netrun.lab.system import run

HOME = "https://github.com/cloud-bulldozer/k8s-netperf"
#: the newest release on 2026-12-03 (tag v0.1.43, 2026-08-05)
VERSION = "v0.1.43"
IMAGE = "quay.io/cloud-bulldozer/k8s-netperf:latest"
#: what its iperf3 driver and its pods' commands exec in the image
TOOLS = ["bash", "sh", "sleep", "cat", "iperf3"]
BUILD_SCRIPT = images.ASSETS / "build-k8s-netperf.sh"
BUILD_TIMEOUT = 3600.0
_VERSION = re.compile(r"v[0-9]+\.[0-9]+\.[0-9]+")


def cache_root() -> Path:
    return Path(os.environ.get(CACHE_ENV) or DEFAULT_CACHE)


def build_dir(version: str = VERSION) -> Path:
    return cache_root() / "k8s-netperf" / version


def complete(build: Path) -> bool:
    return (build / "bin" / "k8s-netperf").is_file()


def cached(version: str = VERSION) -> Path | None:
    """The cached k8s-netperf of `version`, or None when it was never built here."""
    path = build_dir(version) / "bin" / "k8s-netperf"
    return path if path.is_file() else None


def build(src: Path, version: str = VERSION, say: images.Say = None) -> Path:
    """k8s-netperf `version` (a release tag) from `src` (a clone or bundle holding that
    tag), built when missing; returns the program's path."""
    if not _VERSION.fullmatch(version):
        raise NetrunError(f"k8s-netperf version {version!r}: give a release tag such as {VERSION}")
    if found := cached(version):
        return found
    if not src.exists():
        raise NetrunError(
            f"k8s-netperf source {src} not found: give --k8s-netperf-src, a clone or bundle "
            f"of {HOME} with the tag {version}"
        )
    go_cache = cache_root() / "go"
    go = go_binary(say)
    done = build_cache.build(
        f"k8s-netperf {version}", build_dir(version), src.absolute(),
        lambda repo, out: ["env", f"GO={go}", "sh", str(BUILD_SCRIPT), str(repo), version,
                           str(out), str(go_cache)],
        complete=complete, tools={str(go): "Go", "git": "git"}, timeout=BUILD_TIMEOUT,
        say=say, how_long="minutes cold: Go downloads and compiles client-go and more",
    )  # fmt: skip
    return done / "bin" / "k8s-netperf"


def serve(state_dir: Path, client: str, server: str, say: images.Say = None) -> Path:
    """The running k8s lab in `state_dir` readied for k8s-netperf (see the module's doc);
    returns the admin kubeconfig to run it with."""
    lab, data = running(state_dir)
    if not (lab.config.k8s or data.get("k8s")):
        raise NetrunError(f"the lab in {state_dir} has no cluster: bring it up with --k8s")
    c = cluster(lab)
    names = [n.name for n in c.nodes]
    for name in (client, server):
        if name not in names:
            raise NetrunError(f"k8s-netperf: no node {name!r} in the lab (nodes: {names})")
    if client == server:
        raise NetrunError("k8s-netperf: --client and --server name the same node; name two")
    root = c.dir / "registry"
    if not (root / "tags").is_dir():
        work = c.dir / "k8s-netperf-root"
        images.build_root(work, TOOLS)
        registry.write_image(root, IMAGE, images.tar_root(work), ["/bin/bash"])
        shutil.rmtree(work, ignore_errors=True)
    for node in c.nodes:
        pid = registry.serve(node, root)
        if say:
            say(f"k8s-netperf: {IMAGE} served to {node.name}'s containerd (pid {pid})")
    kubectl = [str(Path(data["k8s"]["build"]) / "bin" / "kubectl"),
               "--kubeconfig", str(c.admin_kubeconfig)]  # fmt: skip
    for name in names:
        role = {client: ["netperf=client"], server: ["netperf=server"]}.get(name, ["netperf-"])
        run([*kubectl, "label", "node", name, "--overwrite",
             "node-role.kubernetes.io/worker=", *role], timeout=60)  # fmt: skip
    return c.admin_kubeconfig
