#!/usr/bin/env bash
# One-shot check of the CUDA backend on a GPU machine: Release build with
# CUDA, the whole ctest suite, compute-sanitizer over the op tests on the GPU,
# then the GPU benchmarks when bench/bench_gpu exists. Writes a summary to
# bench/results/<date>-<gpu>.md and copies logs under $OUT when set.
# Never changes GPU settings (no nvidia-smi -pm/-pl/-ac/-lgc/-r/-c/-mig).
#   scripts/gpu-check.sh [build-dir]        (default build-gpu)
#   GPU_CHECK_BENCH_ONLY=1 scripts/gpu-check.sh   build, then the benchmarks only
#   (no ctest, no compute-sanitizer): fits one 10-minute call on a lent GPU.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-gpu}
logs=$(mktemp -d)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n1 | tr ' ' '-')
gpu=${gpu:-unknown-gpu}
summary=bench/results/$(date +%F)-${gpu}.md
mkdir -p bench/results
status=0
section() { echo; echo "== $* =="; }
{
  echo "# GPU check $(date -u +%FT%TZ) on ${gpu}"
  echo
  echo '```'
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv 2>&1
  nvcc --version 2>&1 | tail -n 2
  echo '```'
} > "$summary"

section "configure + build (Release, CUDA)"
t0=$(date +%s)
if cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCTENSOR_CUDA=ON > "$logs/configure.log" 2>&1 &&
   cmake --build "$build" -j16 > "$logs/build.log" 2>&1; then
  echo "build ok ($(( $(date +%s) - t0 )) s)"
  echo "- build: ok in $(( $(date +%s) - t0 )) s" >> "$summary"
else
  tail -n 40 "$logs/build.log" "$logs/configure.log"
  echo "- build: FAILED (see build.log)" >> "$summary"
  status=1
fi

if [ $status -eq 0 ]; then
 if [ "${GPU_CHECK_BENCH_ONLY:-0}" != 1 ]; then
  section "ctest"
  (cd "$build" && timeout 1500 ctest --output-on-failure -j8) > "$logs/ctest.log" 2>&1
  rc=$?
  tail -n 25 "$logs/ctest.log"
  echo "- ctest: rc=$rc; $(grep -E 'tests passed|tests failed' "$logs/ctest.log" | tail -n1)" >> "$summary"
  grep -E '\*\*\*(Failed|Skipped|Timeout)|Not Run' "$logs/ctest.log" | sed 's/^/  - /' >> "$summary"
  [ $rc -ne 0 ] && status=1

  section "compute-sanitizer"
  cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  echo "- compute-sanitizer:" >> "$summary"
  # memcheck over every op test; the other tools over a smaller subset (they
  # are slower). Budget: about 8 minutes in all.
  for t in test_unary test_binary test_reduce test_softmax test_matmul test_index test_random test_cuda; do
    [ -x "$build/tests/$t" ] || continue
    tools="memcheck"
    case $t in test_cuda|test_reduce|test_index) tools="memcheck racecheck initcheck synccheck";; esac
    for tool in $tools; do
      log="$logs/sanitizer-$tool-$t.log"
      timeout 120 "$cs" --tool "$tool" --error-exitcode 99 "$build/tests/$t" --device cuda > "$log" 2>&1
      rc=$?
      res=$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -n1)
      echo "$tool $t: rc=$rc $res"
      echo "  - $tool $t: rc=$rc $res" >> "$summary"
      [ $rc -ne 0 ] && [ $rc -ne 77 ] && status=1
    done
  done

 else
  echo "- ctest, compute-sanitizer: skipped (GPU_CHECK_BENCH_ONLY=1)" >> "$summary"
 fi

  # GPU benchmarks (docs/benchmarks.md, "GPU benchmarks"): bench_gpu (ctensor and raw
  # CUDA runtime calls) and bench/peers_gpu.py (PyTorch, CuPy) in the same run, in
  # $CT_GPU_BENCH_ROUNDS rounds (default 2) whose order alternates (ctensor first,
  # then peers first); report.py keeps each implementation's best median and renders
  # the targets into the summary; the raw JSON lines go next to it (.jsonl). About
  # 2-3 minutes; each program is cut off after 120 s.
  section "GPU benchmarks"
  rm -f "$build/bench/bench_gpu" # never run a stale binary
  if cmake --build "$build" -j16 --target bench_gpu > "$logs/bench_build.log" 2>&1 &&
     [ -x "$build/bench/bench_gpu" ]; then
    raw=${summary%.md}.jsonl
    py=$(command -v python3 || echo /usr/bin/python3) # the GPU image's, with torch + cupy
    rounds=${CT_GPU_BENCH_ROUNDS:-2}
    budget=${CT_GPU_BENCH_BUDGET:-1.0}
    echo "{\"meta\":\"run\",\"rounds\":$rounds,\"budget_s\":$budget}" > "$raw"
    t0=$(date +%s)
    for round in $(seq "$rounds"); do
      order="ctensor peers"
      [ $((round % 2)) -eq 0 ] && order="peers ctensor"
      for who in $order; do
        if [ "$who" = ctensor ]; then
          timeout 120 "$build/bench/bench_gpu" --budget "$budget" >> "$raw" 2>> "$logs/bench_gpu.log"
        else
          timeout 120 "$py" bench/peers_gpu.py --budget "$budget" >> "$raw" 2>> "$logs/peers_gpu.log"
        fi
        rc=$?
        echo "round $round, $who: rc=$rc ($(( $(date +%s) - t0 )) s)"
        echo "- bench round $round, $who: rc=$rc" >> "$summary"
        # 77: no usable GPU (bench_gpu says why); 124: cut off (partial lines kept)
        [ $rc -ne 0 ] && status=1
      done
    done
    if grep -q '"error": *"wrong result' "$raw"; then
      echo "- bench: WRONG RESULTS (see the error rows below)" >> "$summary"
      status=1
    fi
    echo
    if "$py" bench/report.py "$raw" > "$logs/bench_report.md" 2> "$logs/bench_report.log"; then
      { echo; sed -e 's/^# /## /' -e 's/^## \(Targets\|All measurements\)/### \1/' \
          "$logs/bench_report.md"; } >> "$summary"
      sed -n '/^## Targets/,/^## All/p' "$logs/bench_report.md"
    else
      cat "$logs/bench_report.log"
      echo "- bench report: FAILED (see bench_report.log)" >> "$summary"
      status=1
    fi
  else
    tail -n 20 "$logs/bench_build.log"
    echo "- bench_gpu: does not build (see bench_build.log)" >> "$summary"
    status=1
  fi
fi

if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT/gpu-check"
  cp "$logs"/*.log "$logs"/*.md "$summary" "${summary%.md}.jsonl" "$OUT/gpu-check/" 2>/dev/null
fi
section "summary ($summary)"
cat "$summary"
exit $status
