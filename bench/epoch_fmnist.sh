#!/usr/bin/env bash
# epoch_fmnist.sh: Fashion-MNIST training epochs of the default CNN, ctensor
# against PyTorch, same machine, same device, same thread count, back to back.
#
#   bench/epoch_fmnist.sh [--device cpu|cuda|cuda:N] [--epochs N] [--target A]
#                         [--threads N] [--rounds R] [--ctensor PATH] [--python PATH]
#                         [--augment hflip|none] [--data-dir DIR] [--model cnn|mlp]
#                         [--limit-train N] [--limit-test N] [--out-dir DIR] [--no-peer]
#
# ctensor: `ctensor train --epochs N --device DEV --metrics M` (the defaults
# otherwise: CNN conv 1->32 3x3, pool, conv 32->64 3x3, pool, fc 128, fc 10;
# Adam 1e-3, cosine over the N epochs; batch 64; --augment as given, default
# hflip = the cnn's default); its epoch seconds, data-wait seconds (time the
# loop waited for the loader's batches) and eval seconds come from the metrics
# lines. PyTorch: bench/peers_epoch.py --device DEV, the same model, optimizer,
# schedule, batch size, normalization and flips, with torch.set_num_threads(N)
# (on a GPU: batches pinned and copied non-blocking, loss.item() each step).
# Each round runs ctensor then PyTorch; the ratio is PyTorch's epoch time over
# ctensor's (> 1: ctensor is faster), per epoch and of the best epochs.
# --target A (e.g. 0.91) also reports each one's time to test accuracy A:
# training seconds (evaluation excluded) summed until an epoch's test accuracy
# first reaches A; it needs enough --epochs (the cnn passes 91% in its 4th-5th).
#
# --python: the interpreter with torch and numpy (default /usr/bin/python3,
# Debian's; on a GPU machine, its python3). --limit-train N, --limit-test N:
# only the first N training or test images (a quick check of the script).
# --no-peer: ctensor alone (a rehearsal where PyTorch has no CUDA:
# scripts/gpu-check.sh on the emulated GPU); the report then has no ratios. Writes
# <out-dir>/<date>-fmnist-epoch-<cpu|cuda>[-<N>ep].jsonl (a meta line, then one
# line per epoch and implementation) and the .md next to it (out-dir default
# bench/results). Without --ctensor it builds build-bench/ (Release,
# -march=native; with CUDA when nvcc and cuDNN are found) and uses
# build-bench/tools/ctensor/ctensor.
set -euo pipefail
cd "$(dirname "$0")/.."

ncpu=$(nproc) # before OMP_NUM_THREADS is set below (nproc follows it)
threads=$ncpu
rounds=1
ct=""
augment=hflip
model=cnn
data_dir=/usr/share/datasets/fashion-mnist
device=cpu
epochs=1
target=0
py=/usr/bin/python3
limit_train=0
limit_test=0
out_dir=bench/results
peer=1
while [ $# -gt 0 ]; do
  case "$1" in
  --threads) threads=$2; shift 2 ;;
  --rounds) rounds=$2; shift 2 ;;
  --ctensor) ct=$2; shift 2 ;;
  --augment) augment=$2; shift 2 ;;
  --model) model=$2; shift 2 ;;
  --data-dir) data_dir=$2; shift 2 ;;
  --device) device=$2; shift 2 ;;
  --epochs) epochs=$2; shift 2 ;;
  --target) target=$2; shift 2 ;;
  --python) py=$2; shift 2 ;;
  --limit-train) limit_train=$2; shift 2 ;;
  --limit-test) limit_test=$2; shift 2 ;;
  --out-dir) out_dir=$2; shift 2 ;;
  --no-peer) peer=0; shift ;;
  -h | --help) sed -n '2,33p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "epoch_fmnist.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
case "$device" in
cpu | cuda | cuda:[0-9]*) ;;
*) echo "epoch_fmnist.sh: --device $device: expected cpu, cuda or cuda:N" >&2; exit 2 ;;
esac
dev_kind=${device%%:*}
target=$(printf '%g' "$target") # a JSON number (.91 -> 0.91)

if [ -z "$ct" ]; then
  cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DCTENSOR_BUILD_TESTS=OFF \
    -DCTENSOR_BUILD_EXAMPLES=OFF >/dev/null
  cmake --build build-bench -j"$(nproc)" --target ctensor_cli >/dev/null
  ct=build-bench/tools/ctensor/ctensor
fi
[ -x "$ct" ] || { echo "epoch_fmnist.sh: no ctensor program at $ct" >&2; exit 1; }
"$py" -c 'import torch, numpy' 2>/dev/null ||
  { echo "epoch_fmnist.sh: $py lacks torch or numpy (scripts/install-deps.sh --tests; --python PATH)" >&2; exit 1; }
