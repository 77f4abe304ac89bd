#!/usr/bin/python3
"""report.py: merges the JSON lines of bench_core and peers_core.py into Markdown.

  /usr/bin/python3 bench/report.py core.jsonl peers.jsonl > results.md

Writes (1) the core targets (docs/benchmarks.md), each with the ratio it is
stated in (computed from median times measured in the same run) and met/not
met, and (2) every measurement (median, min, derived metric, page faults).
Given the lines of bench_train and peers_train.py run with --device cuda, it
writes the training steps' GPU report (targets against PyTorch eager on the
same GPU). Given the lines of bench_gpu and peers_gpu.py (workloads named gpu_*), it
writes the GPU report instead: the GPU targets (docs/benchmarks.md) against the
device-to-device copy bandwidth, raw CUDA runtime calls, PyTorch and CuPy.
Standard library only.
"""
import datetime
import json
import platform
import subprocess
import sys

# Display names of implementations.
IMPL_NAMES = {
    "ctensor": "ctensor",
    "numpy": "NumPy",
    "numpy_out": "NumPy (out=)",
    "numpy_f64": "NumPy f64 (reference script)",
    "torch": "PyTorch",
    "c_loop_prealloc": "C loop, preallocated",
    "c_loop_malloc": "C loop, malloc per call",
    "c_simd": "C AVX-512 loop",
    "c_avx512": "C AVX-512 FMA loop",
    "cupy": "CuPy",
    "cuda_memcpy": "cudaMemcpyAsync (raw)",
}

WORKLOADS = {
    "add_10M_f32": "c = a + b, 10M f32, fresh result",
    "sum_10M_f32": "sum of 10M f32",
    "matmul_1024_f32": "matmul 1024x1024 f32",
    "add_1elem_f32": "1-element add (create + free result)",
    "mul_1elem_grad_f32": "1-element mul recording its autograd node (create + free)",
    "linreg_1000": "linear regression, manual gradient, 1000 epochs",
    "fma_peak_f32": "f32 FMA throughput (roofline)",
    "train_linreg_1000": "linear regression, autograd + SGD, 1000 epochs",
    "train_mlp_step": "MLP 784-128-10 training step, batch 64",
    "train_cnn_step": "CIFAR CNN (tutorial Net) training step, batch 64",
    "train_fashion_cnn_step": "Fashion-MNIST CNN training step, batch 64",
    "train_fashion_cnn_epoch": "Fashion-MNIST CNN, one epoch (938 steps of 64)",
}
TRAINING = [w for w in WORKLOADS if w.startswith("train_")]


def speedup(peers):
    """Target as 'ctensor is x times faster than the fastest of `peers`'."""
    return lambda r, b: min(r[b][p]["median_s"] for p in peers) / r[b]["ctensor"]["median_s"]


def faster_than_numpy_linreg(r, b):
    """The manual NumPy loop of bench_core (linreg_1000) against autograd + SGD."""
    times = [r["linreg_1000"][p]["median_s"] for p in ("numpy", "numpy_f64")
             if "median_s" in r["linreg_1000"].get(p, {})]
    if not times:
        raise KeyError("numpy")
    return min(times) / r[b]["ctensor"]["median_s"]


def at_most_ns(r, b):
    return r[b]["ctensor"]["median_s"] * 1e9


