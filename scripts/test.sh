#!/usr/bin/env bash
# Builds ctensor and runs the whole test suite: a Release build, the emulated
# rehearsal of scripts/gpu-check.sh over it, then an ASan+UBSan (leak checking
# on) build, a ThreadSanitizer build of the tests labelled tsan, and a
# portable build (no -march=native), each under ctest, then the file
# readers' fuzz targets under libFuzzer (a clang build,
# build-fuzz; each target fuzzed FUZZ_SECONDS, default 20, from its corpus in
# tests/fuzz).
# Every suite runs even when an earlier one fails (a build that fails counts
# as one failure of its suite); the end is a summary of every suite's
# failures and, last, the total "N passed, N failed" (tests). Exit status 1
# when anything failed. Each suite's ctest output is kept in
# <build dir>/ctest.log. Tests are bounded by their work, not by the clock:
# ctest's timeouts only guard against hangs, so a loaded machine makes the
# suite slower, not red.
# Installs missing dependencies first.
#   scripts/test.sh            all five
#   scripts/test.sh --quick    the Release build only
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

quick=0
[ "${1:-}" = "--quick" ] && quick=1
jobs=$(nproc 2>/dev/null || echo 2)

scripts/install-deps.sh --tests || exit 1

# Without a GPU the CUDA backend is compiled, not run (its kernels run on the
# emulator, built from the same sources as C++): one PTX architecture, the
# oldest supported, compiles every kernel once with every check. The default
# for a machine without a GPU (sm_80, sm_90 and PTX, for distribution)
# compiles each three times, most of a clean build's time. With a GPU, CMake
# compiles for the GPUs it finds; CUDAARCHS set by the caller wins.
if [ -z "${CUDAARCHS:-}" ] && ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  export CUDAARCHS=80-virtual
  echo "== no GPU visible: the CUDA backend is compiled for compute_80 PTX only (CUDAARCHS)"
fi

total_passed=0
total_failed=0
summary=()

# Adds a suite's counts from its ctest log (or one failure when the log has
# no result line: ctest did not run) and its failed tests to the summary.
record() { # name, log
  local name=$1 log=$2 line passed failed of
  line=$(grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -1)
  if [ -z "$line" ]; then
    total_failed=$((total_failed + 1))
    summary+=("$name: ctest gave no result (see $log)")
    return
  fi
  failed=$(sed -E 's/.* ([0-9]+) tests? failed out of.*/\1/' <<<"$line")
  of=$(sed -E 's/.*out of ([0-9]+).*/\1/' <<<"$line")
  passed=$((of - failed))
  total_passed=$((total_passed + passed))
  total_failed=$((total_failed + failed))
  if [ "$failed" -eq 0 ]; then
    summary+=("$name: $passed passed")
  else
    summary+=("$name: $passed passed, $failed failed:")
    while IFS= read -r t; do summary+=("  ${t#"${t%%[![:space:]]*}"}"); done < <(sed -n '/The following tests FAILED:/,$p' "$log" |
      grep -E '^[[:space:]]+[0-9]+ - ')
  fi
}

build_failed() { # name, dir
  total_failed=$((total_failed + 1))
  summary+=("$1: the build in $2 failed (its tests did not run)")
}

run_suite() { # name, build dir, cmake args...
  local name=$1 dir=$2
  shift 2
  echo "== $name build ($dir)"
  if ! cmake -S . -B "$dir" -DCTENSOR_BUILD_BENCH=ON -DCTENSOR_BUILD_EXAMPLES=ON "$@" >/dev/null ||
    ! cmake --build "$dir" -j "$jobs"; then
    build_failed "$name" "$dir"
    return
  fi
  echo "== $name tests"
  (cd "$dir" && ctest --output-on-failure -j "$jobs" --timeout 1500) 2>&1 | tee "$dir/ctest.log"
  record "$name" "$dir/ctest.log"
}

