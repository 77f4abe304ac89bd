#!/usr/bin/env bash
# GPT-2 124M training steps (B=4, T=64, AdamW as llm.c's train_gpt2.c) in
# ctensor, PyTorch (CPU) and, when given, llm.c's train_gpt2.c, on the same
# seeded weights and the same token batch, in one run with the same threads;
# then the peak memory of one step of the same batch size at T=1024 with fused
# and unfused attention (B=4: ~14 GB unfused, ~85 s). Prints the step-time ratios (peer / ctensor: above 1, ctensor is
# faster) and the losses of the first steps against ctensor's.
#
#   bench/gpt2.sh BUILD_DIR [--threads N] [--steps S] [--out FILE.jsonl] [--no-memory]
#                 [--amp] [--peers-python PY]
# --amp: also the steps under bf16 autocast (ctensor_bf16, pytorch_bf16).
# --peers-python PY: also PyTorch under that interpreter (bench/peers-venv.sh's,
# PyTorch 2.x: impl pytorch@pypi), after Debian's.
#   LLMC_DIR=/path/to/llm.c bench/gpt2.sh BUILD_DIR ...
#
# LLMC_DIR: a checkout of karpathy/llm.c. Its train_gpt2.c is built here
# (cc -Ofast -march=native -fopenmp, as its Makefile) and run with
# OMP_NUM_THREADS=N in a directory holding the weights in its checkpoint format
# (gpt2_124M.bin) and the batch as its token files (a train and a val file of
# one batch each, so every step trains on the same batch); its own "step k:
# train loss L (took T ms)" lines are read, and it is stopped after S steps
# (it would otherwise run 40 and sample text). Without LLMC_DIR it is skipped.
# The inputs (~1 GB) are written to a temporary directory, removed at the end.
set -euo pipefail
build=$(cd "$1" && pwd)
shift
threads=2
steps=5
out=""
memory=1
amp=0
py2=""
while [ $# -gt 0 ]; do
  case $1 in
    --threads) threads=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --no-memory) memory=0; shift ;;
    --amp) amp=1; shift ;;
    --peers-python) py2=$2; shift 2 ;;
    *) echo "gpt2.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
here=$(cd "$(dirname "$0")" && pwd)
py=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
results=$work/results.jsonl
export OMP_NUM_THREADS=$threads

echo "# writing the weights and the batch (seeded torch initialization)" >&2
$py "$here/peers_gpt2.py" init "$work"
printf '{"meta":{"bench":"gpt2","threads":%s,"steps":%s,"date":"%s","cpu":"%s","load":"%s"}}\n' \
  "$threads" "$steps" "$(date -u +%FT%TZ)" "$(lscpu | sed -n 's/^Model name: *//p' | head -1)" \
  "$(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$results"

echo "# ctensor" >&2
"$build/bench/bench_gpt2" "$work" --threads "$threads" --steps "$steps" | tee -a "$results"
echo "# pytorch" >&2
# passive: libgomp spinning after its regions would take the cores of OpenBLAS threads
# (bench/peers_util.py)
OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE} $py "$here/peers_gpt2.py" torch "$work" --threads "$threads" --steps "$steps" | tee -a "$results"
for p2 in ${py2:+"$py2"}; do
  OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE} "$p2" "$here/peers_gpt2.py" torch "$work" --threads "$threads" --steps "$steps" --tag pypi 2>/dev/null | tee -a "$results"
done
if [ "$amp" = 1 ]; then
  echo "# bf16 autocast" >&2
  "$build/bench/bench_gpt2" "$work" --threads "$threads" --steps "$steps" --amp bf16 | tee -a "$results"
  OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE} $py "$here/peers_gpt2.py" torch "$work" --threads "$threads" --steps "$steps" --amp bf16 | tee -a "$results"
  for p2 in ${py2:+"$py2"}; do
    OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE} "$p2" "$here/peers_gpt2.py" torch "$work" --threads "$threads" --steps "$steps" --amp bf16 --tag pypi 2>/dev/null | tee -a "$results"
  done
fi

if [ -n "${LLMC_DIR:-}" ] && [ -f "$LLMC_DIR/train_gpt2.c" ]; then
  echo "# llm.c ($LLMC_DIR)" >&2
  cc -Ofast -march=native -fopenmp -DOMP -Wno-unused-result -I"$LLMC_DIR" \
    "$LLMC_DIR/train_gpt2.c" -lm -o "$work/train_gpt2"
  # Its output, read line by line until S steps were printed; then it is stopped.
  (cd "$work/llmc" && exec stdbuf -oL "$work/train_gpt2") >"$work/llmc.log" 2>&1 &
  pid=$!
  while kill -0 "$pid" 2>/dev/null && [ "$(grep -c '^step ' "$work/llmc.log")" -lt "$steps" ]; do
    sleep 1
  done
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  grep -q '^step ' "$work/llmc.log" || { cat "$work/llmc.log" >&2; echo "llm.c printed no step" >&2; }
  sed -n 's/^step \([0-9]*\): train loss \([0-9.]*\) (took \([0-9.]*\) ms)/\1 \2 \3/p' "$work/llmc.log" |
    head -n "$steps" | while read -r step loss ms; do
      printf '{"bench":"gpt2_124M_train_step","impl":"llm.c","threads":%s,"step":%s,"loss":%s,"step_s":%s}\n' \
        "$threads" "$step" "$loss" "$(awk -v m="$ms" 'BEGIN{printf "%.6f", m / 1000}')"
    done | tee -a "$results"
else
  echo "# llm.c skipped: set LLMC_DIR to a checkout of karpathy/llm.c to compare with its train_gpt2.c" >&2
fi

if [ "$memory" = 1 ]; then
  echo "# peak memory, one step at B=4 T=1024" >&2
  for flag in "" --unfused; do
    "$build/bench/bench_gpt2" "$work" --threads "$threads" --memory $flag --B 4 --T 1024 | tee -a "$results"
  done
fi

$py "$here/peers_gpt2.py" report "$results"
if [ -n "$out" ]; then cp "$results" "$out"; fi
