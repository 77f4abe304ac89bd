#!/usr/bin/env bash
# epoch_fmnist.sh: one Fashion-MNIST training epoch of the default CNN, ctensor
# against PyTorch, same machine, same thread count, back to back.
#
#   bench/epoch_fmnist.sh [--threads N] [--rounds R] [--ctensor PATH] [--augment hflip|none]
#                         [--data-dir DIR] [--model cnn|mlp]
#
# ctensor: `ctensor train --epochs 1 --disable-cuda --metrics M` (the defaults
# otherwise: CNN conv 1->32 3x3, pool, conv 32->64 3x3, pool, fc 128, fc 10;
# Adam 1e-3; batch 64; --augment as given, default hflip = the cnn's default);
# its epoch seconds, data-wait seconds (time the loop waited for the loader's
# batches) and eval seconds come from the metrics line. PyTorch:
# bench/peers_epoch.py, the same model, optimizer, batch size, normalization
# and flips, run by Debian's /usr/bin/python3 with torch.set_num_threads(N).
# Each round runs ctensor then PyTorch; the ratio is PyTorch's epoch time over
# ctensor's (> 1: ctensor is faster), per round and of the best epochs.
#
# Writes bench/results/<date>-fmnist-epoch.jsonl (a meta line, then one line
# per epoch and implementation) and bench/results/<date>-fmnist-epoch.md.
# Without --ctensor it builds build-bench/ (Release, -march=native) and uses
# build-bench/tools/ctensor/ctensor.
set -euo pipefail
cd "$(dirname "$0")/.."

threads=$(nproc)
rounds=1
ct=""
augment=hflip
model=cnn
data_dir=/usr/share/datasets/fashion-mnist
while [ $# -gt 0 ]; do
  case "$1" in
  --threads) threads=$2; shift 2 ;;
  --rounds) rounds=$2; shift 2 ;;
  --ctensor) ct=$2; shift 2 ;;
  --augment) augment=$2; shift 2 ;;
  --model) model=$2; shift 2 ;;
  --data-dir) data_dir=$2; shift 2 ;;
  -h | --help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "epoch_fmnist.sh: unknown option $1" >&2; exit 2 ;;
  esac
done

if [ -z "$ct" ]; then
  cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DCTENSOR_BUILD_TESTS=OFF \
    -DCTENSOR_BUILD_EXAMPLES=OFF >/dev/null
  cmake --build build-bench -j"$(nproc)" --target ctensor_cli >/dev/null
  ct=build-bench/tools/ctensor/ctensor
fi
[ -x "$ct" ] || { echo "epoch_fmnist.sh: no ctensor program at $ct" >&2; exit 1; }
/usr/bin/python3 -c 'import torch, numpy' 2>/dev/null ||
  { echo "epoch_fmnist.sh: /usr/bin/python3 lacks torch or numpy (scripts/install-deps.sh --tests)" >&2; exit 1; }

# One thread count for everyone: ctensor's pool, OpenBLAS, PyTorch's intra-op pool.
export CT_NUM_THREADS=$threads OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads

mkdir -p bench/results
name="$(date +%F)-fmnist-epoch"
raw="bench/results/$name.jsonl"
report="bench/results/$name.md"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Percent of CPU time busy over one second (all cores), from /proc/stat.
cpu_busy() {
  local a b
  read -r -a a < <(grep '^cpu ' /proc/stat)
  sleep 1
  read -r -a b < <(grep '^cpu ' /proc/stat)
  local total=0 idle=$(( (b[4] + b[5]) - (a[4] + a[5]) ))
  for i in 1 2 3 4 5 6 7 8; do total=$(( total + b[i] - a[i] )); done
  echo $(( total > 0 ? 100 * (total - idle) / total : 0 ))
}

cpu=$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo | head -1 | sed 's/  */ /g')
commit="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD -- src include 2>/dev/null || echo +uncommitted-src)"
printf '{"meta":"epoch_fmnist","model":"%s","threads":%d,"rounds":%d,"augment":"%s","cpu":"%s","nproc":%d,"ctensor":"%s","commit":"%s","torch":"%s"}\n' \
  "$model" "$threads" "$rounds" "$augment" "$cpu" "$(nproc)" "$("$ct" info 2>/dev/null | head -1 | tr -d '"\\')" \
  "$commit" "$(/usr/bin/python3 -c 'import torch; print(torch.__version__)')" >"$raw"

