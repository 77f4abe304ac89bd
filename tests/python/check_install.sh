#!/usr/bin/env bash
# The Python package installed two ways, each used from outside the source and build trees:
#   1. `cmake --install` into a prefix (the package finds the prefix's libctensor by its rpath);
#   2. `pip install --no-build-isolation` into a venv, offline, reusing this build tree
#      (CTENSOR_BUILD_DIR), which bundles the library in the package.
#   check_install.sh BUILD_DIR SOURCE_DIR PYTHON
set -euo pipefail
build=$1
src=$2
py=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

smoke='
import sys
import numpy as np
import ctensor as ct
root = sys.argv[1]
assert ct.__file__.startswith(root), ct.__file__
libs = {line.split()[-1] for line in open("/proc/self/maps") if "libctensor.so" in line}
assert libs and all(p.startswith(root) for p in libs), libs
x = ct.asarray(np.arange(6.0)).reshape(2, 3)
assert ct.sum(x @ x.T).item() == 83.0
net = ct.nn.Linear(3, 1)
ct.mean(net(x.astype(ct.float32)) ** 2).backward()
assert net.weight.grad.shape == (1, 3)
import os
pkg = os.path.dirname(ct.__file__)
assert all(os.path.exists(os.path.join(pkg, f)) for f in ("py.typed", "__init__.pyi", "io.pyi")), os.listdir(pkg)
print("installed package works:", ct.__file__)
'

cmake --install "$build" --prefix "$tmp/prefix" > /dev/null
site=$(cd "$tmp/prefix" && ls -d lib*/python3*/*-packages | head -n1)
(cd "$tmp" && PYTHONPATH="$tmp/prefix/$site" "$py" -c "$smoke" "$tmp/prefix")

if ! "$py" -m venv --system-site-packages "$tmp/venv" > /dev/null 2>&1; then
  echo "skipped: python3 -m venv is unavailable (Debian: python3-venv)"
  exit 77
fi
CTENSOR_BUILD_DIR="$build" "$tmp/venv/bin/pip" install --no-build-isolation --no-deps --no-index \
  --no-cache-dir -q "$src"
(cd "$tmp" && "$tmp/venv/bin/python" -c "$smoke" "$tmp/venv")
