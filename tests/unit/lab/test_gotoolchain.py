"""The Go toolchain the lab fetches when the machine has no Go new enough: the module zip's
h1 hash as Go computes it (a real go.sum line), checked against the checksum database's
answer, unpacked with its programs executable; a zip whose hash differs is refused."""

from __future__ import annotations

import http.server
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from netrun.errors import NetrunError
from netrun.lab import gotoolchain
from netrun.lab.build_cache import CACHE_ENV

FIXTURES = Path(__file__).parents[2] / "fixtures" / "gotoolchain"


def test_hash1_is_gos_own() -> None:
    """github.com/josharian/intern v1.0.0's zip from Go's module cache, and the h1 Go wrote
    beside it (its .ziphash, the go.sum figure)."""
    archive = FIXTURES / "josharian-intern-v1.0.0.zip"
    want = (FIXTURES / "josharian-intern-v1.0.0.ziphash").read_text().strip()
    assert gotoolchain.hash1(archive) == want


@pytest.fixture
def proxy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, bytes]]:
    """A module proxy on loopback serving what the test puts in the returned dict."""
    served: dict[str, bytes] = {}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = served.get(self.path)
            self.send_response(200 if body is not None else 404)
            self.end_headers()
            self.wfile.write(body or b"not found")

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("GOPROXY", f"http://127.0.0.1:{server.server_port},direct")
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv("GOSUMDB", raising=False)
    try:
        yield served
    finally:
        server.shutdown()


def toolchain_zip(folder: Path, version: str) -> tuple[str, Path]:
    module = f"golang.org/toolchain@v0.0.1-go{version}.{gotoolchain.platform_name()}"
    archive = folder / "t.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr(f"{module}/bin/go", f"#!/bin/sh\necho go{version}\n")
        zf.writestr(f"{module}/pkg/tool/linux/compile", "#!/bin/sh\n")
        zf.writestr(f"{module}/VERSION", f"go{version}\n")
    return module, archive


def test_a_fetched_toolchain_is_checked_and_unpacked(
    proxy: dict[str, bytes], tmp_path: Path
) -> None:
    module, archive = toolchain_zip(tmp_path, "9.9.9")
    path, _, ver = module.partition("@")
    proxy[f"/{path}/@v/{ver}.zip"] = archive.read_bytes()
    line = f"{path} {ver} {gotoolchain.hash1(archive)}\n"
    proxy[f"/sumdb/sum.golang.org/lookup/{module}"] = f"123\n{line}\n".encode()
    said: list[str] = []
    go = gotoolchain.fetch("9.9.9", said.append)
    assert go.read_text().endswith("echo go9.9.9\n") and go.stat().st_mode & 0o111
    assert (go.parents[1] / "pkg/tool/linux/compile").stat().st_mode & 0o111
    assert not (go.parents[1] / "VERSION").stat().st_mode & 0o111
    assert said and module in said[0]
    assert gotoolchain.fetch("9.9.9") == go  # once: the cached one


def test_a_toolchain_whose_hash_differs_is_refused(proxy: dict[str, bytes], tmp_path: Path) -> None:
    module, archive = toolchain_zip(tmp_path, "9.9.8")
    path, _, ver = module.partition("@")
    proxy[f"/{path}/@v/{ver}.zip"] = archive.read_bytes()
    proxy[f"/sumdb/sum.golang.org/lookup/{module}"] = f"{path} {ver} h1:AAAA=\n".encode()
    with pytest.raises(NetrunError, match="not the checksum database's"):
        gotoolchain.fetch("9.9.8")
    assert not gotoolchain.toolchain_dir("9.9.8").exists()
