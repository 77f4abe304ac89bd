#!/usr/bin/env bash
# The main job: installs what is missing (build tools, OpenBLAS, zlib, the
# Fashion-MNIST package), builds ctensor (Release) and trains the default
# model (a CNN on Fashion-MNIST) on the best available device — a GPU when
# there is one, else the CPU — printing the test accuracy at the end.
# Extra arguments go to `ctensor train` (e.g. --epochs 3, --device cpu).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
scripts/install-deps.sh --data
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$jobs" --target ctensor_cli
exec build/tools/ctensor/ctensor train "$@"
