"""Every function of the array API namespace that ctensor covers, against NumPy on random inputs,
on each device; and the coverage lists (the standard's names, what is covered and what is not,
and the package documentation that lists them)."""

import math
import os
import re

import numpy as np
import pytest

import ctensor as ct
from conftest import assert_close

TESTED = set()


def tested(*names):
    TESTED.update(names)


RTOL = {np.float32: 2e-5, np.float64: 1e-12}

# ---- elementwise ----------------------------------------------------------------------------------

# name: (NumPy function, low, high of the random inputs, also tested on int32)
UNARY = {
    "signbit": (np.signbit, -3, 3, True),
    "log10": (np.log10, 0.1, 5, False),
    "sinh": (np.sinh, -3, 3, False),
    "cosh": (np.cosh, -3, 3, False),
    "atanh": (np.arctanh, -0.99, 0.99, False),
    "atan": (np.arctan, -3, 3, False),
    "asinh": (np.arcsinh, -3, 3, False),
    "asin": (np.arcsin, -1, 1, False),
    "acosh": (np.arccosh, 1, 5, False),
    "acos": (np.arccos, -1, 1, False),
    "abs": (np.abs, -3, 3, True), "ceil": (np.ceil, -3, 3, False), "cos": (np.cos, -3, 3, False),
    "exp": (np.exp, -3, 3, False), "expm1": (np.expm1, -1, 1, False), "floor": (np.floor, -3, 3, False),
    "isfinite": (np.isfinite, -3, 3, True), "isinf": (np.isinf, -3, 3, True), "isnan": (np.isnan, -3, 3, True),
    "log": (np.log, 0.1, 5, False), "log1p": (np.log1p, -0.5, 5, False), "log2": (np.log2, 0.1, 5, False),
    "negative": (np.negative, -3, 3, True), "positive": (np.positive, -3, 3, True),
    "round": (np.round, -3, 3, False), "sign": (np.sign, -3, 3, True), "sin": (np.sin, -3, 3, False),
    "sqrt": (np.sqrt, 0, 5, False), "square": (np.square, -3, 3, True), "tan": (np.tan, -1.2, 1.2, False),
    "tanh": (np.tanh, -3, 3, False), "trunc": (np.trunc, -3, 3, False),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_unary(name, dtype, device, rng):
    fn, lo, hi, _ = UNARY[name]
    x = rng.uniform(lo, hi, (3, 4)).astype(dtype)
    if name in ("isinf", "isnan", "isfinite"):
        x[0, 0], x[1, 1], x[2, 2] = np.inf, np.nan, -np.inf
    if name == "round":
        x[0, :] = [0.5, 1.5, 2.5, -0.5]
    r = getattr(ct, name)(ct.asarray(x, device=device))
    assert r.device == device
    assert_close(r, fn(x), rtol=RTOL[dtype], atol=RTOL[dtype])
    tested(name)


@pytest.mark.parametrize("name", sorted(n for n, v in UNARY.items() if v[3]))
def test_unary_integers_keep_their_dtype(name, device, rng):
    x = rng.integers(-5, 6, (4, 3)).astype(np.int32)
    r = getattr(ct, name)(ct.asarray(x, device=device))
    expected = UNARY[name][0](x)
    assert r.dtype == (ct.bool if expected.dtype == np.bool_ else ct.int32)
    assert_close(r, expected, 0, 0)


def test_logical_not(device, rng):
    x = rng.integers(0, 2, (5,)).astype(bool)
    assert_close(ct.logical_not(ct.asarray(x, device=device)), np.logical_not(x), 0, 0)
    tested("logical_not")


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int32, np.int64])
def test_bitwise(dtype, device, rng):
    info = np.iinfo(dtype)
    a = rng.integers(info.min, int(info.max) + 1, (3, 1, 4), dtype=dtype)
    b = rng.integers(info.min, int(info.max) + 1, (5, 4), dtype=dtype)
    counts = rng.integers(max(int(info.min), -3), min(int(info.max), 70) + 1, (5, 4)).astype(dtype)
    x, y, c = (ct.asarray(v, device=device) for v in (a, b, counts))
    for name, fn, rhs, r in [("bitwise_and", np.bitwise_and, b, y), ("bitwise_or", np.bitwise_or, b, y),
                             ("bitwise_xor", np.bitwise_xor, b, y),
                             ("bitwise_left_shift", np.left_shift, counts, c),
                             ("bitwise_right_shift", np.right_shift, counts, c)]:
        got = getattr(ct, name)(x, r)
        assert got.dtype == ct.asarray(fn(a, rhs)).dtype
        assert_close(got, fn(a, rhs), 0, 0)
        tested(name)
    assert_close(ct.bitwise_invert(x), np.invert(a), 0, 0)
    tested("bitwise_invert")


