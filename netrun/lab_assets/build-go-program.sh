#!/bin/sh
# Build one Go program from the Go module proxy: build-go-program.sh PACKAGE VERSION OUT GOCACHE
# e.g. github.com/l7mp/stunner/cmd/turncat v1.2.1 OUT /var/cache/netrun/go
# A throwaway module requires PACKAGE's module at VERSION (`go get`, not `go install
# pkg@version`: the latter also asks the proxy for the module's version list, which a
# proxy may refuse); the program lands in OUT/bin. GOCACHE holds Go's module and build
# caches, shared by every Go build of the lab, so a rebuild downloads nothing.
set -eu
pkg=$1 version=$2 out=$3 cache=$4
. "$(dirname "$0")/go-env.sh"
export CGO_ENABLED=0
"$GO" mod init netrun.local/build >/dev/null 2>&1
"$GO" get "$pkg@$version"
mkdir -p "$out/bin"
nice -n 10 "$GO" build -trimpath -ldflags "-s -w" -o "$out/bin/$(basename "$pkg")" "$pkg"
"$GO" version > "$out/go-version"
"$GO" list -m -f '{{.Path}} {{.Version}}' all | grep -F "$(echo "$pkg" | cut -d/ -f1-3) " \
    > "$out/module-version" || true
