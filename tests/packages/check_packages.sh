#!/usr/bin/env bash
# The Debian packages, installed as a user would on a machine without CUDA:
#   check_packages.sh BUILD_DIR SOURCE_DIR MAKE_IDX
#  1. cpack -G DEB in BUILD_DIR (cmake/CtPackaging.cmake);
#  2. a clean Debian root: debootstrap --variant=minbase of this machine's
#     release from the mirror its apt uses, kept as a tarball (with apt's
#     package lists and downloads) in $CT_PACKAGES_CACHE (default
#     ~/.cache/ctensor-packages) so later runs need no network for it;
#  3. in the root (chroot): apt installs the core and program packages, their
#     dependencies coming from the mirror (so a missing Depends fails here);
#     no CUDA library is there; `ctensor info`; `ctensor train --device cpu`
#     on a tiny synthetic dataset; the CUDA backend unpacked beside the core
#     must say which CUDA library is missing;
#  4. apt installs the development package and gcc; a C program compiled
#     with pkg-config against it runs, and one linked with ctensor-static
#     (libctensor.a) runs without MPI, which the root does not have.
# The core, program and -dev packages must not depend on MPI, NCCL or CUDA;
# libctensor-mpi-dev (libctensor-mpi.a) depends on MPI's -dev package.
# Exits 77 (skipped) where it cannot run: not root, no debootstrap, or no
# cached root and no mirror to make one from.
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
make_idx=$3
skip() { echo "skipped: $*"; exit 77; }
. "$(dirname "$0")/clean_root.sh"
say() { echo "packages: $*"; }

[ "$(id -u)" = 0 ] || skip "needs root (chroot)"
command -v dpkg-deb >/dev/null || skip "no dpkg-deb"
. /etc/os-release
suite=${VERSION_CODENAME:-}
[ -n "$suite" ] || skip "no VERSION_CODENAME in /etc/os-release"
arch=$(dpkg --print-architecture)

