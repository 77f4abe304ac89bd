"""Generated cases of the PyTorch differential test (gen_cases.py --cases N --seed S).

Each case draws an op, dtypes, shapes (0-d, size 0, up to rank 8), memory
layouts (contiguous, transposed, strided, offset, expanded) and values (random
ones mixed with nan, infinities, signed zeros, tiny and huge magnitudes and the
extremes of each integer dtype), runs torch on them and hands the case to the
writer of gen_cases.py. A case torch rejects is an error case (ctensor must
fail too). A case is a function of (seed, index) alone, so a mismatch found in
a long run is replayed alone with the same --seed, --first INDEX --cases 1.

Where ctensor deliberately differs from torch (documented in its headers and
in tests/oracle/README.md), the reference follows ctensor's documented rule
and the case's comment says so (a note starting with DEVIATION).
"""
import math

import numpy as np
import torch
import torch.nn.functional as F

NAN, INF = float("nan"), float("inf")
FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INTS = [torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64]
ALL = FLOATS + INTS + [torch.bool]
HALF = (torch.float16, torch.bfloat16)


def is_float(dt):
    return dt.is_floating_point


class Case:
    """One generated case: what gen_cases.py writes."""

    def __init__(self, name, op, inputs, ref, tol="std", params=None, note=None, grad=None):
        self.name, self.op, self.inputs, self.ref = name, op, inputs, ref
        self.tol, self.params, self.note = tol, dict(params or {}), note
        self.grad = grad  # indices of inputs that require grad, or None