BINARY = {
    "copysign": (np.copysign, -3, 3),
    "logaddexp": (np.logaddexp, -3, 3),
    "hypot": (np.hypot, -3, 3),
    "add": (np.add, -3, 3), "subtract": (np.subtract, -3, 3), "multiply": (np.multiply, -3, 3),
    "divide": (np.divide, 0.5, 3), "floor_divide": (np.floor_divide, 0.5, 3), "pow": (np.power, 0.5, 2),
    "remainder": (np.remainder, 0.5, 3), "maximum": (np.maximum, -3, 3), "minimum": (np.minimum, -3, 3),
    "atan2": (np.arctan2, -3, 3), "equal": (np.equal, -2, 2), "not_equal": (np.not_equal, -2, 2),
    "less": (np.less, -2, 2), "less_equal": (np.less_equal, -2, 2), "greater": (np.greater, -2, 2),
    "greater_equal": (np.greater_equal, -2, 2),
}


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_binary_broadcasting(name, dtype, device, rng):
    fn, lo, hi = BINARY[name]
    if name in ("remainder", "floor_divide"):  # signed operands, divisor away from 0
        a = rng.uniform(-3, 3, (3, 1, 4)).astype(dtype)
        b = (rng.uniform(lo, hi, (5, 4)) * rng.choice([-1, 1], (5, 4))).astype(dtype)
    else:
        a = rng.uniform(lo, hi, (3, 1, 4)).astype(dtype)
        b = rng.uniform(lo, hi, (5, 4)).astype(dtype)
    if "equal" in name or name in ("less", "greater"):
        a, b = np.round(a), np.round(b)
    f = getattr(ct, name)
    r = f(ct.asarray(a, device=device), ct.asarray(b, device=device))
    assert r.shape == (3, 5, 4)
    assert_close(r, fn(a, b), rtol=RTOL[dtype] * 10, atol=RTOL[dtype] * 10)
    # a Python number on either side
    s = 1.5
    assert_close(f(ct.asarray(a, device=device), s), fn(a, dtype(s)), rtol=RTOL[dtype] * 10, atol=1e-6)
    assert_close(f(s, ct.asarray(a, device=device)), fn(dtype(s), a), rtol=RTOL[dtype] * 10, atol=1e-6)
    tested(name)


@pytest.mark.parametrize("name", ["logical_and", "logical_or", "logical_xor"])
def test_logical_binary(name, device, rng):
    a = rng.integers(0, 2, (4, 3)).astype(bool)
    b = rng.integers(0, 2, (3,)).astype(bool)
    r = getattr(ct, name)(ct.asarray(a, device=device), ct.asarray(b, device=device))
    assert r.dtype == ct.bool
    assert_close(r, getattr(np, name)(a, b), 0, 0)
    tested(name)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_integer_arithmetic_follows_numpy(dtype, device, rng):
    a = rng.integers(-20, 20, (6, 5)).astype(dtype)
    b = rng.integers(1, 7, (5,)).astype(dtype) * rng.choice([-1, 1], (5,)).astype(dtype)
    x, y = ct.asarray(a, device=device), ct.asarray(b, device=device)
    for name, fn in [("add", np.add), ("subtract", np.subtract), ("multiply", np.multiply),
                     ("floor_divide", np.floor_divide), ("remainder", np.remainder),
                     ("maximum", np.maximum), ("minimum", np.minimum)]:
        r = getattr(ct, name)(x, y)
        assert r.dtype == ct.asarray(a).dtype, name
        assert_close(r, fn(a, b), 0, 0)
    assert_close(ct.pow(x, ct.abs(y)), np.power(a, np.abs(b)), 0, 0)


