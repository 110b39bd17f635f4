"""The real FreeFlow TCP router image for the lab, built from a FreeFlow source.

`netrun lab up --docker --freeflow-src PATH` takes a git clone (or bundle) of Microsoft's
Freeflow with its `tcp` and `master` branches, builds libmempool, the mlnx libibverbs and
librdmacm, the router and libfsocket (netrun/lab_assets/build-freeflow.sh), and imports a
router image made of those files. Nothing of FreeFlow is kept in this repository: the build
lives in a cache keyed by the two source commits, so a second `lab up` does not rebuild.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from netrun.errors import NetrunError
from netrun.lab import build_cache, images
from netrun.lab.system import run

BRANCHES = ("tcp", "master")
BUILD_SCRIPT = images.ASSETS / "build-freeflow.sh"
BUILD_TIMEOUT = 1800.0
#: command -> the Debian package that has it (the Makefile's APT_PACKAGES lists them too)
BUILD_TOOLS = {
    "git": "git", "make": "make", "g++": "g++", "autoreconf": "autoconf",
    "automake": "automake", "libtoolize": "libtool", "pkg-config": "pkg-config",
}  # fmt: skip
LIB_DIR = "/opt/freeflow/lib"  # the build's rpath: the private libibverbs/librdmacm

START = """#!/bin/sh
# netrun lab: FreeFlow's own start script, made to report failures: run the router without
# RDMA hardware, and publish libfsocket.so into /freeflow only once its socket exists, so
# a published library means a router that answers.
rm -f /freeflow/ffrouter
DISABLE_RDMA=1 /router ffrouter &
router=$!
while ! [ -S /freeflow/ffrouter ]; do
    kill -0 "$router" 2>/dev/null || { echo "router exited before listening" >&2; exit 1; }
    sleep 0.1
done
cp /libfsocket.so /freeflow/libfsocket.so.tmp
mv /freeflow/libfsocket.so.tmp /freeflow/libfsocket.so
wait "$router"
"""


@dataclass(frozen=True)
class Source:
    """A FreeFlow source: where it is, and the commits of its tcp and master branches."""

    path: Path
    tcp: str
    master: str

    @property
    def key(self) -> str:
        return f"{self.tcp[:12]}-{self.master[:12]}"

    @property
    def image(self) -> str:
        return f"netrun-lab/freeflow:tcp-{self.tcp[:12]}"


def cache_root() -> Path:
    return build_cache.cache_dir("freeflow")


def _heads(path: Path) -> dict[str, str]:
    """Branch name -> commit, for a bundle file or a git clone (local or origin/ branches)."""
    if path.is_file():
        done = run(["git", "bundle", "list-heads", str(path)], check=False, timeout=60)
        refs = done.stdout if done.returncode == 0 else ""
    else:
        done = run(
            ["git", "-C", str(path), "for-each-ref", "--format=%(objectname) %(refname)"],
            check=False,
            timeout=60,
        )
        refs = done.stdout if done.returncode == 0 else ""
    heads: dict[str, str] = {}
    for line in refs.splitlines():
        commit, _, ref = line.partition(" ")
        for prefix in ("refs/heads/", "refs/remotes/origin/"):
            if ref.startswith(prefix):
                heads.setdefault(ref[len(prefix) :], commit)
    return heads


def source(path: Path) -> Source:
    """Check that `path` is a FreeFlow clone or bundle with both branches."""
    if not path.exists():
        raise NetrunError(
            f"--freeflow-src {path} not found: give a clone of "
            "https://github.com/microsoft/Freeflow (or a git bundle of it)"
        )
    heads = _heads(path)
    missing = [b for b in BRANCHES if b not in heads]
    if missing:
        raise NetrunError(
            f"--freeflow-src {path}: no {' or '.join(missing)} branch; it must be a git clone "
            "of https://github.com/microsoft/Freeflow with its tcp and master branches "
            "(git fetch origin tcp master)"
        )
    return Source(path=path.absolute(), tcp=heads["tcp"], master=heads["master"])


def build(src: Source, say: images.Say = None) -> Path:
    """The cached build of `src` (router, libfsocket.so, prefix/lib); built when missing."""
    return build_cache.build(
        "FreeFlow", cache_root() / src.key, src.path,
        lambda repo, out: ["sh", str(BUILD_SCRIPT), str(repo), src.tcp, src.master, str(out)],
        complete=lambda d: (d / "router").is_file() and (d / "libfsocket.so").is_file(),
        tools=BUILD_TOOLS, timeout=BUILD_TIMEOUT, say=say, how_long="a few minutes",
    )  # fmt: skip


def router_image(src: Source, built: Path, work: Path) -> images.Image:
    """The router image: router, its private libraries, libfsocket.so and the start script."""
    root = work / "freeflow-real-root"
    libs = sorted((built / "prefix" / "lib").glob("lib*.so*"))
    extra = {"/router": built / "router", "/libfsocket.so": built / "libfsocket.so"}
    extra |= {f"{LIB_DIR}/{lib.name}": lib for lib in libs}
    private = {"LD_LIBRARY_PATH": str(built / "prefix" / "lib")}
    system_libs = images.libraries(built / "router", private)
    images.build_root(
        root, ["sh", "cp", "mv", "rm", "sleep", "cat", "ls"], extra,
        extra_libs=[lib for lib in system_libs if not str(lib).startswith(str(built))],
    )  # fmt: skip
    start = root / "start.sh"
    start.write_text(START)
    start.chmod(0o755)
    return images.Image(
        src.image,
        (
            'ENTRYPOINT ["/bin/sh", "/start.sh"]',
            f"LABEL netrun.freeflow.tcp={src.tcp}",
            f"LABEL netrun.freeflow.master={src.master}",
            "LABEL netrun.lab=local-build",
        ),
        images.tar_root(root),
    )
