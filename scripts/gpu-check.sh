#!/usr/bin/env bash
# Everything the CUDA backend needs a GPU for, run on a GPU machine (possibly
# without network access):
#   test      build (Release, CUDA) and the whole ctest suite ([cuda] variants included)
#   bench     GPU benchmarks: bench/bench_gpu.c against PyTorch and CuPy (bench/peers_gpu.py)
#   train     training steps on the GPU: bench_train --device cuda:0 against peers_train.py
#   epoch     Fashion-MNIST CNN epochs and time to 91% on the GPU against PyTorch eager
#   sanitize  compute-sanitizer (memcheck, racecheck, initcheck, synccheck) over the op tests,
#             with the caching allocator bypassed (CT_CUDA_NO_CACHE=1)
#
#   scripts/gpu-check.sh [--out DIR] [STAGE...]   (default: test bench train epoch sanitize)
#
# Results go to DIR (default bench/results/gpu-check): gpu-check.md (the
# summary, also printed), the benchmarks' JSON lines and reports, and
# gpu-logs.tar.gz (every log of the run in one archive).
#
# The whole run keeps to a time budget (GPU_CHECK_SECONDS, default 540, so
# that a run fits in 10 minutes): the build comes first whatever the stages,
# each stage gets a time limit within what is left, and a stage that cannot
# fit is reported as not run (each command also gets a hard kill 10 s after
# its limit). The build directory (GPU_CHECK_BUILD, default build-gpu) is
# reused when it is there; a fresh machine builds first. Two runs cover
# everything in that budget:
#   scripts/gpu-check.sh --out DIR test bench
#   scripts/gpu-check.sh --out DIR train epoch sanitize
# The summary gives each stage's seconds, to plan the next runs by.
# A GPU machine without network access may lack OpenBLAS or zlib headers:
# then the Debian packages gathered beforehand by scripts/gpu-deps.sh (in
# .gpu-deps/, copied along with the source tree) are unpacked into a prefix
# (GPU_CHECK_UNPACK_DEPS=1 forces it, to test that path). cuDNN may come
# from PyTorch's wheel.
#
# GPU_CHECK_EMULATED=1 rehearses all of this without a GPU, on the emulated
# GPU of the tests (tests/cuda_emu): the same stages and reports, with the
# emulated programs at small sizes (bench_gpu --small, --limit-train),
# ctest -L cuda_emulated for the suite, no compute-sanitizer, and the PyTorch
# and CuPy halves skipped where this machine's PyTorch has no CUDA. Run it
# after changing this script or the benchmarks, before a run on a GPU:
#   GPU_CHECK_EMULATED=1 scripts/gpu-check.sh   (about 6 minutes on 2 cores, 4 once built)
#
# Commit the results as bench/results/<date>-<gpu>*.md. Never changes GPU
# settings (no nvidia-smi -pm/-pl/-ac/-lgc/-r/-c/-mig).
set -uo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
budget=${GPU_CHECK_SECONDS:-540}
emulated=${GPU_CHECK_EMULATED:-0}
if [ "$emulated" = 1 ]; then
  build=${GPU_CHECK_BUILD:-build-gpu-emu}
  [ -n "${GPU_CHECK_SECONDS:-}" ] || budget=1500
else
  build=${GPU_CHECK_BUILD:-build-gpu}
fi
out=bench/results/gpu-check
stages=()
while [ $# -gt 0 ]; do
  case $1 in
  --out) [ $# -ge 2 ] || { echo "gpu-check.sh: --out needs a folder" >&2; exit 2; }; out=$2; shift 2 ;;
  --out=*) out=${1#--out=}; shift ;;
  -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  -*) echo "gpu-check.sh: unknown option $1 (usage: scripts/gpu-check.sh [--out DIR] [STAGE...])" >&2; exit 2 ;;
  *) stages+=("$1"); shift ;;
  esac
