"""Another iperf3 for the lab's hosts: a release built from ESnet's iperf source.

`netrun lab up --iperf3 VERSION --iperf3-src PATH` takes a git clone (or bundle) of
https://github.com/esnet/iperf, builds the tag VERSION (netrun/lab_assets/build-iperf3.sh:
configure, make, no shared library, nothing beyond gcc and make) and points every host's
``netrun_iperf3`` at a copy of it in the lab's own folder: real labs run what their
distribution ships (3.5 on RHEL 8 to 3.16 on Ubuntu 24.04), and a parser checked only
against Debian 12's 3.12 reads the others wrongly. As with the real FreeFlow
(netrun.lab.freeflow), nothing of iperf3 is kept in this repository: the build lives in a
cache keyed by the tag and its commit, so a second `lab up` does not rebuild.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from netrun.errors import NetrunError
from netrun.lab import build_cache, images
from netrun.lab.system import run

#: Where --iperf3-src comes from when it is not given.
SOURCE_ENV = "NETRUN_IPERF3_SRC"
BUILD_SCRIPT = images.ASSETS / "build-iperf3.sh"
BUILD_TIMEOUT = 900.0
#: command -> the Debian package that has it (the Makefile's APT_PACKAGES lists them too)
BUILD_TOOLS = {"git": "git", "make": "make", "gcc": "gcc", "tar": "tar"}
_VERSION = re.compile(r"[0-9]+\.[0-9]+(\.[0-9]+)?")


@dataclass(frozen=True)
class Source:
    """One iperf3 release: where its source is, its tag and the tag's object."""

    path: Path
    version: str
    commit: str

    @property
    def key(self) -> str:
        return f"{self.version}-{self.commit[:12]}"


def cache_root() -> Path:
    return build_cache.cache_dir("iperf3")


def default_source() -> Path | None:
    value = os.environ.get(SOURCE_ENV)
    return Path(value) if value else None


def _tags(path: Path) -> dict[str, str]:
    """Tag name -> the tag's object (what ``git bundle list-heads`` and a clone's refs
    both name: an annotated tag's own object, not its commit), for a bundle or a clone."""
    if path.is_file():
        done = run(["git", "bundle", "list-heads", str(path)], check=False, timeout=60)
    else:
        done = run(
            ["git", "-C", str(path), "for-each-ref", "--format=%(objectname) %(refname)"],
            check=False,
            timeout=60,
        )
    tags: dict[str, str] = {}
    for line in (done.stdout if done.returncode == 0 else "").splitlines():
        commit, _, ref = line.partition(" ")
        if ref.startswith("refs/tags/"):
            tags.setdefault(ref[len("refs/tags/") :], commit)
    return tags


def source(path: Path | None, version: str) -> Source:
    """Check that `path` is an iperf clone or bundle that has the tag `version`."""
    if not _VERSION.fullmatch(version):
        raise NetrunError(f"--iperf3 {version!r}: give a release tag such as 3.9 or 3.19.1")
    if path is None:
        raise NetrunError(
            f"--iperf3 {version} needs --iperf3-src (or {SOURCE_ENV}): a clone of "
            "https://github.com/esnet/iperf with its tags (or a git bundle of it)"
        )
    if not path.exists():
        raise NetrunError(
            f"--iperf3-src {path} not found: give a clone of https://github.com/esnet/iperf "
            "(or a git bundle of it)"
        )
    tags = _tags(path)
    if version not in tags:
        known = ", ".join(sorted(tags, key=_order)[-8:]) or "none"
        raise NetrunError(
            f"--iperf3 {version}: {path} has no tag {version} (its newest: {known}); "
            "git fetch --tags, or pick one of those"
        )
    return Source(path=path.absolute(), version=version, commit=tags[version])


def _order(tag: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else -1 for p in tag.split("."))


def build(src: Source, say: images.Say = None) -> Path:
    """The cached build of `src` (its folder, holding bin/iperf3); built when missing."""
    return build_cache.build(
        f"iperf3 {src.version}", cache_root() / src.key, src.path,
        lambda repo, out: ["sh", str(BUILD_SCRIPT), str(repo), src.commit, str(out)],
        complete=lambda d: (d / "bin" / "iperf3").is_file(),
        tools=BUILD_TOOLS, timeout=BUILD_TIMEOUT, say=say,
    )  # fmt: skip


def installed(state_dir: Path) -> Path:
    """Where the lab keeps its hosts' iperf3 (every host's ``netrun_iperf3``)."""
    return state_dir / "iperf3" / "bin" / "iperf3"


def install(built: Path, state_dir: Path) -> Path:
    """Copy the build into the lab's folder: `lab down` removes it, the cache stays."""
    target = installed(state_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(".iperf3.tmp")
    shutil.copyfile(built / "bin" / "iperf3", tmp)
    tmp.chmod(0o755)
    tmp.replace(target)
    return target


def remove(state_dir: Path) -> None:
    """A lab switched back to the hosts' own iperf3."""
    shutil.rmtree(installed(state_dir).parent.parent, ignore_errors=True)