# (workload, target text, ratio text, ratio function, threshold, higher is better,
#  the baseline implementations shown in the row)
TARGETS = [
    ("add_10M_f32", ">= 2x faster than NumPy", "NumPy time / ctensor time",
     speedup(["numpy"]), 2.0, True, ["numpy", "torch"]),
    ("add_10M_f32", ">= 85% of the C loop (preallocated)", "C-loop time / ctensor time",
     speedup(["c_loop_prealloc"]), 0.85, True, ["c_loop_prealloc"]),
    ("sum_10M_f32", ">= PyTorch's speed", "PyTorch time / ctensor time",
     speedup(["torch"]), 1.0, True, ["numpy", "torch"]),
    ("sum_10M_f32", ">= 85% of the hand-vectorized C loop", "C-loop time / ctensor time",
     speedup(["c_simd"]), 0.85, True, ["c_simd"]),
    ("matmul_1024_f32", ">= 0.95x NumPy", "NumPy time / ctensor time",
     speedup(["numpy"]), 0.95, True, ["numpy", "torch"]),
    ("add_1elem_f32", "<= 0.15 us per op", "ctensor ns per op",
     at_most_ns, 150.0, False, []),
    ("add_1elem_f32", ">= 5x less than PyTorch's", "PyTorch time / ctensor time",
     speedup(["torch"]), 5.0, True, ["numpy", "torch"]),
    ("linreg_1000", "faster than NumPy", "NumPy time / ctensor time (fastest NumPy)",
     speedup(["numpy", "numpy_f64"]), 1.0, True, ["numpy", "numpy_f64", "torch"]),
    # Training
    ("train_linreg_1000", ">= 10x faster than PyTorch", "PyTorch time / ctensor time",
     speedup(["torch"]), 10.0, True, ["torch"]),
    ("train_linreg_1000", "faster than NumPy's manual loop (linreg_1000)",
     "NumPy linreg_1000 time / ctensor time", faster_than_numpy_linreg, 1.0, True, []),
    ("train_mlp_step", ">= 2.5x faster than PyTorch", "PyTorch time / ctensor time",
     speedup(["torch"]), 2.5, True, ["torch"]),
    ("train_cnn_step", ">= 2x faster than PyTorch", "PyTorch time / ctensor time",
     speedup(["torch"]), 2.0, True, ["torch"]),
    ("train_fashion_cnn_step", ">= 2x faster than PyTorch", "PyTorch time / ctensor time",
     speedup(["torch"]), 2.0, True, ["torch"]),
    ("train_fashion_cnn_epoch", ">= 2x faster than PyTorch", "PyTorch time / ctensor time",
     speedup(["torch"]), 2.0, True, ["torch"]),
]


def load(paths):
    """{bench: {impl: record}} and the metadata records. An implementation
    measured in several rounds keeps its best (lowest) median; `spread` is its
    worst median over its best (1.00: the rounds agree)."""
    results, meta = {}, []
    for path in paths:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if not line.startswith("{"):
                    continue
                rec = json.loads(line)
                if "meta" in rec:
                    meta.append(rec)
                    continue
                prev = results.setdefault(rec["bench"], {}).get(rec["impl"])
                results[rec["bench"]][rec["impl"]] = merge(prev, rec)
    return results, meta


def merge(prev, rec):
    """The better of two rounds of one implementation, with the spread."""
    if prev is None or "error" in prev:
        rec.setdefault("medians", [rec["median_s"]] if "median_s" in rec else [])
        return rec
    if "error" in rec:
        return prev
    medians = prev["medians"] + [rec["median_s"]]
    best = rec if rec["median_s"] < prev["median_s"] else prev
    best["medians"] = medians
    return best


def fmt_time(s):
    if s is None:
        return "n/a"
    if s < 1e-6:
        return f"{s * 1e9:.0f} ns"
    if s < 1e-3:
        return f"{s * 1e6:.2f} µs"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.3f} s"


def fmt_metric(rec):
    for key, unit in (("gbps", "GB/s"), ("gflops", "GFLOP/s"), ("tflops", "TFLOP/s")):
        if key in rec:
            return f"{rec[key]:.1f} {unit}"
    return ""


def cell(rec):
    """'3.10 ms (38.7 GB/s)', or the error."""
    if rec is None:
        return "n/a"
    if "error" in rec:
        return f"error: {rec['error'][:60]}"
    metric = fmt_metric(rec)
    return fmt_time(rec["median_s"]) + (f" ({metric})" if metric else "")


