#!/usr/bin/env bash
# Runs the benchmarks: ctensor (bench/bench_core.c, bench/bench_train.c) and its
# peers NumPy and PyTorch (bench/peers_core.py, bench/peers_train.py) in the same
# run with the same thread count, then
# writes the Markdown report bench/results/<date>-cpu-<cpu>.md (and the raw JSON
# lines next to it). See docs/benchmarks.md for the method.
#   scripts/bench.sh [--threads N] [--budget SECONDS] [--rounds R]
# N defaults to CT_NUM_THREADS, else nproc; the budget is the seconds of timed
# samples per workload and implementation (default 1.5). Each workload runs in R
# rounds (default 3), ctensor and peers back to back, and the report keeps each
# implementation's best median: a burst of load from another process during one
# round does not decide a ratio.
set -euo pipefail
cd "$(dirname "$0")/.."

threads=${CT_NUM_THREADS:-$(nproc)}
budget=1.5
rounds=3
while [ $# -gt 0 ]; do
  case "$1" in
    --threads) threads=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    *) echo "usage: $0 [--threads N] [--budget SECONDS] [--rounds R]" >&2; exit 2 ;;
  esac
done

scripts/install-deps.sh --tests

# Release build of the library and the benchmarks only (tests and examples are
# not needed here).
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DCTENSOR_BUILD_TESTS=OFF \
  -DCTENSOR_BUILD_EXAMPLES=OFF -DCTENSOR_BUILD_BENCH=ON >/dev/null
cmake --build build-bench -j"$(nproc)" --target bench_core bench_train >/dev/null

# One thread count for everyone: ctensor's OpenMP, OpenBLAS (ctensor's and
# NumPy's GEMM), PyTorch's intra-op pool.
export CT_NUM_THREADS=$threads OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads

cpu=$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo | head -1 |
  sed -e 's/([RTMrtm]*)//g' -e 's/@.*//' -e 's/\b\(CPU\|Processor\)\b//g' |
  tr '[:upper:]' '[:lower:]' | tr -cs 'a-z0-9' '-' | sed -e 's/^-//' -e 's/-$//')
name="$(date +%F)-cpu-${cpu:-unknown}-$(nproc)c"
raw="bench/results/$name.jsonl"
report="bench/results/$name.md"

# Percent of CPU time busy over one second (all cores), from /proc/stat.
cpu_busy() {
  local a b
  read -r -a a < <(grep '^cpu ' /proc/stat)
  sleep 1
  read -r -a b < <(grep '^cpu ' /proc/stat)
  local total=0 idle=$(( (b[4] + b[5]) - (a[4] + a[5]) ))
  for i in 1 2 3 4 5 6 7 8; do total=$(( total + b[i] - a[i] )); done
  echo $(( total > 0 ? 100 * (total - idle) / total : 0 ))
}

# Benchmarks need a quiet machine: waits up to $1 seconds for other work to end
# (CPUs <= 10% busy) and sets $busy.
wait_quiet() {
  local deadline=$((SECONDS + $1))
  busy=$(cpu_busy)
  while [ "$busy" -gt 10 ] && [ $SECONDS -lt $deadline ]; do
    echo "bench: the CPUs are ${busy}% busy with other work; waiting" >&2
    busy=$(cpu_busy)
  done
  [ "$busy" -le 10 ] || echo "bench: WARNING: measuring on a busy machine (${busy}%)" >&2
}

wait_quiet 60
echo "{\"meta\":\"run\",\"cpu_busy_before_pct\":$busy,\"rounds\":$rounds}" >"$raw"

# workload:C program:Python peer (- : none)
workloads="add_10M_f32:bench_core:peers_core sum_10M_f32:bench_core:peers_core
  matmul_1024_f32:bench_core:peers_core add_1elem_f32:bench_core:peers_core
  mul_1elem_grad_f32:bench_core:peers_core
  linreg_1000:bench_core:peers_core fma_peak_f32:bench_core:-
  train_linreg_1000:bench_train:peers_train train_mlp_step:bench_train:peers_train
  train_cnn_step:bench_train:peers_train train_fashion_cnn_step:bench_train:peers_train"
echo "bench: $threads threads, $rounds rounds, ctensor then NumPy/PyTorch (a few minutes)" >&2
for round in $(seq "$rounds"); do
  for entry in $workloads; do
    IFS=: read -r w prog peer <<<"$entry"
    [ -x build-bench/bench/"$prog" ] || continue
    wait_quiet 15
    echo "bench: round $round: $w" >&2
    build-bench/bench/"$prog" --threads "$threads" --budget "$budget" --only "$w" >>"$raw"
    [ "$peer" = - ] ||
      /usr/bin/python3 bench/"$peer".py --threads "$threads" --budget "$budget" --only "$w" >>"$raw"
  done
done
/usr/bin/python3 bench/report.py "$raw" >"$report"
echo "bench: wrote $report" >&2
cat "$report"
