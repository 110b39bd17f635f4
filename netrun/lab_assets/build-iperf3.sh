#!/bin/sh
# Build one iperf3 release from its git source, as ../shared/third_party/README.md records it:
# `git archive TAG`, then configure with a private prefix and no shared library (the binary
# then needs only libc, so every lab host runs it as it is), make, make install.
# usage: build-iperf3.sh SRC_GIT_DIR COMMIT OUT_DIR
# OUT_DIR receives bin/iperf3; the caller renames it into the cache only once this script
# succeeded, so a half-made build is never cached.
set -eu
src=$1 commit=$2 out=$3
jobs=$(nproc 2>/dev/null || echo 1)
mkdir -p "$out/work"
git -C "$src" archive "$commit" | tar -x -C "$out/work"
cd "$out/work"
# no OpenSSL: the lab's hosts need no --rsa-public-key authentication, and the build then
# asks for nothing beyond gcc and make
./configure --prefix="$out" --disable-shared --without-openssl
make -j"$jobs"
make install
cd "$out"
rm -rf "$out/work" "$out/share" "$out/include" "$out/lib"
"$out/bin/iperf3" --version
