#!/usr/bin/env bash
# Reruns the CPU benchmarks with the current PyPI peers (PyTorch 2.x, NumPy 2.x,
# JAX: bench/peers-venv.sh) next to Debian's (PyTorch 1.13, NumPy 1.24), in one
# run with the same threads: for each NAME, BUILD/bench/bench_NAME, then
# bench/peers_NAME.py under Debian's python3 and under the venv's python, one
# after the other, ROUNDS times (interleaved, as the machine is shared). The
# peers' rows are renamed IMPL@debian and IMPL@pypi. For the training steps the
# venv's run adds torch.compile (impl torch_compile) and bench/peers_jax.py adds
# JAX's jitted steps (jax_jit), both informational. Then the Python per-op cost
# and import times (bench/bench_python.py) under both interpreters, when the
# Python package is built (BUILD/python).
#   bench/peers2.sh BUILD_DIR [--threads N] [--budget S] [--rounds R] [--only NAME]
#                   [--benches "core train attention ops_sort rnn"] [--out FILE.jsonl]
# Prints each workload's medians (the smallest median over the rounds) and the
# ratios peer/ctensor (above 1, ctensor is faster); --out keeps every JSON line.
# Never needed by the build or the tests (the venv needs the network once).
set -euo pipefail
build=$(cd "$1" && pwd)
shift
here=$(cd "$(dirname "$0")" && pwd)
threads=2 budget=1.5 rounds=2 only="" out="" benches="core train attention ops_sort rnn epoch gpt2"
while [ $# -gt 0 ]; do
  case $1 in
    --threads) threads=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --benches) benches=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "peers2.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
venv=$("$here/peers-venv.sh")
py2=$venv/bin/python
args=(--threads "$threads" --budget "$budget")
[ -n "$only" ] && args+=(--only "$only")
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# tag SUFFIX: the peers' JSON rows with impl renamed IMPL@SUFFIX (other lines as they are)
tag() {
  /usr/bin/python3 -c '
import json, sys
for line in sys.stdin:
    try:
        r = json.loads(line)
    except ValueError:
        sys.stdout.write(line)
        continue
    if "impl" in r:
        r["impl"] += "@" + sys.argv[1]
    print(json.dumps(r), flush=True)' "$1"
}
cpus=$(seq -s, 0 $((threads - 1)))
echo "load: $(uptime)" >&2
for round in $(seq "$rounds"); do
  for name in $benches; do
    case $name in epoch | gpt2) continue ;; esac # once, after the rounds
    [ -x "$build/bench/bench_$name" ] || { echo "peers2.sh: no $build/bench/bench_$name (build it)" >&2; continue; }
    "$build/bench/bench_$name" "${args[@]}" | tee -a "$log"
    /usr/bin/python3 "$here/peers_$name.py" "${args[@]}" | tag debian | tee -a "$log"
    extra=()
    [ "$name" = train ] && extra=(--compile)
    "$py2" "$here/peers_$name.py" "${args[@]}" "${extra[@]}" 2>/dev/null | tag pypi | tee -a "$log"
    if [ "$name" = train ]; then
      (cd "$here" && taskset -c "$cpus" "$py2" peers_jax.py "${args[@]}" 2>/dev/null) | tag pypi | tee -a "$log"
    fi
  done
done
if [ -d "$build/python" ] && [ -z "$only" ]; then
  for interp in /usr/bin/python3 "$py2"; do
    echo "## Python per-op cost and import time with $interp" >&2
    "$interp" "$here/bench_python.py" --pythonpath "$build/python" --budget "$budget" |
      tag "$([ "$interp" = "$py2" ] && echo pypi || echo debian)" | tee -a "$log"
  done
fi
for name in $benches; do
  case $name in
    epoch)
      echo "## Fashion-MNIST epoch: the program against PyTorch 2.x" >&2
      "$here/epoch_fmnist.sh" --threads "$threads" --epochs 1 --ctensor "$build/tools/ctensor/ctensor" \
        --python "$py2" --out-dir "$(dirname "${out:-$log}")" >&2 ;;
    gpt2)
      echo "## GPT-2 124M step: PyTorch 1.13 and 2.x${LLMC_DIR:+, llm.c}" >&2
      "$here/gpt2.sh" "$build" --threads "$threads" --steps 3 --no-memory --amp \
        --peers-python "$py2" | tee -a "$log" ;;
  esac
done
echo "load: $(uptime)" >&2
[ -n "$out" ] && cp "$log" "$out"
/usr/bin/python3 - "$log" <<'PY'
import json, sys
t = {}
for line in open(sys.argv[1]):
    try:
        r = json.loads(line)
    except ValueError:
        continue
    if "bench" in r and "median_s" in r:
        m = t.setdefault(r["bench"], {})
        m[r["impl"]] = min(m.get(r["impl"], float("inf")), r["median_s"])
print("\n| workload | ctensor ms | peer | peer ms | peer / ctensor |\n|---|---|---|---|---|")
for bench, m in t.items():
    if "ctensor" not in m:
        continue
    for peer in sorted(p for p in m if p != "ctensor" and "@" in p):
        print(f"| {bench} | {m['ctensor'] * 1e3:.3f} | {peer} | {m[peer] * 1e3:.3f} | "
              f"{m[peer] / m['ctensor']:.2f} |")
PY