def target_rows(results):
    rows = []
    for bench, target, ratio_text, fn, threshold, higher, shown in TARGETS:
        r = results.get(bench, {})
        ct = r.get("ctensor")
        peers = "; ".join(f"{IMPL_NAMES[p]} {cell(r.get(p))}" for p in shown) or "–"
        try:
            value = fn(results, bench)
            met = value >= threshold if higher else value <= threshold
            ratio = f"{value:.2f}" if higher else f"{value:.0f} ns"
            status = "**met**" if met else f"not met ({shortfall(value, threshold, higher)})"
            if noisy(r, ["ctensor", *shown]):
                status += "; noisy: rounds disagree, repeat on a quiet machine"
        except (KeyError, ZeroDivisionError, TypeError):
            ratio, status = "n/a", "not measured"
        rows.append(f"| {WORKLOADS[bench]} | {cell(ct)} | {peers} | {ratio_text}: {ratio} "
                    f"| {target} | {status} |")
    return rows


def noisy(r, impls, limit=1.25):
    """Whether the rounds of any of `impls` disagree by more than `limit`."""
    return any(max(r[i]["medians"]) > limit * min(r[i]["medians"])
               for i in impls if i in r and r[i].get("medians"))


def training_rows(results):
    """Training workloads: ctensor against PyTorch (their targets are in TARGETS)."""
    rows = []
    for bench in TRAINING:
        r = results.get(bench)
        if not r:
            continue
        try:
            ratio = f"{speedup(['torch'])(results, bench):.2f}"
        except (KeyError, ZeroDivisionError, TypeError):
            ratio = "n/a"
        rows.append(f"| {WORKLOADS[bench]} | {cell(r.get('ctensor'))} | {cell(r.get('torch'))} "
                    f"| {ratio} |")
    return rows


def shortfall(value, threshold, higher):
    if higher:
        return f"{value / threshold * 100:.0f}% of the target"
    return f"{value / threshold:.1f}x the limit"


def detail_rows(results):
    rows = []
    for bench in WORKLOADS:
        for impl, rec in results.get(bench, {}).items():
            if "error" in rec:
                rows.append(f"| {bench} | {IMPL_NAMES.get(impl, impl)} | error | | | "
                            f"{rec['error']} | | |")
                continue
            spread = max(rec["medians"]) / min(rec["medians"])
            rows.append(f"| {bench} | {IMPL_NAMES.get(impl, impl)} | {fmt_time(rec['median_s'])} "
                        f"| {fmt_time(rec['min_s'])} | {fmt_metric(rec)} "
                        f"| {rec['minflt_per_iter']:.3g} | {len(rec['medians'])} "
                        f"| {spread:.2f} |")
    return rows


def measurements_section(results):
    """Every CPU or training measurement, with its rounds' spread."""
    return ["## All measurements", "",
            "Median and min: of the best round; spread: worst round's median / best round's.", "",
            "| workload | implementation | median | min | throughput | page faults / call "
            "| rounds | spread |",
            "| --- | --- | --- | --- | --- | --- | --- | --- |", *detail_rows(results), ""]


def training_section(results):
    rows = training_rows(results)
    if not rows:
        return []
    return ["## Training (autograd, modules; targets in the table above)", "",
            "| workload | ctensor | PyTorch | PyTorch time / ctensor time |",
            "| --- | --- | --- | --- |", *rows, ""]


def machine():
    """CPU model, cores and clock as lscpu and /proc/cpuinfo report them."""
    model, mhz = platform.processor() or "unknown CPU", None
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, val = line.partition(":")
                if key.strip() == "model name":
                    model = val.strip()
                elif key.strip() == "cpu MHz" and mhz is None:
                    mhz = float(val)
    except OSError:
        pass
    try:
        lines = subprocess.run(["lscpu", "-p=CORE"], capture_output=True, text=True).stdout
        cores = len({ln for ln in lines.splitlines() if ln and not ln.startswith("#")})
    except OSError:
        cores = None
    return model, cores, mhz


# ---- GPU report (bench_gpu, peers_gpu.py) ---------------------------------------------

