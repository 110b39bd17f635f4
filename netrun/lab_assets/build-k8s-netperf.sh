#!/bin/sh
# Build k8s-netperf from its source with its modules from the Go module proxy:
# build-k8s-netperf.sh SRC VERSION OUT GOCACHE, e.g. k8s-netperf.bundle v0.1.43 OUT
# /var/cache/netrun/go. The proxy refuses the module github.com/cloud-bulldozer/k8s-netperf
# itself (403 at every version), so its source comes from SRC (a git clone or bundle of
# github.com/cloud-bulldozer/k8s-netperf with the tag VERSION); every module it requires
# comes from the proxy, checked against its go.sum. Built as upstream's Makefile does
# (`go build ./cmd/k8s-netperf`, CGO_ENABLED=0, go-commons' version stamped). A source whose
# pkg/virtctl/binaries/linux/amd64/virtctl (KubeVirt's prebuilt virtctl, embedded for the
# --vm tests) is empty builds all the same: k8s-netperf then looks for virtctl on PATH.
# The program lands in OUT/bin/k8s-netperf. GOCACHE holds Go's module and build caches,
# shared by every Go build of the lab.
set -eu
src=$1 version=$2 out=$3 cache=$4
. "$(dirname "$0")/go-env.sh"
export CGO_ENABLED=0 GOFLAGS="-modcacherw -mod=readonly"
git clone -q --branch "$version" "$src" k8s-netperf 2>&1 | grep -v 'detached HEAD' || true
cd k8s-netperf
commit=$(git rev-parse HEAD)
mkdir -p pkg/virtctl/binaries/linux/amd64
[ -e pkg/virtctl/binaries/linux/amd64/virtctl ] || : > pkg/virtctl/binaries/linux/amd64/virtctl
mkdir -p "$out/bin"
nice -n 10 "$GO" build -trimpath -o "$out/bin/k8s-netperf" -ldflags "-s -w \
    -X github.com/cloud-bulldozer/go-commons/v2/version.GitCommit=$commit \
    -X github.com/cloud-bulldozer/go-commons/v2/version.Version=$version" ./cmd/k8s-netperf
"$GO" version > "$out/go-version"
echo "github.com/cloud-bulldozer/k8s-netperf $version ($commit)" > "$out/module-version"
