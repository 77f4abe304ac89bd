#!/usr/bin/env bash
# Everything the CUDA backend needs a GPU for, in ONE run of at most 8 minutes
# on a GPU machine (possibly without network access), the build included. The
# stages, most telling first, each with a slice of the budget:
#   build     configure and build (Release, CUDA, the GPU's own architecture,
#             warnings not fatal: CTENSOR_WERROR=OFF) only what the stages run
#   test      the [cuda] tests and the GPU-only ones; a [cuda] test that fails
#             is rerun as its [cpu] twin: the twin passes = a GPU defect, it
#             fails too = the oracle's (PyTorch 2.x here, Debian's 1.13 in CI)
#   cli       the `ctensor` program's end-to-end tests on cuda:0
#             (CT_TEST_DEVICE=cuda:0), failures rerun on the CPU likewise
#   epoch     a short Fashion-MNIST run against PyTorch eager
#   bench     one round of the GPU benchmarks: bench_gpu, PyTorch, CuPy
#   sanitize  compute-sanitizer memcheck over the tests of the newest kernels,
#             with the caching allocator bypassed (CT_CUDA_NO_CACHE=1), in the
#             time left
#   train     (not in the default run) bench_train --device cuda:0 against
#             PyTorch eager
#
#   scripts/gpu-check.sh [--out DIR] [--plan] [STAGE...]
#
# The plan (stage, seconds) is printed first and each stage's seconds at the
# end. A stage gets its slice plus what the stages before it left unused, is
# stopped at that limit, and is reported as not run when the budget
# (GPU_CHECK_SECONDS, default 480) is spent; the build alone may borrow from
# the later stages. --plan prints the plan and exits (1 if it exceeds the budget).
# A [cuda] test skipped while a GPU is visible fails its stage.
#
# Results: DIR (default bench/results/gpu-check) gets gpu-check.md (the
# summary, also printed) and gpu-check.tar.gz (at most 16 MiB: the summary,
# gpu-check.jsonl with one line per stage and per failed test, the benchmarks'
# JSON lines and reports, and every log, trimmed to fit). Commit the summary as
# bench/results/<date>-<gpu>.md (the GPU tag is printed at the end).
#
# A GPU machine without network access may lack OpenBLAS or zlib headers:
# then the Debian packages gathered beforehand by scripts/gpu-deps.sh (in
# .gpu-deps/, copied along with the source tree) are unpacked into a prefix
# with `ar` and `tar` (dpkg is not needed; GPU_CHECK_UNPACK_DEPS=1 forces it,
# to test that path). cuDNN may come from PyTorch's wheel. The build directory
# is GPU_CHECK_BUILD (default build-gpu). Also: CT_GPU_EPOCHS (default 1),
# CT_GPU_BENCH_BUDGET (seconds per workload, default 0.3) and
# GPU_CHECK_SANITIZE_TESTS (the tests memcheck runs, in order).
#
# GPU_CHECK_EMULATED=1 rehearses the same plan without a GPU, on the emulated
# GPU of the tests (tests/cuda_emu): the programs at small sizes, a few tests
# (GPU_CHECK_EMU_TESTS, a ctest regex), the sanitizer's tests run bare. The
# slices are scaled for this machine's cores (16 / nproc, or
# GPU_CHECK_SCALE) and both columns are printed. A configured build directory
# (GPU_CHECK_BUILD, default build-gpu-emu; CI passes its own `build`) is reused
# as it is: only the missing programs are built. In CI:
#   GPU_CHECK_EMULATED=1 GPU_CHECK_BUILD=build scripts/gpu-check.sh --out build/gpu-check-rehearsal
#
# Never changes GPU settings (no nvidia-smi -pm/-pl/-ac/-lgc/-r/-c/-mig).
# shellcheck disable=SC2317 # the stages are called by name: "stage_$s"
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
start=$(date +%s)
budget_gpu=${GPU_CHECK_SECONDS:-480}
emulated=${GPU_CHECK_EMULATED:-0}
out=bench/results/gpu-check
plan_only=0
stages=()
while [ $# -gt 0 ]; do
  case $1 in
  --out)
    [ $# -ge 2 ] || { echo "gpu-check.sh: --out needs a folder" >&2; exit 2; }
    out=$2
    shift 2
    ;;
  --out=*) out=${1#--out=}; shift ;;
  --plan) plan_only=1; shift ;;
  -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; /^# shellcheck/d; s/^# \{0,1\}//'; exit 0 ;;
  -*) echo "gpu-check.sh: unknown option $1 (usage: scripts/gpu-check.sh [--out DIR] [--plan] [STAGE...])" >&2; exit 2 ;;
  *) stages+=("$1"); shift ;;
  esac
