"""peers_util.py: the timing method and output format of the Python peers.

The same method as bench/bench_util.c: a warm-up (>= 3 calls and >= 10% of the
budget) whose mean sets `inner`, the calls per sample (>= 2 ms per sample); then
7 to 200 samples within the budget, timed with time.perf_counter (monotonic).
The median and the minimum per-call times are printed as one JSON line:

  {"bench":"add_10M_f32","impl":"numpy","threads":2,"median_s":...,"min_s":...,"gbps":...}

init() sets the thread counts *before* NumPy and PyTorch load: OpenBLAS reads
OPENBLAS_NUM_THREADS once, at load time.
"""
import argparse
import json
import os
import resource
import time

MIN_SAMPLE_S = 2e-3
ARGS = None


def init(description, extra=None):
    """Parses --threads/--budget/--only (and what extra(parser) adds) and sets the
    thread variables."""
    global ARGS
    p = argparse.ArgumentParser(description=description)
    if extra:
        extra(p)
    p.add_argument("--threads", type=int,
                   default=int(os.environ.get("CT_NUM_THREADS", 0)) or os.cpu_count())
    p.add_argument("--budget", type=float, default=1.5, help="seconds of samples per workload")
    p.add_argument("--only", default=None, help="run the workloads whose name contains this")
    ARGS = p.parse_args()
    os.environ.setdefault("OPENBLAS_NUM_THREADS", str(ARGS.threads))
    os.environ.setdefault("OMP_NUM_THREADS", str(ARGS.threads))
    # Debian's torch runs its own ops on libgomp threads and its GEMMs on
    # OpenBLAS's pthreads. libgomp's default policy spins a worker after
    # each parallel region, on the core an OpenBLAS thread then needs: a
    # 2-layer LSTM step took 0.39-0.57 s on 2 threads against 0.12 s on one.
    # Passive waiting gives torch its best time (0.11 s), so peers run so.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    return ARGS


def want(name):
    """Whether --only (substrings separated by commas, any of which may match) selects name."""
    return ARGS.only is None or any(part and part in name for part in ARGS.only.split(","))


def minor_faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def time_it(fn):
    """Median and min per-call seconds of fn(), as bench_util.c's time_it."""
    calls, t0 = 0, time.perf_counter()
    t = t0
    while calls < 3 or t - t0 < 0.1 * ARGS.budget:
        fn()
        calls += 1
        t = time.perf_counter()
    per_call = (t - t0) / calls
    inner = 1 if per_call >= MIN_SAMPLE_S else int(-(-MIN_SAMPLE_S // per_call))
    samples = min(200, max(7, int(ARGS.budget / (per_call * inner))))
    rng = range(inner)
    times = []
    flt0 = minor_faults()
    for _ in range(samples):
        s0 = time.perf_counter()
        for _ in rng:
            fn()
        times.append((time.perf_counter() - s0) / inner)
    minflt = (minor_faults() - flt0) / (samples * inner)
    times.sort()
    mid = samples // 2
    median = times[mid] if samples % 2 else 0.5 * (times[mid - 1] + times[mid])
    return {"median_s": median, "min_s": times[0], "samples": samples, "inner": inner,
            "minflt_per_iter": minflt}


def rate(work):
    """Metric: work per second (GB/s, GFLOP/s)."""
    return lambda t: work / t


def scaled(k):
    """Metric: the median time in another unit (ns, ms)."""
    return lambda t: t * k


def emit(bench, impl, fn, metric=None, of_median=None):
    """Times fn and prints a JSON line; metric = of_median(median seconds)."""
    rec = {"bench": bench, "impl": impl, "threads": ARGS.threads}
    try:
        rec.update(time_it(fn))
        if metric:
            rec[metric] = of_median(rec["median_s"])
    except Exception as e:  # a peer failing must not hide the others
        rec["error"] = f"{type(e).__name__}: {e}"
    print(json.dumps(rec), flush=True)


def _has(obj, name):
    """hasattr for torch.backends' modules, whose unknown names raise AssertionError
    in PyTorch 1.x."""
    try:
        getattr(obj, name)
        return True
    except Exception:  # noqa: BLE001
        return False


def torch_exact_f32(torch):
    """TF32 off for f32 matrix products and convolutions, as ctensor's default
    (ct_cuda_set_allow_tf32(false)). PyTorch >= 2.9 has fp32_precision ("ieee")
    and warns that the allow_tf32 flags are to be deprecated (setting one API and
    reading the other can raise), so the new API is used where it exists."""
    cuda, cudnn = torch.backends.cuda.matmul, torch.backends.cudnn
    if _has(cuda, "fp32_precision") and _has(getattr(cudnn, "conv", None), "fp32_precision"):
        try:
            cuda.fp32_precision = "ieee"
            cudnn.conv.fp32_precision = "ieee"
            return
        except Exception:  # noqa: BLE001  (then the legacy flags, which still work)
            pass
    cuda.allow_tf32 = False
    cudnn.allow_tf32 = False


def torch_precision(torch):
    """The f32 product and convolution settings as they stand, for the meta line
    (the new API's where it exists: reading the legacy flags then only warns)."""
    m, cudnn = torch.backends.cuda.matmul, torch.backends.cudnn
    reads = [("torch_fp16_reduced_precision_reduction",
              lambda: m.allow_fp16_reduced_precision_reduction),
             ("torch_bf16_reduced_precision_reduction",
              lambda: m.allow_bf16_reduced_precision_reduction)]
    if _has(m, "fp32_precision"):
        reads += [("torch_matmul_fp32", lambda: m.fp32_precision),
                  ("torch_conv_fp32", lambda: cudnn.conv.fp32_precision)]
    else:
        reads += [("torch_allow_tf32", lambda: m.allow_tf32),
                  ("torch_cudnn_allow_tf32", lambda: cudnn.allow_tf32)]
    out = {}
    for key, read in reads:
        try:
            out[key] = read()
        except Exception:  # noqa: BLE001  (absent in this version)
            pass
    return out
