#!/usr/bin/env bash
# Where a program linked against the shared library finds its CUDA backend,
# and what it says when it cannot (backend_load.c checks each case):
#   check_backends.sh BUILD_DIR BACKEND_LOAD FAKE_OLD_DIR FAKE_MISSING_DIR CUDA_BUILT
#                     FAKE_FOREIGN_DIR FAKE_NULL_DIR
#  1. libctensor alone in a directory, nothing on CT_BACKEND_PATH: "not found";
#  2. CT_BACKEND_PATH holds a plugin needing a library that is not installed:
#     the loader's message names that library;
#  3. CT_BACKEND_PATH holds a plugin of another ctensor version: refused;
#  4. a plugin whose descriptor has another layout (interface 999, garbage
#     pointers), one returning no descriptor, a truncated copy of a plugin,
#     random bytes: each refused with its reason, the CPU path unharmed;
#  5. (CUDA built) the build's own plugin, found next to libctensor;
#  6. (CUDA built) CT_BACKEND_PATH comes first (an empty directory is skipped);
#  7. a CPU-only DataLoader with the build's plugin next to libctensor: not loaded.
set -euo pipefail
build=$1
prog=$2
old=$3
missing=$4
cuda=$5
foreign=$6
null=$7
unset CT_DEVICE
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/alone" "$tmp/empty" "$tmp/path" "$tmp/truncated" "$tmp/random"
cp -P "$build"/libctensor.so* "$tmp/alone/"
run() { echo "== $*"; "$@"; }

LD_LIBRARY_PATH="$tmp/alone" CT_BACKEND_PATH="$tmp/empty" \
  run "$prog" absent "libctensor-cuda.so was not found"
LD_LIBRARY_PATH="$tmp/alone" CT_BACKEND_PATH="$tmp/empty:$missing" \
  run "$prog" absent "libct_test_gone.so: cannot open shared object file"
LD_LIBRARY_PATH="$tmp/alone" CT_BACKEND_PATH="$old" \
  run "$prog" absent "was built from ctensor 0.0.0-test"
LD_LIBRARY_PATH="$tmp/alone" CT_BACKEND_PATH="$foreign" \
  run "$prog" absent "has plugin interface 999"
LD_LIBRARY_PATH="$tmp/alone" CT_BACKEND_PATH="$null" \
  run "$prog" absent "refused to load"
# A plugin cut short (dlopen would map pages past its end: SIGBUS), and a
# file of random bytes: refused before the system loader sees them.
plugin="$old/libctensor-cuda.so"
[ "$cuda" = ON ] && plugin="$build/libctensor-cuda.so"
head -c $(($(stat -c %s "$plugin") / 2)) "$plugin" >"$tmp/truncated/libctensor-cuda.so"
LD_LIBRARY_PATH="$tmp/alone" CT_BACKEND_PATH="$tmp/truncated" \
  run "$prog" absent "is damaged or foreign: truncated"
head -c 200 "$plugin" >"$tmp/truncated/libctensor-cuda.so" # headers cut too
LD_LIBRARY_PATH="$tmp/alone" CT_BACKEND_PATH="$tmp/truncated" \
  run "$prog" absent "is damaged or foreign: truncated"
# The same file found by the system's search (LD_LIBRARY_PATH) rather than
# CT_BACKEND_PATH: checked before dlopen too.
(unset CT_BACKEND_PATH; LD_LIBRARY_PATH="$tmp/alone:$tmp/truncated" \
  run "$prog" absent "is damaged or foreign: truncated")
head -c 65536 /dev/urandom >"$tmp/random/libctensor-cuda.so"
LD_LIBRARY_PATH="$tmp/alone" CT_BACKEND_PATH="$tmp/random" \
  run "$prog" absent "is damaged or foreign: not an ELF shared object"
(unset CT_BACKEND_PATH; CT_DEVICE=cpu run "$prog" cpu_only -)
if [ "$cuda" = ON ]; then
  (unset CT_BACKEND_PATH; run "$prog" loaded "$build/libctensor-cuda.so")
  cp "$build/libctensor-cuda.so" "$tmp/path/"
  CT_BACKEND_PATH="$tmp/empty:$tmp/path" run "$prog" loaded "$tmp/path/libctensor-cuda.so"
fi
echo "backends: all cases passed"
