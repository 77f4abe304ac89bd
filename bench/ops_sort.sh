#!/usr/bin/env bash
# Runs bench_ops_sort and bench/peers_ops_sort.py one after the other with the
# same threads and budget, and prints each workload's ratio of median times
# (PyTorch / ctensor: above 1, ctensor is faster).
#   bench/ops_sort.sh BUILD_DIR [--threads N] [--budget SECONDS] [--only NAME]
set -euo pipefail
build=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$build/bench/bench_ops_sort" "$@" | tee -a "$out"
/usr/bin/python3 "$here/peers_ops_sort.py" "$@" | tee -a "$out"
/usr/bin/python3 - "$out" <<'PY'
import json, sys
t = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    if "bench" in r and "median_s" in r:
        t.setdefault(r["bench"], {})[r["impl"]] = r["median_s"]
for bench, m in t.items():
    if "ctensor" in m and "torch" in m:
        print(f"{bench}: ctensor {m['ctensor'] * 1e3:.2f} ms, torch {m['torch'] * 1e3:.2f} ms, "
              f"torch/ctensor {m['torch'] / m['ctensor']:.2f}")
PY
