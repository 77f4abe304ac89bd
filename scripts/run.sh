#!/usr/bin/env bash
# The main job: installs what is missing (build tools, OpenBLAS, zlib, the
# Fashion-MNIST package), builds ctensor (Release) and trains the default
# model (a CNN on Fashion-MNIST) on the best available device — a GPU when
# there is one, else the CPU — printing the test accuracy at the end.
# With a CUDA toolkit (nvcc and cuDNN) installed, the build includes the CUDA
# backend (build/libctensor-cuda.so); without one it builds the CPU library
# and says so. The program's first line names the device it trains on, and
# for the CPU why there is no GPU.
# Extra arguments go to `ctensor train` (e.g. --epochs 3, --device cpu).
# CTENSOR_CMAKE_ARGS passes options to CMake (e.g. "-DCTENSOR_CUDA=OFF").
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
scripts/install-deps.sh --data
log=build/cmake-configure.log
mkdir -p build
# shellcheck disable=SC2086 # CTENSOR_CMAKE_ARGS is a list of options
if ! cmake -S . -B build -DCMAKE_BUILD_TYPE=Release ${CTENSOR_CMAKE_ARGS:-} >"$log" 2>&1; then
  cat "$log" >&2
  exit 1
fi
# CMake's one line on the GPU backend: built, or why not.
grep -m1 -- '-- ctensor: CUDA backend' "$log" | sed 's/^-- //' >&2 || true
# ctensor_cli depends on the backends that were configured (libctensor-cuda.so).
cmake --build build -j "$jobs" --target ctensor_cli
exec build/tools/ctensor/ctensor train "$@"
