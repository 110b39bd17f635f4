"""Container images for the lab, built from this machine's own binaries (nothing is pulled).

netrun-lab/iperf3:latest is iperf3 and iperf (2) with sh, cat, grep, sleep and their
libraries, and netperf and netserver when the lab has a netperf build (netrun.lab.netperf).
netrun-lab/freeflow-standin:latest is a STAND-IN for the FreeFlow router image (not
FreeFlow): its entrypoint copies the lab's libfsocket.so (a pass-through LD_PRELOAD
library built from netrun/lab_assets/fsocket.c) into /freeflow and sleeps; with
`lab up --freeflow-src` the real router image is built instead (netrun/lab/freeflow.py).
On real labs netrun uses the usual images (networkstatic/iperf3, freeflow/freeflow:tcp).
"""

from __future__ import annotations

import io
import re
import shutil
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from netrun.errors import NetrunError
from netrun.lab.system import run

ASSETS = Path(__file__).resolve().parent.parent / "lab_assets"
IPERF3_IMAGE = "netrun-lab/iperf3:latest"
FREEFLOW_IMAGE = "netrun-lab/freeflow-standin:latest"
FSOCKET_IN_IMAGE = "/opt/netrun-standin/libfsocket.so"

Say = Callable[[str], None] | None
_LDD_PATH = re.compile(r"(/\S+)\s+\(0x")

STANDIN_ENTRYPOINT = f"""#!/bin/sh
# netrun lab STAND-IN for the FreeFlow router (not FreeFlow): publish the pass-through
# libfsocket.so in /freeflow like the real router publishes its library, then idle.
set -e
mkdir -p /freeflow/loaded
chmod 1777 /freeflow/loaded
cp {FSOCKET_IN_IMAGE} /freeflow/libfsocket.so.tmp
mv /freeflow/libfsocket.so.tmp /freeflow/libfsocket.so
exec sleep infinity
"""


@dataclass(frozen=True)
class Image:
    """An image the lab imports: its name, the docker-import changes, and its tarball."""

    name: str
    changes: tuple[str, ...]
    tar: bytes


def libraries(binary: Path, env: dict[str, str] | None = None) -> list[Path]:
    """Shared libraries `binary` loads, as ldd resolves them here (loader included)."""
    out = run(["ldd", str(binary)], check=False, env=env).stdout
    return [Path(m.group(1)) for m in _LDD_PATH.finditer(out)]


def _which(tool: str) -> Path:
    found = shutil.which(tool)
    if not found:
        raise NetrunError(f"{tool} not found: it is needed to build the lab's images")
    return Path(found).resolve()


def build_root(
    root: Path,
    tools: list[str],
    extra: dict[str, Path] | None = None,
    libs_for: tuple[Path, ...] = (),
    extra_libs: list[Path] | None = None,
) -> None:
    """A minimal root: tools in /usr/bin (/bin, /sbin link there), files, libraries, /tmp.

    `libs_for` names binaries that are not copied but whose libraries must be present;
    `extra_libs` are libraries copied to their own path (ldd's view of a private build).
    """
    if root.exists():
        shutil.rmtree(root)
    (root / "usr" / "bin").mkdir(parents=True)
    (root / "bin").symlink_to("usr/bin")
    (root / "sbin").symlink_to("usr/bin")
    (root / "tmp").mkdir(mode=0o1777)
    (root / "tmp").chmod(0o1777)
    (root / "etc").mkdir()
    (root / "etc" / "passwd").write_text("root:x:0:0:root:/root:/bin/sh\n")
    (root / "etc" / "group").write_text("root:x:0:\n")
    (root / "root").mkdir(mode=0o700)
    files: dict[str, Path] = {f"/usr/bin/{tool}": _which(tool) for tool in tools}
    files.update(extra or {})
    for lib in extra_libs or ():
        files.setdefault(str(lib), lib.resolve())
    for source in [*files.values(), *libs_for]:
        for lib in libraries(source):
            if lib.exists():  # a private library ldd cannot find without its path
                files.setdefault(str(lib), lib.resolve())
    for inside, source in files.items():
        target = root / inside.lstrip("/")
        if target.parent.is_symlink():  # /bin/... and /sbin/... land in /usr/bin
            target = target.parent.resolve() / target.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)


def tar_root(root: Path) -> bytes:
    """The root folder as an uncompressed tarball for `docker import`, owned by root."""
    buffer = io.BytesIO()

    def as_root(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        return info

    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for entry in sorted(root.iterdir()):
            tar.add(entry, arcname=entry.name, filter=as_root)
    return buffer.getvalue()


def build_fsocket(out: Path) -> Path:
    """Compile the stand-in libfsocket.so from the lab's C source."""
    run(["gcc", "-shared", "-fPIC", "-O2", "-Wall", "-o", str(out), str(ASSETS / "fsocket.c")])
    return out


def build(work: Path, netperf: Path | None = None) -> list[Image]:
    """Build both lab images under `work` (reused by every host daemon); with `netperf`
    (a build folder holding bin/netperf and bin/netserver) the iperf3 image carries them."""
    work.mkdir(parents=True, exist_ok=True)
    fsocket = build_fsocket(work / "libfsocket.so")

    iperf_root = work / "iperf3-root"
    # libfsocket.so's libraries go in too, so LD_PRELOAD works inside this image
    # iperf (2) too: tool: iperf2 runs in the container modes with the same image;
    # netperf, netserver and sleep (its readiness loop) for tool: netperf
    extra = {f"/usr/bin/{p}": netperf / "bin" / p for p in ("netperf", "netserver")} if (
        netperf) else {}  # fmt: skip
    build_root(iperf_root, ["iperf3", "iperf", "sh", "cat", "grep", "sleep"], extra,
               libs_for=(fsocket,))  # fmt: skip
    iperf3 = Image(
        IPERF3_IMAGE,
        ('ENTRYPOINT ["iperf3"]', "LABEL netrun.lab=local-build"),
        tar_root(iperf_root),
    )

    ff_root = work / "freeflow-root"
    build_root(
        ff_root,
        ["sh", "cp", "mv", "mkdir", "chmod", "sleep", "cat", "ls"],
        {FSOCKET_IN_IMAGE: fsocket},
    )
    entry = ff_root / "standin-entrypoint.sh"
    entry.write_text(STANDIN_ENTRYPOINT)
    entry.chmod(0o755)
    freeflow = Image(
        FREEFLOW_IMAGE,
        (
            'ENTRYPOINT ["/bin/sh", "/standin-entrypoint.sh"]',
            "LABEL netrun.standin=freeflow",
            "LABEL netrun.lab=local-build",
        ),
        tar_root(ff_root),
    )
    return [iperf3, freeflow]


def load(docker_host: str, image: Image) -> bool:
    """Import `image` into the daemon at `docker_host` unless it has it; True if imported."""
    base = ["docker", "-H", docker_host]
    if run([*base, "image", "inspect", image.name], check=False).returncode == 0:
        return False
    argv = [*base, "import"]
    for change in image.changes:
        argv += ["-c", change]
    run([*argv, "-", image.name], input=image.tar, timeout=120)
    return True