done
[ ${#stages[@]} -eq 0 ] && stages=(test cli epoch bench sanitize)

# ---- The plan ---------------------------------------------------------------------------------
# Seconds per stage on a 16-core GPU machine; the reserve writes the archive.
declare -A slice=([build]=210 [test]=90 [cli]=40 [epoch]=45 [bench]=45 [sanitize]=35 [train]=40)
reserve=15
for s in "${stages[@]}"; do
  [ -n "${slice[$s]:-}" ] ||
    { echo "gpu-check.sh: unknown stage $s (test cli epoch bench sanitize train)" >&2; exit 2; }
done
plan=(build "${stages[@]}")
ncpu=$(nproc)
scale=1
if [ "$emulated" = 1 ]; then
  scale=${GPU_CHECK_SCALE:-$(((16 + ncpu - 1) / ncpu))}
fi
planned=$reserve
for s in "${plan[@]}"; do planned=$((planned + slice[$s])); done
print_plan() {
  local s
  if [ "$emulated" = 1 ]; then
    printf '| stage | s on a 16-core GPU machine | s here (%d cores, x%d) |\n|---|---|---|\n' "$ncpu" "$scale"
    for s in "${plan[@]}" archive; do
      local v=${slice[$s]:-$reserve}
      printf '| %s | %d | %d |\n' "$s" "$v" $((v * scale))
    done
    printf '| total (budget %d s; here %d s) | %d | %d |\n' "$budget_gpu" $((budget_gpu * scale)) "$planned" \
      $((planned * scale))
  else
    printf '| stage | s |\n|---|---|\n'
    for s in "${plan[@]}" archive; do printf '| %s | %d |\n' "$s" "${slice[$s]:-$reserve}"; done
    printf '| total (budget %d s) | %d |\n' "$budget_gpu" "$planned"
  fi
}
if [ "$plan_only" = 1 ]; then
  print_plan
  [ "$planned" -le "$budget_gpu" ] || { echo "gpu-check.sh: the plan ($planned s) exceeds the budget ($budget_gpu s)"; exit 1; }
  exit 0
fi
budget=$((budget_gpu * scale))

if [ "$emulated" = 1 ]; then
  build=${GPU_CHECK_BUILD:-build-gpu-emu}
else
  build=${GPU_CHECK_BUILD:-build-gpu}
fi
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)
work=$(mktemp -d) # what the archive holds
tmp=$(mktemp -d)  # what it does not
logs=$work/logs results=$work/results
mkdir -p "$logs" "$results"
summary=$out/gpu-check.md # written as the run goes: a run killed from outside keeps it
jsonl=$work/gpu-check.jsonl
: > "$jsonl"
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
# Seconds left in the running stage (stage_end is set before each stage).
stage_left() { echo $((stage_end - $(date +%s))); }
note() { echo "$*" | tee -a "$summary"; }
section() { echo; echo "== $* ($(($(date +%s) - start)) s) =="; }
first() { # the first of its arguments (glob results) that exists
  local f
  for f in "$@"; do [ -e "$f" ] && { echo "$f"; return 0; }; done
  return 1
}
jstr() { printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g'; }

# Trims logs over 1 MiB (the head and the tail stay), then archives the
# results, the summary and the logs as gpu-check.tar.gz; a second, harder trim
# if the archive exceeds 16 MiB. Runs on every exit, so a run stopped from
# outside still leaves its results.
archive() {
  local cap f size
  trap - EXIT
  cp "$summary" "$work/" 2> /dev/null
  for cap in 1048576 131072 0; do
    while IFS= read -r -d '' f; do
      size=$(stat -c %s "$f")
      [ "$size" -gt "$cap" ] || continue
      if [ "$cap" = 0 ]; then : > "$f"; continue; fi
      { head -c $((cap / 4)) "$f"; printf '\n[... %d bytes trimmed ...]\n' $((size - cap)); tail -c $((cap * 3 / 4)) "$f"; } > "$f.t"
      mv "$f.t" "$f"
    done < <(find "$logs" -type f -print0)
    tar -czf "$out/gpu-check.tar.gz" -C "$work" . 2> /dev/null
    size=$(stat -c %s "$out/gpu-check.tar.gz")
    [ "$size" -le $((16 << 20)) ] && break
  done
  echo "archive: $out/gpu-check.tar.gz, $((size / 1024)) KiB (limit 16 MiB)"
  rm -rf "$work" "$tmp"
}
trap archive EXIT
trap 'note "- stopped by a signal after $(($(date +%s) - start)) s"; exit 1' INT TERM

# nvcc where the toolkit is installed but not on PATH (CMake looks for it there)
if [ "$emulated" != 1 ] && ! command -v nvcc > /dev/null; then
  for d in /usr/local/cuda/bin /usr/local/cuda-*/bin /opt/cuda/bin; do
    [ -x "$d/nvcc" ] && { PATH=$d:$PATH; break; }
  done
fi
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2> /dev/null | head -n1)
gpu_visible=0
[ -n "$gpu" ] && gpu_visible=1
if [ "$emulated" = 1 ]; then
  gpu="ctensor CUDA emulator (a rehearsal on the CPU, not a GPU run)"
  gpu_visible=1
fi
gpu_tag=$(echo "${gpu:-unknown-gpu}" | tr -cs 'A-Za-z0-9' '-' | sed 's/-$//')
[ "$emulated" = 1 ] && gpu_tag=emulated
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
  "$py" - << 'EOF' 2>&1
import sys
print("python", sys.version.split()[0])
for m in ("torch", "cupy"):  # one process: importing torch takes seconds
    try:
        mod = __import__(m)
        print(m, mod.__version__, "cuda", getattr(getattr(mod, "version", None), "cuda", ""))
    except Exception as e:
        print(m + ":", type(e).__name__, e)
EOF
  echo "python3 for the peers and the tests' oracle: $py"
  echo "cpus $ncpu"
  echo '```'
  echo
  echo "## Plan"
  echo
  print_plan
  echo
} > "$summary"
cat "$summary"
[ "$planned" -le "$budget_gpu" ] ||
  note "- the plan ($planned s) exceeds the budget ($budget_gpu s): the last stages will be cut"

