#!/usr/bin/env bash
# Gathers, on a machine with network access (Debian's mirrors), what a GPU
# machine without network access may lack and cannot fetch: Debian's
# OpenBLAS (the pthread build, which ctensor loads single-threaded), zlib and
# DLPack headers, and the Fashion-MNIST files for the training benchmarks.
# They go to .gpu-deps/ (ignored by git); copy it to the GPU machine with the
# source tree, and scripts/gpu-check.sh unpacks the packages into a prefix
# (with `ar` and `tar`, no dpkg needed) when the machine has no OpenBLAS of
# its own. What travels must stay small: the total is printed and checked
# against GPU_DEPS_MAX_MIB (default 50).
#   scripts/gpu-deps.sh        (about 40 MiB)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=.gpu-deps
max_mib=${GPU_DEPS_MAX_MIB:-50}
rm -rf "$dir/debs"
mkdir -p "$dir/debs" "$dir/fashion-mnist"
pkgs=(libopenblas0-pthread libopenblas-pthread-dev libgfortran5 libquadmath0 zlib1g zlib1g-dev libdlpack-dev)
if ! (cd "$dir/debs" && apt-get download "${pkgs[@]}" > ../apt-get.log 2>&1); then
  grep -v '^Get:' "$dir/apt-get.log" >&2
  echo "gpu-deps: apt-get download failed (is there network access to Debian's mirrors?)" >&2
  exit 1
fi
rm -f "$dir/apt-get.log"
data=/usr/share/datasets/fashion-mnist
if [ ! -f "$data/train-images-idx3-ubyte.gz" ]; then
  echo "gpu-deps: $data is missing; install it with: apt-get install dataset-fashion-mnist" >&2
  exit 1
fi
cp "$data"/*.gz "$dir/fashion-mnist/"
du -b "$dir/debs"/*.deb "$dir/fashion-mnist"/* | awk '{ printf "%8.1f MiB  %s\n", $1 / 1048576, $2 }'
total=$(du -sb "$dir" | cut -f1)
mib=$(((total + 1048575) / 1048576))
echo "gpu-deps: $dir holds $mib MiB ($total bytes; limit $max_mib MiB)"
if [ "$mib" -gt "$max_mib" ]; then
  echo "gpu-deps: $dir is over $max_mib MiB: too much to copy along with the sources" >&2
  exit 1
fi
