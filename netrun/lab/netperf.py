"""netperf and netserver for the lab's hosts, built once from a netperf source and cached.

netperf is not a Debian 12 package. `netrun lab netperf --netperf-src PATH` (and `make
setup`, from ../shared/third_party/netperf.bundle) builds it with ``--enable-histogram
--enable-demo`` (netrun/lab_assets/build-netperf.sh) into the cache FreeFlow's build uses
too, keyed by the source commit, so it is built once per machine. `netrun lab up` then
points the lab inventory's ``netrun_netperf`` and ``netrun_netserver`` at the newest cached
build (the lab's hosts share this machine's filesystem); `lab up --netperf-src` builds first.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from netrun.errors import NetrunError
from netrun.lab import images
from netrun.lab.freeflow import CACHE_ENV, DEFAULT_CACHE
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
    return Path(os.environ.get(CACHE_ENV) or DEFAULT_CACHE) / "netperf"


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
    """The cached build of `src` (bin/netperf, bin/netserver); built when missing."""
    done = cache_root() / src.key
    if complete(done):
        return done
    for tool, package in BUILD_TOOLS.items():
        if shutil.which(tool) is None:
            raise NetrunError(f"{tool} not found: netperf's build needs it: apt install {package}")
    done.parent.mkdir(parents=True, exist_ok=True)
    for stale in done.parent.glob(f".{src.key}.*"):  # a build killed past its deadline
        if time.time() - stale.stat().st_mtime > BUILD_TIMEOUT:
            shutil.rmtree(stale, ignore_errors=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{src.key}.", dir=done.parent))
    try:
        repo = src.path
        if src.path.is_file():  # git archive cannot read a bundle: clone it (bare) first
            repo = tmp / "src.git"
            run(["git", "clone", "-q", "--bare", str(src.path), str(repo)], timeout=300)
        if say:
            say(f"netperf: building {src.key} from {src.path} (about a minute, once)")
        started = time.monotonic()
        # configure --prefix is the final folder: netperf's install records no other path
        out = tmp / "out"
        result = run(["sh", str(BUILD_SCRIPT), str(repo), src.commit, str(out)],
                     check=False, timeout=BUILD_TIMEOUT)  # fmt: skip
        if result.returncode != 0 or not complete(out):
            log = done.parent / f"{src.key}.failed.log"
            log.write_text(result.stdout + result.stderr)
            tail = " | ".join((result.stdout + result.stderr).strip().splitlines()[-3:])
            raise NetrunError(f"netperf build failed (log: {log}): {tail}")
        (out / "build.log").write_text(result.stdout + result.stderr)
        (out / "build-seconds").write_text(f"{time.monotonic() - started:.1f}\n")
        if done.exists():
            shutil.rmtree(done)
        out.rename(done)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if say:
        say(f"netperf: built in {(done / 'build-seconds').read_text().strip()}s into {done}")
    return done


def host_vars(build: Path | None) -> dict[str, str]:
    """The inventory variables that point a lab host at `build`'s programs."""
    if build is None:
        return {}
    return {f"netrun_{name}": str(build / "bin" / name) for name in PROGRAMS}