def test_clip(device, rng):
    a = rng.uniform(-3, 3, (4, 5)).astype(np.float32)
    x = ct.asarray(a, device=device)
    assert_close(ct.clip(x, -1, 2), np.clip(a, -1, 2))
    assert_close(ct.clip(x, min=0), np.clip(a, 0, None))
    lo = rng.uniform(-2, 0, (5,)).astype(np.float32)
    assert_close(ct.clip(x, ct.asarray(lo, device=device), 1.0), np.clip(a, lo, 1.0))
    tested("clip")


# ---- statistics -----------------------------------------------------------------------------------

REDUCTIONS = {"sum": np.sum, "prod": np.prod, "mean": np.mean, "max": np.max, "min": np.min}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@pytest.mark.parametrize("axis", [None, 0, -1, (0, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions(name, axis, keepdims, device, rng):
    a = rng.uniform(0.5, 1.5, (3, 4, 5))
    r = getattr(ct, name)(ct.asarray(a, device=device), axis=axis, keepdims=keepdims)
    assert_close(r, REDUCTIONS[name](a, axis=axis, keepdims=keepdims), rtol=1e-12)
    tested(name)


@pytest.mark.parametrize("name", ["std", "var"])
@pytest.mark.parametrize("correction", [0, 1])
@pytest.mark.parametrize("axis", [None, 1, (0, 1)])
def test_std_var(name, correction, axis, device, rng):
    a = rng.normal(size=(4, 6, 3))
    r = getattr(ct, name)(ct.asarray(a, device=device), axis=axis, correction=correction)
    assert_close(r, getattr(np, name)(a, axis=axis, ddof=correction), rtol=1e-10)
    tested(name)


def test_integer_sum_and_dtype_argument(device, rng):
    a = rng.integers(-100, 100, (5, 7)).astype(np.int32)
    x = ct.asarray(a, device=device)
    r = ct.sum(x, axis=0)
    assert r.dtype == ct.int64
    assert_close(r, a.sum(axis=0), 0, 0)
    assert ct.sum(x, dtype=ct.float64).dtype == ct.float64


@pytest.mark.parametrize("name", ["all", "any"])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_all_any(name, axis, device, rng):
    a = rng.uniform(0, 1, (6, 4)) > 0.3
    r = getattr(ct, name)(ct.asarray(a, device=device), axis=axis)
    assert_close(r, getattr(np, name)(a, axis=axis), 0, 0)
    tested(name)


# ---- searching --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("axis", [None, 0, 1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_argmax_argmin(name, axis, keepdims, device, rng):
    a = rng.normal(size=(5, 7)).astype(np.float32)
    r = getattr(ct, name)(ct.asarray(a, device=device), axis=axis, keepdims=keepdims)
    assert r.dtype == ct.int64
    assert_close(r, getattr(np, name)(a, axis=axis, keepdims=keepdims), 0, 0)
    tested(name)


def test_where(device, rng):
    c = rng.uniform(0, 1, (4, 5)) > 0.5
    a = rng.normal(size=(4, 5)).astype(np.float32)
    b = rng.normal(size=(5,)).astype(np.float32)
    C, A, B = (ct.asarray(v, device=device) for v in (c, a, b))
    assert_close(ct.where(C, A, B), np.where(c, a, b))
    assert_close(ct.where(C, A, 0.5), np.where(c, a, np.float32(0.5)))
    assert_close(ct.where(C, -1.0, B), np.where(c, np.float32(-1), b))
    assert_close(ct.where(C, 1, 0), np.where(c, 1, 0), 0, 0)
    tested("where")


def test_nonzero(device, rng):
    a = (rng.uniform(0, 1, (4, 3, 5)) > 0.6).astype(np.float32)
    r = ct.nonzero(ct.asarray(a, device=device))
    e = np.nonzero(a)
    assert len(r) == 3
    for got, want in zip(r, e):
        assert_close(got, want, 0, 0)
    tested("nonzero")


def test_take(device, rng):
    a = rng.normal(size=(4, 6))
    idx = np.array([0, 5, -1, 2])
    x = ct.asarray(a, device=device)
    assert_close(ct.take(x, ct.asarray(idx, device=device), axis=1), np.take(a, idx, axis=1))
    assert_close(ct.take(ct.asarray(a[0], device=device), [3, 1]), np.take(a[0], [3, 1]))
    tested("take")


# ---- creation -----------------------------------------------------------------------------------------


def test_creation(device):
    d = dict(device=device)
    assert_close(ct.zeros((2, 3), **d), np.zeros((2, 3)))
    assert_close(ct.ones(4, dtype=ct.int32, **d), np.ones(4))
    assert ct.empty((2, 0), **d).shape == (2, 0)
    assert_close(ct.full((2, 2), 7, **d), np.full((2, 2), 7))
    assert ct.full((1,), 7, **d).dtype == ct.int64 and ct.full((1,), 7.0, **d).dtype == ct.float32
    assert ct.full((1,), True, **d).dtype == ct.bool
    x = ct.ones((3, 2), dtype=ct.float64, **d)
    for name, want in [("zeros_like", 0), ("ones_like", 1), ("empty_like", None)]:
        r = getattr(ct, name)(x)
        assert r.shape == (3, 2) and r.dtype == ct.float64 and r.device == device
        if want is not None:
            assert_close(r, np.full((3, 2), want))
    assert_close(ct.full_like(x, 2.5), np.full((3, 2), 2.5))
    assert ct.zeros_like(x, dtype=ct.int8).dtype == ct.int8
    assert_close(ct.arange(5, **d), np.arange(5), 0, 0)
    assert ct.arange(5).dtype == ct.int64 and ct.arange(0.0, 1.0, 0.25).dtype == ct.float32
    assert_close(ct.arange(2, 11, 3, **d), np.arange(2, 11, 3), 0, 0)
    assert_close(ct.arange(5, 0, -1.5, **d), np.arange(5, 0, -1.5))
    assert_close(ct.linspace(0, 1, 5, **d), np.linspace(0, 1, 5))
    assert_close(ct.linspace(0, 1, 4, endpoint=False, **d), np.linspace(0, 1, 4, endpoint=False))
    for k in (-1, 0, 2):
        assert_close(ct.eye(3, 4, k=k, **d), np.eye(3, 4, k=k))
    a = np.arange(12.0).reshape(3, 4)
    for k in (-1, 0, 1):
        assert_close(ct.tril(ct.asarray(a, **d), k=k), np.tril(a, k))
        assert_close(ct.triu(ct.asarray(a, **d), k=k), np.triu(a, k))
    tested("zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like", "full_like", "arange",
           "linspace", "eye", "tril", "triu")


def test_asarray(device):
    assert_close(ct.asarray([[1, 2], [3, 4]], device=device), [[1, 2], [3, 4]], 0, 0)
    assert ct.asarray([1, 2]).dtype == ct.int64
    assert ct.asarray([1.0, 2]).dtype == ct.float32
    assert ct.asarray([True, False]).dtype == ct.bool
    assert ct.asarray(3.5).shape == ()
    x = ct.asarray([1, 2, 3], device=device)
    assert ct.asarray(x) is x
    assert ct.asarray(x, dtype=ct.float64).dtype == ct.float64
    y = ct.asarray(x, copy=True)
    y[0] = 9
    assert x[0].item() == 1
    with pytest.raises(ValueError):
        ct.asarray([[1, 2], [3]])
    tested("asarray")


def test_meshgrid(device):
    a, b = np.arange(3.0), np.arange(4.0)
    for indexing in ("xy", "ij"):
        got = ct.meshgrid(ct.asarray(a, device=device), ct.asarray(b, device=device), indexing=indexing)
        for g, w in zip(got, np.meshgrid(a, b, indexing=indexing)):
            assert_close(g, w)
    tested("meshgrid")


# ---- manipulation -----------------------------------------------------------------------------------


def test_manipulation(device, rng):
    a = rng.normal(size=(2, 3, 4))
    x = ct.asarray(a, device=device)
    assert_close(ct.reshape(x, (4, 6)), a.reshape(4, 6))
    assert_close(ct.reshape(x, (-1,)), a.reshape(-1))
    assert_close(ct.permute_dims(x, (2, 0, 1)), np.transpose(a, (2, 0, 1)))
    assert_close(ct.expand_dims(x, axis=1), np.expand_dims(a, 1))
    assert_close(ct.squeeze(ct.asarray(a[:, :1], device=device), axis=1), np.squeeze(a[:, :1], 1))
    with pytest.raises(ValueError):
        ct.squeeze(x, axis=0)
    assert_close(ct.concat([x, x], axis=1), np.concatenate([a, a], 1))
    assert_close(ct.concat([x, x], axis=None), np.concatenate([a.ravel(), a.ravel()]))
    assert_close(ct.stack([x, x], axis=-1), np.stack([a, a], -1))
    assert_close(ct.broadcast_to(ct.asarray(a[:, :1], device=device), (2, 5, 4)),
                 np.broadcast_to(a[:, :1], (2, 5, 4)))
    p, q = ct.broadcast_arrays(ct.asarray(a[:1], device=device), ct.asarray(a[..., :1], device=device))
    assert p.shape == q.shape == (2, 3, 4)
    for axis in (None, 0, (1, 2)):
        assert_close(ct.flip(x, axis=axis), np.flip(a, axis=axis))
    assert_close(ct.moveaxis(x, 0, -1), np.moveaxis(a, 0, -1))
    assert_close(ct.moveaxis(x, (0, 1), (2, 0)), np.moveaxis(a, (0, 1), (2, 0)))
    for shift, axis in ((2, None), (1, 0), (-1, 2), ((1, 2), (0, 1))):
        assert_close(ct.roll(x, shift, axis=axis), np.roll(a, shift, axis=axis))
    assert_close(ct.repeat(x, 2, axis=1), np.repeat(a, 2, axis=1))
    assert_close(ct.repeat(x, 3), np.repeat(a, 3))
    assert_close(ct.repeat(x, [1, 0, 2], axis=1), np.repeat(a, [1, 0, 2], axis=1))
    assert_close(ct.repeat(x, 0, axis=2), np.repeat(a, 0, axis=2))
    with pytest.raises(ValueError):
        ct.repeat(x, -1)
    assert_close(ct.tile(x, (2, 1, 3)), np.tile(a, (2, 1, 3)))
    assert_close(ct.tile(ct.asarray(a[0, 0], device=device), (2, 2)), np.tile(a[0, 0], (2, 2)))
    parts = ct.unstack(x, axis=1)
    assert len(parts) == 3
    for i, p in enumerate(parts):
        assert_close(p, a[:, i])
    assert_close(ct.matrix_transpose(x), np.swapaxes(a, -1, -2))
    tested("reshape", "permute_dims", "expand_dims", "squeeze", "concat", "stack", "broadcast_to",
           "broadcast_arrays", "flip", "moveaxis", "roll", "repeat", "tile", "unstack", "matrix_transpose")


# ---- linear algebra -------------------------------------------------------------------------------------


def test_linear_algebra(device, rng):
    a = rng.normal(size=(3, 4))
    b = rng.normal(size=(4, 5))
    A, B = ct.asarray(a, device=device), ct.asarray(b, device=device)
    assert_close(ct.matmul(A, B), a @ b, rtol=1e-12)
    assert_close(A @ B, a @ b, rtol=1e-12)
    c = rng.normal(size=(2, 3, 4))
    assert_close(ct.matmul(ct.asarray(c, device=device), B), c @ b, rtol=1e-12)
    v = rng.normal(size=4)
    assert_close(ct.matmul(A, ct.asarray(v, device=device)), a @ v, rtol=1e-12)
    assert_close(ct.tensordot(ct.asarray(c, device=device), B, axes=1), np.tensordot(c, b, axes=1), rtol=1e-12)
    d = rng.normal(size=(4, 3, 2))
    assert_close(ct.tensordot(ct.asarray(c, device=device), ct.asarray(d, device=device), axes=((1, 2), (1, 0))),
                 np.tensordot(c, d, axes=((1, 2), (1, 0))), rtol=1e-12)
    e = rng.normal(size=(3, 4))
    assert_close(ct.vecdot(A, ct.asarray(e, device=device)), np.sum(a * e, axis=-1), rtol=1e-12)
    assert_close(ct.vecdot(A, ct.asarray(e, device=device), axis=0), np.sum(a * e, axis=0), rtol=1e-12)
    L = ct.linalg
    for ord in (1, 2, math.inf):
        assert_close(L.vector_norm(A, ord=ord), np.linalg.norm(a.ravel(), ord), rtol=1e-12)
    assert_close(L.vector_norm(A, axis=1, keepdims=True), np.linalg.norm(a, axis=1, keepdims=True), rtol=1e-12)
    assert_close(L.matrix_norm(A), np.linalg.norm(a, "fro"), rtol=1e-12)
    assert_close(L.outer(ct.asarray(v, device=device), ct.asarray(v[:2], device=device)), np.outer(v, v[:2]))
    sq = rng.normal(size=(4, 4))
    assert_close(L.trace(ct.asarray(sq, device=device)), np.trace(sq), rtol=1e-12)
    assert_close(L.diagonal(ct.asarray(sq, device=device), offset=1), np.diagonal(sq, 1))
    assert_close(L.norm(ct.asarray([3.0, 4.0], device=device)), 5.0)
    tested("matmul", "tensordot", "vecdot")


# ---- data types ------------------------------------------------------------------------------------------


def test_data_type_functions(device):
    x = ct.asarray([1.7, -2.2], device=device)
    assert ct.astype(x, ct.int32).tolist() == [1, -2]
    y = ct.astype(x, ct.float32)
    assert y is not x and y.tolist() == x.tolist()
    assert ct.astype(x, ct.float32, copy=False) is x
    assert ct.can_cast(ct.int32, ct.float32) and not ct.can_cast(ct.float32, ct.int32)
    assert ct.can_cast(x, ct.float64)
    assert ct.result_type(ct.int8, ct.uint8) == ct.int16
    assert ct.result_type(x, ct.int64) == ct.float32
    assert ct.isdtype(ct.int16, "signed integer") and ct.isdtype(ct.float64, ("integral", "real floating"))
    assert not ct.isdtype(ct.bool, "numeric") and ct.isdtype(ct.uint8, ct.uint8)
    assert ct.finfo(ct.float32).eps == np.finfo(np.float32).eps
    assert ct.finfo(ct.float64).max == np.finfo(np.float64).max
    assert ct.finfo(ct.float16).smallest_normal == np.finfo(np.float16).smallest_normal
    assert ct.iinfo(ct.int16).min == np.iinfo(np.int16).min and ct.iinfo(ct.uint8).max == 255
    tested("astype", "can_cast", "result_type", "isdtype", "finfo", "iinfo", "bool", "int8", "int16", "int32",
           "int64", "uint8", "float32", "float64")


def test_constants_and_inspection():
    assert ct.e == math.e and ct.pi == math.pi and ct.inf == math.inf and math.isnan(ct.nan)
    assert ct.newaxis is None
    info = ct.__array_namespace_info__()
    assert info.default_dtypes()["real floating"] == ct.float32
    assert info.default_dtypes()["integral"] == ct.int64
    assert "float32" in info.dtypes() and set(info.dtypes(kind="bool")) == {"bool"}
    # the standard's data types only: float16 and bfloat16 are ctensor's additions
    assert "float16" not in info.dtypes() and "bfloat16" not in info.dtypes(kind="real floating")
    assert ct.Device("cpu") in info.devices()
    assert info.capabilities()["boolean indexing"]
    assert ct.asarray([1]).__array_namespace__() is ct
    assert_close(ct.from_dlpack(np.arange(3.0)), np.arange(3.0))  # more in test_dlpack.py
    tested("e", "pi", "inf", "nan", "newaxis", "__array_namespace_info__", "from_dlpack")


# ---- coverage -----------------------------------------------------------------------------------------


def test_zz_every_standard_name_is_covered_or_listed_missing():
    standard = {n for names in ct._api.STANDARD.values() for n in names}
    covered = set(ct._api.covered())
    missing = set(ct._api.MISSING)
    assert covered | missing == standard
    assert not covered & missing
    for name in covered:
        assert hasattr(ct, name), name
    for name in missing:
        assert not hasattr(ct, name) or name in ("bool",), f"{name} is listed missing but exists"
    # every covered name is exercised against NumPy by a test of this module or of test_sorting.py
    from test_sorting import COVERS as SORTING_TESTED
    untested = covered - TESTED - SORTING_TESTED
    assert not untested, f"covered but not tested: {sorted(untested)}"


def test_documentation_lists_coverage():
    doc = open(os.path.join(os.path.dirname(__file__), "..", "..", "python", "README.md")).read()
    section = re.search(r"### Covered\n(.*?)\n### Not yet\n(.*?)\n##", doc, re.S)
    assert section, "python/README.md has the sections '### Covered' and '### Not yet'"
    names = [set(re.findall(r"`([A-Za-z_0-9]+)`", s)) for s in section.groups()]
    assert names[0] == set(ct._api.covered()), "covered names in python/README.md"
    assert set(ct._api.MISSING) <= names[1], "missing names in python/README.md"
    assert set(ct.linalg.MISSING) <= names[1], "missing linalg names in python/README.md"


# ---- diff and take_along_axis against NumPy -----------------------------------------------------


@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "bool"])
def test_diff_matches_numpy(device, rng, dtype):
    x = (rng.standard_normal((4, 5)) * 4).astype(dtype)
    for axis in (0, 1, -1):
        for n in (0, 1, 2, 5):
            r = ct.diff(ct.asarray(x, device=device), n=n, axis=axis)
            np.testing.assert_array_equal(np.asarray(r.to_device("cpu")), np.diff(x, n=n, axis=axis))
    pre, app = x[:, :1], x[:, :2]
    r = ct.diff(ct.asarray(x, device=device), n=2, axis=1, prepend=pre, append=app)
    np.testing.assert_array_equal(np.asarray(r.to_device("cpu")), np.diff(x, n=2, axis=1, prepend=pre, append=app))


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "bool"])
def test_take_along_axis_matches_numpy(device, rng, dtype):
    x = (rng.standard_normal((3, 4, 5)) * 4).astype(dtype)
    for axis, ishape in ((0, (2, 4, 5)), (1, (3, 6, 1)), (-1, (1, 4, 7))):
        size = x.shape[axis]
        idx = rng.integers(-size, size, ishape)
        r = ct.take_along_axis(ct.asarray(x, device=device), ct.asarray(idx, device=device), axis=axis)
        full = list(np.broadcast_shapes(tuple(1 if d == axis % 3 else s for d, s in enumerate(x.shape)),
                                        tuple(1 if d == axis % 3 else s for d, s in enumerate(ishape))))
        xs, ishp = full.copy(), full.copy()
        xs[axis % 3], ishp[axis % 3] = x.shape[axis % 3], ishape[axis % 3]
        want = np.take_along_axis(np.broadcast_to(x, xs), np.broadcast_to(idx, ishp), axis=axis)
        np.testing.assert_array_equal(np.asarray(r.to_device("cpu")), want)


def test_take_along_axis_gradient_and_errors():
    x = ct.asarray(np.arange(6.0).reshape(2, 3), dtype=ct.float64)
    x.requires_grad = True
    idx = ct.asarray(np.array([[0, -1, 0]]))
    ct.sum(ct.take_along_axis(x, idx, axis=1)).backward()
    np.testing.assert_array_equal(np.asarray(x.grad), [[2, 0, 1], [2, 0, 1]])
    with pytest.raises(Exception, match="take_along_axis: index -4 is out of bounds"):
        ct.take_along_axis(x, ct.asarray(np.array([[-4]])), axis=1)
        ct.synchronize(x.device)  # a GPU reports it here
    with pytest.raises(Exception, match="take_along_axis: indices must have an integer dtype"):
        ct.take_along_axis(x, ct.asarray(np.array([[0.0]])), axis=1)
