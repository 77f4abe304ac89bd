#!/usr/bin/env bash
# The main job: installs what is missing, builds ctensor (Release) and runs the
# example programs on the best available device (CT_DEVICE overrides).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$jobs"
for ex in elementwise_gpu linear_regression_numpy; do
  echo "== examples/$ex"
  build/examples/$ex "$@"
done
