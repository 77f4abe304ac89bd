#!/usr/bin/python3
"""peers_core.py: the workloads of bench_core.c in NumPy and PyTorch.

Same sizes, same method (peers_util.py) and same JSON lines as bench_core.c.

Threads: torch.set_num_threads(N); OpenBLAS (NumPy's matmul) through
OPENBLAS_NUM_THREADS=N, set here before NumPy loads if the caller did not.
NumPy's elementwise ops and reductions are single-threaded by design.

Run with Debian's interpreter: /usr/bin/python3 bench/peers_core.py --threads N
"""
import json
import os
import sys

from peers_util import emit, init, rate, scaled, want

ARGS = init(__doc__.splitlines()[0])
import numpy as np  # noqa: E402  (after init: it sets the thread variables)
import torch  # noqa: E402

torch.set_num_threads(ARGS.threads)
N_BIG = 10_000_000
N_MAT = 1024


# ---- Workloads ------------------------------------------------------------------

def bench_add():
    a = np.random.rand(N_BIG).astype(np.float32)
    b = np.random.rand(N_BIG).astype(np.float32)
    c = np.empty_like(a)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    gb = 3 * N_BIG * 4 / 1e9
    emit("add_10M_f32", "numpy", lambda: a + b, "gbps", rate(gb))
    emit("add_10M_f32", "numpy_out", lambda: np.add(a, b, out=c), "gbps", rate(gb))
    emit("add_10M_f32", "torch", lambda: ta + tb, "gbps", rate(gb))


def bench_sum():
    a = np.random.rand(N_BIG).astype(np.float32)
    ta = torch.from_numpy(a)
    gb = N_BIG * 4 / 1e9
    emit("sum_10M_f32", "numpy", lambda: float(a.sum()), "gbps", rate(gb))
    emit("sum_10M_f32", "torch", lambda: torch.sum(ta).item(), "gbps", rate(gb))


def bench_matmul():
    a = np.random.rand(N_MAT, N_MAT).astype(np.float32)
    b = np.random.rand(N_MAT, N_MAT).astype(np.float32)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    flops = 2 * N_MAT ** 3 / 1e9
    emit("matmul_1024_f32", "numpy", lambda: a @ b, "gflops", rate(flops))
    emit("matmul_1024_f32", "torch", lambda: ta @ tb, "gflops", rate(flops))


def bench_small():
    a = np.ones(1, dtype=np.float32)
    b = np.full(1, 2, dtype=np.float32)
    ta, tb = torch.ones(1), torch.full((1,), 2.0)
    emit("add_1elem_f32", "numpy", lambda: a + b, "ns_per_op", scaled(1e9))
    emit("add_1elem_f32", "torch", lambda: ta + tb, "ns_per_op", scaled(1e9))


def bench_small_grad():
    ta, tb = torch.ones(1, requires_grad=True), torch.full((1,), 2.0)
    emit("mul_1elem_grad_f32", "torch", lambda: ta * tb, "ns_per_op", scaled(1e9))


def linreg_numpy(X, y, W):
    """The reference loop, verbatim (manual gradient)."""
    for _ in range(1000):
        predictions = np.dot(X, W)
        error = predictions - y
        loss = np.mean(error ** 2)  # noqa: F841  (computed, as in the reference)
        gradient = np.dot(X.T, error) / X.shape[0]
        W -= 0.01 * gradient


def linreg_torch(X, y, W):
    """The same loop in PyTorch, no autograd."""
    with torch.no_grad():
        for _ in range(1000):
            error = X @ W - y
            loss = torch.mean(error ** 2)  # noqa: F841
            gradient = X.T @ error / X.shape[0]
            W -= 0.01 * gradient


def bench_linreg():
    rng = np.random.default_rng(0)
    X, y, W = rng.random((100, 10)), rng.random((100, 1)), rng.random((10, 1))
    X32, y32, W32 = (v.astype(np.float32) for v in (X, y, W))
    tX, ty, tW = (torch.from_numpy(v.copy()) for v in (X32, y32, W32))
    emit("linreg_1000", "numpy", lambda: linreg_numpy(X32, y32, W32), "ms_per_1000", scaled(1e3))
    emit("linreg_1000", "numpy_f64", lambda: linreg_numpy(X, y, W), "ms_per_1000", scaled(1e3))
    emit("linreg_1000", "torch", lambda: linreg_torch(tX, ty, tW), "ms_per_1000", scaled(1e3))


def main():
    print(json.dumps({"meta": "peers", "threads": ARGS.threads, "numpy": np.__version__,
                      "torch": torch.__version__, "torch_threads": torch.get_num_threads(),
                      "openblas_threads": os.environ.get("OPENBLAS_NUM_THREADS"),
                      "python": sys.version.split()[0]}), flush=True)
    for name, fn in (("add_10M_f32", bench_add), ("sum_10M_f32", bench_sum),
                     ("matmul_1024_f32", bench_matmul), ("add_1elem_f32", bench_small),
                     ("mul_1elem_grad_f32", bench_small_grad),
                     ("linreg_1000", bench_linreg)):
        if want(name):
            fn()


if __name__ == "__main__":
    main()
