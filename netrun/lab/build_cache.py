"""Building a third-party program once per machine, into the lab's cache.

The real FreeFlow, iperf3 releases and netperf are built from source the same way: a folder
per source key under the cache root; a build runs in a temporary sibling folder and is
renamed into place only when it succeeded, so a half-made build is never cached; a build
killed past its deadline leaves a temporary folder the next one removes; a failed build's
log is kept beside the cache with a one-line error naming it. Every build of the lab shares
one cache root, ``$NETRUN_CACHE_DIR`` or /var/cache/netrun.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from netrun.errors import NetrunError
from netrun.lab import images
from netrun.lab.system import run, run_build

CACHE_ENV = "NETRUN_CACHE_DIR"
DEFAULT_CACHE = Path("/var/cache/netrun")


def cache_dir(*parts: str) -> Path:
    """A folder of the lab's cache (``$NETRUN_CACHE_DIR``, else /var/cache/netrun)."""
    return Path(os.environ.get(CACHE_ENV) or DEFAULT_CACHE, *parts)


def build(
    what: str,
    done: Path,
    src_path: Path,
    argv: Callable[[Path, Path], list[str]],
    *,
    complete: Callable[[Path], bool],
    tools: Mapping[str, str],
    timeout: float,
    say: images.Say = None,
    how_long: str = "about a minute",
) -> Path:
    """``done`` (the cached build), built when ``complete(done)`` is not yet true.

    ``argv(repo, out)`` is the build script's command line, given the source as a git
    directory (a bundle is cloned bare first: git archive cannot read one) and the folder
    to build into; ``tools``: program -> its Debian package, checked before anything runs.
    """
    if complete(done):
        return done
    for tool, package in tools.items():
        if shutil.which(tool) is None:
            raise NetrunError(f"{tool} not found: {what}'s build needs it: apt install {package}")
    done.parent.mkdir(parents=True, exist_ok=True)
    for stale in done.parent.glob(f".{done.name}.*"):  # a build killed past its deadline
        if time.time() - stale.stat().st_mtime > timeout:
            shutil.rmtree(stale, ignore_errors=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{done.name}.", dir=done.parent))
    try:
        repo = src_path
        if src_path.is_file():
            repo = tmp / "src.git"
            run(["git", "clone", "-q", "--bare", str(src_path), str(repo)], timeout=300)
        if say:
            say(f"{what}: building {done.name} from {src_path} ({how_long}, once)")
        started = time.monotonic()
        out = tmp / "out"
        result = run_build(argv(repo, out), timeout=timeout)
        text = result.stdout + result.stderr
        if result.returncode != 0 or not complete(out):
            log = done.parent / f"{done.name}.failed.log"
            log.write_text(text)
            tail = " | ".join(text.strip().splitlines()[-3:])
            raise NetrunError(f"{what} build failed (log: {log}): {tail}")
        (out / "build.log").write_text(text)
        (out / "build-seconds").write_text(f"{time.monotonic() - started:.1f}\n")
        if done.exists():
            shutil.rmtree(done)
        out.rename(done)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if say:
        say(f"{what}: built in {(done / 'build-seconds').read_text().strip()}s into {done}")
    return done