for r in $(seq 1 "$rounds"); do
  busy=$(cpu_busy)
  load=$(cut -d' ' -f1 /proc/loadavg)
  echo "round $r/$rounds: ctensor (CPUs ${busy}% busy before, load $load)" >&2
  rm -f "$tmp/m.jsonl"
  "$ct" train --model "$model" --epochs 1 --disable-cuda --augment "$augment" --data-dir "$data_dir" \
    --metrics "$tmp/m.jsonl" --quiet >"$tmp/ct.out"
  /usr/bin/python3 - "$tmp/m.jsonl" "$model" "$threads" "$r" "$busy" "$load" >>"$raw" <<'EOF'
import json, sys
m = json.loads(open(sys.argv[1]).readline())
n = round(m["seconds"] * m["images_per_second"])
print(json.dumps({"bench": f"fmnist_{sys.argv[2]}_epoch", "impl": "ctensor", "threads": int(sys.argv[3]),
                  "round": int(sys.argv[4]), "cpu_busy_before_pct": int(sys.argv[5]),
                  "load_before": float(sys.argv[6]), "epoch": m["epoch"], "train_samples": n,
                  "seconds": m["seconds"], "images_per_second": m["images_per_second"],
                  "data_seconds": m["data_wait_seconds"],
                  "data_fraction": m["data_wait_seconds"] / m["seconds"], "loss": m["loss"],
                  "eval_seconds": m["eval_seconds"], "eval_images_per_second": m["test_samples"] / m["eval_seconds"],
                  "test_accuracy": m["accuracy"]}, separators=(",", ":")))
EOF
  busy=$(cpu_busy)
  load=$(cut -d' ' -f1 /proc/loadavg)
  echo "round $r/$rounds: pytorch (CPUs ${busy}% busy before, load $load)" >&2
  /usr/bin/python3 bench/peers_epoch.py --threads "$threads" --model "$model" --augment "$augment" \
    --data-dir "$data_dir" | sed "s/^{/{\"round\":$r,\"cpu_busy_before_pct\":$busy,\"load_before\":$load,/" >>"$raw"
done

/usr/bin/python3 - "$raw" "$report" <<'EOF'
import json, sys
raw, report = sys.argv[1], sys.argv[2]
lines = [json.loads(l) for l in open(raw)]
meta = lines[0]
rows = [l for l in lines[1:] if "impl" in l]
by = {}
for l in rows:
    by.setdefault(l["round"], {})[l["impl"]] = l
out = [f"# Fashion-MNIST epoch: ctensor vs PyTorch ({meta['model']}, {meta['threads']} threads)", "",
       f"CPU: {meta['cpu']} ({meta['nproc']} cores); batch 64, Adam 1e-3, augment {meta['augment']}; "
       f"{meta['ctensor']} at {meta.get('commit', '?')}, PyTorch {meta.get('torch', '?')}", "",
       "| round | ctensor epoch s | ctensor img/s | ctensor data wait | PyTorch epoch s | PyTorch img/s "
       "| PyTorch batch building | ratio (PyTorch s / ctensor s) | ctensor eval s | PyTorch eval s | CPUs busy before (ct / pt) |",
       "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
for r in sorted(by):
    c, p = by[r].get("ctensor"), by[r].get("pytorch")
    if not c or not p:
        continue
    out.append(f"| {r} | {c['seconds']:.2f} | {c['images_per_second']:.0f} | {100 * c['data_fraction']:.2f}% "
               f"| {p['seconds']:.2f} | {p['images_per_second']:.0f} | {100 * p['data_fraction']:.2f}% "
               f"| **{p['seconds'] / c['seconds']:.2f}** | {c['eval_seconds']:.2f} | {p['eval_seconds']:.2f} "
               f"| {c['cpu_busy_before_pct']}% / {p['cpu_busy_before_pct']}% |")
cs = [l for l in rows if l["impl"] == "ctensor"]
ps = [l for l in rows if l["impl"] == "pytorch"]
summary = ""
if cs and ps:
    bc, bp = min(l["seconds"] for l in cs), min(l["seconds"] for l in ps)
    wait = max(l["data_fraction"] for l in cs)
    summary = (f"best epochs: ctensor {bc:.2f} s, PyTorch {bp:.2f} s, ratio {bp / bc:.2f} "
               f"(target >= 2); ctensor data wait at most {100 * wait:.2f}% of the epoch (target < 5%)")
    out += ["", summary]
open(report, "w").write("\n".join(out) + "\n")
print("\n".join(out))
EOF
echo "wrote $raw and $report" >&2
