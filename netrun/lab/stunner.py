"""STUNner's turncat for the lab's hosts: built from the Go module proxy once, cached by version.

The reference write-up's TURN figures were measured with STUNner's ``turncat``
(github.com/l7mp/stunner, ``cmd/turncat``); netrun's own tunnel (netrun/modes/turn/tunnel.py)
is modelled on it. `netrun lab turncat` builds the real one
(netrun/lab_assets/build-go-program.sh: a throwaway module, ``go get``, ``go build``; Go
from netrun.lab.gotoolchain) into ``<cache>/stunner/<version>/bin/turncat``, so a test or a
scenario's ``turn_client: turncat`` can run it beside netrun's tunnel on the same relay.
Nothing of STUNner is kept in this repository.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from netrun.errors import NetrunError
from netrun.lab import build_cache, images
from netrun.lab.freeflow import CACHE_ENV, DEFAULT_CACHE
from netrun.lab.gotoolchain import go_binary

MODULE = "github.com/l7mp/stunner"
TURNCAT = f"{MODULE}/cmd/turncat"
#: the release the write-up's S3 figures name; `lab turncat --version` picks another
VERSION = "v1.2.1"
BUILD_SCRIPT = images.ASSETS / "build-go-program.sh"
BUILD_TIMEOUT = 3600.0  # cold: 869 s at load 13, over 1800 s at load 25-29 on 2 cores
_VERSION = re.compile(r"v[0-9]+\.[0-9]+\.[0-9]+")


def cache_root() -> Path:
    return Path(os.environ.get(CACHE_ENV) or DEFAULT_CACHE)


def build_dir(version: str = VERSION) -> Path:
    return cache_root() / "stunner" / version


def turncat_path(version: str = VERSION) -> Path:
    return build_dir(version) / "bin" / "turncat"


def complete(build: Path) -> bool:
    return (build / "bin" / "turncat").is_file()


def cached(version: str = VERSION) -> Path | None:
    """The cached turncat of `version`, or None when it was never built here."""
    path = turncat_path(version)
    return path if path.is_file() else None


def build(version: str = VERSION, say: images.Say = None) -> Path:
    """turncat of STUNner `version` (a release tag such as v1.2.1), built when missing."""
    if not _VERSION.fullmatch(version):
        raise NetrunError(f"turncat version {version!r}: give a release tag such as {VERSION}")
    if found := cached(version):
        return found  # no Go looked for (or fetched) when the build is cached
    go_cache = cache_root() / "go"
    go = go_binary(say)
    done = build_cache.build(
        f"STUNner turncat {version}", build_dir(version), go_cache,
        lambda _src, out: ["env", f"GO={go}", "sh", str(BUILD_SCRIPT), TURNCAT, version,
                           str(out), str(go_cache)],
        complete=complete, tools={str(go): "Go"}, timeout=BUILD_TIMEOUT, say=say,
        how_long="minutes cold: Go downloads and compiles its modules",
    )  # fmt: skip
    return done / "bin" / "turncat"
