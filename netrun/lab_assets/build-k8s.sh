#!/bin/sh
# Build Kubernetes (one multi-call binary `kube`: kube-apiserver, kube-controller-manager,
# kube-scheduler, kubelet, kubectl), etcd and the CNI plugins from the Go module proxy.
# k8s.io/kubernetes replaces its staging modules with local folders, which a dependency's
# go.mod cannot do, so the wrapper module beside this script (k8s/go.mod) replaces each with
# the published v0.<minor>.<patch> release; for another version this script rewrites them.
# usage: build-k8s.sh VERSION OUT_DIR        (VERSION like 1.37.2)
# OUT_DIR receives bin/; the caller renames it into the cache only once this script
# succeeded, so a half-made build is never cached.
set -eu
version=${1#v} out=$2
here=$(cd "$(dirname "$0")" && pwd)
# GO: the Go netrun.lab.gotoolchain chose; without it (the script run by hand, or .ci/run's
# make with a plain PATH) look where Debian's golang and the tarball put Go
if [ -n "${GO:-}" ]; then
    PATH=$(dirname "$GO"):$PATH
elif ! command -v go >/dev/null 2>&1; then
    for d in /usr/local/go/bin /usr/lib/go/bin; do
        [ -x "$d/go" ] && PATH=$PATH:$d && break
    done
fi
command -v go >/dev/null 2>&1 || { echo "build-k8s.sh: no Go toolchain (looked in PATH, /usr/local/go/bin, /usr/lib/go/bin)" >&2; exit 3; }
minor=$(echo "$version" | cut -d. -f2)
staging=0.$(echo "$version" | cut -d. -f2-3)
mkdir -p "$out/src" "$out/bin"
cp -r "$here/k8s/." "$out/src/"
cd "$out/src"
if ! grep -q "k8s.io/kubernetes v$version\$" go.mod; then
    # another release: point the wrapper at it and its staging modules, then resolve
    go mod edit -require="k8s.io/kubernetes@v$version"
    for m in $(go mod edit -json | sed -n 's/.*"Path": "\(k8s.io\/[a-z-]*\)".*/\1/p' | sort -u); do
        case $m in k8s.io/kubernetes|k8s.io/kube-openapi|k8s.io/utils|k8s.io/klog|k8s.io/gengo) continue ;; esac
        if go mod edit -json | grep -q "\"Path\": \"$m\",\$" && grep -q "^	$m => " go.mod; then
            go mod edit -replace="$m=$m@v$staging"
        fi
    done
    go mod tidy
fi
stamp() {
    for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
        printf ' -X %s.gitVersion=v%s -X %s.gitMajor=1 -X %s.gitMinor=%s' "$p" "$version" "$p" "$p" "$minor"
        printf ' -X %s.gitTreeState=clean -X %s.buildDate=%s' "$p" "$p" "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    done
}
export CGO_ENABLED=0
nice -n 10 go build -trimpath -tags selinux,notest -ldflags "-s -w$(stamp)" -o "$out/bin/kube" ./cmd/kube
nice -n 10 go build -trimpath -ldflags "-s -w" -o "$out/bin/etcd" ./cmd/etcd
# the CNI plugins the lab's bridge network uses; their module has no replace directives
GOBIN="$out/bin/cni" nice -n 10 go install -trimpath -ldflags "-s -w" \
    github.com/containernetworking/plugins/plugins/main/bridge@v1.10.0 \
    github.com/containernetworking/plugins/plugins/main/loopback@v1.10.0 \
    github.com/containernetworking/plugins/plugins/ipam/host-local@v1.10.0 \
    github.com/containernetworking/plugins/plugins/meta/portmap@v1.10.0
for c in kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl; do
    ln -sf kube "$out/bin/$c"
done
rm -rf "$out/src"
"$out/bin/kubectl" version --client
"$out/bin/etcd" --version
