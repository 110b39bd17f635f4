"""The lab's loopback registry serves an image as a puller resolves it: tag to manifest,
manifest to config and layer, each by its digest; HEAD as GET without the body."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest

from netrun.lab.k8s import registry
from netrun.lab.k8s_netperf import IMAGE


def _layer() -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        info = tarfile.TarInfo("usr/bin/hello")
        info.size = 5
        tar.addfile(info, io.BytesIO(b"hello"))
    return out.getvalue()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, str, bytes]]:
    layer = _layer()
    digest = registry.write_image(tmp_path, IMAGE, layer, ["/bin/bash"])
    registry._Handler.root = tmp_path
    server = ThreadingHTTPServer(("127.0.0.1", 0), registry._Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", digest, layer
    server.shutdown()
    server.server_close()


def _get(url: str, method: str = "GET") -> tuple[int, dict[str, str], bytes]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method=method)) as answer:
            return answer.status, dict(answer.headers), answer.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def test_a_tag_resolves_to_a_manifest_whose_blobs_are_served_by_digest(
    served: tuple[str, str, bytes],
) -> None:
    base, digest, _ = served
    assert _get(f"{base}/v2/")[0] == 200
    status, headers, body = _get(
        f"{base}/v2/cloud-bulldozer/k8s-netperf/manifests/latest?ns=quay.io"
    )
    assert status == 200 and headers["Docker-Content-Digest"] == digest
    assert headers["Content-Type"] == registry.MANIFEST_TYPE
    assert "sha256:" + hashlib.sha256(body).hexdigest() == digest
    manifest = json.loads(body)
    config = json.loads(
        _get(f"{base}/v2/cloud-bulldozer/k8s-netperf/blobs/{manifest['config']['digest']}")[2]
    )
    packed = _get(f"{base}/v2/cloud-bulldozer/k8s-netperf/blobs/{manifest['layers'][0]['digest']}")[
        2
    ]
    assert len(packed) == manifest["layers"][0]["size"]
    assert config["rootfs"]["diff_ids"] == [
        "sha256:" + hashlib.sha256(gzip.decompress(packed)).hexdigest()
    ]
    assert config["config"]["Entrypoint"] == ["/bin/bash"]
    head = _get(f"{base}/v2/cloud-bulldozer/k8s-netperf/manifests/{digest}", "HEAD")
    assert head[0] == 200 and head[2] == b"" and head[1]["Content-Length"] == str(len(body))


def test_what_it_does_not_hold_is_a_404(served: tuple[str, str, bytes]) -> None:
    base, _, _ = served
    assert _get(f"{base}/v2/cloud-bulldozer/k8s-netperf/manifests/v9")[0] == 404
    assert _get(f"{base}/v2/other/image/manifests/latest")[0] == 404
    assert _get(f"{base}/v2/a/b/blobs/sha256:{'0' * 64}")[0] == 404
    assert _get(f"{base}/v2/../../etc/manifests/passwd")[0] == 404


def test_containerd_is_sent_to_loopback_for_quay_io_and_nowhere_else() -> None:
    toml = registry.hosts_toml(5000)
    assert toml.startswith('server = "http://127.0.0.1:5000"\n')  # not https://quay.io
    assert '[host."http://127.0.0.1:5000"]' in toml and '"pull", "resolve"' in toml