# ThreadSanitizer: the tests labelled tsan only (threads, the pool, the data
# loader), in a build of the library and those tests. Skipped, saying so,
# where the build has no CTENSOR_SANITIZE_THREAD option.
run_tsan_suite() {
  local dir=build-tsan names
  local -a targets
  if ! grep -qs 'CTENSOR_SANITIZE_THREAD' CMakeLists.txt cmake/*.cmake; then
    echo "== tsan: skipped (this tree has no CTENSOR_SANITIZE_THREAD option)"
    summary+=("tsan: skipped (no CTENSOR_SANITIZE_THREAD option in this tree)")
    return
  fi
  echo "== tsan build ($dir)"
  if ! cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DCTENSOR_SANITIZE_THREAD=ON -DCTENSOR_CUDA=OFF \
    -DCTENSOR_PYTHON=OFF -DCTENSOR_BUILD_BENCH=OFF -DCTENSOR_BUILD_EXAMPLES=OFF >/dev/null; then
    build_failed tsan "$dir"
    return
  fi
  # The targets the tsan tests run: every path in their commands that names
  # a target of the build (the test programs, the programs a script runs).
  names=$( (cd "$dir" && ctest -N -L tsan --show-only=json-v1) | python3 -c '
import json, os, re, subprocess, sys
known = set()
for line in subprocess.run(["cmake", "--build", sys.argv[1], "--target", "help"],
                           capture_output=True, text=True).stdout.splitlines():
    m = re.match(r"^(?:\.\.\. )?([A-Za-z0-9_.+-]+)(?::|$)", line.strip())
    if m:
        known.add(m.group(1))
names = set()
for t in json.load(sys.stdin).get("tests", []):
    # before the build ctest has no command for a program it cannot find yet:
    # then the test is named after its program (NAME or NAME[device])
    words = [w for w in t.get("command") or [] if os.path.isabs(w)]
    words = [os.path.basename(w) for w in words] or [t.get("name", "").split("[")[0]]
    names.update(w for w in words if w in known)
print(" ".join(sorted(names)))' "$dir")
  read -ra targets <<<"$names"
  if [ "${#targets[@]}" -eq 0 ]; then
    echo "== tsan: no test is labelled tsan"
    summary+=("tsan: no test is labelled tsan")
    return
  fi
  if ! cmake --build "$dir" -j "$jobs" --target "${targets[@]}"; then
    build_failed tsan "$dir"
    return
  fi
  echo "== tsan tests"
  (cd "$dir" && TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
    ctest -L tsan --output-on-failure -j "$jobs" --timeout 1500) 2>&1 | tee "$dir/ctest.log"
  record tsan "$dir/ctest.log"
}

# The GPU machine's one-call plan (scripts/gpu-check.sh), rehearsed on the
# emulated GPU over the Release build: the same stages, their time budget.
run_gpu_rehearsal() {
  echo "== gpu-check rehearsal (emulated GPU, build)"
  if GPU_CHECK_EMULATED=1 GPU_CHECK_BUILD=build scripts/gpu-check.sh --out build/gpu-check-rehearsal; then
    summary+=("gpu-check rehearsal: passed (build/gpu-check-rehearsal/gpu-check.md)")
    total_passed=$((total_passed + 1))
  else
    summary+=("gpu-check rehearsal: FAILED (build/gpu-check-rehearsal/gpu-check.md)")
    total_failed=$((total_failed + 1))
  fi
}

run_suite release build -DCMAKE_BUILD_TYPE=Release
if [ "$quick" = 0 ]; then
  [ -f build/CMakeCache.txt ] && run_gpu_rehearsal
  # Leak checking is on by default with ASan on Linux; the host block cache is
  # off in this build so that every use after free is seen. The sanitizers
  # check host code, so this build leaves the CUDA backend out (its kernels are
  # checked by compute-sanitizer in scripts/gpu-check.sh on a GPU machine).
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    run_suite sanitizer build-asan -DCMAKE_BUILD_TYPE=Debug -DCTENSOR_SANITIZE=ON -DCTENSOR_CUDA=OFF
  run_tsan_suite
  # What a distribution builds: no -march=native, so the kernels' portable
  # paths (no AVX-512, no FMA contraction) compile and run; the native builds
  # above never compile them. The library's own tests only: the CUDA backend,
  # the Python package, MPI, the benchmarks and the examples add no portable
  # kernel path and are checked by the others.
  run_suite portable build-portable -DCMAKE_BUILD_TYPE=Release -DCTENSOR_NATIVE=OFF -DCTENSOR_CUDA=OFF \
    -DCTENSOR_PYTHON=OFF -DCTENSOR_MPI=OFF -DCTENSOR_BUILD_BENCH=OFF -DCTENSOR_BUILD_EXAMPLES=OFF
  # libFuzzer needs clang; this build holds the library, the program and the
  # fuzz targets only, all instrumented (CTENSOR_FUZZ).
  echo "== fuzz build (build-fuzz)"
  if CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DCTENSOR_FUZZ=ON \
    -DCT_FUZZ_SECONDS="${FUZZ_SECONDS:-20}" -DCTENSOR_BUILD_TESTS=OFF -DCTENSOR_BUILD_EXAMPLES=OFF \
    -DCTENSOR_BUILD_BENCH=OFF -DCTENSOR_CUDA=OFF -DCTENSOR_MPI=OFF -DCTENSOR_PYTHON=OFF >/dev/null &&
    cmake --build build-fuzz -j "$jobs"; then
    echo "== fuzz targets (${FUZZ_SECONDS:-20} s each)"
    (cd build-fuzz && ctest -L fuzz --output-on-failure -j "$jobs") 2>&1 | tee build-fuzz/ctest.log
    record fuzz build-fuzz/ctest.log
  else
    build_failed fuzz build-fuzz
  fi
fi
echo "== summary"
for line in "${summary[@]}"; do echo "$line"; done
echo "$total_passed passed, $total_failed failed"
[ "$total_failed" -eq 0 ]
