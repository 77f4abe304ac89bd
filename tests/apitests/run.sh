#!/usr/bin/env bash
# The official array API conformance suite (data-apis/array-api-tests) against the ctensor package.
#   run.sh BUILD_DIR [PYTHON]
# Clones the pinned commit of the suite and of the spec it reads the signatures from into a cache
# outside the source tree (CTENSOR_APITESTS_CACHE, default BUILD_DIR/apitests), makes a venv there
# with pinned hypothesis, pytest, ndindex and pytest-json-report (the suite imports it) from PyPI
# (over the system's site packages: NumPy), runs the suite at --max-examples=50 (derandomized:
# the same examples every run; failures are not shrunk, ct_noshrink.py says why) on the package
# built in BUILD_DIR/python, and compares the failures with expected_failures.txt next to this
# script: a failure not listed, or a listed test that now passes, fails the run. Exit 77 (ctest:
# skipped), saying why, when GitHub or PyPI cannot be reached.
# CTENSOR_APITESTS_REPO / CTENSOR_APITESTS_SPEC_REPO: other git URLs (a mirror) for the two repos.
set -euo pipefail
build=$(cd "$1" && pwd)
py=${2:-python3}
here=$(cd "$(dirname "$0")" && pwd)

suite_repo=${CTENSOR_APITESTS_REPO:-https://github.com/data-apis/array-api-tests}
spec_repo=${CTENSOR_APITESTS_SPEC_REPO:-https://github.com/data-apis/array-api}
# The suite's release 2026.02.26 and the spec commit it names as its submodule (array-api).
suite_commit=41379d15d26d67a1e66c840e775d41a8a7fb1516
spec_commit=5f847a3858875c682ae901aa22b0413bf24be9da
pins=(hypothesis==6.151.0 pytest==7.2.1 ndindex==1.9.2 pytest-json-report==1.5.0 pytest-metadata==3.1.1)
# ctensor has no complex and no uint16/32/64 dtypes: the suite leaves them out.
export ARRAY_API_TESTS_SKIP_DTYPES=complex64,complex128,uint16,uint32,uint64
export ARRAY_API_TESTS_MODULE=ctensor

cache=${CTENSOR_APITESTS_CACHE:-$build/apitests}
mkdir -p "$cache"
src=$cache/array-api-tests-$suite_commit
if [ ! -f "$src/.ctensor-complete" ]; then
  if ! timeout 30 git ls-remote "$suite_repo" HEAD > /dev/null 2>&1; then
    echo "skipped: $suite_repo cannot be reached from this machine (the suite is cloned from it)"
    exit 77
  fi
  rm -rf "$src"
  git clone -q "$suite_repo" "$src"
  git -C "$src" checkout -q "$suite_commit"
  rm -rf "$src/array-api"
  git clone -q "$spec_repo" "$src/array-api"
  git -C "$src/array-api" checkout -q "$spec_commit"
  touch "$src/.ctensor-complete"
fi

venv=$cache/venv-$(echo "${pins[*]}" | md5sum | cut -c1-12)
if [ ! -f "$venv/.ctensor-complete" ]; then
  rm -rf "$venv"
  if ! "$py" -m venv --system-site-packages "$venv" > /dev/null 2>&1; then
    echo "skipped: python3 -m venv is unavailable (Debian: python3-venv)"
    exit 77
  fi
  if ! "$venv/bin/pip" install -q --disable-pip-version-check "${pins[@]}"; then
    echo "skipped: ${pins[*]} cannot be installed from PyPI (no network?)"
    rm -rf "$venv"
    exit 77
  fi
  touch "$venv/.ctensor-complete"
fi

report=$cache/report.xml
cd "$src"
set +e
PYTHONPATH="$build/python:$here" PYTHONDONTWRITEBYTECODE=1 "$venv/bin/python" -m pytest array_api_tests -q \
  -p no:cacheprovider -p ct_noshrink --max-examples=50 --derandomize --disable-deadline \
  --junitxml="$report" -rN \
  > "$cache/pytest.log" 2>&1
rc=$?
set -e
tail -n 3 "$cache/pytest.log"
if [ ! -s "$report" ]; then
  echo "the suite did not run (pytest exit $rc); $cache/pytest.log:"
  tail -n 40 "$cache/pytest.log"
  exit 1
fi
"$py" "$here/compare.py" "$report" "$here/expected_failures.txt"
