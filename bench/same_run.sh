#!/usr/bin/env bash
# Runs BUILD/bench/bench_NAME and bench/peers_NAME.py one after the other with the same
# arguments (threads, budget, workload filter), and prints each workload's ratio of median
# times for every PyTorch variant the peer timed (impl "torch...") against ctensor's
# (above 1, ctensor is faster).
#   bench/same_run.sh NAME BUILD_DIR [--threads N] [--budget SECONDS] [--only NAME]
set -euo pipefail
name=$1
build=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$build/bench/bench_$name" "$@" | tee -a "$out"
/usr/bin/python3 "$here/peers_$name.py" "$@" | tee -a "$out"
/usr/bin/python3 - "$out" <<'PY'
import json, sys
t = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    if "bench" in r and "median_s" in r:
        t.setdefault(r["bench"], {})[r["impl"]] = r["median_s"]
for bench, m in t.items():
    for peer in (p for p in m if p.startswith("torch") and "ctensor" in m):
        print(f"{bench}: ctensor {m['ctensor'] * 1e3:.2f} ms, {peer} {m[peer] * 1e3:.2f} ms, "
              f"{peer}/ctensor {m[peer] / m['ctensor']:.2f}")
PY
