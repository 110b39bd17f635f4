"""flanneld for the lab's hosts: built from the Go module proxy once, cached by version.

`netrun lab flanneld` (and `make flanneld`; `lab up --docker` when the cache lacks it)
builds the real flanneld (github.com/flannel-io/flannel, its main package) with
netrun/lab_assets/build-flanneld.sh into ``<cache>/flannel/<version>/bin/flanneld``; Go's
module and build caches are the ones every Go build of the lab shares (``<cache>/go``;
netrun.lab.go_program builds it as it does turncat).
The script drops one blank import from flannel's main.go, the Tencent Cloud backend, whose
SDK module the proxy does not serve; every other backend is built in. Nothing of Flannel
is kept in this repository. The lab runs it (netrun.lab.overlay); a Kubernetes lab may
run the same binary with --kube-subnet-mgr.
"""

from __future__ import annotations

from netrun.lab import images
from netrun.lab.go_program import GoProgram

MODULE = "github.com/flannel-io/flannel"
#: the newest release the Go module proxy serves here (v0.28.4 and v0.28.10 are served)
VERSION = "v0.28.10"
FLANNELD = GoProgram(
    "flanneld", "flannel", "flanneld", VERSION, images.ASSETS / "build-flanneld.sh",
    timeout=3600.0,  # cold: about 420 s on 2 cores shared with other jobs (load 1-9)
    tools={"gcc": "gcc"},  # cgo: the udp backend's C proxy
)  # fmt: skip
cached = FLANNELD.cached
build = FLANNELD.build
