#!/usr/bin/env python3
"""peers_gpu.py: the workloads of bench_gpu.c in PyTorch and CuPy, on the same GPU.

Same sizes, same method and same JSON lines as bench_gpu.c (docs/benchmarks.md,
"GPU benchmarks"): device work timed with events (torch.cuda.Event,
cupy.cuda.Event) around `inner` back-to-back calls after 3 untimed calls and a
warm-up (>= 3 calls and >= 10% of the budget, each synchronized) that sets `inner` so that a trial lasts
>= 20 ms; 7 to 100 trials within the budget; median and min per call. Host-side
per-op costs with time.perf_counter. TF32 is off for f32 products in both
(torch.backends.cuda.matmul.fp32_precision = "ieee", or allow_tf32 = False
before PyTorch 2.9; CUPY_TF32=0), as in ctensor. CuPy's bf16 is ml_dtypes'
bfloat16 (CuPy >= 14); where CuPy has none, its bf16 row is an error row.

Run with the GPU machine's python3 (the one that holds torch and cupy):
  python3 bench/peers_gpu.py [--budget SECONDS] [--only NAME] [--impl torch|cupy|all]
--impl runs one library only (gpu-check.sh runs each in its own process, so
that one crashing cannot take the other's rows). Without torch, CuPy or a GPU it
says so on stderr and skips what it cannot run (exit 0); a missing CuPy skips
only the CuPy rows.
"""
import json
import math
import os
import platform
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peers_util import init, torch_exact_f32, torch_precision, want  # noqa: E402

ARGS = init(__doc__.splitlines()[0], lambda p: p.add_argument(
    "--impl", choices=["all", "torch", "cupy"], default="all", help="the library to time"))
os.environ.setdefault("CUPY_TF32", "0")  # before cupy loads: exact f32 products

N_BIG = 1 << 28          # 1 GiB per f32 array
N_MAT = 8192
N_H2D = 64 << 20         # 64 Mi f32: 256 MiB
TRIAL_S = 20e-3
MIN_TRIALS, MAX_TRIALS = 7, 100
LAUNCH_LOOP = 1000
ENQUEUE_BATCH = 200

GB_COPY = 2 * 4 * N_BIG / 1e9
GB_EW = 3 * 4 * N_BIG / 1e9
GB_SUM = 4 * N_BIG / 1e9
TFLOP_MM = 2 * N_MAT ** 3 / 1e12
GB_H2D = 4 * N_H2D / 1e9


def skip(msg):
    print(f"peers_gpu: {msg}", file=sys.stderr, flush=True)


torch = cp = cupyx = None
if ARGS.impl in ("all", "torch"):
    try:
        import torch
    except Exception as e:  # noqa: BLE001
        torch = None
        skip(f"PyTorch is not importable ({type(e).__name__}: {e}): skipping the PyTorch rows")
    if torch is not None and not torch.cuda.is_available():
        skip(f"no CUDA device visible to PyTorch {torch.__version__}: skipping the PyTorch rows")
        torch = None

if ARGS.impl in ("all", "cupy"):
    try:
        import cupy as cp
        import cupyx
        if cp.cuda.runtime.getDeviceCount() < 1:
            raise RuntimeError("no CUDA device")
    except Exception as e:  # noqa: BLE001
        cp = None
        skip(f"CuPy is not usable ({type(e).__name__}: {e}): skipping the CuPy rows")

if torch is None and cp is None:
    skip("no CUDA device (neither PyTorch nor CuPy can use one): nothing to measure")


# ---- Output ------------------------------------------------------------------------

def emit(bench, impl, fn, metric=None, of_median=None):
    """Runs fn() -> timing dict and prints a JSON line; metric = of_median(median)."""
    rec = {"bench": bench, "impl": impl, "threads": ARGS.threads}
    try:
        rec.update(fn())
        if metric:
            rec[metric] = of_median(rec["median_s"])
    except Exception as e:  # noqa: BLE001  (a peer failing must not hide the others)
        rec["error"] = f"{type(e).__name__}: {e}"[:300]
        skip(f"{bench} / {impl}: {rec['error']}")
    print(json.dumps(rec), flush=True)


def raise_(e):
    raise e


def rate(work):
    return lambda t: work / t


def summarize(times, inner, minflt):
    times.sort()
    n, mid = len(times), len(times) // 2
    median = times[mid] if n % 2 else 0.5 * (times[mid - 1] + times[mid])
    return {"median_s": median, "min_s": times[0], "samples": n, "inner": inner,
            "minflt_per_iter": minflt}


def minor_faults():
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


# ---- Timing ------------------------------------------------------------------------

