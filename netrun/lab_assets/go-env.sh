# Sourced by the lab's Go build scripts (build-go-program.sh, build-flanneld.sh), with
# $cache set: Go as $GO (netrun.lab.gotoolchain), else from PATH or /usr/local/go; GOPATH,
# the module and the build caches under $cache, shared by every Go build of the lab, so a rebuild downloads nothing; and a
# throwaway folder for the build's own module ($work, removed on exit) as the current one.
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
export GOPATH="$cache" GOMODCACHE="$cache/mod" GOCACHE="$cache/build" GOFLAGS=-modcacherw \
    GOTOOLCHAIN=local
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