class Gen:
    def __init__(self, seed):
        self.seed = seed

    # ---- random primitives (one RandomState per case: see case()) ------------

    def pick(self, seq, p=None):
        return seq[self.rs.choice(len(seq), p=p)]

    def chance(self, p):
        return self.rs.uniform() < p

    def size(self, small=False):
        return int(self.pick([0, 1, 1, 2, 2, 3, 3, 4, 5] if not small else [1, 1, 2, 2, 3]))

    def shape(self, rank=None, max_numel=96):
        if rank is None:
            rank = int(self.pick([0, 1, 1, 2, 2, 2, 3, 3, 4, 5, 6, 8]))
        for _ in range(20):
            sh = [self.size(small=rank > 4) for _ in range(rank)]
            if rank >= 6 and self.chance(0.8):
                sh = [s if s != 0 else 1 for s in sh]
            if math.prod(sh) <= max_numel:
                return tuple(sh)
        return tuple([1] * rank)

    def bcast_partner(self, sh):
        """A shape that broadcasts with sh (size-1 dims, fewer dims)."""
        out = list(sh[len(sh) - self.rs.randint(0, len(sh) + 1):]) if sh else []
        out = [1 if self.chance(0.3) else s for s in out]
        if self.chance(0.15) and len(out) < 8:
            out = [1] + out
        return tuple(out)

    def values(self, shape, dt, special=0.25, lo=-4.0, hi=4.0):
        n = math.prod(shape)
        if dt == torch.bool:
            return torch.from_numpy(self.rs.uniform(size=n) < 0.5).reshape(shape)
        if is_float(dt):
            v = self.rs.uniform(lo, hi, n)
            if self.chance(0.3):
                v = np.round(v * 2) / 2  # ties and exact halves
            specials = [NAN, INF, -INF, 0.0, -0.0, 1e-30, -1e-30, 1e30, -1e30, 0.5, -0.5, 1.0,
                        -1.0, 100.0, -88.5, 3.0e38, 1e-40]
            if dt in HALF:
                specials = [NAN, INF, -INF, 0.0, -0.0, 1e-3, 0.5, -0.5, 1.0, 65504.0, -65504.0,
                            1e-6, 6e-8]
            if dt == torch.bfloat16:
                specials += [3.0e38, -1e30, 1e-30]
            mask = self.rs.uniform(size=n) < special
            v[mask] = self.rs.choice(specials, size=int(mask.sum()))
            return torch.from_numpy(v).to(dt).reshape(shape)
        info = torch.iinfo(dt)
        if self.chance(0.5):
            v = self.rs.randint(max(info.min, -20), min(info.max, 20) + 1, n).astype(np.int64)
        else:
            v = self.rs.randint(max(info.min, -(2**62)), min(info.max, 2**62), n, dtype=np.int64)
        mask = self.rs.uniform(size=n) < special
        extremes = [info.min, info.max, 0, 1, -1 if info.min < 0 else 2, info.min + 1,
                    info.max - 1]
        v[mask] = self.rs.choice(extremes, size=int(mask.sum()))
        return torch.from_numpy(v).to(dt).reshape(shape)

    def layout(self, shape, allow_expand=True):
        r = self.rs.uniform()
        if r < 0.5 or not shape:
            return "c"
        if r < 0.65:
            return "t"
        if r < 0.78:
            return "s"
        if r < 0.88:
            return "o"
        return "e" if allow_expand else "c"

    def tensor(self, shape, dt, layout=None, **kw):
        """(values, layout): for 'e' the values are a base with size-1 dims."""
        lay = layout or self.layout(shape)
        if lay == "e":
            if any(s > 1 for s in shape):
                base = tuple(1 if (s > 1 and self.chance(0.6)) else s for s in shape)
                if base == tuple(shape):
                    base = tuple(1 if s > 1 else s for s in shape)
                return (self.values(base, dt, **kw), "e:" + ",".join(map(str, shape)))
            lay = "c"
        return (self.values(shape, dt, **kw), lay)

    # ---- the case table -------------------------------------------------------

    def case(self, index):
        self.rs = np.random.RandomState((self.seed * 1000003 + index) % (2**32))
        families = [
            (self.unary, 14), (self.binary, 16), (self.scalar_binary, 7), (self.compare, 6),
            (self.where, 3), (self.clamp, 3), (self.reduce, 10), (self.arg_reduce, 3),
            (self.softmax, 3), (self.matmul, 5), (self.index, 6), (self.join, 3),
            (self.tri, 2), (self.creation, 4), (self.cast, 3), (self.view, 6), (self.pool, 3),
            (self.conv, 2), (self.loss, 3), (self.norm_layers, 2), (self.fill, 2),
            (self.chain, 8),
        ]
        w = np.array([f[1] for f in families], float)
        fam = families[self.rs.choice(len(families), p=w / w.sum())][0]
        c = fam()
        c.name = f"g{self.seed}_{index}_{c.name}"
        return c

    def dtype(self, pool=ALL):
        return self.pick(pool)

    # ---- families -------------------------------------------------------------

    UNARY = ["neg", "abs", "exp", "expm1", "log", "log1p", "log2", "sqrt", "rsqrt", "sin", "cos",
             "tan", "tanh", "erf", "sigmoid", "relu", "gelu", "gelu_tanh", "silu", "softplus",
             "floor", "ceil", "round", "trunc", "sign", "reciprocal", "square", "isnan", "isinf",
             "isfinite", "logical_not", "leaky_relu"]

    @staticmethod
    def unary_ref(op):
        table = {
            "gelu": F.gelu, "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"), "silu": F.silu,
            "softplus": F.softplus, "leaky_relu": lambda x: F.leaky_relu(x, 0.125),
        }
        return table.get(op) or getattr(torch, op)

    def unary(self):
        op = self.pick(self.UNARY)
        dt = self.dtype()
        sh = self.shape()
        x, lay = self.tensor(sh, dt)
        variant = self.pick(["plain", "plain", "inplace", "out"])
        if op in ("isnan", "isinf", "isfinite", "logical_not"):
            variant = "plain"
        if op == "leaky_relu" and variant == "out":  # there is no leaky_relu_out
            variant = "inplace"
        fn = self.unary_ref(op)
        params = {"slope": 0.125} if op == "leaky_relu" else {}
        if variant != "plain":
            params["variant"] = variant
        tol = "exact" if op in ("neg", "abs", "relu", "floor", "ceil", "round", "trunc", "sign",
                                "isnan", "isinf", "isfinite", "logical_not") else "std"
        note = None
        if op == "sign" and is_float(dt):
            note = "DEVIATION sign(nan): nan, as NumPy (torch 1.13 gives 0)"
            fn = sign_nan
        if op == "log1p" and is_float(dt):
            note = ("reference in f64: torch 1.13's vectorized f32 log1p gives inf above ~1e38 "
                    "(log1p(3e38) is 88.6)")
            fn = lambda x: torch.log1p(x.double()).to(x.dtype)
        return Case(f"{op}_{dtname(dt)}", op, [(x, lay)], fn, tol, params, note)

    BINARY = ["add", "sub", "mul", "div", "floor_divide", "pow", "maximum", "minimum", "fmod",
              "remainder", "atan2"]

    def binary_dtypes(self):
        a = self.dtype()
        return a, (a if self.chance(0.5) else self.dtype())

    def binary(self):
        op = self.pick(self.BINARY)
        da, db = self.binary_dtypes()
        sa = self.shape(max_numel=64)
        sb = self.bcast_partner(sa) if self.chance(0.6) else sa
        if self.chance(0.2):
            sa, sb = sb, sa
        if self.chance(0.15):  # a 0-d operand: promotion counts it like a number
            sb = ()
        a = self.tensor(sa, da)
        b = self.tensor(sb, db)
        if self.chance(0.05):  # shapes that don't broadcast
            b = self.tensor(tuple(s + 2 for s in sa) or (3,), db)
        if op in INT_DIVISIONS:
            a = (no_int_min(a[0]), a[1])
        variant = self.pick(["plain", "plain", "plain", "inplace", "out"])
        params = {} if variant == "plain" else {"variant": variant}
        fn = getattr(torch, op)
        note = None
        if op == "pow":
            fn, note = pow_no_negative_int, POW_NOTE
        if op == "fmod":
            fn, note = exact_fmod, FMOD_NOTE
        if op in ("floor_divide", "remainder"):
            fn, note = (lambda a, b, f=fn: without_overflow(f, a, b)), OVERFLOW_NOTE
        tol = "exact" if op in ("add", "sub", "mul", "maximum", "minimum") else "std"
        if op in ("pow", "atan2", "div", "floor_divide", "remainder", "fmod"):
            tol = "std"
        return Case(f"{op}_{dtname(da)}_{dtname(db)}", op, [a, b], fn, tol, params, note)

    def scalar_binary(self):
        op = self.pick(self.BINARY + ["rsub_scalar", "rdiv_scalar", "eq", "lt", "ge", "ne"])
        dt = self.dtype()
        x = self.tensor(self.shape(), dt)
        s = float(self.pick([2.0, -3.0, 0.0, 1.5, -0.25, 7.0, 1e10, 0.5, -1.0, 100.0, NAN,
                             INF]))
        if op in INT_DIVISIONS:
            x = (no_int_min(x[0]), x[1])
        inplace = op not in ("rsub_scalar", "rdiv_scalar", "eq", "lt", "ge", "ne") and self.chance(0.3)
        params = {"s": s}
        if inplace:
            params["variant"] = "inplace"
        # ctensor's scalar is a double: an integral value acts as a Python int
        # (ops.h), so the reference passes int(s) for integral s
        sv = pyscalar(s)
        if op == "rsub_scalar":
            fn = lambda x: sv - x
        elif op == "rdiv_scalar":
            fn = lambda x: sv / x
        elif op in ("maximum", "minimum", "atan2"):
            fn = lambda x, f=getattr(torch, op): scalar_op(f, x, s)
        elif op == "fmod":
            fn = lambda x: exact_fmod(x, sv)
        elif op in ("floor_divide", "remainder"):
            fn = lambda x, f=getattr(torch, op): without_overflow(lambda u: f(u, sv), x)
        elif op == "pow" and s == 0.5:
            fn = c_pow_half
        else:
            fn = lambda x, f=getattr(torch, op): f(x, sv)
        note = None
        if op == "pow" and not is_float(dt) and math.isfinite(s) and s < 0:
            note = "torch raises for integers to negative integer powers"
        elif op in ("floor_divide", "remainder"):
            note = OVERFLOW_NOTE
        elif op == "pow" and s == 0.5:
            note = ("DEVIATION pow(-inf, 0.5) is inf, as C and torch's f16 (torch's f32 and f64 "
                    "take sqrt: nan)")
        return Case(f"{op}_scalar_{dtname(dt)}", op, [x], fn, "std", params, note)

    def compare(self):
        op = self.pick(["eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or",
                        "logical_xor"])
        da, db = self.binary_dtypes()
        sa = self.shape(max_numel=64)
        sb = self.bcast_partner(sa)
        if self.chance(0.15):
            sb = ()
        params = {"variant": "out"} if self.chance(0.2) else {}
        return Case(f"{op}_{dtname(da)}_{dtname(db)}", op,
                    [self.tensor(sa, da), self.tensor(sb, db)], getattr(torch, op), "exact",
                    params)

    def where(self):
        da, db = self.binary_dtypes()
        sa = self.shape(max_numel=48)
        sc, sb = self.bcast_partner(sa), self.bcast_partner(sa)
        if self.chance(0.15):
            sb = ()
        if self.chance(0.3):
            s = float(self.pick([1.5, -2.0, 0.0, 3.0, NAN, 1000.0]))
            sv = pyscalar(s)
            return Case(f"where_scalar_{dtname(da)}", "where",
                        [self.tensor(sc, torch.bool), self.tensor(sa, da)],
                        lambda c, a: torch.where(c, a, sv), "exact", {"s": s})
        return Case(f"where_{dtname(da)}_{dtname(db)}", "where",
                    [self.tensor(sc, torch.bool), self.tensor(sa, da), self.tensor(sb, db)],
                    torch.where, "exact")

    def clamp(self):
        dt = self.dtype()
        x = self.tensor(self.shape(), dt)
        bounds = [-INF, INF, NAN, 0.0, 1.0, -1.0, 2.5, -0.5, 100.0, -300.0, 70000.0, 1e10]
        lo, hi = float(self.pick(bounds)), float(self.pick(bounds))
        if lo == INF:
            lo = -INF
        if hi == -INF:
            hi = INF

        def conv(v):  # infinite bounds are "no bound" (torch's None)
            return None if math.isinf(v) else pyscalar(v)
        lo_t, hi_t = conv(lo), conv(hi)
        if lo_t is None and hi_t is None:
            hi, hi_t = 1.0, 1
        variant = "inplace" if self.chance(0.25) else "plain"
        params = {"lo": lo, "hi": hi}
        if variant == "inplace":
            params["variant"] = variant
        note = "infinite bounds are ctensor's 'no bound' (torch's None)"
        if math.isnan(lo) or math.isnan(hi):
            # torch 1.13: clamp(x, a, nan) is nan, but clamp(x, max=nan) is x
            lo_t = hi_t = NAN
            note = ("DEVIATION a nan bound gives nan, also as the only bound (torch 1.13's "
                    "clamp_min/clamp_max return x then)")
        return Case(f"clamp_{dtname(dt)}", "clamp", [x],
                    lambda t: torch.clamp(t, lo_t, hi_t), "exact", params, note)

    REDUCE = ["sum", "mean", "prod", "max", "min", "logsumexp", "all", "any", "var", "std",
              "norm"]

    def reduce(self):
        op = self.pick(self.REDUCE)
        dt = self.dtype()
        sh = self.shape(max_numel=120)
        x = self.tensor(sh, dt)
        nd = len(sh)
        params = {}
        dims = None
        if nd and self.chance(0.7):
            k = self.rs.randint(1, nd + 1)
            dims = tuple(int(d) - (nd if self.chance(0.3) else 0)
                         for d in self.rs.choice(nd, k, replace=False))
            params["dims"] = dims
        keep = self.chance(0.4)
        if keep:
            params["keep"] = True
        corr = float(self.pick([0.0, 1.0, 2.0]))
        p = float(self.pick([1.0, 2.0, INF, 0.0, 3.0, -INF, 0.5]))
        if op in ("var", "std"):
            params["corr"] = corr
        if op == "norm":
            params["p"] = p
        if op in ("sum", "mean", "prod", "max", "min", "logsumexp") and self.chance(0.15):
            params["variant"] = "out"
        d = dims if dims is not None else tuple(range(nd))

        def ref(t):
            if op == "sum":
                return t.sum(dim=d, keepdim=keep) if nd else t.sum()
            if op == "mean":
                return t.mean(dim=d, keepdim=keep) if nd else t.mean()
            if op == "prod":  # ctensor accumulates in f64: no intermediate overflow
                return without_overflow(lambda u: prod_dims(u, d, keep) if nd else u.prod(), t)
            if op == "max":
                return t.amax(dim=d, keepdim=keep)
            if op == "min":
                return t.amin(dim=d, keepdim=keep)
            if op == "logsumexp":
                return torch.logsumexp(t, dim=d, keepdim=keep)
            if op == "all":
                return all_any(t, d, keep, True)
            if op == "any":
                return all_any(t, d, keep, False)
            if op in ("var", "std"):
                f = torch.var if op == "var" else torch.std
                return f(t, dim=d, correction=int(corr), keepdim=keep)
            # ctensor accumulates in f64, so no intermediate overflow (as its f64 path)
            return torch.linalg.vector_norm(t.double() if t.is_floating_point() else t, ord=p,
                                            dim=d, keepdim=keep).to(t.dtype)
        tol = "exact" if op in ("max", "min", "all", "any") else "loose"
        return Case(f"{op}_{dtname(dt)}", op, [x], ref, tol, params)

    def arg_reduce(self):
        op = self.pick(["argmax", "argmin", "max_dim", "min_dim"])
        dt = self.dtype([t for t in ALL if t != torch.bool] if op in ("max_dim", "min_dim")
                        else ALL)
        sh = self.shape(max_numel=80)
        x = self.tensor(sh, dt)
        nd = len(sh)
        keep = self.chance(0.4)
        params = {"keep": keep} if keep else {}
        if op in ("argmax", "argmin"):
            f = getattr(torch, op)
            if nd and self.chance(0.7):
                dim = int(self.rs.randint(-nd, nd))
                params["dim"] = dim
                ref = lambda t: f(bool_as_u8(t), dim=dim, keepdim=keep)
            else:
                ref = lambda t: f(bool_as_u8(t))
                params.pop("keep", None)
            note = ("DEVIATION argmax/argmin of bool are allowed (False < True); torch has no "
                    "kernel") if dt == torch.bool else None
            return Case(f"{op}_{dtname(dt)}", op, [x], ref, "exact", params, note)
        dim = int(self.rs.randint(-nd, nd)) if nd else 0
        ret = int(self.chance(0.5))
        params.update(dim=dim, ret=ret)
        f = torch.max if op == "max_dim" else torch.min
        return Case(f"{op}_{dtname(dt)}", op, [x],
                    lambda t: f(t, dim=dim, keepdim=keep)[ret], "exact", params)

    def softmax(self):
        op = self.pick(["softmax", "log_softmax"])
        dt = self.dtype(FLOATS + [torch.int32])
        sh = self.shape(max_numel=80)
        nd = len(sh)
        dim = int(self.rs.randint(-max(nd, 1), max(nd, 1)))
        if self.chance(0.05):
            dim = nd + 1
        params = {"dim": dim}
        if self.chance(0.15):
            params["variant"] = "out"
        f = getattr(torch, op)
        return Case(f"{op}_{dtname(dt)}", op, [self.tensor(sh, dt, lo=-30, hi=30)],
                    lambda t: float_only(t) and f(t, dim), "loose", params,
                    "softmax of integers is refused even for empty inputs (torch checks only "
                    "when it has elements)" if not is_float(dt) else None)

    def matmul(self):
        op = self.pick(["matmul", "matmul", "mm", "bmm", "dot", "linear"])
        dt = self.dtype([torch.float32, torch.float64, torch.float64, torch.float16,
                         torch.bfloat16, torch.int64, torch.int32])
        n, k, m, b = (self.pick([0, 1, 2, 3, 5, 7]) for _ in range(4))
        kw = dict(special=0.05, lo=-2, hi=2)
        if op == "mm":
            sa, sb = (n, k), (k, m)
        elif op == "bmm":
            sa, sb = (b, n, k), (b, k, m)
        elif op == "dot":
            sa, sb = (k,), (k,)
        elif op == "linear":
            sa, sb = self.pick([(n, k), (b, n, k), (k,)]), (m, k)
        else:
            forms = [((k,), (k,)), ((n, k), (k,)), ((k,), (k, m)), ((n, k), (k, m)),
                     ((b, n, k), (k, m)), ((2, 1, n, k), (b, k, m)), ((k,), (b, k, m))]
            sa, sb = forms[self.rs.randint(len(forms))]
        if self.chance(0.05):  # inner sizes that don't match
            sb = tuple(s + 1 for s in sb)
        ins = [self.tensor(sa, dt, **kw), self.tensor(sb, dt, **kw)]
        fn = {"matmul": torch.matmul, "mm": torch.mm, "bmm": torch.bmm, "dot": torch.dot}.get(op)
        if op == "linear":
            if self.chance(0.5):
                ins.append(self.tensor((sb[0],), dt, **kw))
            fn = F.linear
        params = {"variant": "out"} if op == "matmul" and self.chance(0.15) else {}
        return Case(f"{op}_{dtname(dt)}", op, ins, fn, "exact" if not is_float(dt) else "loose",
                    params)

    def index(self):
        op = self.pick(["index_select", "gather", "scatter", "scatter_add", "masked_fill",
                        "masked_select", "one_hot"])
        dt = self.dtype()
        sh = self.shape(rank=int(self.pick([1, 2, 2, 3])), max_numel=60)
        nd = len(sh)
        dim = int(self.rs.randint(-nd, nd))
        it = self.pick([torch.int64, torch.int64, torch.int32])
        bad = self.chance(0.05)
        if op == "index_select":
            n = sh[dim]
            idx = torch.from_numpy(self.rs.randint(0, max(n, 1) + (1 if bad else 0),
                                                   self.rs.randint(0, 6))).to(it)
            if n == 0:
                idx = idx[:0]
            return Case(f"{op}_{dtname(dt)}", op, [self.tensor(sh, dt), (idx, "c")],
                        lambda t, i: torch.index_select(t, dim, i), "exact", {"dim": dim})
        if op == "one_hot":
            idx = torch.from_numpy(self.rs.randint(0, 5, sh)).to(torch.int64)
            nc = int(self.pick([-1, 5, 6, 3]))
            return Case("one_hot", op, [(idx, self.layout(sh, allow_expand=False))], lambda i: F.one_hot(i, nc),
                        "exact", {"nc": nc})
        if op in ("masked_fill", "masked_select"):
            mask = self.tensor(self.bcast_partner(sh), torch.bool)
            if op == "masked_select":
                return Case(f"{op}_{dtname(dt)}", op, [self.tensor(sh, dt), mask],
                            torch.masked_select, "exact")
            v = float(self.pick([0.0, -2.5, 7.0, NAN, 300.0, -1.0, INF]))
            params = {"value": v}
            inplace = self.chance(0.3)
            if inplace:
                params["variant"] = "inplace"
            vv = pyscalar(v)
            return Case(f"{op}_{dtname(dt)}", op, [self.tensor(sh, dt), mask],
                        lambda t, m: t.masked_fill(m, vv), "exact", params)
        # gather / scatter: index of x's rank, sizes within x's
        ish = tuple(int(self.rs.randint(0, s + 1)) if s else 0 for s in sh)
        n = sh[dim]
        hi = max(n, 1) + (1 if bad else 0)
        idx = torch.from_numpy(self.rs.randint(0, hi, ish)).to(torch.int64)
        if n == 0:
            idx = torch.zeros(tuple(0 if d == dim % nd else s for d, s in enumerate(ish)),
                              dtype=torch.int64)
        if op == "gather":
            return Case(f"{op}_{dtname(dt)}", op, [self.tensor(sh, dt), (idx, "c")],
                        lambda t, i: torch.gather(t, dim, i), "exact", {"dim": dim})
        if op == "scatter":  # distinct targets per (other) position: no order dependence
            idx = unique_scatter_index(self.rs, sh, ish, dim)
        src = self.tensor(tuple(idx.shape), dt)
        inplace = self.chance(0.3)
        f = torch.scatter if op == "scatter" else torch.scatter_add
        params = {"dim": dim}
        if inplace:
            params["variant"] = "inplace"
        tol = "exact" if op == "scatter" or not is_float(dt) else "std"
        return Case(f"{op}_{dtname(dt)}", op, [self.tensor(sh, dt), (idx, "c"), src],
                    lambda t, i, s: f(t, dim, i, s), tol, params)

    def join(self):
        op = self.pick(["cat", "stack", "split", "chunk"])
        sh = self.shape(rank=int(self.pick([1, 2, 3, 4])), max_numel=40)
        nd = len(sh)
        if op in ("split", "chunk"):
            dt = self.dtype()
            dim = int(self.rs.randint(-nd, nd))
            if op == "split":
                size = int(self.pick([1, 2, 3]))
                pieces = math.ceil(sh[dim] / size) if sh[dim] else 1
                idx = int(self.rs.randint(0, pieces))
                return Case(f"split_{dtname(dt)}", op, [self.tensor(sh, dt)],
                            lambda t: torch.split(t, size, dim)[idx], "exact",
                            {"size": size, "dim": dim, "idx": idx})
            chunks = int(self.pick([1, 2, 3]))
            got = len(torch.chunk(torch.empty(sh), chunks, dim))
            idx = int(self.rs.randint(0, got))
            return Case(f"chunk_{dtname(dt)}", op, [self.tensor(sh, dt)],
                        lambda t: torch.chunk(t, chunks, dim)[idx], "exact",
                        {"chunks": chunks, "dim": dim, "idx": idx})
        k = int(self.rs.randint(1, 4))
        dim = int(self.rs.randint(-nd - (1 if op == "stack" else 0), nd + (1 if op == "stack" else 0)))
        ins = []
        for _ in range(k):
            s = list(sh)
            if op == "cat":
                s[dim % nd] = int(self.pick([0, 1, 2, 3]))
            ins.append(self.tensor(tuple(s), self.dtype()))
        f = torch.cat if op == "cat" else torch.stack
        return Case(f"{op}{k}", op, ins, lambda *t: f(t, dim), "exact", {"dim": dim})

    def tri(self):
        op = self.pick(["tril", "triu"])
        dt = self.dtype()
        sh = self.shape(rank=int(self.pick([2, 2, 3])), max_numel=60)
        kk = int(self.rs.randint(-3, 4))
        params = {"k": kk}
        if self.chance(0.3):
            params["variant"] = "inplace"
        return Case(f"{op}_{dtname(dt)}", op, [self.tensor(sh, dt)],
                    lambda t: getattr(torch, op)(t, kk), "exact", params)

    def creation(self):
        op = self.pick(["arange", "linspace", "eye", "full"])
        dt = self.dtype()
        params = {"dt": dtname(dt)}
        if op == "arange":
            start = float(self.pick([0, 1, -3, 2.5, -0.5, 10, 0.9]))
            end = float(self.pick([5, 5.5, -2, 0, 10, 3.7, 100]))
            step = float(self.pick([1, 2, -1, 0.5, 1.5, -2.5, 3, 0.7]))
            params.update(start=start, end=end, step=step)

            def ref():  # torch takes Python ints and floats apart; so does ctensor's int path
                args = [pyscalar(v) for v in (start, end, step)]
                if not is_float(dt) and any(isinstance(v, float) for v in args):
                    raise RuntimeError("ctensor: fractional arange arguments with an integer "
                                       "dtype are refused")
                return torch.arange(*args, dtype=dt)
            note = ("DEVIATION fractional arguments with an integer dtype are refused (torch's "
                    "results depend on the dtype: arange(0, 5.5) has 5 elements in int64, 6 in "
                    "int32)") if not is_float(dt) else None
            return Case(f"arange_{dtname(dt)}", op, [], ref, "std", params, note)
        if op == "linspace":
            start = float(self.pick([0, -1, 2.5, 10, -100]))
            end = float(self.pick([1, 10, -3, 300, 0.5]))
            steps = int(self.pick([0, 1, 2, 5, 7, 33]))
            params.update(start=start, end=end, steps=steps)
            def ref():
                # torch checks the dtype and the endpoints only when it computes
                # (steps >= 2); ctensor always does
                if dt == torch.bool:
                    raise RuntimeError("linspace: bool is refused")
                if not is_float(dt):
                    s0 = torch.full((), pyscalar(start), dtype=dt).item()
                    s1 = torch.full((), pyscalar(end), dtype=dt).item()
                    return torch.linspace(s0, s1, steps, dtype=torch.float64).to(dt)
                if dt in HALF:  # torch's half linspace steps in half precision
                    return torch.linspace(start, end, steps, dtype=torch.float64).to(dt)
                return torch.linspace(start, end, steps, dtype=dt)
            note = "linspace checks its dtype and endpoints even without elements to make"
            if not is_float(dt):
                note = ("DEVIATION integer linspace truncates the exact f64 values (torch 1.13's "
                        "integer values depend on the dtype: -100..-3 in 33 steps has -84 at "
                        "index 5 in int32, -83 in int64); " + note)
            elif dt in HALF:
                note = ("reference computed in float64 and rounded (torch steps in half "
                        "precision, off by several ulps near the end); " + note)
            return Case(f"linspace_{dtname(dt)}", op, [], ref, "std", params, note)
        if op == "eye":
            n, m = int(self.pick([0, 1, 3, 4])), int(self.pick([0, 2, 3, 5]))
            params.update(n=n, m=m)
            # torch 1.13 has no bf16 eye kernel: the reference makes f32 and rounds
            return Case(f"eye_{dtname(dt)}", op, [],
                        lambda: torch.eye(n, m if m > 0 else n).to(dt) if dt in HALF
                        else torch.eye(n, m if m > 0 else n, dtype=dt), "exact", params)
        sh = self.shape(max_numel=24)
        v = float(self.pick([0, 1, -1, 2.5, 127, 128, 255, 256, -129, 70000, NAN, INF, 1e300,
                             -0.5]))
        params.update(shape=sh, value=v)
        vv = pyscalar(v)
        return Case(f"full_{dtname(dt)}", op, [], lambda: torch.full(sh, vv, dtype=dt), "exact",
                    params)

    def cast(self):
        src, dst = self.dtype(), self.dtype()
        x = self.tensor(self.shape(), src, lo=-300, hi=300)
        note = None
        if is_float(src) and not is_float(dst) and dst != torch.bool:
            # float -> integer out of range / nan is undefined in C and differs
            # between torch's kernels; ctensor saturates to i64 then wraps
            note = "DEVIATION float->int cast of nan/inf/out-of-range values: ctensor saturates " \
                   "to i64 and wraps (torch's result is platform-dependent)"
            lim = min(1e9, torch.finfo(src).max)
            x = (x[0].double().clamp(-lim, lim).nan_to_num(0.0, lim, -lim).to(src), x[1])
        return Case(f"cast_{dtname(src)}_{dtname(dst)}", "cast", [x], lambda t: t.to(dst),
                    "exact", {"dt": dtname(dst)}, note)

    def view(self):
        op = self.pick(["transpose", "permute", "slice", "diagonal", "expand", "reshape",
                        "flatten", "select", "narrow", "squeeze", "unsqueeze", "clone",
                        "contiguous"])
        dt = self.dtype()
        sh = self.shape(max_numel=80)
        nd = len(sh)
        x = self.tensor(sh, dt)
        if op in ("clone", "contiguous"):
            return Case(f"{op}_{dtname(dt)}", op, [x], lambda t: t.clone(), "exact")
        if op == "transpose":
            d0, d1 = (int(self.rs.randint(-max(nd, 1), max(nd, 1))) for _ in range(2))
            return Case("transpose", op, [x], lambda t: t.transpose(d0, d1), "exact",
                        {"d0": d0, "d1": d1})
        if op == "permute":
            dims = tuple(int(d) for d in self.rs.permutation(nd))
            return Case("permute", op, [x], lambda t: t.permute(dims), "exact", {"dims": dims})
        if op == "unsqueeze":
            dim = int(self.rs.randint(-nd - 1, nd + 1))
            return Case("unsqueeze", op, [x], lambda t: t.unsqueeze(dim), "exact", {"dim": dim})
        if op == "squeeze":
            if nd and self.chance(0.5):
                dim = int(self.rs.randint(-nd, nd))
                return Case("squeeze_dim", "squeeze_dim", [x], lambda t: t.squeeze(dim), "exact",
                            {"dim": dim})
            return Case("squeeze", op, [x], lambda t: t.squeeze(), "exact")
        if op == "flatten":
            s, e = (int(self.rs.randint(-max(nd, 1), max(nd, 1))) for _ in range(2))
            return Case("flatten", op, [x], lambda t: t.flatten(s, e), "exact",
                        {"start": s, "end": e})
        if op == "reshape":
            n = math.prod(sh)
            shapes = [(n,), (-1,), (1, n), (n, 1, 1), (-1, 1)] + ([(2, -1)] if n % 2 == 0 else [])
            if n == 0:
                shapes += [(0, 3), (3, 0, 2)]
            new = self.pick(shapes)
            return Case("reshape", op, [x], lambda t: t.reshape(new), "exact", {"shape": new})
        if op == "expand":
            new = tuple((s if s != 1 or self.chance(0.5) else int(self.pick([2, 3])))
                        for s in sh)
            if self.chance(0.3) and len(new) < 8:
                new = (2,) + new
            new = tuple(-1 if (d >= len(new) - nd and self.chance(0.2)) else s
                        for d, s in enumerate(new))
            return Case("expand", op, [x], lambda t: t.expand(new), "exact", {"shape": new})
        if nd == 0:
            return Case("clone0", "clone", [x], lambda t: t.clone(), "exact")
        dim = int(self.rs.randint(-nd, nd))
        n = sh[dim]
        if op == "slice":
            start = int(self.pick([0, 1, -1, -3, 2, 100, -100]))
            end = int(self.pick([0, 2, -1, 5, 100, -100, 2**62]))
            step = int(self.pick([1, 1, 2, 3]))
            return Case("slice", op, [x], lambda t: slice_ref(t, dim, start, end, step), "exact",
                        {"dim": dim, "start": start, "end": end, "step": step})
        if op == "select":
            idx = int(self.rs.randint(-n - 1, n + 1)) if n else 0
            return Case("select", op, [x], lambda t: t.select(dim, idx), "exact",
                        {"dim": dim, "index": idx})
        if op == "narrow":
            start = int(self.rs.randint(-n, n + 1)) if n else 0
            length = int(self.rs.randint(0, n + 2))
            return Case("narrow", op, [x], lambda t: t.narrow(dim, start, length), "exact",
                        {"dim": dim, "start": start, "length": length})
        if nd < 2:
            return Case("clone1", "clone", [x], lambda t: t.clone(), "exact")
        off = int(self.rs.randint(-4, 5))
        d1, d2 = (int(self.rs.randint(-nd, nd)) for _ in range(2))
        return Case("diagonal", op, [x], lambda t: torch.diagonal(t, off, d1, d2), "exact",
                    {"offset": off, "d1": d1, "d2": d2})

    def pool(self):
        op = self.pick(["max_pool2d", "avg_pool2d"])
        dt = self.dtype([torch.float32, torch.float64, torch.float64, torch.float16])
        rank = int(self.pick([3, 4]))
        h, w = int(self.pick([1, 2, 3, 4, 5, 7])), int(self.pick([1, 2, 3, 4, 6]))
        sh = (2, 3, h, w)[4 - rank:]
        kh, kw = int(self.pick([1, 2, 3])), int(self.pick([1, 2, 3]))
        sth, stw = (int(self.pick([0, 1, 2, 3])) for _ in range(2))
        if sth == 0 or stw == 0:
            sth = stw = 0
        ph, pw = int(self.rs.randint(0, kh // 2 + 1)), int(self.rs.randint(0, kw // 2 + 1))
        ceil, cip = self.chance(0.5), self.chance(0.7)
        params = {"kernel": (kh, kw), "stride": (sth, stw), "padding": (ph, pw), "ceil": ceil}
        if op == "avg_pool2d":
            params["cip"] = cip
        st = None if sth == 0 else (sth, stw)

        def ref(t):
            if op == "max_pool2d":
                return F.max_pool2d(t, (kh, kw), st, (ph, pw), ceil_mode=ceil)
            return F.avg_pool2d(t, (kh, kw), st, (ph, pw), ceil_mode=ceil, count_include_pad=cip)
        return Case(f"{op}_{dtname(dt)}", op, [self.tensor(sh, dt, special=0.1)], ref,
                    "exact" if op == "max_pool2d" else "std", params,
                    note="pooling: ceil_mode drops a last window starting in the padding, as torch")

    def conv(self):
        dt = self.dtype([torch.float32, torch.float64, torch.float64])
        groups = int(self.pick([1, 1, 2]))
        cin, cout = 2 * groups, int(self.pick([1, 2])) * groups
        h, w = int(self.pick([3, 4, 5])), int(self.pick([3, 5]))
        k = int(self.pick([1, 2, 3]))
        stride, pad, dil = (int(self.pick([1, 2])), int(self.pick([0, 1, 2])),
                            int(self.pick([1, 1, 2])))
        x = self.tensor((2, cin, h, w), dt, special=0.02)
        wt = self.tensor((cout, cin // groups, k, k), dt, special=0.0)
        ins = [x, wt]
        if self.chance(0.5):
            ins.append(self.tensor((cout,), dt, special=0.0))
        params = {"stride": stride, "padding": pad, "dilation": dil, "groups": groups}
        return Case(f"conv2d_{dtname(dt)}", "conv2d", ins,
                    lambda t, w_, b=None: F.conv2d(t, w_, b, stride, pad, dil, groups), "loose",
                    params)

    def loss(self):
        op = self.pick(["mse_loss", "cross_entropy", "nll_loss", "bce_with_logits"])
        dt = self.dtype([torch.float32, torch.float64])
        red = self.pick(["mean", "sum", "none"])
        params = {"reduction": red}
        n, c = int(self.pick([1, 3, 4])), int(self.pick([2, 3, 5]))
        if op == "mse_loss":
            sh = self.shape(max_numel=40)
            return Case(f"mse_{dtname(dt)}", op, [self.tensor(sh, dt), self.tensor(sh, dt)],
                        lambda a, b: F.mse_loss(a, b, reduction=red), "loose", params)
        if op == "bce_with_logits":
            sh = self.shape(max_numel=40)
            return Case(f"bce_{dtname(dt)}", op,
                        [self.tensor(sh, dt), (self.values(sh, torch.bool).to(dt), "c")],
                        lambda a, b: F.binary_cross_entropy_with_logits(a, b, reduction=red),
                        "loose", params)
        tgt = torch.from_numpy(self.rs.randint(0, c, (n,))).to(torch.int64)
        if self.chance(0.05):
            tgt[0] = c  # out of range: torch raises
        x = self.tensor((n, c), dt, lo=-5, hi=5, special=0.0)
        if op == "nll_loss":
            return Case(f"nll_{dtname(dt)}", op, [x, (tgt, "c")],
                        lambda a, t: F.nll_loss(a, t, reduction=red), "loose", params)
        ls = float(self.pick([0.0, 0.0, 0.1]))
        params["ls"] = ls
        return Case(f"ce_{dtname(dt)}", op, [x, (tgt, "c")],
                    lambda a, t: F.cross_entropy(a, t, reduction=red, label_smoothing=ls), "loose",
                    params)

    def norm_layers(self):
        op = self.pick(["layer_norm", "batch_norm", "embedding"])
        dt = self.dtype([torch.float32, torch.float64])
        if op == "embedding":
            idx = torch.from_numpy(self.rs.randint(0, 5, self.shape(rank=2, max_numel=12)))
            return Case("embedding", op, [(idx.to(torch.int64), "c"), self.tensor((5, 3), dt)],
                        lambda i, w: F.embedding(i, w), "exact")
        if op == "layer_norm":
            sh = self.shape(rank=int(self.pick([1, 2, 3])), max_numel=40)
            k = int(self.rs.randint(1, len(sh) + 1))
            norm = sh[len(sh) - k:]
            ins = [self.tensor(sh, dt, special=0.0)]
            if self.chance(0.5):
                ins += [self.tensor(norm, dt, special=0.0), self.tensor(norm, dt, special=0.0)]
            return Case(f"layer_norm_{dtname(dt)}", op, ins,
                        lambda x, w=None, b=None: f64_ref(F.layer_norm, x, norm, w, b, 1e-5),
                        "loose", {"k": k}, F64_NOTE)
        c = int(self.pick([1, 2, 3]))
        sh = (int(self.pick([2, 3])), c) + tuple(int(self.pick([1, 2, 3])) for _ in range(
            int(self.pick([0, 1, 2]))))
        mean = self.tensor((c,), dt, special=0.0)
        var = (self.values((c,), dt, special=0.0).abs() + 0.5, "c")
        return Case(f"batch_norm_eval_{dtname(dt)}", op,
                    [self.tensor(sh, dt, special=0.0), mean, var, self.tensor((c,), dt, special=0.0),
                     self.tensor((c,), dt, special=0.0)],
                    lambda x, m, v, w, b: f64_ref(F.batch_norm, x, m, v, w, b, False, 0.1, 1e-5),
                    "loose", note=F64_NOTE)

    def fill(self):
        dt = self.dtype()
        sh = self.shape(max_numel=30)
        v = float(self.pick([0, 1.5, -1, 300, NAN, INF, -129, 255, 1e300]))
        vv = pyscalar(v)
        return Case(f"fill_{dtname(dt)}", "fill_", [self.tensor(sh, dt)],
                    lambda t: t.fill_(vv), "exact", {"value": v, "variant": "inplace"},
                    note="fill_ may write an expanded view (torch's fill_ too)")

    # ---- autograd compositions ------------------------------------------------

    CHAIN_UNARY = ["exp", "tanh", "sigmoid", "relu", "gelu", "silu", "softplus", "sin", "cos",
                   "square", "abs", "neg", "erf", "log1p_abs", "sqrt_abs"]

    def chain(self):
        """A composition of differentiable ops; the gradients of the inputs that
        require grad are compared too (backward with a random grad_output)."""
        dt = self.pick([torch.float64, torch.float64, torch.float32])
        sh = self.shape(rank=int(self.pick([1, 2, 2, 3])), max_numel=24)
        sh = tuple(max(s, 1) for s in sh) if self.chance(0.9) else sh
        ins = [self.tensor(sh, dt, special=0.0, lo=-2, hi=2)]
        steps = []
        cur = sh
        for _ in range(int(self.rs.randint(1, 5))):
            kind = self.pick(["unary", "unary", "binary", "scalar", "reduce", "softmax",
                              "matmul", "view"])
            if kind == "unary":
                steps.append(self.pick(self.CHAIN_UNARY))
            elif kind == "binary":
                op = self.pick(["add", "sub", "mul", "div", "maximum", "minimum", "atan2"])
                other = self.bcast_partner(cur)
                ins.append(self.tensor(other, dt, special=0.0, lo=0.5 if op == "div" else -2,
                                       hi=2))
                steps.append(f"{op}:{len(ins) - 1}")
            elif kind == "scalar":
                steps.append(self.pick(["muls:0.5", "adds:-1.25", "pows:2", "pows:3",
                                        "clamp:-0.5:0.75", "leaky_relu:0.2"]))
            elif kind == "reduce" and cur:
                d = int(self.rs.randint(0, len(cur)))
                steps.append(f"{self.pick(['sum', 'mean', 'amax', 'logsumexp', 'var', 'norm'])}:{d}")
                cur = cur[:d] + (1,) + cur[d + 1:]
            elif kind == "softmax" and cur:
                steps.append(f"{self.pick(['softmax', 'log_softmax'])}:{int(self.rs.randint(0, len(cur)))}")
            elif kind == "matmul" and cur:
                m = int(self.pick([1, 2, 3]))
                ins.append(self.tensor((cur[-1], m), dt, special=0.0, lo=-1, hi=1))
                steps.append(f"matmul:{len(ins) - 1}")
                cur = cur[:-1] + (m,)
            elif kind == "view" and len(cur) >= 2:
                steps.append("transpose")
                cur = cur[:-2] + (cur[-1], cur[-2])
            else:
                steps.append("tanh")
        prog = "/".join(steps)
        rg = [k for k in range(len(ins)) if k == 0 or self.chance(0.6)]
        return Case(f"chain_{dtname(dt)}", "chain", ins, lambda *t: run_chain(prog, t), "loose",
                    {"prog": prog}, grad=rg)


# ---- helpers shared with the reference -------------------------------------------

INT_DIVISIONS = ("floor_divide", "remainder", "fmod")
OVERFLOW_NOTE = ("where torch 1.13 gives nan or inf because an intermediate overflows or "
                 "underflows (a / b in its floor_divide and remainder, the running product of "
                 "prod), the reference is the float64 value: ctensor's kernels don't overflow "
                 "there")


def without_overflow(f, *ins):
    """f(*ins), except that results made non-finite by an intermediate
    overflow or underflow take the float64 value (every tensor input as f64),
    rounded: an infinity or nan whose f64 value is finite, a nan whose f64 value
    is not (prod's 0 * inf after an f32 underflow)."""
    r = f(*ins)
    if not r.is_floating_point() or r.numel() == 0:
        return r
    r64 = f(*[t.double() if isinstance(t, torch.Tensor) else t for t in ins])
    fix = (~torch.isfinite(r) & torch.isfinite(r64)) | (torch.isnan(r) & ~torch.isnan(r64))
    return torch.where(fix, r64.to(r.dtype), r) if bool(fix.any()) else r


def c_pow_half(x):
    """x ** 0.5 as C's pow: pow(-inf, 0.5) is inf."""
    r = torch.pow(x, 0.5)
    if not r.is_floating_point():
        return r
    return torch.where(torch.isneginf(x.to(r.dtype)), torch.tensor(math.inf, dtype=r.dtype), r)


POW_NOTE = ("DEVIATION integers to negative integer powers are an error for tensor exponents "
            "too (torch errors only for scalar exponents; docs/design-notes.md)")


def pow_no_negative_int(a, b):
    r = torch.pow(a, b)
    # checked per element computed: an empty result has none to refuse
    if (not r.is_floating_point() and r.dtype != torch.bool and r.numel() > 0
            and bool((b.to(r.dtype) < 0).any())):
        raise RuntimeError("ctensor: integers to negative integer powers are not allowed")
    return r


FMOD_NOTE = ("reference is C's exact fmod (NumPy): torch 1.13's vectorized float fmod computes "
             "a - trunc(a / b) * b, nan when a / b overflows (fmod(3e38, 0.5))")


def exact_fmod(a, b):
    """torch.fmod's dtype and errors, C's exact fmod's values for floats."""
    r = torch.fmod(a, b)
    if not r.is_floating_point():
        return r
    bb = b if isinstance(b, torch.Tensor) else torch.tensor(b)
    a64, b64 = torch.broadcast_tensors(a.to(torch.float64), bb.to(torch.float64))
    if r.dtype in (torch.float32, torch.float64):
        ct = np.float32 if r.dtype == torch.float32 else np.float64
        with np.errstate(all="ignore"):
            v = np.fmod(a64.numpy().astype(ct), b64.numpy().astype(ct))
        return torch.from_numpy(np.ascontiguousarray(v)).reshape(r.shape)
    with np.errstate(all="ignore"):  # halves: computed in f32, rounded
        v = np.fmod(a64.numpy().astype(np.float32), b64.numpy().astype(np.float32))
    return torch.from_numpy(np.ascontiguousarray(v)).reshape(r.shape).to(r.dtype)


F64_NOTE = ("reference computed in f64 and rounded: ctensor's statistics are accumulated in f64, "
            "more accurate than torch's f32 path")


def f64_ref(f, *args):
    """f on the f64 versions of the tensor arguments, rounded to the first's dtype."""
    dt = args[0].dtype
    up = [a.double() if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args]
    return f(*up).to(dt)


def bool_as_u8(t):
    return t.to(torch.uint8) if t.dtype == torch.bool else t


def float_only(t):
    if not t.is_floating_point():
        raise RuntimeError("ctensor: softmax needs a floating input")
    return True


def no_int_min(t):
    """t without its dtype's minimum: torch's integer division kernels trap
    (SIGFPE) on INT_MIN // -1; ctensor's wrap, but the reference can't run."""
    if t.is_floating_point() or t.dtype == torch.bool:
        return t
    lo = torch.iinfo(t.dtype).min
    return torch.where(t == lo, torch.tensor(lo + 1, dtype=t.dtype), t)


def pyscalar(v):
    """v as torch sees ctensor's double: an integral value is a Python int
    (within int64, as torch's scalars)."""
    return int(v) if math.isfinite(v) and v == int(v) and abs(v) < 2**63 else v


def scalar_dtype(x, s):
    """ctensor's (and torch's) dtype of tensor x with the number s: a floating
    x keeps its dtype; a fractional s with an integer/bool x gives f32; an
    integral s with a bool x gives i64."""
    if x.is_floating_point():
        return x.dtype
    if not isinstance(pyscalar(s), int):
        return torch.float32
    return torch.int64 if x.dtype == torch.bool else x.dtype


def scalar_op(f, x, s):
    """f(x, s) for torch functions without a Python-number form (maximum...):
    maximum/minimum of an integer x are torch's clamp (its checked conversion of
    s, u8 taking -255..-1 wrapped); atan2 of an integer x computes in f32 with
    s as it is."""
    dt = scalar_dtype(x, s)
    if not is_float(dt) and f in (torch.maximum, torch.minimum):
        return torch.clamp(x.to(dt), **{"min" if f is torch.maximum else "max": pyscalar(s)})
    if f is torch.atan2 and not is_float(x.dtype):
        dt = torch.float32
    return f(x.to(dt), torch.tensor(s, dtype=dt).expand(x.shape))


def dtname(dt):
    return {torch.float32: "f32", torch.float64: "f64", torch.float16: "f16",
            torch.bfloat16: "bf16", torch.int8: "i8", torch.uint8: "u8", torch.int16: "i16",
            torch.int32: "i32", torch.int64: "i64", torch.bool: "bool"}[dt]


def sign_nan(x):
    s = torch.sign(x)
    return torch.where(torch.isnan(x), x, s) if x.is_floating_point() else s


def prod_dims(t, dims, keepdim):
    for d in sorted((d % t.dim() for d in dims), reverse=True):
        t = torch.prod(t, dim=d, keepdim=keepdim)
    return t


def all_any(t, dims, keepdim, is_all):
    f = torch.all if is_all else torch.any
    if t.dim() == 0:
        return f(t)
    for d in sorted((d % t.dim() for d in dims), reverse=True):
        t = f(t, dim=d, keepdim=keepdim)
    return t


def slice_ref(t, dim, start, end, step):
    idx = [slice(None)] * t.dim()
    idx[dim] = slice(start, end, step)
    return t[tuple(idx)]


def unique_scatter_index(rs, sh, ish, dim):
    """A scatter index whose targets along dim are distinct for each position
    of the other dims (a permutation prefix), so the result is defined."""
    nd = len(sh)
    dim %= nd
    ish = list(ish)
    ish[dim] = min(ish[dim], sh[dim])
    idx = np.zeros(ish, np.int64)
    if 0 in ish:
        return torch.from_numpy(idx)
    others = [s for d, s in enumerate(ish) if d != dim]
    for pos in np.ndindex(*others):
        perm = rs.permutation(sh[dim])[:ish[dim]]
        for j, p in enumerate(perm):
            full = list(pos[:dim]) + [j] + list(pos[dim:])
            idx[tuple(full)] = p
    return torch.from_numpy(idx)


def run_chain(prog, ins):
    v = ins[0]
    for step in prog.split("/"):
        name, *args = step.split(":")
        if name == "log1p_abs":
            v = torch.log1p(v.abs())
        elif name == "sqrt_abs":
            v = torch.sqrt(v.abs() + 0.25)
        elif name in ("add", "sub", "mul", "div", "maximum", "minimum", "atan2"):
            v = getattr(torch, name)(v, ins[int(args[0])])
        elif name == "matmul":
            v = torch.matmul(v, ins[int(args[0])])
        elif name == "muls":
            v = v * float(args[0])
        elif name == "adds":
            v = v + float(args[0])
        elif name == "pows":
            v = v ** int(float(args[0]))
        elif name == "clamp":
            v = torch.clamp(v, float(args[0]), float(args[1]))
        elif name == "leaky_relu":
            v = F.leaky_relu(v, float(args[0]))
        elif name in ("sum", "mean"):
            v = getattr(torch, name)(v, dim=int(args[0]), keepdim=True)
        elif name == "amax":
            v = torch.amax(v, dim=int(args[0]), keepdim=True)
        elif name == "logsumexp":
            v = torch.logsumexp(v, dim=int(args[0]), keepdim=True)
        elif name == "var":
            v = torch.var(v, dim=int(args[0]), correction=0, keepdim=True)
        elif name == "norm":
            v = torch.linalg.vector_norm(v, 2, dim=int(args[0]), keepdim=True)
        elif name in ("softmax", "log_softmax"):
            v = getattr(torch, name)(v, int(args[0]))
        elif name == "transpose":
            v = v.transpose(-2, -1)
        elif name in ("gelu", "silu", "softplus"):
            v = getattr(F, name)(v)
            if v.requires_grad:
                # torch 1.13's f32 gelu backward is wrong for a strided grad_output
                # (a transpose after it): hand it a contiguous one
                v.register_hook(lambda g: g.contiguous())
        else:
            v = getattr(torch, name)(v)
    return v