class Backend:
    """Events and synchronization of one library."""

    def __init__(self, name):
        self.name = name
        if name == "torch":
            self.event = lambda: torch.cuda.Event(enable_timing=True)
            self.sync = torch.cuda.synchronize
            self.elapsed_ms = lambda e0, e1: (e1.synchronize(), e0.elapsed_time(e1))[1]
        else:
            self.event = cp.cuda.Event
            self.sync = cp.cuda.runtime.deviceSynchronize
            self.elapsed_ms = lambda e0, e1: (e1.synchronize(), cp.cuda.get_elapsed_time(e0, e1))[1]


def time_device(be, fn):
    """Median and min device time per call of fn (events; see the module docstring)."""
    for _ in range(3):  # untimed: module loading, kernel compilation, library handles
        fn()
        be.sync()
    calls, t0 = 0, time.perf_counter()
    while calls < 3 or time.perf_counter() - t0 < 0.1 * ARGS.budget:
        fn()
        be.sync()
        calls += 1
    per_call = (time.perf_counter() - t0) / calls
    inner = 1 if per_call >= TRIAL_S else math.ceil(TRIAL_S / per_call)
    n = min(MAX_TRIALS, max(MIN_TRIALS, int(ARGS.budget / (per_call * inner))))
    e0, e1 = be.event(), be.event()
    rng = range(inner)
    times = []
    flt0 = minor_faults()
    for _ in range(n):
        e0.record()
        for _ in rng:
            fn()
        e1.record()
        times.append(be.elapsed_ms(e0, e1) * 1e-3 / inner)
    minflt = (minor_faults() - flt0) / (n * inner)
    be.sync()
    return summarize(times, inner, minflt)


def time_host_ops(be, run, batch, sync_in_sample):
    """Host time per op of run(), which issues `batch` ops: with sync_in_sample, a
    sample is the batch and one synchronize; without, the queue is drained before each
    sample, untimed, and only the enqueueing is timed."""
    calls, t0 = 0, time.perf_counter()
    while calls < 3 or time.perf_counter() - t0 < 0.1 * ARGS.budget:
        run()
        be.sync()
        calls += 1
    per_sample = (time.perf_counter() - t0) / calls
    n = min(200, max(MIN_TRIALS, int(ARGS.budget / per_sample)))
    times = []
    flt0 = minor_faults()
    for _ in range(n):
        if not sync_in_sample:
            be.sync()
        s0 = time.perf_counter()
        run()
        if sync_in_sample:
            be.sync()
        times.append((time.perf_counter() - s0) / batch)
    be.sync()
    return summarize(times, batch, (minor_faults() - flt0) / (n * batch))


def backends():
    out = []
    if torch is not None:
        out.append(Backend("torch"))
    if cp is not None:
        out.append(Backend("cupy"))
    return out


def release(be):
    """Gives cached device memory back between workloads (two libraries share the GPU)."""
    if be.name == "torch":
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    else:
        cp.cuda.runtime.deviceSynchronize()
        cp.get_default_memory_pool().free_all_blocks()
        cp.get_default_pinned_memory_pool().free_all_blocks()


# ---- Workloads ---------------------------------------------------------------------

def rand_big(be, n=N_BIG):
    if be.name == "torch":
        return torch.rand(n, device="cuda", dtype=torch.float32)
    return cp.random.random(n, dtype=cp.float32)


def bench_big():
    names = ["gpu_copy_2p28_f32", "gpu_add_2p28_f32", "gpu_add_out_2p28_f32",
             "gpu_mul_2p28_f32", "gpu_mul_out_2p28_f32", "gpu_sum_2p28_f32",
             "gpu_add_transposed_2p28_f32"]
    if not any(want(w) for w in names):
        return
    for be in backends():
        try:
            a, b = rand_big(be), rand_big(be)
            out = (torch.empty_like(a) if be.name == "torch" else cp.empty_like(a))
        except Exception as e:  # noqa: BLE001
            for w in names:
                if want(w):
                    emit(w, be.name, lambda e=e: raise_(e))
            release(be)
            continue
        T = be.name == "torch"
        if want("gpu_copy_2p28_f32"):
            fn = (lambda: out.copy_(a)) if T else (lambda: out.__setitem__(Ellipsis, a))
            emit("gpu_copy_2p28_f32", be.name, lambda: time_device(be, fn), "gbps", rate(GB_COPY))
        ops = {
            "gpu_add_2p28_f32": (lambda: a + b),
            "gpu_mul_2p28_f32": (lambda: a * b),
            "gpu_add_out_2p28_f32": ((lambda: torch.add(a, b, out=out)) if T
                                     else (lambda: cp.add(a, b, out=out))),
            "gpu_mul_out_2p28_f32": ((lambda: torch.mul(a, b, out=out)) if T
                                     else (lambda: cp.multiply(a, b, out=out))),
        }
        for w in ["gpu_add_2p28_f32", "gpu_add_out_2p28_f32", "gpu_mul_2p28_f32",
                  "gpu_mul_out_2p28_f32"]:
            if want(w):
                emit(w, be.name, lambda fn=ops[w]: time_device(be, fn), "gbps", rate(GB_EW))
        if want("gpu_sum_2p28_f32"):
            fn = (lambda: torch.sum(a)) if T else (lambda: a.sum())
            emit("gpu_sum_2p28_f32", be.name, lambda: time_device(be, fn), "gbps", rate(GB_SUM))
        if want("gpu_add_transposed_2p28_f32"):
            side = 1 << 14  # (16384, 16384): the strided kernel, as bench_gpu.c
            a2, b2, o2 = (x.reshape(side, side) for x in (a, b, out))
            fn = ((lambda: torch.add(a2, b2.t(), out=o2)) if T
                  else (lambda: cp.add(a2, b2.T, out=o2)))
            emit("gpu_add_transposed_2p28_f32", be.name, lambda: time_device(be, fn), "gbps",
                 rate(GB_EW))
            del a2, b2, o2
        del a, b, out
        release(be)


