#!/usr/bin/env bash
# A stopped rank must not make the others wait forever: runs
# `test_dist --stall` as 2 ranks (rank 1 stops itself with SIGSTOP before an
# all-reduce, rank 0 has a 5 s limit) and checks that the job ends, failing,
# with rank 0's message naming rank 1. The launcher's own limit
# (MPIEXEC_TIMEOUT, Open MPI and MPICH) is only a guard against a hang, far
# beyond what the check needs.
#   check_dist_stall.sh MPIEXEC TEST_DIST [MPIEXEC_FLAGS...]
set -uo pipefail
mpiexec=$1
prog=$2
shift 2
out=$(MPIEXEC_TIMEOUT=240 "$mpiexec" -n 2 "$@" "$prog" --stall 2>&1)
rc=$?
echo "$out"
if [ $rc -eq 0 ]; then
  echo "check_dist_stall: the job ended with status 0; expected it to be ended by the timeout"
  exit 1
fi
if grep -q "skipped:" <<<"$out"; then exit 77; fi
if ! grep -q "timed out on rank 0 after [0-9]* s waiting for rank 1 (of 2)" <<<"$out"; then
  echo "check_dist_stall: no message naming rank 1 (exit status $rc)"
  exit 1
fi
echo "check_dist_stall: ok (exit status $rc)"
