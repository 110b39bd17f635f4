"""A read-only image registry on each node's loopback, for tools that pull whatever happens.

k8s-netperf creates its pods with ``imagePullPolicy: Always`` and the image
``quay.io/cloud-bulldozer/k8s-netperf:latest``: with no registry reachable, the kubelet's
pull fails even when the image is in the node's containerd. So the lab serves the image
the way such a tool expects: each node's containerd reads registry hosts from
``<node>/containerd/certs.d`` (``config_path``, set in netrun.lab.k8s.node), where a
``hosts.toml`` sends quay.io's pulls to ``http://127.0.0.1:PORT`` in the node's own network
namespace (the real quay.io is not one of its hosts). There this module's server
(``python -m netrun.lab.k8s.registry ROOT PORT``) answers the distribution API's GET and
HEAD of ``/v2/``, manifests and blobs from ROOT, an image written by `write_image`. It binds
loopback only and serves nothing else; `netrun lab down` ends it with every other process
of the namespace.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import subprocess
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from netrun.lab.k8s.layout import Node
from netrun.lab.system import pid_matches, pids_in_netns, wait_until

PORT = 5000
MANIFEST_TYPE = "application/vnd.oci.image.manifest.v1+json"
CONFIG_TYPE = "application/vnd.oci.image.config.v1+json"
LAYER_TYPE = "application/vnd.oci.image.layer.v1.tar+gzip"
_PATH = re.compile(r"^/v2/(?P<name>.+)/(?P<kind>manifests|blobs)/(?P<ref>[A-Za-z0-9_.:+-]+)$")


def _blob(root: Path, data: bytes) -> dict[str, object]:
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    (root / "blobs").mkdir(parents=True, exist_ok=True)
    (root / "blobs" / digest.replace(":", "-")).write_bytes(data)
    return {"digest": digest, "size": len(data)}


def write_image(root: Path, name: str, layer: bytes, entrypoint: list[str]) -> str:
    """`layer` (an uncompressed rootfs tar) as image `name` (repository:tag) under `root`:
    its blobs and a tag file naming its manifest; returns the manifest's digest."""
    repo, _, tag = name.rpartition(":")
    packed = gzip.compress(layer, compresslevel=1, mtime=0)
    config = {
        "architecture": "amd64",
        "os": "linux",
        "config": {"Entrypoint": entrypoint, "Labels": {"netrun.lab": "local-build"}},
        "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(layer).hexdigest()]},
        "history": [{"created_by": "netrun lab (built locally, served on loopback)"}],
    }
    manifest = {
        "schemaVersion": 2,
        "mediaType": MANIFEST_TYPE,
        "config": {"mediaType": CONFIG_TYPE, **_blob(root, json.dumps(config).encode())},
        "layers": [{"mediaType": LAYER_TYPE, **_blob(root, packed)}],
    }
    digest = str(_blob(root, json.dumps(manifest).encode())["digest"])
    tags = root / "tags" / repo.split("/", 1)[1]  # quay.io/a/b -> tags/a/b/<tag>
    tags.mkdir(parents=True, exist_ok=True)
    (tags / tag).write_text(digest)
    return digest


class _Handler(BaseHTTPRequestHandler):
    root = Path()

    def log_message(self, format: str, *args: object) -> None:
        sys.stderr.write(f"{self.command} {self.path} {args[1] if len(args) > 1 else ''}\n")

    def _send(self, status: int, body: bytes, ctype: str, digest: str = "") -> None:
        self.send_response(status)
        self.send_header("Docker-Distribution-API-Version", "registry/2.0")
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        if digest:
            self.send_header("Docker-Content-Digest", digest)
        self.end_headers()
        if self.command == "GET":
            self.wfile.write(body)

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path in ("/v2", "/v2/"):
            return self._send(200, b"{}", "application/json")
        found = _PATH.match(path)
        if not found or ".." in found["name"]:
            return self._send(404, b'{"errors":[{"code":"NAME_UNKNOWN"}]}', "application/json")
        ref = found["ref"]
        if found["kind"] == "manifests" and not ref.startswith("sha256:"):
            tag = self.root / "tags" / found["name"] / ref
            ref = tag.read_text().strip() if tag.is_file() else ""
        blob = self.root / "blobs" / ref.replace(":", "-")
        if not ref.startswith("sha256:") or not blob.is_file():
            return self._send(404, b'{"errors":[{"code":"MANIFEST_UNKNOWN"}]}', "application/json")
        body = blob.read_bytes()
        ctype = MANIFEST_TYPE if found["kind"] == "manifests" else "application/octet-stream"
        return self._send(200, body, ctype, ref)

    do_HEAD = do_GET


def hosts_dir(node: Node) -> Path:
    """The node containerd's ``config_path``: one folder per registry host."""
    return node.dir / "containerd" / "certs.d"


def hosts_toml(port: int = PORT) -> str:
    """The node's loopback as the registry's host and as its server (the real quay.io is
    named nowhere). containerd 1.6 (Debian 12) pulls through the [host] entry; with the
    ``server`` line alone it went to https://quay.io (checked on the lab, 2026-12-03)."""
    here = f"http://127.0.0.1:{port}"
    return f'server = "{here}"\n[host."{here}"]\n  capabilities = ["pull", "resolve"]\n'


def serve(node: Node, root: Path, registry_host: str = "quay.io", port: int = PORT) -> int:
    """This module's server in `node`'s namespace serving `root`, and the node's containerd
    told to pull `registry_host`'s images from it; returns the server's pid (kept running:
    a second call finds it)."""
    needles = ("netrun.lab.k8s.registry", str(root))
    running = [p for p in pids_in_netns(node.host.namespace) if pid_matches(p, *needles)]
    if not running:
        log = (root / f"registry-{node.name}.log").open("ab")
        argv = ["ip", "netns", "exec", node.host.namespace, sys.executable, "-m",
                "netrun.lab.k8s.registry", str(root), str(port)]  # fmt: skip
        proc = subprocess.Popen(argv, stdout=log, stderr=log, start_new_session=True)
        running = [proc.pid]
        url = f"http://127.0.0.1:{port}/v2/"
        probe = ["ip", "netns", "exec", node.host.namespace, sys.executable, "-c",
                 f"import urllib.request as u; u.urlopen({url!r}, timeout=2)"]  # fmt: skip
        wait_until(
            lambda: subprocess.run(probe, capture_output=True).returncode == 0,
            timeout=15,
            what=f"the image registry on {node.name} (log: {log.name})",
        )
    target = hosts_dir(node) / registry_host
    target.mkdir(parents=True, exist_ok=True)
    (target / "hosts.toml").write_text(hosts_toml(port))
    return running[0]


def main(argv: list[str]) -> None:
    _Handler.root = Path(argv[0])
    ThreadingHTTPServer(("127.0.0.1", int(argv[1])), _Handler).serve_forever()


if __name__ == "__main__":
    main(sys.argv[1:])
