#!/usr/bin/python3
"""peers_attention.py: bench_attention.c's workloads in PyTorch.

Scaled dot-product attention, forward + backward, f32 on the CPU, q, k, v
(B, 12, T, 64), no mask: torch.nn.functional.scaled_dot_product_attention
where torch has it (2.0+), else torch 1.13's _scaled_dot_product_attention
(its math path), and the unfused composition softmax(q k^T * scale) v. Same
method (peers_util.py), names and JSON lines as bench_attention; peak memory
of one step per (impl, shape) measured in a fresh child process
({"meta":"peak_memory",...}).

Run with Debian's interpreter:
  /usr/bin/python3 bench/peers_attention.py --threads 2 [--sizes 1024x1,4096x1]
"""
import json
import math
import multiprocessing as mp
import resource
import sys

from peers_util import emit, init, rate, want

ARGS = init(__doc__.splitlines()[0],
            lambda p: p.add_argument("--sizes", default="1024x1,1024x4,4096x1"))
import torch  # noqa: E402  (after init: it sets the thread variables)
import torch.nn.functional as F  # noqa: E402

H, E = 12, 64


def fused(q, k, v):
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v)
    return F._scaled_dot_product_attention(q, k, v)[0]


def unfused(q, k, v):
    return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(E), dim=-1) @ v


IMPLS = {"torch": fused, "torch_unfused": unfused}


def make(T, B):
    g = torch.Generator().manual_seed(0)
    shape = (B, H, T, E)
    q, k, v = (torch.randn(shape, generator=g).requires_grad_() for _ in range(3))
    return q, k, v, torch.randn(shape, generator=g)


def step_fn(impl, q, k, v, go):
    f = IMPLS[impl]

    def step():
        q.grad = k.grad = v.grad = None
        f(q, k, v).backward(go)
    return step


def peak_child(impl, T, B, out):
    torch.set_num_threads(ARGS.threads)
    q, k, v, go = make(T, B)
    with open("/proc/self/statm") as f:
        before = int(f.read().split()[1]) * resource.getpagesize() // 1024
    step_fn(impl, q, k, v, go)()
    out.put(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)


def main():
    torch.set_num_threads(ARGS.threads)
    sizes = [tuple(int(x) for x in s.split("x")) for s in ARGS.sizes.split(",")]
    ctx = mp.get_context("spawn")
    for T, B in sizes:
        name = f"sdpa_fwd_bwd_T{T}_B{B}"
        if not want(name):
            continue
        for impl in IMPLS:
            qu = ctx.Queue()
            p = ctx.Process(target=peak_child, args=(impl, T, B, qu))
            p.start()
            p.join()
            if p.exitcode == 0:
                print(json.dumps({"meta": "peak_memory", "bench": name, "impl": impl,
                                  "peak_extra_mib": round(qu.get() / 1024.0, 1)}), flush=True)
    for T, B in sizes:
        name = f"sdpa_fwd_bwd_T{T}_B{B}"
        if not want(name):
            continue
        q, k, v, go = make(T, B)
        flop = 2.0 * 2 * B * H * T * T * E * 3.5
        for impl in IMPLS:
            emit(name, impl, step_fn(impl, q, k, v, go), "gflops", rate(flop / 1e9))
    return 0


if __name__ == "__main__":
    sys.exit(main())