done
[ ${#stages[@]} -eq 0 ] && stages=(test bench train epoch sanitize)
mkdir -p "$out"
logs=$(mktemp -d)
summary=$out/gpu-check.md
status=0

left() { echo $((start + budget - $(date +%s))); }
# Seconds for a command: at most $1, never past the budget, and at least 1
# (`timeout 0` would mean no limit at all).
limit() {
  local l
  l=$(left)
  [ "$l" -lt "$1" ] || l=$1
  [ "$l" -ge 1 ] || l=1
  echo "$l"
}
# tmo SECONDS CMD...: CMD under limit SECONDS, killed (-9) 10 s after if it ignores
# SIGTERM (a process stuck in the driver does).
tmo() {
  local s=$1
  shift
  timeout -k 10 "$(limit "$s")" "$@"
}
note() { echo "$*" | tee -a "$summary"; }
section() { echo; echo "== $* ($(( $(date +%s) - start )) s) =="; }

gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n1)
[ "$emulated" = 1 ] && gpu="ctensor CUDA emulator (a rehearsal on the CPU, not a GPU run)"
gpu_tag=$(echo "${gpu:-unknown-gpu}" | tr -cs 'A-Za-z0-9' '-' | sed 's/-$//')
# The Python with torch (and CuPy, for the GPU benchmarks): on a GPU, the
# first of python3 on PATH, a virtual environment at /opt/torch/.venv (where
# some GPU machines keep PyTorch) and /usr/bin/python3 (Debian's) whose torch
# sees CUDA; else the first that imports torch.
pys=()
c=$(command -v python3) && pys+=("$c")
pys+=(/opt/torch/.venv/bin/python3 /usr/bin/python3)
py=""
if [ "$emulated" != 1 ]; then
  for c in "${pys[@]}"; do
    [ -x "$c" ] && "$c" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' \
      > /dev/null 2>&1 && { py=$c; break; }
  done
fi
if [ -z "$py" ]; then
  for c in "${pys[@]}"; do
    [ -x "$c" ] && "$c" -c 'import torch' > /dev/null 2>&1 && { py=$c; break; }
  done
fi
[ -n "$py" ] || py=${pys[0]}
{
  echo "# GPU check $(date -u +%FT%TZ) on ${gpu:-no GPU found}: ${stages[*]}"
  echo
  echo '```'
  [ "$emulated" = 1 ] ||
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv 2>&1
  nvcc --version 2>&1 | tail -n 1
  "$py" -c 'import torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1 | tail -n 1
  "$py" -c 'import cupy; print("cupy", cupy.__version__)' 2>&1 | tail -n 1
  echo "python3 for the peers: $py"
  echo "cpus $(nproc)"
  echo '```'
} > "$summary"

# ---- Dependencies the machine may lack ----------------------------------------------------
cmake_extra=()
have_cblas() { # any one of the places Debian's and others' packages put it
  local f
  for f in /usr/include/cblas.h /usr/include/*/cblas.h /usr/include/*/openblas*/cblas.h \
           /usr/include/openblas/cblas.h; do
    [ -e "$f" ] && return 0
  done
  return 1
}
if [ "${GPU_CHECK_UNPACK_DEPS:-0}" = 1 ] || ! have_cblas || [ ! -f /usr/include/zlib.h ] ||
   [ ! -f /usr/include/dlpack/dlpack.h ]; then
  prefix=/tmp/ct-gpu-deps
  if ls .gpu-deps/debs/*.deb > /dev/null 2>&1; then
    mkdir -p "$prefix/runtime"
    for f in .gpu-deps/debs/*.deb; do dpkg -x "$f" "$prefix"; done
    # zlib1g-dev's libz.so points to /lib/...: point it at the unpacked library
    z=$(ls "$prefix"/lib/*/libz.so.1.* 2> /dev/null | head -n1)
    [ -n "$z" ] && ln -sf "$z" "$prefix"/usr/lib/*/libz.so
    # runtime libraries the system lacks, and only those, on the loader's path
    for lib in libgfortran.so.5 libquadmath.so.0; do
      ldconfig -p | grep -q "$lib " || ln -sf "$prefix"/usr/lib/*/"$lib" "$prefix/runtime/"
    done
    export LD_LIBRARY_PATH=$prefix/runtime${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    cmake_extra+=(-DCMAKE_PREFIX_PATH="$prefix/usr")
    note "- dependencies: OpenBLAS/zlib unpacked from .gpu-deps into $prefix"
  else
    note "- dependencies: no OpenBLAS or zlib headers here and no .gpu-deps/ (run scripts/gpu-deps.sh where there is network access and copy .gpu-deps/ here)"
  fi
fi
# cuDNN: the toolkit's or the system's if it has one (CMake finds it); else
# PyTorch's wheel (nvidia-cudnn-cu13: nvidia/cudnn/{lib,include}, or wherever
# under nvidia/ it lies), whose look-up in CMake asks the python3 on PATH, which
# may not be $py: so name it, and put its libraries on the loader's path.
cudnn="" have_cudnn=0
nvcc_dir=$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")
for f in "$nvcc_dir"/../include/cudnn.h /usr/include/cudnn.h /usr/include/*/cudnn.h; do
  [ -e "$f" ] && have_cudnn=1
done
[ "$have_cudnn" = 1 ] || cudnn=$("$py" - 2> /dev/null <<'EOF'
import glob, os
import nvidia
for root in nvidia.__path__:
    for lib in sorted(glob.glob(os.path.join(root, "**", "libcudnn.so*"), recursive=True)):
        d = os.path.dirname(os.path.dirname(lib))
        if os.path.exists(os.path.join(d, "include", "cudnn.h")):
            print(d)
            raise SystemExit
EOF
)
if [ -n "$cudnn" ] && [ -d "$cudnn/lib" ]; then
  export LD_LIBRARY_PATH=$cudnn/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  [ "$emulated" = 1 ] || cmake_extra+=(-DCUDNN_ROOT="$cudnn")
  note "- cuDNN: $cudnn (PyTorch's wheel)"
fi

# The GPU's own architectures only (real code, no PTX): a third of the compile
# time of the default three. One the toolkit does not know is left to CMake's
# choice (cmake/CtCudaArchitectures.cmake: the newest PTX).
if [ "$emulated" != 1 ]; then
  archs=""
  known=$(nvcc --list-gpu-arch 2> /dev/null)
  for cc in $(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2> /dev/null | tr -d ' .' | sort -u); do
    if echo "$known" | grep -qx "compute_$cc"; then archs="${archs:+$archs;}${cc}-real"; else archs=""; break; fi
  done
  if [ -n "$archs" ]; then
    cmake_extra+=(-DCMAKE_CUDA_ARCHITECTURES="$archs")
    note "- CUDA architectures: $archs (the GPUs found)"
  fi
fi

# ---- Build ----------------------------------------------------------------------------------
# The programs each stage runs: the real CUDA build's, or the emulated GPU's.
if [ "$emulated" = 1 ]; then
  cuda_flags=(-DCTENSOR_CUDA=OFF -DCTENSOR_CUDA_EMU=ON -DCTENSOR_CUDA_EMU_LIB=ON)
  emu=$build/tests/cuda_emu/lib
  bench_gpu=$emu/bench_gpu_emu bench_train=$emu/bench_train_emu ctensor_prog=$emu/ctensor_cli_emu
  gpu_args=(--small) train_args=(--budget 0.01) epoch_args=(--limit-train 512 --limit-test 500 --no-peer)
  : "${CT_GPU_BENCH_BUDGET:=0.02}" "${CT_GPU_EPOCHS:=1}"
  ctest_label=(-L cuda_emulated) ctest_jobs=$(nproc)
else
  # The emulated-GPU tests run in CI; here they would only cost build and test time.
  cuda_flags=(-DCTENSOR_CUDA=ON -DCTENSOR_CUDA_EMU=OFF)
  bench_gpu=$build/bench/bench_gpu bench_train=$build/bench/bench_train
  ctensor_prog=$build/tools/ctensor/ctensor
  gpu_args=() train_args=(--budget 1.0) epoch_args=() ctest_label=() ctest_jobs=8
fi
section "configure + build (Release, ${cuda_flags[*]})"
t0=$(date +%s)
if tmo 300 cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release "${cuda_flags[@]}" \
     -DCTENSOR_BUILD_BENCH=ON -DCT_PYTHON3="$py" ${cmake_extra[@]+"${cmake_extra[@]}"} \
     > "$logs/configure.log" 2>&1 &&
   tmo 600 cmake --build "$build" -j"$(nproc)" > "$logs/build.log" 2>&1; then
  note "- build: ok in $(( $(date +%s) - t0 )) s"
  built=1
else
  grep -E 'error|Error' "$logs/build.log" "$logs/configure.log" | head -n 30
  note "- build: FAILED after $(( $(date +%s) - t0 )) s (configure.log, build.log)"
  built=0
  status=1
fi
bin=$build/tests
"$ctensor_prog" info > "$logs/info.log" 2>&1 && sed 's/^/    /' "$logs/info.log" >> "$summary"

# ---- Stages -----------------------------------------------------------------------------------
stage_test() {
  local rc
  (cd "$build" && tmo 330 ctest -j"$ctest_jobs" --timeout 300 --output-on-failure \
     ${ctest_label[@]+"${ctest_label[@]}"}) > "$logs/ctest.log" 2>&1
  rc=$?
  note "- ctest: rc=$rc; $(grep -E 'tests passed|tests failed' "$logs/ctest.log" | tail -n1)"
  grep -E '\*\*\*(Failed|Skipped|Timeout|Exception)|Not Run' "$logs/ctest.log" | sed 's/^/  - /' | tee -a "$summary"
  # the first lines of each failure, for the reader of this summary
  grep -E '^(FAIL|not ok|.*: FAILED|.*error:)' "$logs/ctest.log" | head -n 40 | sed 's/^/    /' | tee -a "$summary"
  return $rc
}

# bench_gpu and peers_gpu.py (PyTorch and CuPy, each in its own process: a crash
# of one keeps the other's rows) in rounds whose order alternates; report.py
# keeps each implementation's best median and renders the GPU targets.
stage_bench() {
  local raw=$out/gpu-bench.jsonl rc=0 r who w t0
  local rounds=${CT_GPU_BENCH_ROUNDS:-2} b=${CT_GPU_BENCH_BUDGET:-1.0}
  echo "{\"meta\":\"run\",\"rounds\":$rounds,\"budget_s\":$b}" > "$raw"
  for r in $(seq "$rounds"); do
    for who in $([ $((r % 2)) -eq 1 ] && echo "ctensor torch cupy" || echo "torch cupy ctensor"); do
      if [ "$(left)" -lt 20 ]; then note "- bench round $r, $who: not run (budget)"; rc=1; continue; fi
      t0=$(date +%s)
      if [ "$who" = ctensor ]; then
        tmo 150 "$bench_gpu" --budget "$b" ${gpu_args[@]+"${gpu_args[@]}"} >> "$raw" 2>> "$logs/bench_gpu.log"
      else
        PYTHONUNBUFFERED=1 tmo 150 "$py" bench/peers_gpu.py --impl "$who" --budget "$b" >> "$raw" \
          2>> "$logs/peers_gpu.log"
      fi
      w=$?
      note "- bench round $r, $who: rc=$w in $(( $(date +%s) - t0 )) s"
      [ $w -ne 0 ] && rc=1
    done
  done
  grep -q '"error": *"wrong result' "$raw" && { note "- bench: WRONG RESULTS (error rows in the report)"; rc=1; }
  report "$raw" "$out/gpu-bench.md" || rc=1
  return $rc
}

stage_train() {
  local raw=$out/gpu-train.jsonl rc=0 w
  : > "$raw"
  tmo 150 "$bench_train" --device cuda:0 "${train_args[@]}" >> "$raw" 2>> "$logs/bench_train.log"
  w=$?; note "- bench_train --device cuda:0: rc=$w"; [ $w -ne 0 ] && rc=1
  PYTHONUNBUFFERED=1 tmo 150 "$py" bench/peers_train.py --device cuda --budget 1.0 >> "$raw" \
    2>> "$logs/peers_train.log"
  w=$?; note "- peers_train.py --device cuda: rc=$w"; [ $w -ne 0 ] && rc=1
  report "$raw" "$out/gpu-train.md" || rc=1
  return $rc
}

stage_epoch() {
  local rc data=.gpu-deps/fashion-mnist
  [ -d "$data" ] || data=/usr/share/datasets/fashion-mnist
  PYTHONUNBUFFERED=1 tmo 300 bench/epoch_fmnist.sh --device cuda:0 --python "$py" --data-dir "$data" \
    --ctensor "$ctensor_prog" --epochs "${CT_GPU_EPOCHS:-10}" --target 0.91 --out-dir "$out" \
    ${epoch_args[@]+"${epoch_args[@]}"} > "$logs/epoch.log" 2>&1
  rc=$?
  note "- epoch_fmnist.sh --device cuda:0: rc=$rc"
  tail -n 25 "$logs/epoch.log" | sed 's/^/    /' | tee -a "$summary"
  return $rc
}

stage_sanitize() {
  local cs t tool rc=0 w res
  if [ "$emulated" = 1 ]; then
    note "- compute-sanitizer: not run on the emulated GPU (its tests check bounds and races themselves)"
    return 0
  fi
  cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  if [ ! -x "$cs" ]; then
    note "- compute-sanitizer: not found (PATH, /usr/local/cuda/bin)"
    return 1
  fi
  # memcheck over every op test on the GPU first, then the other tools (slower)
  # over a few: what the budget cuts is the least useful part.
  # test_cuda and test_cuda_elementwise are GPU-only (no --device argument).
  local tests=(test_cuda test_cuda_elementwise test_binary test_unary test_reduce test_softmax
               test_matmul test_index test_random test_nn_functional test_loss test_module
               test_optim test_autograd)
  local runs=() few=(test_cuda test_reduce test_index test_softmax)
  for t in "${tests[@]}"; do runs+=("memcheck $t"); done
  for tool in racecheck initcheck synccheck; do
    for t in "${few[@]}"; do runs+=("$tool $t"); done
  done
  local run
  for run in "${runs[@]}"; do
    tool=${run% *} t=${run#* }
    [ -x "$bin/$t" ] || { note "  - $tool $t: no $bin/$t"; continue; }
    if [ "$(left)" -lt 15 ]; then note "  - $run and the rest: not run (budget)"; rc=1; break; fi
    local args=(--device cuda)
    case $t in test_cuda | test_cuda_elementwise) args=() ;; esac
    # API errors are the library's to check and report (the OOM tests provoke
    # them on purpose); the tools look for what it cannot see itself. Without
    # the caching allocator (CT_CUDA_NO_CACHE=1) each tensor is its own
    # cudaMalloc of its exact size, so memcheck sees an overrun that would
    # stay inside a rounded or split block of the cache.
    CT_CUDA_NO_CACHE=1 tmo 90 "$cs" --tool "$tool" --error-exitcode 99 --report-api-errors no \
      "$bin/$t" ${args[@]+"${args[@]}"} > "$logs/cs-$tool-$t.log" 2>&1
    w=$?
    res=$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$logs/cs-$tool-$t.log" | tail -n1)
    [ $w -eq 124 ] || [ $w -eq 137 ] && res="timed out; $res"
    note "  - $tool $t: rc=$w $res"
    # Some container runtimes keep the tools off the GPU: say so once, stop.
    if grep -q 'Device not supported' "$logs/cs-$tool-$t.log"; then
      note "  - compute-sanitizer: 'Device not supported' on this machine (its runtime); stage stopped"
      return 1
    fi
    [ $w -ne 0 ] && [ $w -ne 77 ] && rc=1
  done
  return $rc
}

report() {
  if "$py" bench/report.py "$1" > "$2" 2> "$logs/report-$(basename "$2").log"; then
    sed -n '/^## Targets/,/^## All/p' "$2" | sed '$d' | tee -a "$summary"
  else
    note "- report.py $1: FAILED"
    tail -n 5 "$logs/report-$(basename "$2").log"
    return 1
  fi
}

for s in "${stages[@]}"; do
  section "$s"
  if [ "$built" != 1 ]; then note "- $s: not run (no build)"; continue; fi
  if [ "$(left)" -lt 30 ]; then note "- $s: not run (budget of ${budget} s spent)"; status=1; continue; fi
  case $s in
  test | bench | train | epoch | sanitize)
    echo "## $s" >> "$summary"
    t0=$(date +%s)
    "stage_$s" || status=1
    note "- $s: $(( $(date +%s) - t0 )) s" ;;
  *) note "- unknown stage $s (test bench train epoch sanitize)"; status=1 ;;
  esac
done

tar -czf "$out/gpu-logs.tar.gz" -C "$logs" . 2> /dev/null
note "- total: $(( $(date +%s) - start )) s, status $status; GPU tag for results: ${gpu_tag}"
section "summary ($summary)"
cat "$summary"
exit $status
