#!/bin/sh
# Build the real FreeFlow TCP (Microsoft's Freeflow, branches tcp and master) without RDMA
# hardware, as the lab guide (docs/user-guide/lab.md, "The real FreeFlow") records it: libmempool, the mlnx libibverbs
# and librdmacm into a private prefix, the router linked against them, libfsocket.
# usage: build-freeflow.sh SRC_GIT_DIR TCP_COMMIT MASTER_COMMIT OUT_DIR
# OUT_DIR receives router, libfsocket.so and prefix/lib; it is only renamed into place by
# the caller once this script succeeded, so a half-made build is never cached.
set -eu
src=$1 tcp=$2 master=$3 out=$4
jobs=$(nproc 2>/dev/null || echo 1)
mkdir -p "$out/work/tcp" "$out/work/master" "$out/prefix/lib" "$out/prefix/include"
work=$out/work
prefix=$out/prefix
git -C "$src" archive "$tcp" libmempool libfsocket ffrouter | tar -x -C "$work/tcp"
git -C "$src" archive "$master" libraries/libibverbs-1.2.1mlnx1 \
    libraries-router/librdmacm-1.1.0mlnx | tar -x -C "$work/master"

echo "== libmempool"
make -C "$work/tcp/libmempool" all
cp "$work/tcp/libmempool/libmempool.so" "$prefix/lib/"
cp "$work/tcp/libmempool/libmempool.h" "$prefix/include/"

export CFLAGS="-O2 -Wno-error" LDFLAGS="-L$prefix/lib -Wl,-rpath,/opt/freeflow/lib"
export LIBS="-lmempool"
# libibverbs' freeflow headers include rdma/rdma_cma.h: the mlnx one, ahead of Debian's
rdmacm_inc=$work/master/libraries-router/librdmacm-1.1.0mlnx/include

echo "== libibverbs (mlnx)"
cd "$work/master/libraries/libibverbs-1.2.1mlnx1"
./autogen.sh
# no RDMA NIC to resolve neighbours for: --without-resolve-neigh spares libnl
CPPFLAGS="-I$rdmacm_inc -I$prefix/include" \
    ./configure --prefix="$prefix" --sysconfdir="$prefix/etc" --disable-static \
    --without-resolve-neigh
make -j"$jobs"
make install

echo "== librdmacm (mlnx)"
cd "$work/master/libraries-router/librdmacm-1.1.0mlnx"
./autogen.sh
# the mlnx headers must win over Debian's rdma-core ones
CPPFLAGS="-I$rdmacm_inc -I$prefix/include" ./configure --prefix="$prefix" --disable-static
make -j"$jobs"
make install

echo "== router"
cd "$work/tcp/ffrouter"
# compile with its Makefile, link here: its link line would pick Debian's librdmacm
make -j"$jobs" CXXFLAGS="-std=c++11 -O3 -I$prefix/include" \
    main.o ffrouter.o rdma_api.o shared_memory.o verbs_cmd.o
g++ -o router ./*.o -L"$prefix/lib" -Wl,-rpath,/opt/freeflow/lib \
    -lrdmacm -libverbs -lmempool -lpthread -lrt
cp router "$out/router"

echo "== libfsocket"
make -C "$work/tcp/libfsocket" all
cp "$work/tcp/libfsocket/libfsocket.so" "$out/libfsocket.so"
rm -rf "$work"
echo "== done"
