#!/usr/bin/env python3
"""Generates the cases of the PyTorch differential test (tests/test_oracle.c).

Usage: gen_cases.py [--cases N] [--seed S] [--no-table]

Writes to stdout, as a stream the C side reads while this runs: first the
curated table below (hand-picked inputs where implementations go wrong, unless
--no-table), then N cases generated from seed S by random_cases.py (ops,
dtypes, shapes from 0-d and size 0 to rank 8, memory layouts, special values,
autograd compositions). The C side runs each case through ctensor and compares.

Stream, one case after another ('#' lines are comments: a comment right before
a case documents it, e.g. a deliberate deviation from torch):

    case NAME OP NIN TOL [KEY=VALUE ...]
    in K DTYPE NDIM D0 .. Dn-1 LAYOUT      (NIN times), then the raw elements
    out DTYPE NDIM D0 .. Dn-1              then the raw elements   | err MESSAGE
    gout DTYPE NDIM D0 ..                  (grad cases) the gradient fed to backward
    grad K DTYPE NDIM D0 ..                (grad cases, per input in rg=) | grad K none
    end

  NAME   unique case name
  OP     a ctensor op of the C dispatch table (mostly the ct_ name without ct_)
  TOL    exact | std | loose: tolerance class (the C side scales per dtype;
         integer and bool results are always compared exactly)
  KEY=VALUE parameters of the op (dims=0,2 keep=1 dim=-1 s=2.5 p=inf ...):
           variant=inplace|out  call ct_OP_ on input 0 itself / ct_OP_out into
                       a fresh tensor of the expected shape and dtype
           rg=0,2      inputs that require grad: backward(out, gout) follows
                       and their gradients are compared
           error=1     torch rejects these inputs (err line): ctensor must
                       return NULL with an error set
  DTYPE  f32 f64 f16 bf16 i8 u8 i16 i32 i64 bool; elements are little-endian
         (bf16 as its 16 bits)
  LAYOUT how the C side stores the input (torch sees the same memory layout):
           c contiguous, t dims reversed in memory (a permuted view), s every
           other element of a doubled last dim, o at a storage offset,
           e:D0,..  the elements given are a base expanded to this shape

Float16/bfloat16 references: torch 1.13 lacks most CPU half kernels, so half
inputs are upcast to f32, the op runs in f32 and the result is rounded to the
half dtype torch's promotion gives (what ctensor's CPU backend does too). The
same holds when the native half kernel exists, so every half case has one
reference definition.

Random ops (rand, randn, dropout) are not here: ctensor's Philox stream is not
torch's generator, so values cannot be compared.
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np
import torch
import torch.nn.functional as F

torch.set_num_threads(1)
torch.use_deterministic_algorithms(True)

RS = np.random.RandomState(20240611)  # fixed seed: the cases are reproducible
NAN, INF = float("nan"), float("inf")
HALF = (torch.float16, torch.bfloat16)

# Special float values: nan, infinities, signed zeros, tiny and huge magnitudes,
# round-half cases, values near the overflow of exp in f32.
SPECIAL = [NAN, INF, -INF, -0.0, 0.0, 1e-30, -1e-30, 1e-7, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5,
           3.7, -3.7, 1.0, -1.0, 20.5, -20.5, 88.0, -88.0, 100.0, -100.0, 1e30, -1e30]
# Moderate special values for functions with argument reduction (sin, tan...).
SPECIAL_TRIG = [NAN, INF, -INF, -0.0, 0.0, 1e-7, 0.5, -0.5, 1.5707964, -1.5707964, 3.1415927,
                -3.1415927, 10.0, -10.0, 100.0, 1000.5, -1000.5, 1e4]
# Half types overflow at 65504 (f16); numbers stay moderate there.
SPECIAL_HALF = [NAN, INF, -INF, -0.0, 0.0, 1e-3, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3.7, -3.7,
                10.0, -10.0, 20.5, -20.5]


def U(shape, lo=-3.0, hi=3.0, dt=np.float32):
    return RS.uniform(lo, hi, shape).astype(dt)


def I(shape, lo=-10, hi=10, dt=np.int32):
    return RS.randint(lo, hi, shape).astype(dt)


def B(shape, p=0.5):
    return RS.uniform(0, 1, shape) < p


def S(vals, dt=np.float32, shape=None):
    with np.errstate(over="ignore"):
        a = np.array(vals, dtype=np.float64).astype(dt)
    return a.reshape(shape) if shape is not None else a


CASES = []  # (name, op, inputs, ref, tol, params, dts, T, note, err)


def case(name, op, ins, ref, tol="std", dts=None, T=(), note=None, err=False, **params):
    """err=True: torch rejects these inputs, and ctensor must fail too (NULL with
    an error, never a crash or a result)."""
    assert all(c.isalnum() or c == "_" for c in name), name
    CASES.append((name, op, ins, ref, tol, params, dts or {}, tuple(T), note, err))


def to_torch(a, dt):
    t = torch.from_numpy(np.array(a, order="C", copy=True))
    return t.to(torch.bfloat16) if dt == "bf16" else t


def run_ref(ref, tens):
    """ref(*tens); half floats computed in f32 and rounded (module docstring)."""
    halves = [t.dtype for t in tens if t.dtype in HALF]
    try:
        out = ref(*tens)
    except RuntimeError:
        if not halves:
            raise
        out = None  # no half kernel in torch 1.13
    if halves and (out is None or out.dtype in HALF):
        up = [t.float() if t.dtype in HALF else t for t in tens]
        o32 = ref(*up)
        target = out.dtype if out is not None else halves[0]
        out = o32.to(target) if o32.is_floating_point() else o32
    return out


def fmt(v):
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, (tuple, list)):
        return ",".join(fmt(x) for x in v)
    if isinstance(v, float):
        return repr(v)
    return str(v)


def int_result(dtype):
    return not (dtype.is_floating_point or dtype.is_complex)


# ---------------------------------------------------------------------------
# The table.
# ---------------------------------------------------------------------------

def unary_cases():
    un = {
        "neg": torch.neg, "abs": torch.abs, "exp": torch.exp, "expm1": torch.expm1,
        "log": torch.log, "log1p": torch.log1p, "log2": torch.log2, "sqrt": torch.sqrt,
        "rsqrt": torch.rsqrt, "tanh": torch.tanh, "erf": torch.erf,
        "sigmoid": torch.sigmoid, "relu": torch.relu, "gelu": F.gelu,
        "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"), "silu": F.silu,
        "softplus": F.softplus, "floor": torch.floor, "ceil": torch.ceil,
        "round": torch.round, "trunc": torch.trunc, "reciprocal": torch.reciprocal,
        "square": torch.square, "isnan": torch.isnan, "isinf": torch.isinf,
        "isfinite": torch.isfinite, "logical_not": torch.logical_not,
    }
    trig = {"sin": torch.sin, "cos": torch.cos, "tan": torch.tan}
    sp = S(SPECIAL, shape=(2, 13))
    for op, fn in un.items():
        case(f"{op}_special_f32", op, [sp], fn)
    spt = S(SPECIAL_TRIG, shape=(3, 6))
    for op, fn in trig.items():
        case(f"{op}_special_f32", op, [spt], fn)
    # sign: see the comment of the case.
    case("sign_f32", "sign", [S([-0.0, 0.0, -2.0, 3.0, INF, -INF, 1e-30, -1e-30])], torch.sign)
    case("sign_nan_f32", "sign", [S([NAN, 1.0, -1.0, NAN])],
         lambda x: torch.from_numpy(np.sign(x.numpy())),
         note="DEVIATION: torch 1.13 gives sign(nan) = 0 (an artefact of its (0 < x) - (x < 0) "
              "kernel); ctensor documents sign(nan) = nan (ops.h), as NumPy. Expected = NumPy.")
    # f64: random values over the natural domain plus the specials.
    x64 = np.concatenate([S(SPECIAL, np.float64), U(38, -5, 5, np.float64)]).reshape(4, 16)
    for op in ["exp", "log", "sqrt", "tanh", "sigmoid", "erf", "gelu", "softplus", "expm1", "log1p"]:
        case(f"{op}_f64", op, [x64], un[op])
    case("sin_f64", "sin", [S(SPECIAL_TRIG, np.float64, (3, 6))], torch.sin)
    # a transposed (non-contiguous) input, bigger than one SIMD vector
    case("exp_transposed_f32", "exp", [U((7, 33), -4, 4)], torch.exp, T=[0])
    case("sigmoid_transposed_f64", "sigmoid", [U((5, 9), -30, 30, np.float64)], torch.sigmoid, T=[0])
    # f16 and bf16
    h = S(SPECIAL_HALF, np.float16, (3, 6))
    for op in ["exp", "tanh", "sigmoid", "sqrt", "gelu", "neg", "round"]:
        case(f"{op}_f16", op, [h], un[op])
    hb = S(SPECIAL_HALF, np.float32, (3, 6))
    for op in ["exp", "log", "silu", "abs", "floor"]:
        case(f"{op}_bf16", op, [hb], un[op], dts={0: "bf16"})
    # integers: sign/abs/neg/square keep the dtype; math functions give f32
    xi = I((4, 5), -50, 50, np.int32)
    for op in ["abs", "neg", "sign", "square", "floor", "round"]:
        case(f"{op}_i32", op, [xi], un.get(op, torch.sign))
    case("abs_i8", "abs", [I((9,), -127, 127, np.int8)], torch.abs)
    case("neg_i64", "neg", [I((2, 3), -(2**40), 2**40, np.int64)], torch.neg)
    case("exp_i32", "exp", [I((6,), -5, 5, np.int32)], torch.exp)
    case("sqrt_i64", "sqrt", [I((6,), 0, 100, np.int64)], torch.sqrt)
    case("isnan_i32", "isnan", [xi], torch.isnan)
    case("logical_not_u8", "logical_not", [I((6,), 0, 3, np.uint8)], torch.logical_not)
    # clamp and leaky_relu
    case("clamp_f32", "clamp", [sp], lambda x: torch.clamp(x, -1.0, 0.5), lo=-1.0, hi=0.5)
    case("clamp_lo_only_f64", "clamp", [x64], lambda x: torch.clamp(x, min=0.25), lo=0.25, hi=INF)
    case("clamp_i32", "clamp", [xi], lambda x: torch.clamp(x, -7, 9), lo=-7.0, hi=9.0)
    case("leaky_relu_f32", "leaky_relu", [sp], lambda x: F.leaky_relu(x, 0.1), slope=0.1)
    case("exp_inplace_f32", "exp", [U((3, 4))], torch.exp, variant="inplace")
    case("tanh_out_f32", "tanh", [U((3, 4))], torch.tanh, variant="out")
    case("clamp_inplace_f32", "clamp", [U((3, 4))], lambda x: x.clamp(-1, 1), lo=-1.0, hi=1.0,
         variant="inplace")


def binary_cases():
    fns = {
        "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div,
        "floor_divide": torch.floor_divide, "pow": torch.pow, "maximum": torch.maximum,
        "minimum": torch.minimum, "fmod": torch.fmod, "remainder": torch.remainder,
        "atan2": torch.atan2,
    }
    # broadcasting shapes
    a, b = U((3, 1, 4)), U((5, 1))
    for op in ["add", "sub", "mul", "div", "maximum", "atan2"]:
        case(f"{op}_bcast_f32", op, [a, b], fns[op])
    case("add_scalar_tensor_f32", "add", [S(2.5), U((2, 3))], torch.add)
    case("mul_empty_bcast_f32", "mul", [U((0, 3)), U((1, 3))], torch.mul)
    case("sub_bcast_f64_T", "sub", [U((4, 6), dt=np.float64), U((6,), dt=np.float64)], torch.sub,
         T=[0])
    case("add_transposed_both_f32", "add", [U((9, 17)), U((9, 17))], torch.add, T=[0, 1])
    # type promotion
    case("add_i32_f16", "add", [I((2, 3)), U((2, 3), dt=np.float16)], torch.add)
    case("add_u8_i8", "add", [I((8,), 0, 255, np.uint8), I((8,), -128, 127, np.int8)], torch.add)
    case("add_bool_i64", "add", [B((2, 4)), I((2, 4), -5, 5, np.int64)], torch.add)
    case("mul_f32_f64", "mul", [U((3, 2)), U((3, 2), dt=np.float64)], torch.mul)
    case("mul_u8_bool", "mul", [I((5,), 0, 255, np.uint8), B((5,))], torch.mul)
    case("sub_i8_i64", "sub", [I((4,), -100, 100, np.int8), I((4,), -10**6, 10**6, np.int64)],
         torch.sub)
    case("add_f16_bf16", "add", [U((4,), dt=np.float16), S([1.5, -2.25, 3.0, 0.125])], torch.add,
         dts={1: "bf16"})
    case("mul_bf16_i32", "mul", [S([1.5, -2.25, 3.0, 0.125]), I((4,))], torch.mul,
         dts={0: "bf16"})
    case("add_i16_u8", "add", [I((6,), -300, 300, np.int16), I((6,), 0, 255, np.uint8)], torch.add)
    case("add_u8_wraps", "add", [S([200, 100, 255], np.uint8), S([100, 100, 1], np.uint8)],
         torch.add)
    case("div_i64_true", "div", [I((3, 4), -20, 20, np.int64),
                                 np.array([1, -3, 7, 4], np.int64)], torch.div)
    case("div_f32_by_zero", "div", [S([1, -1, 0, NAN, INF, -0.0]), S([0, 0, 0, 1, INF, 1])],
         torch.div)
    # integer division and remainders with negatives
    ia = np.array([-7, 7, -7, 7, 0, -1, 5, -5, 9, -9], np.int32)
    ib = np.array([2, -2, -2, 2, 3, 3, 5, 3, -4, -4], np.int32)
    for op in ["floor_divide", "remainder", "fmod"]:
        case(f"{op}_i32_neg", op, [ia, ib], fns[op])
    fa = S([-7.5, 7.5, -7.5, 7.5, 1.0, -1.0, 0.0, 5.0, INF, 3.0])
    fb = S([2.0, -2.0, -2.0, 2.0, 0.0, 0.0, 3.0, 0.3, 2.0, INF])
    for op in ["floor_divide", "remainder", "fmod"]:
        case(f"{op}_f32_neg", op, [fa, fb], fns[op])
    case("remainder_f64_bcast", "remainder", [U((3, 4), -10, 10, np.float64),
                                              S([1.5, -2.5, 3.0, -0.7], np.float64)], torch.remainder)
    case("floor_divide_i64_bcast", "floor_divide", [I((3, 1), -50, 50, np.int64),
                                                    S([3, -4, 7], np.int64)], torch.floor_divide)
    # pow
    case("pow_f32", "pow", [S([2, -2, 0, 0, -8, 4, NAN, 1, INF, 0.5]),
                            S([3, 3, 0, -1, 1.0 / 3, 0.5, 0, NAN, -1, 2])], torch.pow)
    case("pow_i64", "pow", [S([2, -3, 0, 5, 1, -1], np.int64), S([10, 3, 0, 2, 50, 7], np.int64)],
         torch.pow)
    case("pow_f32_i32", "pow", [U((2, 3), 0.5, 2), I((2, 3), 0, 4)], torch.pow)
    case("pow_f64_bcast", "pow", [U((2, 3), 0.1, 3, np.float64), U((3,), -2, 2, np.float64)],
         torch.pow)
    # atan2 with signed zeros and infinities
    za = S([0.0, -0.0, 0.0, -0.0, 1.0, -1.0, INF, -INF, INF, NAN])
    zb = S([0.0, 0.0, -0.0, -0.0, -INF, INF, INF, 1.0, -INF, 1.0])
    case("atan2_special_f32", "atan2", [za, zb], torch.atan2)
    # maximum / minimum propagate nan
    ma = S([NAN, 1.0, -0.0, INF, -INF, 2.0])
    mb = S([1.0, NAN, 0.0, 3.0, 5.0, 2.0])
    case("maximum_nan_f32", "maximum", [ma, mb], torch.maximum)
    case("minimum_nan_f32", "minimum", [ma, mb], torch.minimum)
    case("minimum_i32_bcast", "minimum", [I((3, 1)), I((1, 4))], torch.minimum)
    case("maximum_f64_i64", "maximum", [U((5,), dt=np.float64), I((5,), -3, 3, np.int64)],
         torch.maximum)
    # f16 / bf16 arithmetic
    case("mul_f16", "mul", [U((4, 5), -100, 100, np.float16), U((4, 5), -100, 100, np.float16)],
         torch.mul)
    case("div_f16", "div", [U((9,), dt=np.float16), U((9,), 0.1, 2, np.float16)], torch.div)
    case("sub_bf16", "sub", [U((3, 4)), U((4,))], torch.sub, dts={0: "bf16", 1: "bf16"})
    # scalar variants (integral scalars: torch sees a Python int, so ints stay ints)
    case("add_scalar_f32", "add", [U((2, 3))], lambda x: x + 2.5, s=2.5)
    case("mul_scalar_i32", "mul", [I((2, 3))], lambda x: x * 3, s=3.0,
         note="DEVIATION (documented in ops.h): ctensor's scalar is a double, and an integral "
              "value keeps an integer tensor's dtype, as a Python int does in torch; torch "
              "would make int_tensor * 3.0 (a Python float) f32. The reference uses the int 3.")
    case("mul_scalar_frac_i32", "mul", [I((2, 3))], lambda x: x * 1.5, s=1.5)
    case("div_scalar_i64", "div", [I((5,), -9, 9, np.int64)], lambda x: x / 2, s=2.0)
    case("pow_scalar_f32", "pow", [U((6,), 0, 4)], lambda x: x ** 0.5, s=0.5)
    case("pow_scalar2_f64", "pow", [U((6,), -4, 4, np.float64)], lambda x: x ** 2, s=2.0)
    case("sub_scalar_f16", "sub", [U((5,), dt=np.float16)], lambda x: x - 0.75, s=0.75)
    case("remainder_scalar_i32", "remainder", [ia], lambda x: torch.remainder(x, -3), s=-3.0)
    case("fmod_scalar_f32", "fmod", [fa], lambda x: torch.fmod(x, -2.0), s=-2.0)
    case("rsub_scalar_f32", "rsub_scalar", [U((2, 3))], lambda x: 1.0 - x, s=1.0)
    case("rdiv_scalar_f64", "rdiv_scalar", [U((2, 3), 0.5, 2, np.float64)], lambda x: 3.0 / x, s=3.0)
    case("add_scaled_f32", "add_scaled", [U((3, 4)), U((4,))], lambda a, b: torch.add(a, b, alpha=-0.5),
         alpha=-0.5)
    # in-place and out= forms
    case("add_inplace_bcast_f32", "add", [U((3, 4)), U((4,))], torch.add, variant="inplace")
    case("mul_inplace_f32_i32", "mul", [U((3, 4)), I((3, 4))], torch.mul, variant="inplace")
    case("add_scalar_inplace_f64", "add", [U((3,), dt=np.float64)], lambda x: x + 1.25, s=1.25,
         variant="inplace")
    case("sub_out_f32", "sub", [U((2, 1, 3)), U((4, 1))], torch.sub, variant="out")


def compare_cases():
    ca = S([NAN, 1.0, 2.0, -0.0, INF, -INF, 3.0, 2.0])
    cb = S([NAN, 1.0, 3.0, 0.0, INF, 1.0, NAN, 1.0])
    for op, fn in [("eq", torch.eq), ("ne", torch.ne), ("lt", torch.lt), ("le", torch.le),
                   ("gt", torch.gt), ("ge", torch.ge)]:
        case(f"{op}_special_f32", op, [ca, cb], fn)
    case("eq_i32_f32", "eq", [S([1, 2, 3, -4], np.int32), S([1.0, 2.5, 3.0, -4.0])], torch.eq)
    case("lt_bcast_i64_f64", "lt", [I((3, 1), -3, 3, np.int64), U((1, 4), -3, 3, np.float64)], torch.lt)
    case("gt_scalar_f32", "gt", [U((3, 4))], lambda x: x > 0.5, s=0.5)
    case("ne_scalar_i32", "ne", [I((8,), 0, 3)], lambda x: x != 1, s=1.0)
    la, lb = S([0.0, NAN, 2.0, 0.0, -1.0]), S([0, 0, 3, 1, 0], np.int32)
    for op, fn in [("logical_and", torch.logical_and), ("logical_or", torch.logical_or),
                   ("logical_xor", torch.logical_xor)]:
        case(f"{op}_f32_i32", op, [la, lb], fn)
    case("logical_and_bool_bcast", "logical_and", [B((3, 1)), B((4,))], torch.logical_and)
    # where
    case("where_bcast_i32_f64", "where", [B((3, 1)), I((1, 4)), U((3, 4), dt=np.float64)], torch.where)
    case("where_f32", "where", [B((2, 3, 4)), U((2, 3, 4)), U((4,))], torch.where)
    case("where_scalar_f32", "where", [B((3, 4)), U((3, 4))], lambda c, a: torch.where(c, a, -1.5),
         s=-1.5)
    case("where_cond_u8", "where", [I((6,), 0, 3, np.uint8), U((6,)), U((6,))],
         lambda c, a, b: torch.where(c.bool(), a, b),
         note="torch.where needs a bool condition; ctensor takes nonzero as true (ops.h), "
              "so the reference converts the condition with .bool().")


def prod_dims(t, dim, keepdim=False):
    """torch.prod over a dim tuple (torch 1.13's prod takes one dim)."""
    dims = sorted((d % t.dim() for d in (dim if isinstance(dim, tuple) else (dim,))), reverse=True)
    for d in dims:
        t = torch.prod(t, dim=d, keepdim=keepdim)
    return t


def reduction_cases():
    x = U((3, 4, 5))
    x64 = U((3, 4, 5), dt=np.float64)
    for op, fn in [("sum", torch.sum), ("mean", torch.mean), ("prod", prod_dims),
                   ("max", torch.amax), ("min", torch.amin), ("logsumexp", torch.logsumexp)]:
        case(f"{op}_all_f32", op, [x], (lambda f: lambda t: f(t, dim=(0, 1, 2)))(fn), tol="loose")
        case(f"{op}_d02_keep_f32", op, [x], (lambda f: lambda t: f(t, dim=(0, 2), keepdim=True))(fn),
             tol="loose", dims=(0, 2), keep=True)
        case(f"{op}_dneg1_f64", op, [x64], (lambda f: lambda t: f(t, dim=-1))(fn), tol="loose",
             dims=(-1,))
    case("sum_dim1_transposed_f32", "sum", [U((6, 7))], lambda t: t.sum(dim=1), tol="loose",
         dims=(1,), T=[0])
    case("sum_long_f32", "sum", [U((100000,), 0, 1)], lambda t: t.double().sum().float(),
         tol="loose", note="reference summed in f64: ops.h promises accurate long f32 sums")
    case("sum_i32", "sum", [I((4, 6))], lambda t: t.sum(dim=1), dims=(1,))
    case("sum_i8_keep", "sum", [I((3, 40), -128, 127, np.int8)], lambda t: t.sum(dim=1, keepdim=True),
         dims=(1,), keep=True)
    case("sum_bool", "sum", [B((4, 6))], lambda t: t.sum())
    case("sum_empty_f32", "sum", [U((0, 3))], lambda t: t.sum(dim=0), dims=(0,))
    case("sum_f16", "sum", [U((4, 50), dt=np.float16)], lambda t: t.sum(dim=1), dims=(1,))
    case("sum_bf16", "sum", [U((4, 20))], lambda t: t.sum(dim=0), dims=(0,), dts={0: "bf16"})
    case("mean_f16_keep", "mean", [U((3, 8), dt=np.float16)], lambda t: t.mean(dim=1, keepdim=True),
         dims=(1,), keep=True)
    case("prod_i32", "prod", [I((3, 5), -4, 5)], lambda t: t.prod(dim=1), dims=(1,))
    case("prod_u8_all", "prod", [I((4,), 1, 6, np.uint8)], lambda t: t.prod())
    case("max_nan_f32", "max", [S([[1.0, NAN, 3.0], [-INF, -1.0, 2.0]])],
         lambda t: t.amax(dim=1), dims=(1,))
    case("min_nan_f32", "min", [S([[1.0, NAN, 3.0], [-INF, -1.0, 2.0]])],
         lambda t: t.amin(dim=0), dims=(0,))
    case("max_i64_all", "max", [I((5, 3), -1000, 1000, np.int64)], lambda t: t.amax())
    case("min_i8_dim", "min", [I((3, 4), -128, 127, np.int8)], lambda t: t.amin(dim=1), dims=(1,))
    case("logsumexp_special_f32", "logsumexp",
         [S([[-INF, -INF, -INF], [INF, 1.0, 2.0], [1000.0, 1000.0, -1000.0], [NAN, 1.0, 2.0]])],
         lambda t: torch.logsumexp(t, dim=1), dims=(1,))
    case("logsumexp_large_f64", "logsumexp", [U((4, 7), 700, 710, np.float64)],
         lambda t: torch.logsumexp(t, dim=(0,), keepdim=True), dims=(0,), keep=True)
    # var / std with correction 0 and 1
    for corr in (0, 1):
        case(f"var_d1_c{corr}_f32", "var", [x], lambda t, c=corr: torch.var(t, dim=1, correction=c),
             tol="loose", dims=(1,), corr=float(corr))
        case(f"std_d02_keep_c{corr}_f64", "std", [x64],
             lambda t, c=corr: torch.std(t, dim=(0, 2), correction=c, keepdim=True),
             tol="loose", dims=(0, 2), keep=True, corr=float(corr))
    case("var_all_c1_f64", "var", [x64], lambda t: torch.var(t, dim=(0, 1, 2), correction=1),
         tol="loose", corr=1.0)
    case("var_single_c1_f32", "var", [U((3, 1))], lambda t: torch.var(t, dim=1, correction=1),
         dims=(1,), corr=1.0)
    case("std_offset_mean_f32", "std", [U((2, 64), 1000.0, 1001.0)],
         lambda t: torch.std(t, dim=1, correction=1), tol="loose", dims=(1,), corr=1.0)
    # norms
    xn = S([[1.0, -2.0, 0.0, 3.5], [0.0, 0.0, -0.5, 4.0], [-7.0, 1.0, 1.0, 0.0]])
    for p, pn in [(1.0, "1"), (2.0, "2"), (INF, "inf"), (0.0, "0"), (3.0, "3")]:
        case(f"norm_p{pn}_d1_f32", "norm", [xn],
             lambda t, p=p: torch.linalg.vector_norm(t, ord=p, dim=1), tol="loose", p=p, dims=(1,))
    case("norm_p2_all_f64", "norm", [x64], lambda t: torch.linalg.vector_norm(t, ord=2),
         tol="loose", p=2.0)
    case("norm_p1_keep_f32", "norm", [x],
         lambda t: torch.linalg.vector_norm(t, ord=1, dim=(0, 2), keepdim=True), tol="loose",
         p=1.0, dims=(0, 2), keep=True)
    # all / any (truthiness: nan is true)
    xa = S([[0.0, 1.0, NAN], [2.0, 3.0, -1.0], [0.0, -0.0, 0.0]])
    case("all_d1_f32", "all", [xa], lambda t: t.all(dim=1), dims=(1,))
    case("any_d1_f32", "any", [xa], lambda t: t.any(dim=1), dims=(1,))
    case("all_bool_all", "all", [B((3, 4), 0.9)], lambda t: t.all())
    case("any_i32_keep", "any", [I((3, 4), 0, 2)], lambda t: t.any(dim=0, keepdim=True), dims=(0,),
         keep=True)
    case("any_empty_bool", "any", [B((0, 4))], lambda t: t.any(dim=0), dims=(0,))
    # arg reductions: ties give the first index, nan counts as the maximum (and minimum)
    xt = S([[1.0, 3.0, 3.0, 0.0], [2.0, NAN, 5.0, NAN], [-1.0, -1.0, -1.0, -1.0]])
    case("argmax_ties_nan_d1", "argmax", [xt], lambda t: t.argmax(dim=1), dim=1)
    case("argmin_ties_nan_d1", "argmin", [xt], lambda t: t.argmin(dim=1), dim=1)
    case("argmax_d0_keep_f64", "argmax", [x64], lambda t: t.argmax(dim=0, keepdim=True), dim=0,
         keep=True)
    case("argmin_all_i32", "argmin", [I((4, 5))], lambda t: t.argmin())
    case("argmax_all_ties", "argmax", [S([[1, 5, 2], [5, 0, 5]], np.int64)], lambda t: t.argmax())
    case("max_dim_values", "max_dim", [xt], lambda t: torch.max(t, dim=1).values, dim=1)
    case("max_dim_indices", "max_dim", [xt], lambda t: torch.max(t, dim=1).indices, dim=1, ret=1)
    case("min_dim_keep_indices", "min_dim", [x], lambda t: torch.min(t, dim=2, keepdim=True).indices,
         dim=2, keep=True, ret=1)
    # out= forms
    case("sum_out_f32", "sum", [x], lambda t: t.sum(dim=(1,)), tol="loose", dims=(1,),
         variant="out")
    case("max_out_f64", "max", [x64], lambda t: t.amax(dim=(0, 2)), dims=(0, 2), variant="out")


def softmax_cases():
    x = U((2, 3, 4), -5, 5)
    for fn, op in [(torch.softmax, "softmax"), (torch.log_softmax, "log_softmax")]:
        for d in (0, 1, 2, -1):
            dn = f"m{-d}" if d < 0 else str(d)
            case(f"{op}_d{dn}_f32", op, [x], (lambda f, d: lambda t: f(t, dim=d))(fn, d), dim=d)
        case(f"{op}_large_f32", op, [S([[1000.0, 1001.0, 999.0], [-1000.0, -1001.0, 0.0],
                                        [-INF, 0.0, 1.0], [88.0, 89.0, -INF]])],
             (lambda f: lambda t: f(t, dim=1))(fn), dim=1)
        case(f"{op}_f64_T", op, [U((5, 6), -50, 50, np.float64)],
             (lambda f: lambda t: f(t, dim=1))(fn), dim=1, T=[0])
        case(f"{op}_f16", op, [U((3, 10), -8, 8, np.float16)],
             (lambda f: lambda t: f(t, dim=-1))(fn), dim=-1)
    case("softmax_long_row_f32", "softmax", [U((2, 1000), -20, 20)], lambda t: torch.softmax(t, 1),
         dim=1)
    case("log_softmax_out_f32", "log_softmax", [x], lambda t: torch.log_softmax(t, 1), dim=1,
         variant="out")


def matmul_cases():
    mm = torch.matmul
    for name, sa, sb in [("dot", (3,), (3,)), ("mv", (2, 3), (3,)), ("vm", (3,), (3, 4)),
                         ("mm", (2, 3), (3, 4)), ("bmm_bcast", (2, 1, 3, 4), (5, 4, 2)),
                         ("batched_mv", (5, 3, 4), (4,)), ("vec_batched", (3,), (2, 3, 4)),
                         ("mm_empty_rows", (0, 3), (3, 4)), ("mm_zero_k", (2, 0), (0, 3)),
                         ("mm_big", (33, 65), (65, 17))]:
        case(f"matmul_{name}_f32", "matmul", [U(sa), U(sb)], mm, tol="loose")
    case("matmul_TA_f32", "matmul", [U((4, 3)), U((3, 5))], mm, tol="loose", T=[0])
    case("matmul_TB_f32", "matmul", [U((4, 3)), U((3, 5))], mm, tol="loose", T=[1])
    case("matmul_TAB_batched_f64", "matmul", [U((2, 4, 3), dt=np.float64), U((2, 3, 5), dt=np.float64)],
         mm, tol="loose", T=[0, 1])
    case("matmul_f64", "matmul", [U((6, 7), dt=np.float64), U((7, 2), dt=np.float64)], mm, tol="loose")
    case("matmul_i64", "matmul", [I((3, 4), -5, 5, np.int64), I((4, 2), -5, 5, np.int64)], mm)
    case("matmul_f16", "matmul", [U((4, 8), dt=np.float16), U((8, 3), dt=np.float16)], mm, tol="loose")
    case("matmul_bf16", "matmul", [U((4, 8)), U((8, 3))], mm, tol="loose", dts={0: "bf16", 1: "bf16"})
    case("matmul_out_f32", "matmul", [U((2, 3, 4)), U((4, 5))], mm, tol="loose", variant="out")
    case("mm_f32", "mm", [U((3, 5)), U((5, 2))], torch.mm, tol="loose")
    case("bmm_f32_T", "bmm", [U((2, 3, 4)), U((2, 4, 5))], torch.bmm, tol="loose", T=[1])
    case("dot_f64", "dot", [U((17,), dt=np.float64), U((17,), dt=np.float64)], torch.dot, tol="loose")
    case("linear_bias_f32", "linear", [U((2, 3, 4)), U((5, 4)), U((5,))], F.linear, tol="loose")
    case("linear_nobias_f32", "linear", [U((6, 4)), U((3, 4))], F.linear, tol="loose")


def indexing_cases():
    x = U((4, 5))
    case("index_select_d0_i64", "index_select", [x, np.array([3, 0, 3, 1], np.int64)],
         lambda t, i: torch.index_select(t, 0, i), dim=0)
    case("index_select_d1_i32", "index_select", [I((3, 4)), np.array([2, 2, 0], np.int32)],
         lambda t, i: torch.index_select(t, 1, i), dim=1)
    case("index_select_empty", "index_select", [x, np.zeros((0,), np.int64)],
         lambda t, i: torch.index_select(t, 1, i), dim=1)
    case("gather_d1", "gather", [x, RS.randint(0, 5, (4, 3)).astype(np.int64)],
         lambda t, i: torch.gather(t, 1, i), dim=1)
    case("gather_d0_f64", "gather", [U((3, 4), dt=np.float64), RS.randint(0, 3, (2, 4)).astype(np.int64)],
         lambda t, i: torch.gather(t, 0, i), dim=0)
    sidx = np.array([[0, 2, 1, 3, 4], [4, 1, 0, 2, 3]], np.int64)  # a permutation per row
    case("scatter_d1", "scatter", [np.zeros((2, 6), np.float32), sidx, U((2, 5))],
         lambda t, i, s: torch.scatter(t, 1, i, s), dim=1)
    case("scatter_add_dups_d0", "scatter_add", [U((3, 4)), RS.randint(0, 3, (5, 4)).astype(np.int64),
                                                U((5, 4))],
         lambda t, i, s: torch.scatter_add(t, 0, i, s), dim=0)
    case("scatter_add_i64_d1", "scatter_add", [np.zeros((2, 3), np.int64),
                                               RS.randint(0, 3, (2, 7)).astype(np.int64),
                                               I((2, 7), -5, 5, np.int64)],
         lambda t, i, s: torch.scatter_add(t, 1, i, s), dim=1)
    case("scatter_add_inplace", "scatter_add", [U((3, 4)), RS.randint(0, 3, (2, 4)).astype(np.int64),
                                                U((2, 4))],
         lambda t, i, s: t.clone().scatter_add_(0, i, s), dim=0, variant="inplace")
    case("masked_fill_bcast", "masked_fill", [x, B((1, 5))],
         lambda t, m: t.masked_fill(m, -2.5), value=-2.5)
    case("masked_fill_nan_f64", "masked_fill", [U((3, 4), dt=np.float64), B((3, 4))],
         lambda t, m: t.masked_fill(m, NAN), value=NAN)
    case("masked_fill_i32", "masked_fill", [I((3, 4)), B((3, 4))],
         lambda t, m: t.masked_fill(m, 7), value=7.0)
    case("masked_select_bcast", "masked_select", [U((3, 4)), B((4,))], torch.masked_select)
    case("masked_select_none", "masked_select", [I((2, 3)), np.zeros((2, 3), bool)], torch.masked_select)
    case("cat_d1", "cat", [U((2, 3)), U((2, 1)), U((2, 4))], lambda *t: torch.cat(t, 1), dim=1)
    case("cat_d0_empty", "cat", [U((0, 3)), U((2, 3))], lambda *t: torch.cat(t, 0), dim=0)
    case("cat_promote_i32_f32", "cat", [I((2,)), U((3,))], lambda *t: torch.cat(t, 0), dim=0)
    case("cat_T_f64", "cat", [U((3, 2), dt=np.float64), U((3, 2), dt=np.float64)],
         lambda *t: torch.cat(t, -1), dim=-1, T=[0])
    case("stack_d0", "stack", [U((2, 3)), U((2, 3)), U((2, 3))], lambda *t: torch.stack(t, 0), dim=0)
    case("stack_dlast_i64", "stack", [I((2, 3), dt=np.int64), I((2, 3), dt=np.int64)],
         lambda *t: torch.stack(t, -1), dim=-1)
    xs = U((7, 3))
    case("split_piece2", "split", [xs], lambda t: torch.split(t, 3, 0)[2], size=3, dim=0, idx=2)
    case("chunk_piece1", "chunk", [U((3, 8))], lambda t: torch.chunk(t, 3, 1)[1], chunks=3, dim=1,
         idx=1)
    for k in (-1, 0, 1):
        kn = f"m{-k}" if k < 0 else str(k)
        case(f"tril_k{kn}", "tril", [U((3, 4))], lambda t, k=k: torch.tril(t, k), k=k)
        case(f"triu_k{kn}", "triu", [U((4, 3))], lambda t, k=k: torch.triu(t, k), k=k)
    case("tril_batched_i32", "tril", [I((2, 3, 3))], lambda t: torch.tril(t), k=0)
    case("triu_inplace_T", "triu", [U((4, 4))], lambda t: torch.triu(t, 1), k=1, variant="inplace",
         T=[0])
    case("one_hot_nc5", "one_hot", [np.array([[0, 4], [2, 2]], np.int64)],
         lambda t: F.one_hot(t, 5), nc=5)
    case("one_hot_auto", "one_hot", [np.array([1, 0, 3], np.int64)], lambda t: F.one_hot(t, -1), nc=-1)


def creation_cases():
    case("arange_int_i64", "arange", [], lambda: torch.arange(0, 5), start=0.0, end=5.0, step=1.0,
         dt="i64")
    case("arange_frac_f32", "arange", [], lambda: torch.arange(-3, 3, 0.7), start=-3.0, end=3.0,
         step=0.7, dt="f32")
    case("arange_neg_step_i32", "arange", [], lambda: torch.arange(10, 0, -3, dtype=torch.int32),
         start=10.0, end=0.0, step=-3.0, dt="i32")
    case("arange_f64", "arange", [], lambda: torch.arange(1, 2.5, 0.5, dtype=torch.float64),
         start=1.0, end=2.5, step=0.5, dt="f64")
    case("arange_empty", "arange", [], lambda: torch.arange(3, 3, 1.0), start=3.0, end=3.0,
         step=1.0, dt="f32")
    case("linspace_f32", "linspace", [], lambda: torch.linspace(0, 1, 5), start=0.0, end=1.0,
         steps=5, dt="f32")
    case("linspace_f64_7", "linspace", [], lambda: torch.linspace(-2, 10, 7, dtype=torch.float64),
         start=-2.0, end=10.0, steps=7, dt="f64")
    case("linspace_one", "linspace", [], lambda: torch.linspace(-1, 1, 1), start=-1.0, end=1.0,
         steps=1, dt="f32")
    case("linspace_zero", "linspace", [], lambda: torch.linspace(0, 1, 0), start=0.0, end=1.0,
         steps=0, dt="f32")
    case("linspace_long_f32", "linspace", [], lambda: torch.linspace(-1, 3, 101), start=-1.0, end=3.0,
         steps=101, dt="f32")
    case("eye_3", "eye", [], lambda: torch.eye(3), n=3, m=0, dt="f32")
    case("eye_2x4_i64", "eye", [], lambda: torch.eye(2, 4, dtype=torch.int64), n=2, m=4, dt="i64")
    case("eye_4x2_bool", "eye", [], lambda: torch.eye(4, 2, dtype=torch.bool), n=4, m=2, dt="bool")
    case("full_f64", "full", [], lambda: torch.full((2, 3), -1.25, dtype=torch.float64),
         shape=(2, 3), value=-1.25, dt="f64")


def cast_view_cases():
    case("cast_f32_i32_trunc", "cast", [S([-2.7, 2.7, 300.0, -0.5, 0.0, 1e6])],
         lambda t: t.to(torch.int32), dt="i32")
    case("cast_f64_f16_round", "cast", [S([1.0 + 2**-11, 1.0 + 3 * 2**-11, 70000.0, -1e-8, 65504.0,
                                           NAN, -INF], np.float64)],
         lambda t: t.to(torch.float16), dt="f16")
    case("cast_f32_bf16_round", "cast", [S([1.0 + 2**-8, 1.0 + 3 * 2**-8, 3.0e38, -1e-3, NAN, INF])],
         lambda t: t.to(torch.bfloat16), dt="bf16")
    case("cast_i64_bool", "cast", [S([0, 1, -1, 2**40], np.int64)], lambda t: t.to(torch.bool), dt="bool")
    case("cast_f32_bool", "cast", [S([0.0, -0.0, NAN, 0.1])], lambda t: t.to(torch.bool), dt="bool")
    case("cast_bool_f32", "cast", [B((5,))], lambda t: t.to(torch.float32), dt="f32")
    case("cast_i32_i8_wrap", "cast", [S([127, 128, -129, 255, 256], np.int32)],
         lambda t: t.to(torch.int8), dt="i8")
    case("cast_f16_f64", "cast", [U((4,), dt=np.float16)], lambda t: t.to(torch.float64), dt="f64")
    case("clone_T_f32", "clone", [U((5, 3))], lambda t: t.clone(), T=[0])
    case("contiguous_T_i64", "contiguous", [I((3, 4), dt=np.int64)], lambda t: t.contiguous(), T=[0])
    case("transpose_3d", "transpose", [U((2, 3, 4))], lambda t: t.transpose(0, 2), d0=0, d1=2)
    case("permute_3d", "permute", [U((2, 3, 4))], lambda t: t.permute(1, 2, 0), dims=(1, 2, 0))
    case("slice_step", "slice", [U((4, 9))], lambda t: t[:, 1:8:3], dim=1, start=1, end=8, step=3)
    case("slice_neg", "slice", [U((6, 2))], lambda t: t[-4:-1], dim=0, start=-4, end=-1, step=1)
    case("diagonal_off1", "diagonal", [U((4, 5))], lambda t: torch.diagonal(t, 1, 0, 1), offset=1,
         d1=0, d2=1)
    case("expand_bcast", "expand", [U((3, 1))], lambda t: t.expand(2, 3, 4), shape=(2, 3, 4))
    case("flatten_T", "flatten", [U((2, 3, 4))], lambda t: t.flatten(1, 2), start=1, end=2, T=[0])
    case("reshape_T", "reshape", [U((3, 4))], lambda t: t.reshape(2, 6), shape=(2, 6), T=[0])


def edge_cases():
    """Inputs where a plausible implementation goes wrong."""
    # round: floor(x + 0.5) fails at 0.49999997 and above 2^23; half to even
    xr = S([0.49999997, -0.49999997, 8388609.0, -8388609.0, 3.5, -3.5, 4.5, 1e30, 2.5000002])
    for op, fn in [("round", torch.round), ("floor", torch.floor), ("ceil", torch.ceil),
                   ("trunc", torch.trunc)]:
        case(f"{op}_tricky_f32", op, [xr], fn)
    case("round_tricky_f64", "round", [S([0.49999999999999994, 4503599627370497.0, -2.5, 1.5],
                                         np.float64)], torch.round)
    # Python floor division: 1.0 // 0.1 == 9 (floor(1.0 / 0.1) would be 10)
    fa, fb = S([1.0, 2.0, -1.0, 0.7, 5.0], np.float64), S([0.1, 0.2, 0.1, 0.1, 0.3], np.float64)
    case("floor_divide_f64_inexact", "floor_divide", [fa, fb], torch.floor_divide)
    case("remainder_f64_inexact", "remainder", [fa, fb], torch.remainder)
    case("floor_divide_f32_inexact", "floor_divide", [fa.astype(np.float32), fb.astype(np.float32)],
         torch.floor_divide)
    case("remainder_f32_rounds_to_divisor", "remainder", [S([-1e-8, 1e-8]), S([1.0, -1.0])],
         torch.remainder)
    # subnormals (no flush to zero) and the softplus threshold
    sub = S([1e-40, -1e-40, 1e-45, 1.1754942e-38, 0.0])
    case("log_subnormal_f32", "log", [sub], torch.log)
    case("sqrt_subnormal_f32", "sqrt", [np.abs(sub)], torch.sqrt)
    case("mul_subnormal_f32", "mul", [sub, S([0.5, 2.0, 1.0, 0.5, 1.0])], torch.mul)
    case("softplus_threshold_f32", "softplus", [S([19.99, 20.0, 20.01, -20.0, -30.0, 0.0])],
         F.softplus)
    case("gelu_tanh_f64", "gelu_tanh", [U((3, 7), -6, 6, np.float64)],
         lambda x: F.gelu(x, approximate="tanh"))
    # promotion: u8 against a negative i8 compares in i16
    case("lt_u8_i8", "lt", [S([200, 0, 5, 127], np.uint8), S([-1, 0, 6, -128], np.int8)], torch.lt)
    case("atan2_i32", "atan2", [I((2, 3)), I((3,))], torch.atan2)
    case("where_0d_cond", "where", [np.array(True), U((2, 3)), U((3,))], torch.where)
    case("add_empty_bcast", "add", [U((3, 0)), U((1,))], torch.add)
    # reductions on strided / 4-d inputs, empty reductions
    x4 = U((2, 3, 4, 5))
    case("sum_4d_d13_keep", "sum", [x4], lambda t: t.sum(dim=(1, 3), keepdim=True), tol="loose",
         dims=(1, 3), keep=True)
    case("max_4d_dneg_T", "max", [x4], lambda t: t.amax(dim=(-1, 0)), dims=(-1, 0), T=[0])
    case("mean_T_d0", "mean", [U((5, 6), dt=np.float64)], lambda t: t.mean(dim=0), tol="loose",
         dims=(0,), T=[0])
    case("argmax_T_d1", "argmax", [U((4, 6))], lambda t: t.argmax(dim=1), dim=1, T=[0])
    case("prod_empty", "prod", [U((0,))], lambda t: t.prod())
    case("mean_empty_nan", "mean", [U((0,))], lambda t: t.mean())
    case("logsumexp_f16", "logsumexp", [U((3, 6), -5, 5, np.float16)],
         lambda t: torch.logsumexp(t, dim=1), dims=(1,))
    case("softmax_all_neginf", "softmax", [S([[-INF, -INF, -INF], [0.0, -INF, 1.0]])],
         lambda t: torch.softmax(t, 1), dim=1)
    # indexing on strided inputs and broadcast batch matmul
    case("gather_T", "gather", [U((5, 4)), RS.randint(0, 4, (5, 2)).astype(np.int64)],
         lambda t, i: torch.gather(t, 1, i), dim=1, T=[0])
    case("index_select_T_d0", "index_select", [U((4, 3)), np.array([1, 1, 3], np.int64)],
         lambda t, i: torch.index_select(t, 0, i), dim=0, T=[0])
    case("matmul_batch1_bcast", "matmul", [U((1, 3, 4)), U((2, 4, 5))], torch.matmul, tol="loose")
    case("masked_fill_T", "masked_fill", [U((3, 4)), B((3, 4))], lambda t, m: t.masked_fill(m, 9.0),
         value=9.0, T=[0])


def error_cases():
    """Inputs torch rejects: ctensor must return NULL with an error."""
    case("err_floor_divide_i32_by_zero", "floor_divide", [S([1, 2], np.int32), S([1, 0], np.int32)],
         torch.floor_divide, err=True)
    case("err_remainder_i64_by_zero", "remainder", [S([1, 2], np.int64), S([0, 1], np.int64)],
         torch.remainder, err=True)
    case("err_add_bcast_mismatch", "add", [U((2, 3)), U((3, 2))], torch.add, err=True)
    case("err_matmul_inner_mismatch", "matmul", [U((2, 3)), U((4, 2))], torch.matmul, err=True)
    case("err_cat_shape_mismatch", "cat", [U((2, 3)), U((3, 2))], lambda *t: torch.cat(t, 0), dim=0,
         err=True)
    case("err_index_select_out_of_range", "index_select", [U((3,)), np.array([0, 3], np.int64)],
         lambda t, i: torch.index_select(t, 0, i), dim=0, err=True)
    case("err_gather_negative_index", "gather", [U((3,)), np.array([-4], np.int64)],
         lambda t, i: torch.gather(t, 0, i), dim=0, err=True)
    case("err_scatter_add_out_of_range", "scatter_add", [U((2, 3)), np.array([[0, 2, 1]], np.int64),
                                                         U((1, 3))],
         lambda t, i, s: torch.scatter_add(t, 0, i, s), dim=0, err=True)
    case("err_one_hot_too_small", "one_hot", [np.array([5], np.int64)], lambda t: F.one_hot(t, 3),
         nc=3, err=True)
    case("err_softmax_bad_dim", "softmax", [U((2, 3))], lambda t: torch.softmax(t, 2), dim=2, err=True)
    case("err_sum_bad_dim", "sum", [U((2, 3))], lambda t: t.sum(dim=3), dims=(3,), err=True)
    # a 0-d tensor takes dim -1 or 0 only (flatten accepted any dims before)
    case("flatten_0d_dims", "flatten", [U(())], lambda t: t.flatten(-1, 0), start=-1, end=0)
    case("err_flatten_0d_start_1", "flatten", [U(())], lambda t: t.flatten(1, -1), start=1, end=-1,
         err=True)
    case("err_flatten_0d_end_m2", "flatten", [U(())], lambda t: t.flatten(0, -2), start=0, end=-2,
         err=True)
    case("err_squeeze_0d_dim_1", "squeeze_dim", [U(())], lambda t: t.squeeze(1), dim=1, err=True)


DTYPES = {torch.float32: "f32", torch.float64: "f64", torch.float16: "f16",
          torch.bfloat16: "bf16", torch.int8: "i8", torch.uint8: "u8", torch.int16: "i16",
          torch.int32: "i32", torch.int64: "i64", torch.bool: "bool"}


def raw(t):
    t = t.detach().contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().tobytes()
    return t.numpy().tobytes()


def header(t):
    return f"{DTYPES[t.dtype]} {t.dim()}" + "".join(f" {d}" for d in t.shape)


def with_layout(t, lay):
    """t stored as LAYOUT says (differentiable, so leaves get their gradients)."""
    if lay == "c":
        return t
    if lay == "t":
        rev = list(range(t.dim()))[::-1]
        return t.permute(rev).contiguous().permute(rev)
    if lay == "s":
        both = torch.stack([torch.zeros_like(t), t], -1)
        return both.reshape(*t.shape[:-1], 2 * t.shape[-1])[..., 1::2]
    if lay == "o":
        flat = torch.cat([torch.zeros(3, dtype=t.dtype), t.flatten()])
        return flat[3:].view(t.shape)
    assert lay.startswith("e:"), lay
    return t.expand(*[int(d) for d in lay[2:].split(",")])


def overlaps(t):
    """Elements sharing memory (an expanded dim); an empty tensor has none."""
    return t.numel() > 0 and any(st == 0 and n > 1 for st, n in zip(t.stride(), t.shape))


def result_dtype(ins):
    ts = [t for t in ins if isinstance(t, torch.Tensor)]
    if len(ts) >= 2:
        return torch.result_type(ts[0], ts[1])
    return ts[0].dtype


ELEMENTWISE = {"add", "sub", "mul", "div", "floor_divide", "pow", "maximum", "minimum", "fmod",
               "remainder", "atan2", "eq", "ne", "lt", "le", "gt", "ge", "logical_and",
               "logical_or", "logical_xor", "where", "add_scaled"}


def reference(op, ref, ins, variant):
    """ref(*ins) as ctensor defines the op: half inputs computed in f32 and
    rounded; in place (variant) the result written into ins[0], with torch's
    rules for what an in-place op may write. Raises on torch's errors."""
    if variant == "inplace" and op != "fill_":
        x = ins[0]
        r = reference(op, ref, ins, None)
        if tuple(r.shape) != tuple(x.shape):
            raise RuntimeError(f"output with shape {list(x.shape)} doesn't match the broadcast "
                               f"shape {list(r.shape)}")
        if not torch.can_cast(r.dtype, x.dtype):
            raise RuntimeError(f"result type {r.dtype} can't be cast to the desired output type "
                               f"{x.dtype}")
        if overlaps(x):
            raise RuntimeError("unsupported operation: more than one element of the written-to "
                               "tensor refers to a single memory location")
        return x.detach().clone().copy_(r)
    halves = [t.dtype for t in ins if isinstance(t, torch.Tensor) and t.dtype in HALF]
    if not halves:
        return ref(*ins)
    try:  # torch's own checks (a bool operand of sub, shapes) come first
        out = ref(*ins)
    except RuntimeError as e:
        if "Half" not in str(e) and "BFloat16" not in str(e):
            raise
        out = None
    if op in ELEMENTWISE:
        # operands first converted to the common dtype, as torch's and ctensor's
        # kernels do (an i16 exponent 32767 is 32768 in f16), then computed in f32
        k = [1, 2] if op == "where" else [0, 1]
        if len(ins) > max(k):
            common = torch.result_type(ins[k[0]], ins[k[1]])
            ins = [t.to(common) if i in k else t for i, t in enumerate(ins)]
    if out is not None and out.dtype not in HALF:
        return out
    up = [t.float() if isinstance(t, torch.Tensor) and t.dtype in HALF else t for t in ins]
    o32 = ref(*up)
    if not o32.is_floating_point():
        return o32
    target = out.dtype if out is not None else result_dtype(ins)
    if target not in HALF:
        target = halves[0] if result_dtype(ins) in HALF else result_dtype(ins)
    return o32.to(target)


def first_line(e):
    return (str(e).splitlines() or [type(e).__name__])[0][:160] or type(e).__name__


class Writer:
    def __init__(self, f):
        self.f = f
        self.names = set()

    def line(self, text):
        self.f.write(text.encode() + b"\n")

    def tensor(self, tag, t):
        self.line(f"{tag} {header(t)}")
        self.f.write(raw(t))

    def case(self, name, op, inputs, ref, tol, params, note=None, expect_err=None, grad=None):
        """inputs: [(logical or base tensor, layout)]. expect_err: None (either
        way) or whether torch must reject the inputs (the table's err flag)."""
        if name in self.names:
            sys.exit(f"gen_cases.py: duplicate case {name}")
        self.names.add(name)
        params = dict(params)
        variant = params.get("variant")
        leaves = [t.detach().clone() for t, _ in inputs]
        if grad:
            for k in grad:
                leaves[k].requires_grad_(True)
        failure, out, grads, gout = None, None, None, None
        try:
            with np.errstate(all="ignore"):
                ins = [with_layout(t, lay) for t, (_, lay) in zip(leaves, inputs)]
                if not grad and variant != "inplace":
                    ins = [t.detach() for t in ins]
                out = reference(op, ref, ins, variant)
                if grad:
                    gen = torch.Generator().manual_seed(len(self.names))
                    gout = torch.randn(out.shape, generator=gen, dtype=torch.float64).to(out.dtype)
                    out.backward(gout)
                    grads = [leaves[k].grad for k in grad]
                out = out.detach().contiguous()
        except (RuntimeError, IndexError, ValueError, TypeError) as e:
            failure = first_line(e)
        if out is not None and out.dim() > 8:
            # DEVIATION: ctensor's tensors have at most 8 dims (CT_MAX_DIMS); beyond
            # that it refuses what torch computes
            failure = f"ctensor: a {out.dim()}-d result exceeds CT_MAX_DIMS (8)"
        if expect_err is not None and (failure is not None) != expect_err:
            sys.exit(f"gen_cases.py: case {name}: torch " +
                     (f"failed: {failure}" if failure else "succeeded, expected an error"))
        if failure is not None:
            params["error"] = 1
        if grad:
            params["rg"] = tuple(grad)
        int_out = out is not None and not out.is_floating_point()
        toks = [name, op, str(len(inputs)), "exact" if failure or int_out else tol]
        toks += [f"{k}={fmt(v)}" for k, v in params.items()]
        if note:
            self.line(f"# {name}: {note}")
        if failure:
            self.line(f"# {name}: torch: {failure}")
        self.line("case " + " ".join(toks))
        for k, (t, lay) in enumerate(inputs):
            self.line(f"in {k} {header(t)} {lay}")
            self.f.write(raw(t))
        if failure:
            self.line("err " + failure)
        else:
            self.tensor("out", out)
            if grad:
                self.tensor("gout", gout.detach())
                for k, g in zip(grad, grads):
                    if g is None:
                        self.line(f"grad {k} none")
                    else:
                        self.tensor(f"grad {k}", g)
        self.line("end")


def table_cases(w):
    for group in (unary_cases, binary_cases, compare_cases, reduction_cases, softmax_cases,
                  matmul_cases, indexing_cases, creation_cases, cast_view_cases, edge_cases,
                  error_cases):
        group()
    for name, op, ins, ref, tol, params, dts, T, note, err in CASES:
        tens = [to_torch(a, dts.get(k)) for k, a in enumerate(ins)]
        layouts = ["t" if k in T else "c" for k in range(len(tens))]
        w.case(name, op, list(zip(tens, layouts)), ref, tol, params, note, expect_err=err)


def main():
    import argparse

    import random_cases

    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=0, help="generated cases after the table")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--first", type=int, default=0, help="index of the first generated case")
    ap.add_argument("--no-table", action="store_true")
    a = ap.parse_args()
    w = Writer(sys.stdout.buffer)
    w.line(f"# ctensor differential cases: torch {torch.__version__}, numpy {np.__version__}, "
           f"seed {a.seed}, cases {a.first}..{a.first + a.cases - 1}")
    if not a.no_table:
        table_cases(w)
    gen = random_cases.Gen(a.seed)
    for i in range(a.first, a.first + a.cases):
        c = gen.case(i)
        w.case(c.name, c.op, c.inputs, c.ref, c.tol, c.params, c.note, grad=c.grad)
    sys.stdout.buffer.flush()


if __name__ == "__main__":
    main()
