#!/usr/bin/env bash
# Runs tests/limits/low_vmem under address-space limits (ulimit -v): one
# that leaves no room for the CPU BLAS's buffers, one that does. A crash, a
# hang (`timeout 600`: a guard, far beyond the seconds it needs) or an
# allocation failure reported as anything but CT_ERR_OOM fails.
#   check_low_vmem.sh LOW_VMEM
set -uo pipefail
prog=$1
fail=0
run() { # LIMIT_MIB BLAS
  out=$( (ulimit -v $(($1 * 1024)) && exec timeout 600 "$prog" "$1" "$2") 2>&1)
  rc=$?
  echo "$out"
  if [ $rc -ne 0 ]; then
    echo "check_low_vmem: limit $1 MiB: exit status $rc"
    fail=1
  fi
}
run 200 none
run 1024 fits
exit $fail
