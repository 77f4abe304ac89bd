#!/usr/bin/env bash
# Installs the build into a temporary prefix, then builds and runs C programs
# against it as a user would:
#   1. find_package(ctensor), ctensor::ctensor (shared);
#   2. find_package(ctensor), ctensor::ctensor_static;
#   3. pkg-config --cflags --libs ctensor (shared);
#   4. pkg-config --static --libs ctensor, where only libctensor.a is
#      installed (a static-only install: the linker has nothing else to take);
#   5. the installed `ctensor info`, which finds libctensor beside it.
# The static programs must not need libctensor.so at run time.
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

for kind in shared static; do
  flag=OFF
  [ "$kind" = static ] && flag=ON
  cmake -S "$src/tests/install/consumer" -B "$tmp/cmake-$kind" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCONSUMER_STATIC=$flag >/dev/null
  cmake --build "$tmp/cmake-$kind" >/dev/null
  if [ "$kind" = static ] && needs_libctensor "$tmp/cmake-$kind/consumer"; then
    echo "install: the static CMake consumer needs libctensor.so"; exit 1
  fi
  LD_LIBRARY_PATH="$libdir:${LD_LIBRARY_PATH:-}" "$tmp/cmake-$kind/consumer"
done

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

"$prefix/bin/ctensor" info >"$tmp/info.txt"
grep -q "^ctensor $(sed -n 's/^project(ctensor VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")" "$tmp/info.txt"
grep -A1 "^backends:" "$tmp/info.txt"
echo "install: find_package (shared, static), pkg-config (shared, static) and the program passed"