# ---- Dependencies the machine may lack ----------------------------------------------------
section "dependencies"
cmake_extra=()
have_cblas() { # any one of the places Debian's and others' packages put it
  local f
  for f in /usr/include/cblas.h /usr/include/*/cblas.h /usr/include/*/openblas*/cblas.h \
    /usr/include/openblas/cblas.h; do
    [ -e "$f" ] && return 0
  done
  return 1
}
# unpack_deb DEB DIR: a Debian package's files into DIR without dpkg: `ar x`,
# then its data.tar.{xz,zst,gz,bz2} member; dpkg -x only without ar; Python's
# ar and tar readers without either.
unpack_deb() {
  local deb m tmp rc=0
  deb=$(readlink -f "$1")
  tmp=$(mktemp -d)
  if command -v ar > /dev/null; then
    (cd "$tmp" && ar x "$deb") || rc=1
  elif command -v dpkg > /dev/null; then
    dpkg -x "$deb" "$2"
    rc=$?
    rm -rf "$tmp"
    return "$rc"
  else
    "$py" - "$deb" "$tmp" << 'EOF' || rc=1
import os, sys
deb, dest = sys.argv[1:]
with open(deb, "rb") as f:
    assert f.read(8) == b"!<arch>\n", "not an ar archive"
    while True:
        head = f.read(60)
        if len(head) < 60:
            break
        name, size = head[:16].decode().strip().rstrip("/"), int(head[48:58])
        data = f.read(size)
        f.read(size % 2)
        with open(os.path.join(dest, os.path.basename(name)), "wb") as o:
            o.write(data)
EOF
  fi
  m=$(first "$tmp"/data.tar*)
  if [ "$rc" = 0 ] && [ -n "$m" ]; then
    case $m in
    *.xz) tar -xJf "$m" -C "$2" ;;
    *.gz) tar -xzf "$m" -C "$2" ;;
    *.bz2) tar -xjf "$m" -C "$2" ;;
    *.zst)
      if command -v zstd > /dev/null; then
        zstd -dcq "$m" | tar -xf - -C "$2"
      else
        "$py" -c 'import sys, tarfile, zstandard; tarfile.open(fileobj=zstandard.ZstdDecompressor().stream_reader(open(sys.argv[1], "rb")), mode="r|").extractall(sys.argv[2])' "$m" "$2"
      fi
      ;;
    *) tar -xf "$m" -C "$2" ;;
    esac
    rc=$?
  else
    rc=1
  fi
  rm -rf "$tmp"
  [ "$rc" = 0 ] || echo "gpu-check.sh: cannot unpack $1 (ar, tar, xz or zstd missing?)" >&2
  return "$rc"
}
# The unpacked packages as the build will use them: cblas, zlib and DLPack
# headers from the prefix, linked to the prefix's libraries, run.
check_unpacked() {
  local p=$1 inc lib src=$tmp/deps-check.c
  inc=$(dirname "$(first "$p"/usr/include/*/openblas-pthread/cblas.h "$p"/usr/include/*/cblas.h)")
  lib=$(dirname "$(first "$p"/usr/lib/*/openblas-pthread/libopenblas.so "$p"/usr/lib/*/libopenblas.so)")
  cat > "$src" << 'EOF'
#include <cblas.h>
#include <dlpack/dlpack.h>
#include <string.h>
#include <zlib.h>
int main(void) {
  float a = 2, b = 3, c = 0;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 1, 1, 1, 1.f, &a, 1, &b, 1, 0.f, &c, 1);
  return !(c == 6.f && strncmp(zlibVersion(), ZLIB_VERSION, 4) == 0 && sizeof(DLTensor) > 0);
}
EOF
  cc -o "$tmp/deps-check" "$src" -I"$inc" -I"$p/usr/include" -L"$lib" -L"$(dirname "$(first "$p"/usr/lib/*/libz.so)")" \
    -lopenblas -lz -Wl,-rpath,"$lib" > "$logs/deps-check.log" 2>&1 &&
    "$tmp/deps-check" >> "$logs/deps-check.log" 2>&1 &&
    ldd "$tmp/deps-check" | grep -E 'openblas|libz' >> "$logs/deps-check.log"
}
if [ "${GPU_CHECK_UNPACK_DEPS:-0}" = 1 ] || ! have_cblas || [ ! -f /usr/include/zlib.h ] ||
  [ ! -f /usr/include/dlpack/dlpack.h ]; then
  prefix=/tmp/ct-gpu-deps
  if ls .gpu-deps/debs/*.deb > /dev/null 2>&1; then
    rm -rf "$prefix"
    mkdir -p "$prefix/runtime"
    ok=1
    for f in .gpu-deps/debs/*.deb; do unpack_deb "$f" "$prefix" 2>> "$logs/deps.log" || ok=0; done
    # zlib1g-dev's libz.so points to /lib/...: point it at the unpacked library
    z=$(first "$prefix"/lib/*/libz.so.1.* "$prefix"/usr/lib/*/libz.so.1.*)
    for l in "$prefix"/usr/lib/*/libz.so; do [ -n "$z" ] && ln -sf "$z" "$l"; done
    # runtime libraries the system lacks, and only those, on the loader's path
    for lib in libgfortran.so.5 libquadmath.so.0; do
      ldconfig -p 2> /dev/null | grep -q "$lib " || ln -sf "$prefix"/usr/lib/*/"$lib" "$prefix/runtime/"
    done
    export LD_LIBRARY_PATH=$prefix/runtime${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    cmake_extra+=(-DCMAKE_PREFIX_PATH="$prefix/usr")
    if [ "$ok" = 1 ] && check_unpacked "$prefix"; then
      note "- dependencies: OpenBLAS, zlib and DLPack unpacked from .gpu-deps into $prefix ($(command -v ar > /dev/null && echo 'ar + tar' || echo 'no ar')), checked by a program linked to them"
    else
      note "- dependencies: unpacking .gpu-deps into $prefix FAILED (deps.log, deps-check.log)"
      status=1
    fi
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
[ "$have_cudnn" = 1 ] || cudnn=$(
  "$py" - 2> /dev/null << 'EOF'
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
    if echo "$known" | grep -qx "compute_$cc"; then archs="${archs:+$archs;}${cc}-real"; else
      archs=""
      break
    fi
  done
  if [ -n "$archs" ]; then
    cmake_extra+=(-DCMAKE_CUDA_ARCHITECTURES="$archs")
    note "- CUDA architectures: $archs (the GPUs found)"
  fi
fi

# ---- What each stage runs ---------------------------------------------------------------------
# ctest selections (regex, excluded regex) and programs: the real CUDA build's,
# or the emulated GPU's.
if [ "$emulated" = 1 ]; then
  cuda_flags=(-DCTENSOR_CUDA=OFF -DCTENSOR_CUDA_EMU=ON -DCTENSOR_CUDA_EMU_LIB=ON)
  bench_gpu=bench_gpu_emu bench_train=bench_train_emu ctensor_prog=ctensor_cli_emu
  gpu_args=(--small) train_args=(--budget 0.01) epoch_args=(--limit-train 128 --limit-test 100 --no-peer)
  : "${CT_GPU_BENCH_BUDGET:=0.02}"
  test_re=${GPU_CHECK_EMU_TESTS:-'^test_(cuda|binary|rnn_cell)\[cuda_emulated\]$'}
  test_ex='^cli_'
  cli_re='^cli_(e2e|amp)\[cuda_emulated\]$' cli_ex='^$'
  ctest_jobs=$ncpu
  sanitize_n=2 # the first tests of the list, bare: the harness's path, not the tool
else
  cuda_flags=(-DCTENSOR_CUDA=ON -DCTENSOR_CUDA_EMU=OFF)
  bench_gpu=bench_gpu bench_train=bench_train ctensor_prog=ctensor_cli
  gpu_args=() train_args=(--budget 1.0) epoch_args=()
  test_re='\[cuda\]$|^test_cuda$|^test_cuda_elementwise$|^test_data$' test_ex='^cli_'
  # cli_dist needs MPI and two GPUs' worth of ranks; cli_kill_save trains nothing
  cli_re='^cli_' cli_ex='\[cpu\]$|\[cuda_emulated\]$|^cli_dist$|^cli_kill_save$'
  ctest_jobs=$((ncpu < 8 ? ncpu : 8)) # the tests share one GPU
  sanitize_n=1000
fi
# The tests of the newest kernels first (rnn, upsample, solver, remap, sort and
# scan, pool, norm, optim, index), then the core ops: what the time cuts is
# the least new. test_cuda is GPU-only (no --device argument).
read -ra sanitize_tests <<< "${GPU_CHECK_SANITIZE_TESTS:-test_cuda test_rnn_cell test_rnn_layer test_upsample
  test_linalg_lstsq test_sort_scan test_pool_layers test_norm_layers test_optim test_adv_index
  test_index test_attention test_reduce test_softmax test_binary test_unary test_matmul}"
exe() { # a program's path in the build: the emulated GPU's have a suffix
  case $1 in
  ctensor_cli) echo "$build/tools/ctensor/ctensor" ;;
  ctensor_cli_emu | bench_gpu_emu | bench_train_emu) echo "$build/tests/cuda_emu/lib/$1" ;;
  bench_*) echo "$build/bench/$1" ;;
  *_emu) echo "$build/tests/cuda_emu/lib/$1" ;;
  *) echo "$build/tests/$1" ;;
  esac
}
sanitize_exe() { [ "$emulated" = 1 ] && echo "${1}_emu" || echo "$1"; }

# The targets the selected tests run: the programs their commands name (in the
# build's CTestTestfile.cmake files: ctest itself names no program not built
# yet), of the build's target list.
test_targets() { # ctest selection args...
  (cd "$build" && ctest -N "$@") 2> /dev/null | sed -n 's/^ *Test *#[0-9]*: //p' | "$py" -c '
import os, re, sys
build, targets = sys.argv[1], set(sys.argv[2].split())
names = set(sys.stdin.read().split())
alias = {"ctensor": "ctensor_cli"}  # the file name of the program
for root, _, files in os.walk(build):
    if "CTestTestfile.cmake" not in files:
        continue
    for line in open(os.path.join(root, "CTestTestfile.cmake")):
        m = re.match(r"add_test\(\[=\[(.*?)\]=\] (.*)\)$", line.strip())
        if m and m.group(1) in names:
            for a in re.findall(r"\"([^\"]*)\"", m.group(2)):
                if "/" not in a or "/cli_work/" in a:  # no path, or a scratch folder
                    continue
                b = alias.get(os.path.basename(a), os.path.basename(a))
                if b in targets:
                    print(b)' "$build" "$all_targets" | sort -u
}

# ---- Build ----------------------------------------------------------------------------------
section "build (Release, ${cuda_flags[*]}, CTENSOR_WERROR=OFF)"
echo "## Stages" >> "$summary"
# The build may borrow from every stage but the tests: nothing runs without it.
keep=$reserve
case " ${stages[*]} " in *" test "*) keep=$((reserve + slice[test])) ;; esac
stage_end=$((start + budget - keep * scale))
t0=$(date +%s)
built=0
declare -A took verdict
configured=0 w=0
if [ "$emulated" = 1 ] && [ -f "$build/CMakeCache.txt" ]; then
  if grep -q '^CTENSOR_CUDA_EMU_LIB:BOOL=ON' "$build/CMakeCache.txt"; then
    note "- build: reusing the configured $build as it is (the emulated GPU's library is on)"
    configured=1
  else
    note "- build: $build has no emulated GPU library (CTENSOR_CUDA_EMU_LIB): name another GPU_CHECK_BUILD"
  fi
else
  tmo "$(stage_left)" cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release "${cuda_flags[@]}" \
    -DCTENSOR_WERROR=OFF -DCTENSOR_BUILD_BENCH=ON -DCTENSOR_BUILD_EXAMPLES=OFF -DCTENSOR_PYTHON=OFF \
    -DCTENSOR_MPI=OFF -DCT_PYTHON3="$py" ${cmake_extra[@]+"${cmake_extra[@]}"} > "$logs/configure.log" 2>&1
  w=$?
  [ "$w" = 0 ] && configured=1
fi
targets=()
if [ "$configured" = 1 ]; then
  all_targets=$(cmake --build "$build" --target help 2> /dev/null | sed -n 's/^\.\.\. \([^ ]*\).*/\1/p' | tr '\n' ' ')
  for s in "${stages[@]}"; do
    case $s in
    test) mapfile -t -O "${#targets[@]}" targets < <(test_targets -R "$test_re" -E "$test_ex") ;;
    cli) mapfile -t -O "${#targets[@]}" targets < <(test_targets -R "$cli_re" -E "$cli_ex") ;;
    epoch) targets+=("$ctensor_prog") ;;
    bench) targets+=("$bench_gpu") ;;
    train) targets+=("$bench_train") ;;
    sanitize) for t in "${sanitize_tests[@]:0:$sanitize_n}"; do targets+=("$(sanitize_exe "$t")"); done ;;
    esac
  done
  [ "$emulated" = 1 ] || targets+=(ctensor-cuda "$ctensor_prog")
  mapfile -t targets < <(printf '%s\n' "${targets[@]}" | sort -u)
  # no target list (another generator's `help`): everything
  [ -n "$all_targets" ] || targets=(all)
  echo "targets: ${targets[*]}" > "$logs/build.log"
  tmo "$(stage_left)" cmake --build "$build" -j"$ncpu" --target "${targets[@]}" >> "$logs/build.log" 2>&1
  w=$?
  [ "$w" = 0 ] && built=1
