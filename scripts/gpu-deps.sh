#!/usr/bin/env bash
# Gathers, on a machine with network access (Debian's mirrors), what a GPU
# machine without network access may lack and cannot fetch: Debian's
# OpenBLAS (the pthread build, which ctensor loads single-threaded), zlib and
# DLPack headers, and the Fashion-MNIST files for the training benchmarks.
# They go to .gpu-deps/ (ignored by git); copy it to the GPU machine with the
# source tree, and scripts/gpu-check.sh unpacks the packages into a prefix
# with `dpkg -x` when the machine has no OpenBLAS of its own.
#   scripts/gpu-deps.sh        (about 40 MB)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=.gpu-deps
mkdir -p "$dir/debs" "$dir/fashion-mnist"
lists=$(mktemp -d)
trap 'rm -rf "$lists"' EXIT
(cd "$dir/debs" && apt-get download libopenblas0-pthread libopenblas-pthread-dev libgfortran5 \
   libquadmath0 zlib1g zlib1g-dev libdlpack-dev 2>&1 | grep -v '^Get:' || true)
ls "$dir/debs"/*.deb > /dev/null
data=/usr/share/datasets/fashion-mnist
if [ ! -f "$data/train-images-idx3-ubyte.gz" ]; then
  echo "gpu-deps: $data is missing; install it with: apt-get install dataset-fashion-mnist" >&2
  exit 1
fi
cp "$data"/*.gz "$dir/fashion-mnist/"
du -sh "$dir"