if [ "$dev_kind" = cuda ] && [ "$peer" = 1 ]; then
  "$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' ||
    { echo "epoch_fmnist.sh: --device $device: $py's torch sees no CUDA GPU" >&2; exit 1; }
fi

# One thread count for everyone: ctensor's pool, OpenBLAS, PyTorch's intra-op pool.
export CT_NUM_THREADS=$threads OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads

mkdir -p "$out_dir"
name="$(date +%F)-fmnist-epoch-$dev_kind"
[ "$epochs" -gt 1 ] && name="$name-${epochs}ep"
raw="$out_dir/$name.jsonl"
report="$out_dir/$name.md"
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
gpu=""
if [ "$dev_kind" = cuda ] && [ "$peer" = 1 ]; then
  gpu=$("$py" -c 'import sys, torch; print(torch.cuda.get_device_name(torch.device(sys.argv[1])))' "$device" |
    tr -d '"\\')
fi
commit="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD -- src include tools 2>/dev/null || echo +uncommitted)"
printf '{"meta":"epoch_fmnist","model":"%s","device":"%s","gpu":"%s","threads":%d,"rounds":%d,"epochs":%d,"target":%s,"augment":"%s","limit_train":%d,"limit_test":%d,"cpu":"%s","nproc":%d,"ctensor":"%s","commit":"%s","torch":"%s"}\n' \
  "$model" "$device" "$gpu" "$threads" "$rounds" "$epochs" "$target" "$augment" "$limit_train" "$limit_test" "$cpu" "$ncpu" \
  "$("$ct" info 2>/dev/null | head -1 | tr -d '"\\')" \
  "$commit" "$("$py" -c 'import torch; print(torch.__version__)')" >"$raw"

ct_limit=()
[ "$limit_train" -gt 0 ] && ct_limit=(--limit-train "$limit_train")
[ "$limit_test" -gt 0 ] && ct_limit+=(--limit-test "$limit_test")
for r in $(seq 1 "$rounds"); do
  busy=$(cpu_busy)
  load=$(cut -d' ' -f1 /proc/loadavg)
  echo "round $r/$rounds: ctensor on $device (CPUs ${busy}% busy before, load $load)" >&2
  rm -f "$tmp/m.jsonl"
  "$ct" train --model "$model" --epochs "$epochs" --device "$device" --augment "$augment" \
    --data-dir "$data_dir" ${ct_limit[@]+"${ct_limit[@]}"} --metrics "$tmp/m.jsonl" --quiet >"$tmp/ct.out" ||
    { cat "$tmp/ct.out" >&2; echo "epoch_fmnist.sh: ctensor train failed" >&2; exit 1; }
  # The metrics lines as benchmark lines, with the time to --target.
  "$py" - "$tmp/m.jsonl" "$model" "$device" "$threads" "$r" "$busy" "$load" "$target" >>"$raw" <<'EOF'
import json, sys
path, model, device = sys.argv[1], sys.argv[2], sys.argv[3]
threads, rnd, busy, load, target = (int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]),
                                    float(sys.argv[7]), float(sys.argv[8]))
train_s, reached = 0.0, False
for line in open(path):
    m = json.loads(line)
    train_s += m["seconds"]
    rec = {"bench": f"fmnist_{model}_epoch", "impl": "ctensor", "device": device, "threads": threads,
           "round": rnd, "cpu_busy_before_pct": busy, "load_before": load, "epoch": m["epoch"],
           "train_samples": round(m["seconds"] * m["images_per_second"]), "lr": m["lr"],
           "seconds": m["seconds"], "images_per_second": m["images_per_second"],
           "data_seconds": m["data_wait_seconds"], "data_fraction": m["data_wait_seconds"] / m["seconds"],
           "loss": m["loss"], "eval_seconds": m["eval_seconds"],
           "eval_images_per_second": m["test_samples"] / m["eval_seconds"], "test_accuracy": m["accuracy"]}
    if target > 0 and not reached and m["accuracy"] is not None and m["accuracy"] >= target:
        reached = True
        rec["time_to_target_s"] = round(train_s, 3)
    print(json.dumps(rec, separators=(",", ":")))
EOF
  [ "$peer" = 1 ] || continue
  busy=$(cpu_busy)
  load=$(cut -d' ' -f1 /proc/loadavg)
  echo "round $r/$rounds: pytorch on $device (CPUs ${busy}% busy before, load $load)" >&2
  "$py" bench/peers_epoch.py --threads "$threads" --model "$model" --augment "$augment" \
    --data-dir "$data_dir" --device "$device" --epochs "$epochs" --target "$target" \
    --limit-train "$limit_train" --limit-test "$limit_test" |
    sed "s/^{/{\"round\":$r,\"cpu_busy_before_pct\":$busy,\"load_before\":$load,/" >>"$raw"
