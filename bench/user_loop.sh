#!/usr/bin/env bash
# A user's training loop against the `ctensor` program: one Fashion-MNIST
# epoch of the same MLP (Adam, batch 64, 2 loader threads), timed as the
# program's metrics time an epoch (training only), in alternating rounds,
# quiet and beside a competing busy process (one core spinning). Prints the
# medians and the ratio user / program; docs/benchmarks.md, "A user's loop".
#   bench/user_loop.sh [BUILD_DIR (build)] [ROUNDS (3)]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rounds=${2:-3}
scripts/install-deps.sh --data
tmp=$(mktemp -d)
busy_pid=
trap '[ -n "$busy_pid" ] && kill "$busy_pid" 2>/dev/null; rm -rf "$tmp"' EXIT

epoch_seconds() { # jsonl file -> the first epoch's "seconds"
  /usr/bin/python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["seconds"])' "$1"
}

run_rounds() { # condition
  for r in $(seq "$rounds"); do
    "$build/tools/ctensor/ctensor" train --model mlp --epochs 1 --device cpu --lr-schedule none \
      --metrics "$tmp/p.jsonl" --quiet >/dev/null
    echo "$1 program $(epoch_seconds "$tmp/p.jsonl")" >>"$tmp/times"
    "$build/bench/bench_user_loop" >"$tmp/u.jsonl"
    echo "$1 user $(epoch_seconds "$tmp/u.jsonl")" >>"$tmp/times"
  done
}

run_rounds quiet
(while :; do :; done) &
busy_pid=$!
run_rounds busy
kill "$busy_pid"
busy_pid=

echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
/usr/bin/python3 - "$tmp/times" <<'PY'
import statistics, sys
t = {}
for line in open(sys.argv[1]):
    cond, who, s = line.split()
    t.setdefault((cond, who), []).append(float(s))
print("| condition | ctensor train (s/epoch) | user's loop (s/epoch) | user / program |")
print("|---|---:|---:|---:|")
for cond in ("quiet", "busy"):
    p, u = statistics.median(t[(cond, "program")]), statistics.median(t[(cond, "user")])
    print(f"| {cond} | {p:.3f} | {u:.3f} | {u / p:.2f} |")
PY
