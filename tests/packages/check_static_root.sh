#!/usr/bin/env bash
# A program linked with the static libctensor.a runs on a machine without
# MPI, NCCL or CUDA:
#   check_static_root.sh BUILD_DIR SOURCE_DIR
#  1. the build installed into a temporary prefix; examples/
#     linear_regression_autograd.c linked as a user would, with
#     pkg-config --libs ctensor-static, on this machine (which may well have
#     MPI and CUDA: the program must not pick them up);
#  2. its dynamic section names no libctensor, MPI, NCCL, CUDA or C++ library;
#  3. a clean Debian root (debootstrap --variant=minbase, clean_root.sh) with
#     no MPI in it, and OpenBLAS (which the CPU backend loads at run time):
#     the program runs there (chroot) and its models learn.
# Exits 77 (skipped) where it cannot run: not root, no debootstrap, or no
# cached root and no mirror to make one from.
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
skip() { echo "skipped: $*"; exit 77; }
say() { echo "static root: $*"; }
. "$(dirname "$0")/clean_root.sh"
[ "$(id -u)" = 0 ] || skip "needs root (chroot)"
command -v pkg-config >/dev/null || skip "no pkg-config"

tmp=$(mktemp -d)
root=$tmp/root
cleanup() {
  umount "$root/proc" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

# 1. Linked as a user would, against an installed copy.
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
export PKG_CONFIG_PATH=$(ls -d "$tmp"/prefix/lib*/pkgconfig | head -n1)
say "cc linear_regression_autograd.c \$(pkg-config --cflags --libs ctensor-static)"
say "  = $(pkg-config --libs ctensor-static)"
cc "$src/examples/linear_regression_autograd.c" -o "$tmp/example" \
  $(pkg-config --cflags --libs ctensor-static)

# 2. What it needs at run time.
needed=$(readelf -d "$tmp/example" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
say "NEEDED: $needed"
if echo "$needed" | grep -Eq 'libctensor|libmpi|libopen-|libnccl|libcuda|libcudart|libcublas|libcudnn|libcusolver|libstdc'; then
  say "the static program needs a library that only the plugins may need"; exit 1
fi

# 3. A clean root without MPI, with the one library the CPU backend loads at
# run time (OpenBLAS, whose package needs no MPI either).
ct_clean_root "$root"
in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"; }
cp "$ct_cache"/archives/*.deb "$root/var/cache/apt/archives/" 2>/dev/null || true
say "apt-get install libopenblas0-pthread"
in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  libopenblas0-pthread >"$tmp/apt.log" 2>&1 || { tail -5 "$tmp/apt.log"; skip "apt could not install OpenBLAS in the root (no mirror?)"; }
cp -n "$root"/var/cache/apt/archives/*.deb "$ct_cache/archives/" 2>/dev/null || true
if in_root sh -c 'ldconfig -p | grep -E "libmpi|libnccl|libcuda|libcudart|libctensor"'; then
  say "the clean root has MPI, NCCL, CUDA or ctensor libraries"; exit 1
fi
[ -z "$(find "$root" -xdev -name 'libmpi*' -print -quit)" ] || { say "the clean root has libmpi"; exit 1; }
mount -t proc proc "$root/proc" 2>/dev/null || true
cp "$tmp/example" "$root/tmp/example"
in_root /tmp/example >"$tmp/out.txt" 2>&1 || { cat "$tmp/out.txt"; say "the program failed in the root"; exit 1; }
grep -E 'loss [0-9.]+ -> [0-9.]+' "$tmp/out.txt"
# The model learns: the final loss below the first.
awk '/loss [0-9.]+ -> [0-9.]+/ { for (i = 1; i <= NF; i++) if ($i == "->") { a = $(i-1); b = $(i+1) }
       if (!(b < a)) bad = 1; n++ } END { exit (n == 0 || bad) }' "$tmp/out.txt" ||
  { cat "$tmp/out.txt"; say "the program's losses do not fall"; exit 1; }
say "the statically linked program ran in a clean root without MPI"
