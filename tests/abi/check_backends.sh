#!/usr/bin/env bash
# Where a program linked against the shared library finds its CUDA backend,
# and what it says when it cannot (backend_load.c checks each case):
#   check_backends.sh BUILD_DIR BACKEND_LOAD FAKE_OLD_DIR FAKE_MISSING_DIR CUDA_BUILT
#  1. libctensor alone in a directory, nothing on CT_BACKEND_PATH: "not found";
#  2. CT_BACKEND_PATH holds a plugin needing a library that is not installed:
#     the loader's message names that library;
#  3. CT_BACKEND_PATH holds a plugin of another ctensor version: refused;
#  4. (CUDA built) the build's own plugin, found next to libctensor;
#  5. (CUDA built) CT_BACKEND_PATH comes first (an empty directory is skipped).
set -euo pipefail
build=$1
prog=$2
old=$3
missing=$4
cuda=$5
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/alone" "$tmp/empty" "$tmp/path"
cp -P "$build"/libctensor.so* "$tmp/alone/"
run() { echo "== $*"; "$@"; }

LD_LIBRARY_PATH="$tmp/alone" CT_BACKEND_PATH="$tmp/empty" \
  run "$prog" absent "libctensor-cuda.so was not found"
LD_LIBRARY_PATH="$tmp/alone" CT_BACKEND_PATH="$tmp/empty:$missing" \
  run "$prog" absent "libct_test_gone.so: cannot open shared object file"
LD_LIBRARY_PATH="$tmp/alone" CT_BACKEND_PATH="$old" \
  run "$prog" absent "was built from ctensor 0.0.0-test"
if [ "$cuda" = ON ]; then
  (unset CT_BACKEND_PATH; run "$prog" loaded "$build/libctensor-cuda.so")
  cp "$build/libctensor-cuda.so" "$tmp/path/"
  CT_BACKEND_PATH="$tmp/empty:$tmp/path" run "$prog" loaded "$tmp/path/libctensor-cuda.so"
fi
echo "backends: all cases passed"