GPU_WORKLOADS = {
    "gpu_copy_2p28_f32": "device-to-device copy, 2^28 f32 (1 GiB; read + write counted)",
    "gpu_add_2p28_f32": "c = a + b, 2^28 f32, fresh result",
    "gpu_add_out_2p28_f32": "a + b into a preallocated out, 2^28 f32",
    "gpu_mul_2p28_f32": "c = a * b, 2^28 f32, fresh result",
    "gpu_mul_out_2p28_f32": "a * b into a preallocated out, 2^28 f32",
    "gpu_sum_2p28_f32": "sum of 2^28 f32",
    "gpu_add_transposed_2p28_f32": "a + b^T into out, (16384, 16384) f32 (the strided kernel)",
    "gpu_matmul_8192_f16": "matmul 8192x8192 f16",
    "gpu_matmul_8192_bf16": "matmul 8192x8192 bf16",
    "gpu_matmul_8192_f32": "matmul 8192x8192 f32 (TF32 off)",
    "gpu_launch_1elem_f32": "1-element add, loop of 1000 + one sync (host time per op)",
    "gpu_enqueue_1elem_f32": "1-element add, enqueue only (host time per op)",
    "gpu_h2d_256MiB_pinned": "host-to-device copy, 256 MiB from pinned memory",
}
GPU_COPY = "gpu_copy_2p28_f32"
GPU_NOISE = 1.15  # rounds disagreeing by more than this mark a row noisy


def copy_ref(results):
    """The reference bandwidth: the fastest device-to-device copy measured in the run,
    by any implementation (raw cudaMemcpyAsync, ctensor, PyTorch, CuPy)."""
    rates = [rec["gbps"] for rec in results.get(GPU_COPY, {}).values() if "gbps" in rec]
    if not rates:
        raise KeyError(GPU_COPY)
    return max(rates)


def of_copy(r, b):
    """ctensor's bandwidth as a fraction of the reference copy bandwidth."""
    return r[b]["ctensor"]["gbps"] / copy_ref(r)


def of_raw(r, b):
    return r[b]["cuda_memcpy"]["median_s"] / r[b]["ctensor"]["median_s"]


# (workload, target text, ratio text, ratio function, threshold, higher is better,
#  the baseline implementations shown in the row)
GPU_TARGETS = [
    (GPU_COPY, "reference bandwidth (no target)", "raw cudaMemcpyAsync time / ctensor time",
     of_raw, None, True, ["cuda_memcpy", "torch", "cupy"]),
]
for _w in ["gpu_add_2p28_f32", "gpu_add_out_2p28_f32", "gpu_mul_2p28_f32",
           "gpu_mul_out_2p28_f32"]:
    GPU_TARGETS += [
        (_w, ">= 90% of the copy bandwidth", "ctensor GB/s / copy GB/s", of_copy, 0.90, True,
         ["torch", "cupy"]),
        (_w, "not slower than PyTorch", "PyTorch time / ctensor time", speedup(["torch"]), 1.0,
         True, ["torch"]),
    ]
GPU_TARGETS += [
    ("gpu_sum_2p28_f32", ">= 85% of the copy bandwidth", "ctensor GB/s / copy GB/s", of_copy,
     0.85, True, ["torch", "cupy"]),
]
GPU_TARGETS += [
    ("gpu_add_transposed_2p28_f32", "not slower than PyTorch (no bandwidth target: "
     "a transposed read)", "PyTorch time / ctensor time", speedup(["torch"]), 1.0, True,
     ["torch", "cupy"]),
]
for _w in ["gpu_matmul_8192_f16", "gpu_matmul_8192_bf16", "gpu_matmul_8192_f32"]:
    GPU_TARGETS.append((_w, ">= 0.95x PyTorch", "PyTorch time / ctensor time",
                        speedup(["torch"]), 0.95, True, ["torch", "cupy"]))
GPU_TARGETS += [
    ("gpu_launch_1elem_f32", "<= 1/3 of PyTorch's per-op cost", "PyTorch time / ctensor time",
     speedup(["torch"]), 3.0, True, ["torch", "cupy"]),
    ("gpu_enqueue_1elem_f32", "<= 1/3 of PyTorch's per-op cost", "PyTorch time / ctensor time",
     speedup(["torch"]), 3.0, True, ["torch", "cupy"]),
    ("gpu_h2d_256MiB_pinned", ">= 90% of raw cudaMemcpyAsync", "raw time / ctensor time",
     of_raw, 0.90, True, ["cuda_memcpy", "torch", "cupy"]),
]


