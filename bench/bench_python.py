"""bench_python.py: the cost of ctensor from Python next to NumPy and PyTorch, in the same run.

  /usr/bin/python3 bench/bench_python.py [--pythonpath build/python] [--budget 1.5] [--imports 9]
                                         [--also cpu-only=build-cpu/python]

Two things:
  * per-operation overhead: tiny operations (a 1-element add, a scalar multiply, exp, a sum, an
    index, an in-place add, a 4x4 matmul, a creation) where the time is the binding's, not the
    arithmetic's; each implementation timed as bench/peers_util.py times the peers (warm-up,
    samples of >= 2 ms, median), in rounds so that all see the same machine state;
  * import time: `import ctensor`, `import numpy`, `import torch`, each in a fresh interpreter
    (the time of the import statement itself, interpreter start-up excluded), alternating, the
    median of --imports runs.
Prints a Markdown report with the ratios (docs/benchmarks.md quotes it) and JSON lines.
"""
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers_util  # noqa: E402


def extra(p):
    p.add_argument("--pythonpath", default=os.path.join(os.path.dirname(__file__), "..", "build", "python"),
                   help="where the ctensor package is (the CMake build's python/ folder)")
    p.add_argument("--imports", type=int, default=9, help="fresh interpreters per import measurement")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--also", action="append", default=[], metavar="LABEL=PATH",
                   help="also time `import ctensor` from another build's python/ folder (a CPU-only build...)")


ARGS = peers_util.init(__doc__.splitlines()[0], extra)
sys.path.insert(0, os.path.abspath(ARGS.pythonpath))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import ctensor as ct  # noqa: E402

torch.set_num_threads(ARGS.threads)
ct.set_num_threads(ARGS.threads)
ct.set_default_device("cpu")


def workloads():
    """name -> {impl: callable}; every callable does the same small thing."""
    a_np, b_np = np.ones(1, np.float32), np.ones(1, np.float32)
    a_t, b_t = torch.ones(1), torch.ones(1)
    a_c, b_c = ct.ones(1), ct.ones(1)
    v_np, v_t, v_c = np.ones(4, np.float32), torch.ones(4), ct.ones(4)
    m_np, m_t, m_c = np.ones((4, 4), np.float32), torch.ones(4, 4), ct.ones((4, 4))
    i_np, i_t, i_c = np.ones(1, np.float32), torch.ones(1), ct.ones(1)
    return {
        "add_1elem_f32": {"ctensor": lambda: a_c + b_c, "numpy": lambda: a_np + b_np, "torch": lambda: a_t + b_t},
        "mul_scalar_1elem": {"ctensor": lambda: a_c * 2.0, "numpy": lambda: a_np * 2.0, "torch": lambda: a_t * 2.0},
        "exp_1elem": {"ctensor": lambda: ct.exp(a_c), "numpy": lambda: np.exp(a_np), "torch": lambda: torch.exp(a_t)},
        "sum_4elem": {"ctensor": lambda: ct.sum(v_c), "numpy": lambda: np.sum(v_np), "torch": lambda: torch.sum(v_t)},
        "index_4elem": {"ctensor": lambda: v_c[1], "numpy": lambda: v_np[1], "torch": lambda: v_t[1]},
        "iadd_1elem": {"ctensor": lambda: i_c.__iadd__(b_c), "numpy": lambda: i_np.__iadd__(b_np),
                       "torch": lambda: i_t.__iadd__(b_t)},
        "matmul_4x4": {"ctensor": lambda: m_c @ m_c, "numpy": lambda: m_np @ m_np, "torch": lambda: m_t @ m_t},
        "zeros_1": {"ctensor": lambda: ct.zeros(1), "numpy": lambda: np.zeros(1, np.float32),
                    "torch": lambda: torch.zeros(1)},
    }


def import_times():
    """Median seconds of `import <module>` in fresh interpreters, alternating the modules."""
    code = "import time; t = time.perf_counter(); import {m}; print(time.perf_counter() - t)"
    cases = {"ctensor": ("ctensor", ARGS.pythonpath)}
    for extra in ARGS.also:
        label, path = extra.split("=", 1)
        cases[f"ctensor ({label})"] = ("ctensor", path)
    cases["numpy"] = ("numpy", ARGS.pythonpath)
    cases["torch"] = ("torch", ARGS.pythonpath)
    times = {c: [] for c in cases}
    for _ in range(ARGS.imports):
        for c, (module, path) in cases.items():
            env = dict(os.environ, PYTHONPATH=os.path.abspath(path))
            out = subprocess.run([sys.executable, "-c", code.format(m=module)], env=env, check=True,
                                 capture_output=True, text=True).stdout
            times[c].append(float(out))
    return {c: statistics.median(v) for c, v in times.items()}


def main():
    results = {}
    for name, impls in workloads().items():
        if not peers_util.want(name):
            continue
        best = {}
        for _ in range(ARGS.rounds):
            for impl, fn in impls.items():
                r = peers_util.time_it(fn)
                if impl not in best or r["median_s"] < best[impl]["median_s"]:
                    best[impl] = r
        results[name] = best
        for impl, r in best.items():
            print(json.dumps({"bench": name, "impl": impl, "threads": ARGS.threads, **r}))
    imports = import_times()
    print(json.dumps({"bench": "import", **{k + "_s": v for k, v in imports.items()}}))

    print()
    print(f"Per-operation cost from Python (median per call; {ARGS.threads} threads, "
          f"{ARGS.rounds} rounds, best median of each):")
    print()
    print("| operation | ctensor | NumPy | PyTorch | ctensor / NumPy | ctensor / PyTorch |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, best in results.items():
        c, n, t = (best[k]["median_s"] for k in ("ctensor", "numpy", "torch"))
        print(f"| `{name}` | {c * 1e9:.0f} ns | {n * 1e9:.0f} ns | {t * 1e9:.0f} ns | {c / n:.2f} | {c / t:.2f} |")
    print()
    print(f"Import time (median of {ARGS.imports} fresh interpreters):")
    print()
    print("| module | time | `import torch` / this |")
    print("| --- | ---: | ---: |")
    for case, t in imports.items():
        name, _, label = case.partition(" ")
        print(f"| `import {name}` {label} | {t * 1e3:.0f} ms | {imports['torch'] / t:.1f} |")
    print()
    print(f"ctensor build: {ct.build_info()}")
    print(f"NumPy {np.__version__}, PyTorch {torch.__version__}, Python {sys.version.split()[0]}")


if __name__ == "__main__":
    main()
