"""A program built from the Go module proxy once per release, cached by version.

flanneld (netrun.lab.flannel) and STUNner's turncat (netrun.lab.stunner) are built the same
way: one of netrun/lab_assets' build scripts, run with Go from netrun.lab.gotoolchain, builds
``<cache>/<folder>/<version>/bin/<binary>``; Go's module and build caches are the ones every
Go build of the lab shares (``<cache>/go``). A cached build is used without looking for Go.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from netrun.errors import NetrunError
from netrun.lab import build_cache, images
from netrun.lab.gotoolchain import go_binary

_RELEASE = re.compile(r"v[0-9]+\.[0-9]+\.[0-9]+")


@dataclass(frozen=True)
class GoProgram:
    """One program: ``script`` is called as ``sh script *args VERSION OUT GOCACHE``."""

    title: str  # as messages name it, e.g. "STUNner turncat"
    folder: str  # the cache's folder of its builds, e.g. "stunner"
    binary: str  # bin/<binary> of a build
    version: str  # the release built when none is given
    script: Path
    timeout: float
    args: tuple[str, ...] = ()
    tools: Mapping[str, str] = field(default_factory=dict)  # more than Go: program -> package

    def build_dir(self, version: str | None = None) -> Path:
        return build_cache.cache_dir(self.folder, version or self.version)

    def complete(self, build: Path) -> bool:
        return (build / "bin" / self.binary).is_file()

    def cached(self, version: str | None = None) -> Path | None:
        """The cached binary of `version`, or None when it was never built here."""
        path = self.build_dir(version) / "bin" / self.binary
        return path if path.is_file() else None

    def build(self, version: str | None = None, say: images.Say = None) -> Path:
        """The binary of `version` (a release tag such as v1.2.1), built when missing."""
        version = version or self.version
        if not _RELEASE.fullmatch(version):
            raise NetrunError(
                f"{self.binary} version {version!r}: give a release tag such as {self.version}"
            )
        if found := self.cached(version):
            return found  # no Go looked for (or fetched) when the build is cached
        go_cache = build_cache.cache_dir("go")
        go = go_binary(say)
        done = build_cache.build(
            f"{self.title} {version}", self.build_dir(version), go_cache,
            lambda _src, out: ["env", f"GO={go}", "sh", str(self.script), *self.args, version,
                               str(out), str(go_cache)],
            complete=self.complete, tools={str(go): "Go", **self.tools}, timeout=self.timeout,
            say=say, how_long="minutes cold: Go downloads and compiles its modules",
        )  # fmt: skip
        return done / "bin" / self.binary