def is_gpu(results, meta):
    return any(b.startswith("gpu_") for b in results) or any(
        m.get("meta") in ("bench_gpu", "peers_gpu", "gpu") for m in meta)


def gpu_target_rows(results):
    rows = []
    for bench, target, ratio_text, fn, threshold, higher, shown in GPU_TARGETS:
        r = results.get(bench, {})
        peers = "; ".join(f"{IMPL_NAMES.get(p, p)} {cell(r.get(p))}" for p in shown
                          if p in r) or "–"
        try:
            value = fn(results, bench)
            ratio = f"{value:.2f}"
            if threshold is None:
                status = "reference"
            else:
                met = value >= threshold if higher else value <= threshold
                status = "**met**" if met else f"not met ({shortfall(value, threshold, higher)})"
            if noisy(r, ["ctensor", *shown], GPU_NOISE):
                status += "; noisy: rounds disagree, repeat"
        except (KeyError, ZeroDivisionError, TypeError):
            ratio, status = "n/a", "not measured"
        rows.append(f"| {GPU_WORKLOADS[bench]} | {cell(r.get('ctensor'))} | {peers} "
                    f"| {ratio_text}: {ratio} | {target} | {status} |")
    return rows


def gpu_detail_rows(results):
    rows = []
    for bench in GPU_WORKLOADS:
        for impl, rec in results.get(bench, {}).items():
            name = IMPL_NAMES.get(impl, impl)
            if "error" in rec:
                rows.append(f"| {bench} | {name} | error | | | {rec['error'][:200]} | | |")
                continue
            spread = max(rec["medians"]) / min(rec["medians"])
            rows.append(f"| {bench} | {name} | {fmt_time(rec['median_s'])} "
                        f"| {fmt_time(rec['min_s'])} | {fmt_metric(rec)} "
                        f"| {rec.get('samples', '?')} x {rec.get('inner', '?')} "
                        f"| {len(rec['medians'])} | {spread:.2f} |")
    return rows


def torch_f32_setting(peers):
    """PyTorch's f32 product setting as peers_*.py recorded it (new API or legacy)."""
    if "torch_matmul_fp32" in peers:
        return (f"matmul fp32_precision={peers['torch_matmul_fp32']}, "
                f"cudnn conv fp32_precision={peers.get('torch_conv_fp32', '?')}")
    return (f"allow_tf32={peers.get('torch_allow_tf32', '?')}, "
            f"cudnn allow_tf32={peers.get('torch_cudnn_allow_tf32', '?')}")