tmp=$(mktemp -d)
root=$tmp/root
cleanup() {
  umount "$root/proc" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

# 1. The packages.
say "cpack -G DEB"
(cd "$build" && cpack -G DEB >"$tmp/cpack.log" 2>&1) || { tail -30 "$tmp/cpack.log"; exit 1; }
debs=$build/packages
ls "$debs"/*.deb | sed 's|.*/|  |'
deb() { ls "$debs"/"$1"_*.deb 2>/dev/null | head -n1; }
lib_deb=$(ls "$debs"/libctensor[0-9]*_*.deb | grep -v -- '-cuda_\|-nccl_\|-mpi_' | head -n1)
program_deb=$(deb ctensor)
dev_deb=$(deb libctensor-dev)
cuda_deb=$(ls "$debs"/libctensor*-cuda_*.deb 2>/dev/null | head -n1 || true)
[ -n "$lib_deb" ] && [ -n "$program_deb" ] && [ -n "$dev_deb" ] || { say "packages missing"; exit 1; }
plugin_devs=$(ls "$debs"/libctensor-*-dev_*.deb 2>/dev/null || true)
for d in "$lib_deb" "$program_deb" "$dev_deb" $cuda_deb $plugin_devs; do
  say "$(basename "$d"): Depends: $(dpkg-deb -f "$d" Depends)"
done
# The core's packages need no MPI, NCCL or CUDA package; the static archive
# of a plugin declares the -dev package of the library it links.
for d in "$lib_deb" "$program_deb" "$dev_deb"; do
  if dpkg-deb -f "$d" Depends | grep -Eiq 'mpi|nccl|cuda|cudnn|cublas'; then
    say "$(basename "$d") depends on MPI, NCCL or CUDA"; exit 1
  fi
done
mpi_dev=$(ls "$debs"/libctensor-mpi-dev_*.deb 2>/dev/null | head -n1 || true)
if [ -n "$mpi_dev" ]; then
  dpkg-deb -c "$mpi_dev" | grep 'libctensor-mpi\.a$' >/dev/null || { say "libctensor-mpi-dev has no libctensor-mpi.a"; exit 1; }
  dpkg-deb -f "$mpi_dev" Depends | grep -Eq 'mpi.*-dev|mpi-default-dev' ||
    { say "libctensor-mpi-dev does not depend on an MPI -dev package"; exit 1; }
fi

# 2. The clean root, from the cache or debootstrap (clean_root.sh).
ct_clean_root "$root"
cache=$ct_cache
mount -t proc proc "$root/proc" 2>/dev/null || true
# apt's downloads of earlier runs; the root's own cache is emptied again below.
cp "$cache"/archives/*.deb "$root/var/cache/apt/archives/" 2>/dev/null || true
mkdir -p "$root/tmp/debs" "$root/tmp/data" "$root/tmp/prog"
cp "$lib_deb" "$program_deb" "$dev_deb" "$root/tmp/debs/"
in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"; }
apt_install() {
  in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" \
    >"$tmp/apt.log" 2>&1 || {
    tail -20 "$tmp/apt.log"
    return 1
  }
}
save_downloads() { cp -n "$root"/var/cache/apt/archives/*.deb "$cache/archives/" 2>/dev/null || true; }

# 3. The core and the program, as a user on a CPU-only machine gets them.
say "apt-get install $(basename "$lib_deb") $(basename "$program_deb")"
apt_install "/tmp/debs/$(basename "$lib_deb")" "/tmp/debs/$(basename "$program_deb")" || {
  save_downloads
  skip "apt could not install the packages' dependencies (no mirror?)"
}
save_downloads
if in_root sh -c 'ldconfig -p | grep -E "libcuda|libcudart|libcublas|libcusolver|libcudnn|libnccl|libmpi"'; then
  say "the clean root has CUDA or MPI libraries"; exit 1
fi
in_root ctensor info >"$tmp/info.txt" || { cat "$tmp/info.txt"; say "ctensor info failed"; exit 1; }
sed -n '1,2p;/^backends:/,/^$/p' "$tmp/info.txt"
grep -q "^  cuda: the CUDA backend is not available: libctensor-cuda.so was not found" "$tmp/info.txt" ||
  { say "ctensor info does not say the CUDA backend is missing"; exit 1; }
"$make_idx" "$root/tmp/data" 256 128 >/dev/null
in_root ctensor train --device cpu --model mlp --epochs 1 --data-dir /tmp/data --limit-train 256 \
  --limit-test 128 --batch-size 32 --workers 1 --quiet >"$tmp/train.txt" 2>&1 ||
  { cat "$tmp/train.txt"; say "ctensor train failed"; exit 1; }
cat "$tmp/train.txt"
grep -Eq '^test accuracy: [0-9.]+% \([0-9]+/128\)' "$tmp/train.txt" || { say "no test accuracy"; exit 1; }

# The CUDA backend without the CUDA libraries: its loader error names the
# library (unpacked beside the core rather than installed: its Depends on
# NVIDIA's packages cannot be met here, which is the point).
if [ -n "$cuda_deb" ]; then
  dpkg-deb -x "$cuda_deb" "$root/tmp/cuda"
  plugin=$(cd "$root/tmp/cuda" && find . -name 'libctensor-cuda.so' | head -n1)
  in_root env CT_BACKEND_PATH="$(dirname "/tmp/cuda/${plugin#./}")" ctensor train --device cuda:0 \
    --epochs 1 --data-dir /tmp/data >"$tmp/cuda.txt" 2>&1 && { say "cuda:0 accepted without CUDA"; exit 1; }
  cat "$tmp/cuda.txt"
  grep -Eq "lib(cudart|cublas|cusolver|cudnn)[^ ]*: cannot open shared object file" "$tmp/cuda.txt" ||
    { say "asking for cuda:0 does not name the missing CUDA library"; exit 1; }
fi

# 4. The development package: a C program against the installed library.
say "apt-get install $(basename "$dev_deb") gcc libc6-dev pkg-config"
apt_install "/tmp/debs/$(basename "$dev_deb")" gcc libc6-dev pkg-config || {
  save_downloads
  skip "apt could not install the development tools (no mirror?)"
}
save_downloads
cp "$src/tests/install/consumer/main.c" "$root/tmp/prog/main.c"
in_root sh -c 'cd /tmp/prog && gcc main.c -o consumer $(pkg-config --cflags --libs ctensor) && ./consumer' ||
  { say "the C program against libctensor-dev failed"; exit 1; }
in_root sh -c 'cd /tmp/prog && gcc main.c -o consumer_static $(pkg-config --cflags --libs ctensor-static) &&
  ! ldd consumer_static | grep -E "libctensor|libmpi" && ./consumer_static' ||
  { say "the static C program against libctensor-dev failed"; exit 1; }
say "core, program and development packages passed in a clean $suite root"
