#!/usr/bin/python3
"""peers_ops_sort.py: the workloads of bench_ops_sort.c in PyTorch.

Same data sizes, method (peers_util.py) and JSON lines as bench_ops_sort.c.
Run with Debian's interpreter: /usr/bin/python3 bench/peers_ops_sort.py --threads N
"""
import json
import sys

from peers_util import emit, init, scaled, want

ARGS = init(__doc__.splitlines()[0])
import torch  # noqa: E402  (after init: it sets the thread variables)

torch.set_num_threads(ARGS.threads)
N_BIG = 10_000_000


def main():
    print(json.dumps({"meta": "peers", "threads": ARGS.threads, "torch": torch.__version__,
                      "torch_threads": torch.get_num_threads(),
                      "python": sys.version.split()[0]}), flush=True)
    torch.manual_seed(0)
    x = torch.rand(N_BIG)
    work = (("sort_10M_f32", lambda: torch.sort(x)),
            ("topk100_10M_f32", lambda: torch.topk(x, 100)),
            ("cumsum_10M_f32", lambda: torch.cumsum(x, 0)))
    for name, fn in work:
        if want(name):
            emit(name, "torch", fn, "ms", scaled(1e3))


if __name__ == "__main__":
    main()