def gpu_report(results, meta):
    gpu = next((m for m in meta if m.get("meta") == "gpu"), {})
    peers = {}  # one line per peers_gpu.py process (--impl torch, --impl cupy): merged
    for m in meta:
        if m.get("meta") == "peers_gpu":
            peers.update({k: v for k, v in m.items() if k not in peers})
    core = next((m for m in meta if m.get("meta") == "bench_gpu"), {})
    run = next((m for m in meta if m.get("meta") == "run"), {})
    try:
        ref = f"{copy_ref(results):.0f} GB/s"
    except KeyError:
        ref = "not measured"
    drv, rt = gpu.get("driver"), gpu.get("runtime")
    ver = (lambda v: f"{v // 1000}.{v % 1000 // 10}" if isinstance(v, int) else "?")
    out = [
        f"# ctensor GPU benchmarks, {datetime.date.today().isoformat()}",
        "",
        f"- GPU: {gpu.get('name', peers.get('gpu', '?'))}, compute capability "
        f"{gpu.get('cc', '?')}, {gpu.get('sms', '?')} SMs, {gpu.get('mem_gib', '?')} GiB "
        f"({gpu.get('free_gib', '?')} GiB free at start), L2 {gpu.get('l2_mib', '?')} MiB; "
        f"driver API {ver(drv)}, runtime {ver(rt)}; host {platform.node()}",
        f"- ctensor {core.get('version', '?')} ({core.get('build', '?')}); TF32 off",
        f"- Peers: PyTorch {peers.get('torch', 'absent')} (CUDA {peers.get('torch_cuda', '?')}, "
        f"{torch_f32_setting(peers)}, fp16/bf16 reduced-precision "
        f"reductions {peers.get('torch_fp16_reduced_precision_reduction', '?')}/"
        f"{peers.get('torch_bf16_reduced_precision_reduction', '?')}), "
        f"CuPy {peers.get('cupy', 'absent')} (CUPY_TF32={peers.get('cupy_tf32', '?')}), "
        f"Python {peers.get('python', '?')}",
        f"- Reference bandwidth (fastest device-to-device copy in this run, read + write "
        f"counted): {ref}",
        f"- Rounds: {run.get('rounds', 1)} (each implementation's best median is kept; the "
        f"order of ctensor and its peers alternates between rounds)",
        "- Device times: CUDA events around back-to-back calls, median over trials; host "
        "per-op costs: monotonic clock (see docs/benchmarks.md, \"GPU benchmarks\").",
        "",
        "## Targets",
        "",
        "| workload | ctensor | peers / baselines | ratio | target | status |",
        "| --- | --- | --- | --- | --- | --- |",
        *gpu_target_rows(results),
        "",
        "## All measurements",
        "",
        "Median and min per call, of the best round; trials x calls per trial; spread: worst "
        "round's median / best round's.",
        "",
        "| workload | implementation | median | min | throughput | trials x calls "
        "| rounds | spread |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
        *gpu_detail_rows(results),
        "",
    ]
    return "\n".join(out)


# Training steps on a GPU (bench_train/peers_train.py --device cuda): the
# training targets on a GPU, against PyTorch eager on the same GPU.
GPU_TRAIN_TARGETS = {"train_mlp_step": 2.0, "train_cnn_step": 2.0, "train_fashion_cnn_step": 2.0,
                     "train_fashion_cnn_epoch": 2.0}


def train_device(meta):
    """The device of a training run ("cuda:0"), or None for a CPU run."""
    dev = next((m.get("device") for m in meta if m.get("meta") == "device"), None)
    return dev if dev and dev != "cpu" else None


def train_device_report(results, meta, device):
    dev_meta = next((m for m in meta if m.get("meta") == "device" and m.get("name")), {})
    name = dev_meta.get("name", "?")
    core = next((m for m in meta if m.get("meta") == "bench_train"), {})
    peers = next((m for m in meta if m.get("meta") == "peers_train"), {})
    rows = []
    for bench in TRAINING:
        r = results.get(bench)
        if not r:
            continue
        try:
            value = speedup(["torch"])(results, bench)
            ratio = f"{value:.2f}"
        except (KeyError, ZeroDivisionError, TypeError):
            value, ratio = None, "n/a"
        threshold = GPU_TRAIN_TARGETS.get(bench)
        if threshold is None:
            target, status = "–", "(no target)"
        else:
            target = f">= {threshold:g}x faster than PyTorch eager"
            status = ("not measured" if value is None else "**met**" if value >= threshold
                      else f"not met ({shortfall(value, threshold, True)})")
            if value is not None and noisy(r, ["ctensor", "torch"], GPU_NOISE):
                status += "; noisy: rounds disagree, repeat"
        rows.append(f"| {WORKLOADS[bench]} | {cell(r.get('ctensor'))} | {cell(r.get('torch'))} "
                    f"| {ratio} | {target} | {status} |")
    out = [
        f"# ctensor training steps on {device}, {datetime.date.today().isoformat()}",
        "",
        f"- GPU: {name} (as PyTorch names it); host {platform.node()}",
        f"- ctensor {core.get('version', '?')} ({core.get('build', '?')}); PyTorch "
        f"{peers.get('torch', 'absent')} eager ({torch_f32_setting(dev_meta)}; ctensor: TF32 "
        "off)",
        "- Each timed call ends with a device synchronization (ct_synchronize, "
        "torch.cuda.synchronize), so its time includes the GPU work; medians per call.",
        "",
        "## Targets",
        "",
        "| workload | ctensor | PyTorch | PyTorch time / ctensor time | target | status |",
        "| --- | --- | --- | --- | --- | --- |",
        *rows,
        "",
        *cuda_memory_section(meta),
        *measurements_section(results),
    ]
    return "\n".join(out)


