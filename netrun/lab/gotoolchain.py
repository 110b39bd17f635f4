"""Go for the lab's builds (flanneld, turncat): the machine's own when it is new enough,
else Go's own toolchain module fetched from the Go module proxy, as `go` itself does.

A fresh Debian 12 has no Go, or Debian's 1.19, while flanneld v0.28.10's go.mod asks for go
1.26. `go` switches toolchains by downloading the module ``golang.org/toolchain@v0.0.1-
go<version>.<os>-<arch>`` from GOPROXY and checking it against the checksum database; Go
1.19 cannot, so the lab does the same here: the zip from the proxy, its ``h1:`` hash
(golang.org/x/mod/sumdb/dirhash's Hash1) checked against the checksum database as the
proxy serves it (``<proxy>/sumdb/sum.golang.org/lookup/...``), unpacked once into
``<cache>/go-toolchain/go<version>.<os>-<arch>``. GOSUMDB=off skips the check, as for `go`.
"""

from __future__ import annotations

import base64
import hashlib
import os
import platform
import re
import shutil
import subprocess
import tempfile
import urllib.request
import zipfile
from collections.abc import Callable
from pathlib import Path

from netrun.errors import NetrunError
from netrun.lab import build_cache

#: the oldest Go the lab's builds take (flannel v0.28.10's go.mod: go 1.26.0)
MINIMUM = (1, 26)
#: the toolchain fetched when the machine has none that new
VERSION = "1.26.8"
FALLBACKS = (Path("/usr/local/go/bin/go"), Path("/usr/lib/go/bin/go"))
DEFAULT_PROXY = "https://proxy.golang.org"
DOWNLOAD_TIMEOUT = 600.0
_ARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}
_GOVERSION = re.compile(r"go(\d+)\.(\d+)")

Say = Callable[[str], None] | None


def version_of(go: Path) -> tuple[int, int] | None:
    """(major, minor) of a go binary (``go env GOVERSION``), None when it does not run."""
    try:
        out = subprocess.run(
            [str(go), "env", "GOVERSION"], capture_output=True, text=True, timeout=30,
            env={**os.environ, "GOTOOLCHAIN": "local"},
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    found = _GOVERSION.match(out.stdout.strip())
    return (int(found.group(1)), int(found.group(2))) if found else None


def local() -> Path | None:
    """The machine's own Go when it is at least MINIMUM: PATH's, then the usual folders."""
    on_path = shutil.which("go")
    for go in ([Path(on_path)] if on_path else []) + [p for p in FALLBACKS if p.is_file()]:
        found = version_of(go)
        if found is not None and found >= MINIMUM:
            return go
    return None


def platform_name() -> str:
    arch = _ARCH.get(platform.machine().lower())
    if arch is None:
        raise NetrunError(f"Go toolchain: no download for machine type {platform.machine()}")
    return f"linux-{arch}"


def toolchain_dir(version: str = VERSION) -> Path:
    return build_cache.cache_dir("go-toolchain", f"go{version}.{platform_name()}")


def hash1(archive: Path) -> str:
    """The module zip's ``h1:`` hash (dirhash.HashZip with Hash1): sha256 of the sorted
    lines "<sha256 hex>  <name>" of every file in it."""
    with zipfile.ZipFile(archive) as zf:
        lines = []
        for name in sorted(i.filename for i in zf.infolist() if not i.is_dir()):
            lines.append(f"{hashlib.sha256(zf.read(name)).hexdigest()}  {name}\n")
    summary = hashlib.sha256("".join(lines).encode()).digest()
    return "h1:" + base64.b64encode(summary).decode()


def proxy() -> str:
    """The first http(s) proxy of GOPROXY (go's own default when unset)."""
    for entry in re.split(r"[,|]", os.environ.get("GOPROXY") or DEFAULT_PROXY):
        if entry.startswith(("https://", "http://")):
            return entry.rstrip("/")
    raise NetrunError("GOPROXY names no http(s) proxy: the lab cannot fetch a Go toolchain")


def _fetch(url: str, into: Path | None = None) -> str:
    try:
        with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT) as answer:
            if into is None:
                return str(answer.read().decode())
            with into.open("wb") as out:
                shutil.copyfileobj(answer, out)
            return ""
    except OSError as exc:
        raise NetrunError(f"Go toolchain: cannot fetch {url}: {exc}") from exc


def fetch(version: str = VERSION, say: Say = None) -> Path:
    """Go ``version`` from the module proxy, checked and unpacked once; its go binary."""
    target = toolchain_dir(version)
    go = target / "bin" / "go"
    if go.is_file():
        return go
    module = f"golang.org/toolchain@v0.0.1-go{version}.{platform_name()}"
    base = proxy()
    if say:
        say(f"Go {version}: fetching {module} from {base} (no Go {MINIMUM[0]}.{MINIMUM[1]}+ here)")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".fetch-") as tmp:
        archive = Path(tmp) / "toolchain.zip"
        path, _, ver = module.partition("@")
        _fetch(f"{base}/{path}/@v/{ver}.zip", archive)
        if os.environ.get("GOSUMDB", "") != "off":
            lookup = _fetch(f"{base}/sumdb/sum.golang.org/lookup/{module}")
            want = next(
                (ln.split()[2] for ln in lookup.splitlines() if ln.startswith(f"{path} {ver} ")),
                None,
            )
            got = hash1(archive)
            if want != got:
                raise NetrunError(
                    f"Go toolchain {module}: its hash {got} is not the checksum database's "
                    f"({want or 'none found'}); not used"
                )
        unpacked = Path(tmp) / "go"
        prefix = f"{module}/"
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                name = info.filename
                if info.is_dir() or not name.startswith(prefix) or ".." in name.split("/"):
                    continue
                dest = unpacked / name[len(prefix) :]
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(zf.read(info))
                if "/bin/" in f"/{name[len(prefix) :]}" or "/pkg/tool/" in name:
                    dest.chmod(0o755)  # as go's own toolchain switch does; zips keep no modes
        if target.exists():  # another build unpacked it meanwhile
            return go
        unpacked.rename(target)
    return go


def go_binary(say: Say = None) -> Path:
    """The Go the lab's builds use: the machine's own if new enough, else fetched."""
    return local() or fetch(VERSION, say)