done

"$py" - "$raw" "$report" <<'EOF'
import json, sys
raw, report = sys.argv[1], sys.argv[2]
lines = [json.loads(l) for l in open(raw)]
meta = lines[0]
rows = [l for l in lines[1:] if "impl" in l]
by = {}  # (round, epoch) -> impl -> line
for l in rows:
    by.setdefault((l["round"], l["epoch"]), {})[l["impl"]] = l
target = meta.get("target", 0)
where = f"GPU: {meta['gpu']} ({meta['device']}), host " if meta.get("gpu") else ""
limit = f"; first {meta['limit_train']} training images only" if meta.get("limit_train") else ""
if meta.get("limit_test"):
    limit += f"; first {meta['limit_test']} test images only"
out = [f"# Fashion-MNIST epoch: ctensor vs PyTorch ({meta['model']}, {meta['device']}, "
       f"{meta['threads']} threads)", "",
       f"{where}CPU: {meta['cpu']} ({meta['nproc']} cores); batch 64, Adam 1e-3, cosine over "
       f"{meta['epochs']} epoch(s), augment {meta['augment']}{limit}; {meta['ctensor']} at "
       f"{meta.get('commit', '?')}, PyTorch {meta.get('torch', '?')}", "",
       "| round | epoch | ctensor epoch s | ctensor img/s | ctensor data wait | PyTorch epoch s | PyTorch img/s "
       "| PyTorch batch building | ratio (PyTorch s / ctensor s) | ctensor eval s | PyTorch eval s "
       "| test accuracy (ct / pt) | CPUs busy before (ct / pt) |",
       "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
for r, e in sorted(by):
    c, p = by[(r, e)].get("ctensor"), by[(r, e)].get("pytorch")
    if not c:
        continue
    if not p:  # --no-peer
        out.append(f"| {r} | {e} | {c['seconds']:.2f} | {c['images_per_second']:.0f} "
                   f"| {100 * c['data_fraction']:.2f}% | | | | | {c['eval_seconds']:.2f} | "
                   f"| {100 * c['test_accuracy']:.2f}% / | {c['cpu_busy_before_pct']}% / |")
        continue
    out.append(f"| {r} | {e} | {c['seconds']:.2f} | {c['images_per_second']:.0f} | {100 * c['data_fraction']:.2f}% "
               f"| {p['seconds']:.2f} | {p['images_per_second']:.0f} | {100 * p['data_fraction']:.2f}% "
               f"| **{p['seconds'] / c['seconds']:.2f}** | {c['eval_seconds']:.2f} | {p['eval_seconds']:.2f} "
               f"| {100 * c['test_accuracy']:.2f}% / {100 * p['test_accuracy']:.2f}% "
               f"| {c['cpu_busy_before_pct']}% / {p['cpu_busy_before_pct']}% |")
cs = [l for l in rows if l["impl"] == "ctensor"]
ps = [l for l in rows if l["impl"] == "pytorch"]
if cs and ps:
    bc, bp = min(l["seconds"] for l in cs), min(l["seconds"] for l in ps)
    wait = max(l["data_fraction"] for l in cs)
    met = lambda ok: "**met**" if ok else "not met"
    out += ["", f"best epochs: ctensor {bc:.2f} s, PyTorch {bp:.2f} s, ratio {bp / bc:.2f} "
                f"(target >= 2: {met(bp / bc >= 2)}); ctensor data wait at most {100 * wait:.2f}% "
                f"of the epoch (target < 5%: {met(wait < 0.05)})"]
if target > 0:
    for r in sorted({l["round"] for l in rows}):
        got = {}
        for impl in ("ctensor", "pytorch"):
            hit = [l for l in rows if l["round"] == r and l["impl"] == impl and "time_to_target_s" in l]
            got[impl] = (hit[0]["time_to_target_s"], hit[0]["epoch"]) if hit else None
        say = lambda g: f"{g[0]:.2f} s (epoch {g[1]})" if g else f"not reached in {meta['epochs']} epoch(s)"
        line = (f"round {r}: time to {100 * target:.0f}% test accuracy (training seconds, evaluation "
                f"excluded): ctensor {say(got['ctensor'])}, PyTorch {say(got['pytorch'])}")
        if got["ctensor"] and got["pytorch"]:
            line += f", ratio {got['pytorch'][0] / got['ctensor'][0]:.2f}"
        out += ["", line]
open(report, "w").write("\n".join(out) + "\n")
print("\n".join(out))
EOF
echo "wrote $raw and $report" >&2
