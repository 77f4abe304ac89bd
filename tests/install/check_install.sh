#!/usr/bin/env bash
# Installs the build into a temporary prefix, then builds and runs C programs
# against it as a user would:
#   1. find_package(ctensor), ctensor::ctensor (shared);
#   2. find_package(ctensor), ctensor::ctensor_static;
#   3. pkg-config --cflags --libs ctensor (shared);
#   4. pkg-config --static --libs ctensor, where only libctensor.a is
#      installed (a static-only install: the linker has nothing else to take);
#   5. pkg-config --libs ctensor-static with both libraries installed, which
#      names libctensor.a by path;
#   6. the MPI engine (and NCCL, CUDA where built) linked into a static
#      program: find_package(ctensor COMPONENTS mpi), ctensor::mpi_static,
#      and pkg-config --libs ctensor-static ctensor-mpi;
#   7. the installed `ctensor info`, which finds libctensor beside it.
# The static programs must not need libctensor.so at run time, and those
# without a plugin no MPI, NCCL or CUDA library either: they say that the
# plugin is not linked in.
#   check_install.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(dirname "$(ls -d "$prefix"/lib*/pkgconfig | head -n1)")

needs_libctensor() { readelf -d "$1" | grep -q 'NEEDED.*libctensor\.so'; }
# The MPI, NCCL and CUDA libraries a program needs (none expected of the core).
heavy_needs() { readelf -d "$1" | grep -Eo 'NEEDED.*\[lib(mpi|open-|nccl|cuda|cudart|cublas|cudnn|cusolver|stdc)[^]]*' || true; }
no_heavy_needs() {
  local n
  n=$(heavy_needs "$1")
  [ -z "$n" ] || { echo "install: $2 needs $n"; exit 1; }
}
plugins=
for p in cuda mpi nccl; do
  [ -f "$libdir/pkgconfig/ctensor-$p.pc" ] && plugins="$plugins $p"
done
echo "install: plugins with static archives: ${plugins:-none}"

for kind in shared static; do
  flag=OFF
  [ "$kind" = static ] && flag=ON
  cmake -S "$src/tests/install/consumer" -B "$tmp/cmake-$kind" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCONSUMER_STATIC=$flag >/dev/null
  cmake --build "$tmp/cmake-$kind" >/dev/null
  if [ "$kind" = static ] && needs_libctensor "$tmp/cmake-$kind/consumer"; then
    echo "install: the static CMake consumer needs libctensor.so"; exit 1
  fi
  [ "$kind" = static ] && no_heavy_needs "$tmp/cmake-$kind/consumer" "the static CMake consumer"
  LD_LIBRARY_PATH="$libdir:${LD_LIBRARY_PATH:-}" "$tmp/cmake-$kind/consumer"
done
"$tmp/cmake-static/engines" -mpi -nccl -cuda

export PKG_CONFIG_PATH="$libdir/pkgconfig"
cc "$src/tests/install/consumer/main.c" -o "$tmp/pc-shared" $(pkg-config --cflags --libs ctensor)
LD_LIBRARY_PATH="$libdir:${LD_LIBRARY_PATH:-}" "$tmp/pc-shared"

# A static-only install: the same prefix without the shared library.
cp -a "$prefix" "$tmp/static-prefix"
rm -f "$tmp/static-prefix/${libdir#"$prefix"/}"/libctensor.so*
export PKG_CONFIG_PATH="$tmp/static-prefix/${libdir#"$prefix"/}/pkgconfig"
echo "install: pkg-config --static --libs ctensor: $(pkg-config --static --libs ctensor)"
cc "$src/tests/install/consumer/main.c" -o "$tmp/pc-static" $(pkg-config --cflags --static --libs ctensor)
if needs_libctensor "$tmp/pc-static"; then
  echo "install: the static pkg-config consumer needs libctensor.so"; exit 1
fi
"$tmp/pc-static"

# Both libraries installed: ctensor-static still links libctensor.a.
export PKG_CONFIG_PATH="$libdir/pkgconfig"
echo "install: pkg-config --libs ctensor-static: $(pkg-config --libs ctensor-static)"
cc "$src/tests/install/consumer/main.c" -o "$tmp/pcs-static" $(pkg-config --cflags --libs ctensor-static)
needs_libctensor "$tmp/pcs-static" && { echo "install: ctensor-static linked libctensor.so"; exit 1; }
no_heavy_needs "$tmp/pcs-static" "the ctensor-static consumer"
"$tmp/pcs-static"

# The plugins linked in, each with the ones it builds on.
for p in $plugins; do
  cmake -S "$src/tests/install/consumer" -B "$tmp/cmake-$p" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCONSUMER_STATIC=ON -DCONSUMER_ENGINES="$p" >/dev/null
  cmake --build "$tmp/cmake-$p" >/dev/null
  needs_libctensor "$tmp/cmake-$p/engines" && { echo "install: the static $p consumer needs libctensor.so"; exit 1; }
  "$tmp/cmake-$p/engines" "$p"
  echo "install: pkg-config --libs ctensor-static ctensor-$p: $(pkg-config --libs ctensor-static ctensor-$p)"
  cc "$src/tests/install/consumer/engines.c" -o "$tmp/pc-$p" $(pkg-config --cflags --libs ctensor-static ctensor-$p)
  needs_libctensor "$tmp/pc-$p" && { echo "install: the pkg-config $p consumer needs libctensor.so"; exit 1; }
  "$tmp/pc-$p" "$p"
done

"$prefix/bin/ctensor" info >"$tmp/info.txt"
grep -q "^ctensor $(sed -n 's/^project(ctensor VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")" "$tmp/info.txt"
grep -A1 "^backends:" "$tmp/info.txt"
echo "install: find_package (shared, static, plugins), pkg-config (shared, static, ctensor-static, plugins) and the program passed"
