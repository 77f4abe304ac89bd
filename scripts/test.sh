#!/usr/bin/env bash
# Builds ctensor and runs the whole test suite: a Release build, then an
# ASan+UBSan (leak checking on) build and a portable build (no -march=native),
# each under ctest, then the file readers' fuzz targets under libFuzzer (a
# clang build, build-fuzz; each target fuzzed FUZZ_SECONDS, default 20, from
# its corpus in tests/fuzz).
# Installs missing dependencies first.
#   scripts/test.sh            all four
#   scripts/test.sh --quick    the Release build only
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0
[ "${1:-}" = "--quick" ] && quick=1
jobs=$(nproc 2>/dev/null || echo 2)

scripts/install-deps.sh --tests

run_suite() { # name, build dir, cmake args...
  local name=$1 dir=$2
  shift 2
  echo "== $name build ($dir)"
  cmake -S . -B "$dir" -DCTENSOR_BUILD_BENCH=ON -DCTENSOR_BUILD_EXAMPLES=ON "$@" >/dev/null
  cmake --build "$dir" -j "$jobs"
  echo "== $name tests"
  (cd "$dir" && ctest --output-on-failure -j "$jobs" --timeout 900)
}

run_suite release build -DCMAKE_BUILD_TYPE=Release
if [ "$quick" = 0 ]; then
  # Leak checking is on by default with ASan on Linux; the host block cache is
  # off in this build so that every use after free is seen. The sanitizers
  # check host code, so this build leaves the CUDA backend out (its kernels are
  # checked by compute-sanitizer in scripts/gpu-check.sh on a GPU machine).
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    run_suite sanitizer build-asan -DCMAKE_BUILD_TYPE=Debug -DCTENSOR_SANITIZE=ON -DCTENSOR_CUDA=OFF
  # What a distribution builds: no -march=native, so the kernels' portable
  # paths (no AVX-512, no FMA contraction) compile and run; the native builds
  # above never compile them. The CUDA backend is checked by the others.
  run_suite portable build-portable -DCMAKE_BUILD_TYPE=Release -DCTENSOR_NATIVE=OFF -DCTENSOR_CUDA=OFF
  # libFuzzer needs clang; this build holds the library, the program and the
  # fuzz targets only, all instrumented (CTENSOR_FUZZ).
  echo "== fuzz build (build-fuzz)"
  CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DCTENSOR_FUZZ=ON \
    -DCT_FUZZ_SECONDS="${FUZZ_SECONDS:-20}" -DCTENSOR_BUILD_TESTS=OFF -DCTENSOR_BUILD_EXAMPLES=OFF \
    -DCTENSOR_BUILD_BENCH=OFF -DCTENSOR_CUDA=OFF -DCTENSOR_MPI=OFF -DCTENSOR_PYTHON=OFF >/dev/null
  cmake --build build-fuzz -j "$jobs"
  echo "== fuzz targets (${FUZZ_SECONDS:-20} s each)"
  (cd build-fuzz && ctest -L fuzz --output-on-failure -j "$jobs")
fi
echo "== all tests passed"
