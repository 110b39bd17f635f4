"""netperf and netserver for the lab's hosts, built once from a netperf source and cached.

netperf is not a Debian 12 package. `netrun lab netperf --netperf-src PATH` (and `make
setup`, from ../shared/third_party/netperf.bundle) builds it with ``--enable-histogram
--enable-demo`` (netrun/lab_assets/build-netperf.sh) into the cache FreeFlow's build uses
too, keyed by the source commit, so it is built once per machine. `netrun lab up` then
points the lab inventory's ``netrun_netperf`` and ``netrun_netserver`` at the newest cached
build (the lab's hosts share this machine's filesystem); `lab up --netperf-src` builds first.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from netrun.errors import NetrunError
from netrun.lab import build_cache, images
from netrun.lab.system import run

BRANCH = "master"
BUILD_SCRIPT = images.ASSETS / "build-netperf.sh"
BUILD_TIMEOUT = 900.0
#: command -> the Debian package that has it (the Makefile's APT_PACKAGES lists them too)
BUILD_TOOLS = {"git": "git", "make": "make", "gcc": "gcc", "autoreconf": "autoconf",
               "automake": "automake"}  # fmt: skip
HOME = "https://github.com/HewlettPackard/netperf"
PROGRAMS = ("netperf", "netserver")


@dataclass(frozen=True)
class Source:
    """A netperf source: where it is, and the commit of the branch built."""

    path: Path
    commit: str

    @property
    def key(self) -> str:
        return self.commit[:12]


def cache_root() -> Path:
    return build_cache.cache_dir("netperf")


def complete(build: Path) -> bool:
    return all((build / "bin" / name).is_file() for name in PROGRAMS)


def cached() -> Path | None:
    """The newest complete build in the cache (its folder holds bin/netperf), or None."""
    root = cache_root()
    builds = [p for p in root.iterdir() if not p.name.startswith(".") and complete(p)] if (
        root.is_dir()) else []  # fmt: skip
    return max(builds, key=lambda p: (p / "bin" / "netperf").stat().st_mtime, default=None)


def source(path: Path) -> Source:
    """Check that `path` is a netperf clone or bundle with a master branch."""
    if not path.exists():
        raise NetrunError(f"--netperf-src {path} not found: give a clone of {HOME} (or a bundle)")
    if path.is_file():
        done = run(["git", "bundle", "list-heads", str(path)], check=False, timeout=60)
    else:
        done = run(["git", "-C", str(path), "for-each-ref", "--format=%(objectname) %(refname)"],
                   check=False, timeout=60)  # fmt: skip
    heads: dict[str, str] = {}
    for line in done.stdout.splitlines() if done.returncode == 0 else []:
        commit, _, ref = line.partition(" ")
        for prefix in ("refs/heads/", "refs/remotes/origin/"):
            if ref.startswith(prefix):
                heads.setdefault(ref[len(prefix) :], commit)
    if BRANCH not in heads:
        raise NetrunError(
            f"--netperf-src {path}: no {BRANCH} branch; it must be a git clone of {HOME}"
        )
    return Source(path=path.absolute(), commit=heads[BRANCH])


def build(src: Source, say: images.Say = None) -> Path:
    """The cached build of `src` (bin/netperf, bin/netserver); built when missing.
    configure's --prefix is the final folder: netperf's install records no other path."""
    return build_cache.build(
        "netperf", cache_root() / src.key, src.path,
        lambda repo, out: ["sh", str(BUILD_SCRIPT), str(repo), src.commit, str(out)],
        complete=complete, tools=BUILD_TOOLS, timeout=BUILD_TIMEOUT, say=say,
    )  # fmt: skip


def host_vars(build: Path | None) -> dict[str, str]:
    """The inventory variables that point a lab host at `build`'s programs."""
    if build is None:
        return {}
    return {f"netrun_{name}": str(build / "bin" / name) for name in PROGRAMS}