def cupy_dtype(name):
    """CuPy's dtype for f16/bf16/f32; bf16 is ml_dtypes' (CuPy >= 14, experimental)."""
    if name != "bf16":
        return {"f16": cp.float16, "f32": cp.float32}[name]
    dt = getattr(cp, "bfloat16", None)
    if dt is None:
        try:
            import ml_dtypes
            dt = ml_dtypes.bfloat16
        except ImportError:
            raise TypeError(f"CuPy {cp.__version__}: no bfloat16 (needs CuPy >= 14 and "
                            "ml_dtypes)") from None
    return dt


def bench_matmul():
    for name in ["f16", "bf16", "f32"]:
        w = f"gpu_matmul_{N_MAT}_{name}"
        if not want(w):
            continue
        for be in backends():
            def run(be=be, name=name):
                if be.name == "torch":
                    dt = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}[name]
                    a = torch.randn(N_MAT, N_MAT, device="cuda", dtype=dt)
                    b = torch.randn(N_MAT, N_MAT, device="cuda", dtype=dt)
                else:
                    dt = cupy_dtype(name)
                    a = cp.random.standard_normal((N_MAT, N_MAT), dtype=cp.float32).astype(dt)
                    b = cp.random.standard_normal((N_MAT, N_MAT), dtype=cp.float32).astype(dt)
                try:
                    return time_device(be, lambda: a @ b)
                finally:
                    del a, b
                    release(be)
            emit(w, be.name, run, "tflops", rate(TFLOP_MM))


def bench_small():
    todo = [(w, batch, sync) for w, batch, sync in
            [("gpu_launch_1elem_f32", LAUNCH_LOOP, True),
             ("gpu_enqueue_1elem_f32", ENQUEUE_BATCH, False)] if want(w)]
    if not todo:
        return
    for be in backends():
        if be.name == "torch":
            a = torch.full((1,), 1.0, device="cuda")
            b = torch.full((1,), 2.0, device="cuda")
        else:
            a = cp.full((1,), 1.0, dtype=cp.float32)
            b = cp.full((1,), 2.0, dtype=cp.float32)
        for w, batch, sync in todo:
            def run(rng=range(batch), a=a, b=b):
                for _ in rng:
                    a + b  # a fresh 1-element result per op, as ct_add
            emit(w, be.name, lambda run=run, batch=batch, sync=sync:
                 time_host_ops(be, run, batch, sync), "ns_per_op", lambda t: t * 1e9)
        release(be)


def bench_h2d():
    w = "gpu_h2d_256MiB_pinned"
    if not want(w):
        return
    for be in backends():
        def run(be=be):
            if be.name == "torch":
                h = torch.rand(N_H2D).pin_memory()
                return time_device(be, lambda: h.to("cuda", non_blocking=True))
            import numpy as np
            h = cupyx.empty_pinned((N_H2D,), dtype=np.float32)
            h[...] = np.random.default_rng(0).random(N_H2D, dtype=np.float32)
            d = cp.empty(N_H2D, dtype=cp.float32)
            s = cp.cuda.get_current_stream()  # the stream the events are recorded on
            return time_device(be, lambda: d.set(h, stream=s))
        emit(w, be.name, run, "gbps", rate(GB_H2D))
        release(be)


def main():
    meta = {"meta": "peers_gpu", "impl": ARGS.impl, "python": platform.python_version()}
    if torch is not None:
        torch_exact_f32(torch)
        torch.manual_seed(1234)
        meta.update({"torch": torch.__version__, "torch_cuda": torch.version.cuda,
                     "gpu": torch.cuda.get_device_name(0), **torch_precision(torch)})
    if cp is not None:
        cp.random.seed(1234)
        meta.update({"cupy": cp.__version__, "cupy_tf32": os.environ.get("CUPY_TF32")})
    if torch is None and cp is None:
        meta["skipped"] = "no CUDA device"
        print(json.dumps(meta), flush=True)
        return 0
    print(json.dumps(meta), flush=True)
    bench_big()
    bench_matmul()
    bench_small()
    bench_h2d()
    return 0


if __name__ == "__main__":
    sys.exit(main())
