"""flanneld for the lab's hosts: built from the Go module proxy once, cached by version.

`netrun lab flanneld` (and `make flanneld`; `lab up --docker` when the cache lacks it)
builds the real flanneld (github.com/flannel-io/flannel, its main package) with
netrun/lab_assets/build-flanneld.sh into ``<cache>/flannel/<version>/bin/flanneld``; Go's
module and build caches are the ones every Go build of the lab shares (``<cache>/go``).
The script drops one blank import from flannel's main.go, the Tencent Cloud backend, whose
SDK module the proxy does not serve; every other backend is built in. Nothing of Flannel
is kept in this repository. The lab runs it (netrun.lab.overlay); a Kubernetes lab may
run the same binary with --kube-subnet-mgr.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from netrun.errors import NetrunError
from netrun.lab import build_cache, images
from netrun.lab.freeflow import CACHE_ENV, DEFAULT_CACHE
from netrun.lab.gotoolchain import go_binary

MODULE = "github.com/flannel-io/flannel"
#: the newest release the Go module proxy serves here (v0.28.4 and v0.28.10 are served)
VERSION = "v0.28.10"
BUILD_SCRIPT = images.ASSETS / "build-flanneld.sh"
BUILD_TIMEOUT = 3600.0  # cold: about 420 s on 2 cores shared with other jobs (load 1-9)
_VERSION = re.compile(r"v[0-9]+\.[0-9]+\.[0-9]+")


def cache_root() -> Path:
    return Path(os.environ.get(CACHE_ENV) or DEFAULT_CACHE)


def build_dir(version: str = VERSION) -> Path:
    return cache_root() / "flannel" / version


def flanneld_path(version: str = VERSION) -> Path:
    return build_dir(version) / "bin" / "flanneld"


def complete(build: Path) -> bool:
    return (build / "bin" / "flanneld").is_file()


def cached(version: str = VERSION) -> Path | None:
    """The cached flanneld of `version`, or None when it was never built here."""
    path = flanneld_path(version)
    return path if path.is_file() else None


def build(version: str = VERSION, say: images.Say = None) -> Path:
    """flanneld of Flannel `version` (a release tag such as v0.28.10), built when missing;
    returns the binary's path."""
    if not _VERSION.fullmatch(version):
        raise NetrunError(f"flanneld version {version!r}: give a release tag such as {VERSION}")
    if found := cached(version):
        return found  # no Go looked for (or fetched) when the build is cached
    go_cache = cache_root() / "go"
    go = go_binary(say)
    done = build_cache.build(
        f"flanneld {version}", build_dir(version), go_cache,
        lambda _src, out: ["env", f"GO={go}", "sh", str(BUILD_SCRIPT), version, str(out),
                           str(go_cache)],
        complete=complete, tools={str(go): "Go", "gcc": "gcc"}, timeout=BUILD_TIMEOUT, say=say,
        how_long="minutes cold: Go downloads and compiles its modules",
    )  # fmt: skip
    return done / "bin" / "flanneld"