def cuda_memory_section(meta):
    """ctensor's caching allocator after each workload ({"meta":"cuda_memory"})."""
    mem = [m for m in meta if m.get("meta") == "cuda_memory"]
    if not mem:
        return []
    mib = lambda v: f"{v / 2**20:.1f}"
    rows = [f"| {m.get('bench', '?')} | {mib(m.get('allocated', 0))} | {mib(m.get('requested', 0))} "
            f"| {mib(m.get('reserved', 0))} | {mib(m.get('inactive_split', 0))} "
            f"| {mib(m.get('largest_free_block', 0))} | {m.get('segments', 0)} "
            f"| {m.get('driver_allocs', 0)} | {m.get('cache_flushes', 0)} "
            f"| {100 * m.get('cache_hit_rate', 0):.2f}% |" for m in mem]
    return [
        "## ctensor's caching allocator after each workload",
        "",
        "MiB; inactive split: free bytes between live blocks (fragmentation); hit rate: the "
        "workload's requests served without the driver.",
        "",
        "| workload | allocated | requested | reserved | inactive split | largest free block "
        "| segments | driver allocations | cache flushes | hit rate |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        *rows,
        "",
    ]


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: report.py RESULTS.jsonl [MORE.jsonl ...] > report.md")
    results, meta = load(sys.argv[1:])
    if is_gpu(results, meta):
        print(gpu_report(results, meta))
        return
    device = train_device(meta)
    if device:
        print(train_device_report(results, meta, device))
        return
    model, cores, mhz = machine()
    threads = next((m["threads"] for m in meta if "threads" in m), None)
    peers = next((m for m in meta if m.get("meta") == "peers"), {})
    core = next((m for m in meta if m.get("meta") == "bench_core"), {})
    run = next((m for m in meta if m.get("meta") == "run"), {})
    fma = results.get("fma_peak_f32", {}).get("c_avx512", {})
    bw = results.get("add_10M_f32", {}).get("c_loop_prealloc", {})
    out = [
        f"# ctensor core benchmarks, {datetime.date.today().isoformat()}",
        "",
        f"- Machine: {model}, {cores} cores, {mhz:.0f} MHz (/proc/cpuinfo), "
        f"{platform.node()}" if mhz else f"- Machine: {model}",
        f"- Threads: {threads} for every implementation (ct_set_num_threads, "
        f"torch.set_num_threads, OPENBLAS_NUM_THREADS); NumPy's elementwise ops and "
        f"reductions are single-threaded by design",
        f"- Peers: NumPy {peers.get('numpy', '?')}, PyTorch {peers.get('torch', '?')}, "
        f"Python {peers.get('python', '?')} (Debian packages)",
        f"- Physical limits measured in this run: memory bandwidth (C loop, a + b into a "
        f"preallocated buffer) {bw.get('gbps', 0):.1f} GB/s; "
        f"f32 FMA throughput {fma.get('gflops', 0):.0f} GFLOP/s",
        f"- ctensor {core.get('version', '?')} ({core.get('build', '?')})",
        f"- Rounds: {run.get('rounds', 1)} (each implementation's best median is kept); "
        f"CPU busy with other work just before the run: {run.get('cpu_busy_before_pct', '?')}%",
        "- Times are medians of per-call times (see docs/benchmarks.md); ratios use medians "
        "measured in the same run.",
        "",
        "## Targets",
        "",
        "| workload | ctensor | peers / baselines | ratio | target | status |",
        "| --- | --- | --- | --- | --- | --- |",
        *target_rows(results),
        "",
        *training_section(results),
        *measurements_section(results),
    ]
    print("\n".join(out))


if __name__ == "__main__":
    main()
