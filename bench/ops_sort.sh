#!/usr/bin/env bash
# Runs bench_ops_sort and bench/peers_ops_sort.py one after the other with the
# same threads and budget, and prints each workload's ratio of median times
# (PyTorch / ctensor: above 1, ctensor is faster).
#   bench/ops_sort.sh BUILD_DIR [--threads N] [--budget SECONDS] [--only NAME]
exec "$(dirname "$0")/same_run.sh" ops_sort "$@"
