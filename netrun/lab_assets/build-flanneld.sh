#!/bin/sh
# Build flanneld from the Go module proxy: build-flanneld.sh VERSION OUT GOCACHE
# e.g. v0.28.10 OUT /var/cache/netrun/go. flanneld is the main package at the root of
# github.com/flannel-io/flannel. Its main.go imports every backend, and the proxy does not
# serve the Tencent Cloud SDK module that the tencentvpc backend needs (403), so neither
# `go install` nor `go get` of that package builds: a throwaway module requires flannel at
# VERSION, copies flannel's own main.go less that one blank import, and builds it as
# upstream's Makefile does on amd64 (cgo on, for the udp backend's C proxy; static;
# pkg/version.Version stamped). Every other backend (vxlan, host-gw, udp, ipip, ipsec,
# wireguard, alloc, extension) is in. The program lands in OUT/bin/flanneld. GOCACHE holds
# Go's module and build caches, shared by every Go build of the lab.
set -eu
version=$1 out=$2 cache=$3
module=github.com/flannel-io/flannel
. "$(dirname "$0")/go-env.sh"
export CGO_ENABLED=1
"$GO" mod init netrun.local/flanneld >/dev/null 2>&1
"$GO" mod edit -require="$module@$version"
src=$("$GO" mod download -json "$module@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -f "$src/main.go" ] || { echo "build-flanneld: no main.go in $module@$version" >&2; exit 1; }
grep -v '"github.com/flannel-io/flannel/pkg/backend/tencentvpc"' "$src/main.go" > main.go
"$GO" mod tidy
mkdir -p "$out/bin"
nice -n 10 "$GO" build -trimpath -o "$out/bin/flanneld" \
    -ldflags "-s -w -X $module/pkg/version.Version=$version -extldflags -static" .
"$GO" version > "$out/go-version"
echo "$module $version (less pkg/backend/tencentvpc)" > "$out/module-version"
