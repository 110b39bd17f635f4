#!/bin/sh
# Build netperf and netserver (HPE netperf) with its histogram and demo support, as
# ../shared/third_party/README.md records it: git archive, autogen.sh, configure, make.
# usage: build-netperf.sh SRC_GIT_DIR COMMIT OUT_DIR
# OUT_DIR receives bin/netperf and bin/netserver; it is only renamed into place by the
# caller once this script succeeded, so a half-made build is never cached.
set -eu
src=$1 commit=$2 out=$3
jobs=$(nproc 2>/dev/null || echo 1)
work=$out/work
mkdir -p "$work"
git -C "$src" archive "$commit" | tar -x -C "$work"
cd "$work"
echo "== autogen"
./autogen.sh
echo "== configure"
# gcc 12 defaults to -fno-common; netperf's globals are defined in more than one file
CFLAGS="-O2 -fcommon" ./configure --prefix="$out" --enable-histogram --enable-demo
echo "== make"
make -j"$jobs"
make install
cd /
rm -rf "$work"
"$out/bin/netperf" -V
echo "== done"