fi
took[build]=$(($(date +%s) - t0))
if [ "$built" = 1 ]; then
  note "- build: ok in ${took[build]} s (${#targets[@]} targets)"
  verdict[build]=ok
  "$(exe "$ctensor_prog")" info > "$logs/info.log" 2>&1 && sed 's/^/    /' "$logs/info.log" >> "$summary"
  grep -c 'warning:' "$logs/build.log" | xargs -I{} echo "- build warnings: {} (build.log)" | tee -a "$summary"
else
  grep -E 'error|Error' "$logs/build.log" "$logs/configure.log" 2> /dev/null | head -n 30
  cut=""
  [ "${w:-0}" = 124 ] || [ "${w:-0}" = 137 ] && cut=", cut at its limit"
  note "- build: FAILED after ${took[build]} s$cut (configure.log, build.log)"
  verdict[build]=FAILED
  status=1
fi
printf '{"stage":"build","planned_s":%d,"seconds":%d,"status":"%s"}\n' "${slice[build]}" "${took[build]}" "${verdict[build]}" >> "$jsonl"

# ---- Stages -----------------------------------------------------------------------------------
# run_ctest NAME ENV... -- CTEST_ARGS...: one ctest run in the stage's time;
# fails on a failed test and on a skipped or not run one while a GPU is
# visible; each failed test is rerun as its twin (rerun_twin).
run_ctest() {
  local name=$1 rc skipped failed t envs=()
  shift
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  # each test stops 5 s before the stage, so that ctest still reports it
  (cd "$build" && tmo "$(stage_left)" env ${envs[@]+"${envs[@]}"} ctest -j"$ctest_jobs" \
    --timeout $(($(stage_left) > 10 ? $(stage_left) - 5 : 5)) --output-on-failure "$@") > "$logs/$name.log" 2>&1
  rc=$?
  note "- ctest ($name): rc=$rc; $(grep -E 'tests passed|tests failed|No tests were found' "$logs/$name.log" | tail -n1)"
  skipped=$(grep -cE '\*\*\*(Skipped|Not Run)' "$logs/$name.log")
  grep -E '\*\*\*(Failed|Skipped|Timeout|Exception)|Not Run' "$logs/$name.log" | sed 's/^ */  - /' | tee -a "$summary"
  if [ "$skipped" -gt 0 ] && [ "$gpu_visible" = 1 ]; then
    note "- $name: $skipped test(s) skipped or not run while a GPU is visible: FAILED"
    rc=1
  fi
  # the first failures of each test, for the reader of the summary
  grep -E '^(FAIL|not ok|.*: FAILED|.*error:)' "$logs/$name.log" | awk '$1 != "FAIL" || n[$2]++ < 2' |
    head -n 16 | cut -c1-300 | sed 's/^/    /' | tee -a "$summary"
  failed=$(sed -n '/The following tests FAILED/,$p' "$logs/$name.log" | sed -n 's/^[[:space:]]*[0-9]* - \([^ ]*\) (.*$/\1/p')
  for t in $failed; do rerun_twin "$name" "$t"; done
  [ "$rc" = 0 ]
}

# The [cpu] twin of a failed test (NAME[cuda] -> NAME[cpu]; a program test on
# cuda:0 -> the same on the CPU; NAME[cuda_emulated] -> NAME[cpu] or NAME):
# passing, the GPU is at fault; failing too, the oracle or a test's
# expectations (PyTorch 2.x on the GPU machine, 1.13 where they were written).
rerun_twin() {
  local stage=$1 t=$2 base twin="" envs=() rc v re tt
  base=${t%\[cuda\]}
  base=${base%\[cuda_emulated\]}
  if [ "$base" != "$t" ] && grep -qxF "${base}[cpu]" "$tmp/tests.txt"; then
    twin="${base}[cpu]"
  elif [ "$stage" = cli ] && [ "$emulated" != 1 ]; then
    twin=$t envs=(CT_TEST_DEVICE=cpu)
  elif [ "$base" != "$t" ] && [ "${t#cli_}" != "$t" ] && grep -qxF "$base" "$tmp/tests.txt"; then
    twin=$base # the program's test on the emulated GPU: the same test on the CPU
  fi
  if [ -z "$twin" ]; then
    v="no [cpu] twin (a GPU-only test): see its log"
  elif [ "$(stage_left)" -lt 5 ]; then
    v="twin $twin not run (time)"
  else
    re="^$(printf '%s' "$twin" | sed 's/[][().*+?^$|\\]/\\&/g')\$"
    # the emulated GPU's twins are other programs, maybe not built yet
    if [ "$emulated" = 1 ]; then
      mapfile -t tt < <(test_targets -R "$re")
      [ ${#tt[@]} -eq 0 ] || tmo "$(stage_left)" cmake --build "$build" -j"$ncpu" --target "${tt[@]}" \
        >> "$logs/build.log" 2>&1
    fi
    (cd "$build" && tmo "$(stage_left)" env ${envs[@]+"${envs[@]}"} ctest --timeout "$(stage_left)" \
      --output-on-failure -R "$re") > "$tmp/twin.log" 2>&1
    rc=$?
    cat "$tmp/twin.log" >> "$logs/twins.log"
    if grep -qE '\*\*\*(Not Run|Skipped|Timeout)|No tests were found' "$tmp/twin.log"; then
      v="twin $twin did not run to its end: undecided (twins.log)"
    elif [ "$rc" = 0 ]; then
      v="twin $twin passes: GPU defect"
    else
      v="twin $twin fails too: oracle/version difference (or a defect on both devices)"
    fi
  fi
  note "  - $t: $v"
  printf '{"stage":"%s","test":"%s","twin":"%s","verdict":"%s"}\n' "$stage" "$(jstr "$t")" "$(jstr "$twin")" \
    "$(jstr "$v")" >> "$jsonl"
}

stage_test() {
  run_ctest test -- -R "$test_re" -E "$test_ex"
}

# The program's tests train on CT_TEST_DEVICE (tests/cli); on the emulated GPU
# they are the [cuda_emulated] ones, which set it themselves.
stage_cli() {
  run_ctest cli CT_TEST_DEVICE=cuda:0 -- -R "$cli_re" -E "$cli_ex"
}

# One round of bench_gpu and peers_gpu.py (PyTorch, then CuPy, each in its own
# process: a crash of one keeps the other's rows); report.py renders the
# targets. Each gets a share of the stage, CuPy only what is left.
stage_bench() {
  local raw=$results/gpu-bench.jsonl rc=0 who w t0 share b=${CT_GPU_BENCH_BUDGET:-0.3}
  echo "{\"meta\":\"run\",\"rounds\":1,\"budget_s\":$b}" > "$raw"
  for who in ctensor torch cupy; do
    if [ "$(stage_left)" -lt 10 ]; then note "- bench $who: not run (time)"; [ "$who" = cupy ] || rc=1; continue; fi
    # ctensor the larger share: it also times the raw CUDA baselines
    share=$(($(stage_left) * 11 / 20))
    [ "$who" = torch ] && share=$(($(stage_left) * 2 / 3))
    [ "$who" = cupy ] && share=$(stage_left)
    t0=$(date +%s)
    if [ "$who" = ctensor ]; then
      tmo "$share" "$(exe "$bench_gpu")" --budget "$b" ${gpu_args[@]+"${gpu_args[@]}"} >> "$raw" 2>> "$logs/bench_gpu.log"
    else
      PYTHONUNBUFFERED=1 tmo "$share" "$py" bench/peers_gpu.py --impl "$who" --budget "$b" >> "$raw" \
        2>> "$logs/peers_gpu.log"
    fi
    w=$?
    note "- bench $who: rc=$w in $(($(date +%s) - t0)) s (limit $share s)"
    [ "$w" -ne 0 ] && [ "$w" -ne 77 ] && [ "$who" != cupy ] && rc=1
  done
  grep -q '"error": *"wrong result' "$raw" && { note "- bench: WRONG RESULTS (error rows in the report)"; rc=1; }
  report "$raw" "$results/gpu-bench.md" || rc=1
  return "$rc"
}

stage_train() {
  local raw=$results/gpu-train.jsonl rc=0 w
  : > "$raw"
  tmo $(($(stage_left) / 2)) "$(exe "$bench_train")" --device cuda:0 "${train_args[@]}" >> "$raw" 2>> "$logs/bench_train.log"
  w=$?
  note "- bench_train --device cuda:0: rc=$w"
  [ "$w" -ne 0 ] && rc=1
  PYTHONUNBUFFERED=1 tmo "$(stage_left)" "$py" bench/peers_train.py --device cuda --budget 1.0 >> "$raw" \
    2>> "$logs/peers_train.log"
  w=$?
  note "- peers_train.py --device cuda: rc=$w"
  [ "$w" -ne 0 ] && [ "$w" -ne 77 ] && rc=1
  report "$raw" "$results/gpu-train.md" || rc=1
  return "$rc"
}

stage_epoch() {
  local rc data=.gpu-deps/fashion-mnist
  [ -d "$data" ] || data=/usr/share/datasets/fashion-mnist
  PYTHONUNBUFFERED=1 tmo "$(stage_left)" bench/epoch_fmnist.sh --device cuda:0 --python "$py" --data-dir "$data" \
    --ctensor "$(exe "$ctensor_prog")" --epochs "${CT_GPU_EPOCHS:-1}" --out-dir "$results" \
    ${epoch_args[@]+"${epoch_args[@]}"} > "$logs/epoch.log" 2>&1
  rc=$?
  note "- epoch_fmnist.sh --device cuda:0 --epochs ${CT_GPU_EPOCHS:-1}: rc=$rc"
  tail -n 25 "$logs/epoch.log" | sed 's/^/    /' | tee -a "$summary"
  return "$rc"
}

# memcheck over the tests of the newest kernels, each in what the stage has
# left. On the emulated GPU the first tests run bare (no compute-sanitizer
# there): the harness's path, programs and arguments.
stage_sanitize() {
  local cs=() t w res rc=0 x args tool=memcheck
  if [ "$emulated" != 1 ]; then
    cs=("$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)")
    [ -x "${cs[0]}" ] || { note "- compute-sanitizer: not found (PATH, /usr/local/cuda/bin)"; return 1; }
    # API errors are the library's to check and report (the OOM tests provoke
    # them on purpose); the tool looks for what it cannot see itself.
    cs+=(--tool memcheck --error-exitcode 99 --report-api-errors no)
  else
    note "- compute-sanitizer: none on the emulated GPU; the first $sanitize_n tests run bare"
    tool=bare
  fi
  for t in "${sanitize_tests[@]:0:$sanitize_n}"; do
    x=$(exe "$(sanitize_exe "$t")")
    [ -x "$x" ] || { note "  - $t: no $x"; rc=1; continue; }
    if [ "$(stage_left)" -lt 10 ]; then note "  - $t and the rest: not run (time)"; break; fi
    args=(--device cuda)
    case $t in test_cuda | test_cuda_elementwise) args=() ;; esac
    # Without the caching allocator each tensor is its own cudaMalloc of its
    # exact size, so memcheck sees an overrun that would stay inside a
    # rounded or split block of the cache.
    CT_CUDA_NO_CACHE=1 tmo "$(stage_left)" ${cs[@]+"${cs[@]}"} "$x" "${args[@]}" > "$logs/memcheck-$t.log" 2>&1
    w=$?
    res=$(grep -E 'ERROR SUMMARY' "$logs/memcheck-$t.log" | tail -n1)
    [ "$w" -eq 124 ] || [ "$w" -eq 137 ] && res="cut at the stage's limit; $res"
    note "  - $tool $t: rc=$w $res"
    # Some container runtimes keep the tools off the GPU: say so once, stop.
    if grep -q 'Device not supported' "$logs/memcheck-$t.log"; then
      note "  - compute-sanitizer: 'Device not supported' on this machine (its runtime); stage stopped"
      return 1
    fi
    [ "$w" -ne 0 ] && [ "$w" -ne 124 ] && [ "$w" -ne 137 ] && rc=1
  done
  return "$rc"
}

report() {
  local log
  log=$logs/report-$(basename "$2").log
  if "$py" bench/report.py "$1" > "$2" 2> "$log"; then
    sed -n '/^## Targets/,/^## All/p' "$2" | sed '$d' | tee -a "$summary"
  else
    note "- report.py $1: FAILED"
    tail -n 5 "$log"
    return 1
  fi
}

(cd "$build" && ctest -N 2> /dev/null) | sed -n 's/^ *Test *#[0-9]*: //p' > "$tmp/tests.txt"
cum=${slice[build]}
for s in "${stages[@]}"; do
  section "$s"
  cum=$((cum + slice[$s]))
  t0=$(date +%s)
  # the stage's slice, or more where the stages before it left time unused
  stage_end=$((start + cum * scale))
  [ "$stage_end" -ge $((t0 + slice[$s] * scale)) ] || stage_end=$((t0 + slice[$s] * scale))
  [ "$stage_end" -le $((start + budget - reserve * scale)) ] || stage_end=$((start + budget - reserve * scale))
  echo "## $s" >> "$summary"
  if [ "$built" != 1 ]; then
    verdict[$s]="not run (no build)"
  elif [ "$(stage_left)" -lt $((10 * scale)) ]; then
    verdict[$s]="not run (budget of $budget s spent)"
    status=1
  elif "stage_$s"; then
    verdict[$s]=ok
  else
    verdict[$s]=FAILED
    status=1
  fi
  took[$s]=$(($(date +%s) - t0))
  note "- $s: ${verdict[$s]} in ${took[$s]} s (limit $((stage_end - t0)) s)"
  printf '{"stage":"%s","planned_s":%d,"seconds":%d,"status":"%s"}\n' "$s" "${slice[$s]}" "${took[$s]}" \
    "$(jstr "${verdict[$s]}")" >> "$jsonl"
done

{
  echo
  echo "## Seconds per stage"
  echo
  echo "| stage | planned s$([ "$scale" = 1 ] || echo " (x$scale here)") | actual s | result |"
  echo "|---|---|---|---|"
  for s in build "${stages[@]}"; do
    echo "| $s | $((slice[$s] * scale)) | ${took[$s]:-} | ${verdict[$s]:-} |"
  done
  echo
} >> "$summary"
note "- total: $(($(date +%s) - start)) s of $budget, status $status; commit as bench/results/$(date -u +%F)-${gpu_tag}.md"
section "summary ($out/gpu-check.md)"
cat "$summary"
archive
exit $status
