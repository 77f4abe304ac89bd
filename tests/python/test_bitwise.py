"""The bitwise functions and operators (&, |, ^, ~, <<, >> and their in-place and reflected
forms) against NumPy on the same inputs: every integer dtype and bool, edge values, shift
counts at and past the bit width and negative ones, Python ints as weak scalars (NEP 50)."""

import numpy as np
import pytest

import ctensor as ct

INT_DTYPES = ["int8", "uint8", "int16", "int32", "int64"]


def edge_values(dt):
    info = np.iinfo(dt)
    vals = [0, 1, -1, 5, -5, 85, -86, 100, -100, int(info.min), int(info.max), 0x55, 0x2A]
    return np.array([v for v in vals if info.min <= v <= info.max], dtype=dt)


def shift_counts(dt):
    info = np.iinfo(dt)
    vals = [0, 1, 3, 7, 8, 9, 15, 16, 31, 32, 63, 64, 65, 100, 127, 200, 255, -1, -8, -64, -128]
    return np.array([v for v in vals if info.min <= v <= info.max], dtype=dt)


def check(got, want):
    got = ct.asnumpy(got)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dt", INT_DTYPES)
@pytest.mark.parametrize(
    "name,fn",
    [("bitwise_and", np.bitwise_and), ("bitwise_or", np.bitwise_or), ("bitwise_xor", np.bitwise_xor)],
)
def test_logic_functions(dt, name, fn):
    a = edge_values(dt)[:, None]
    b = edge_values(dt)[None, :]
    check(getattr(ct, name)(ct.asarray(a), ct.asarray(b)), fn(a, b))


@pytest.mark.parametrize("dt", INT_DTYPES)
def test_shifts_against_numpy(dt):
    a = edge_values(dt)[:, None]
    c = shift_counts(dt)[None, :]
    check(ct.bitwise_left_shift(ct.asarray(a), ct.asarray(c)), np.left_shift(a, c))
    check(ct.bitwise_right_shift(ct.asarray(a), ct.asarray(c)), np.right_shift(a, c))
    check(ct.asarray(a) << ct.asarray(c), a << c)
    check(ct.asarray(a) >> ct.asarray(c), a >> c)


@pytest.mark.parametrize("dt", INT_DTYPES)
def test_invert(dt):
    a = edge_values(dt)
    check(ct.bitwise_invert(ct.asarray(a)), np.invert(a))
    check(~ct.asarray(a), ~a)


@pytest.mark.parametrize("dt", INT_DTYPES)
def test_operators_with_python_ints(dt):
    a = edge_values(dt)
    x = ct.asarray(a)
    for s in [0, 1, 3, 7, 100]:
        check(x & s, a & np.array(s, dtype=dt))
        check(s | x, np.array(s, dtype=dt) | a)
        check(x ^ s, a ^ np.array(s, dtype=dt))
        check(x << s, a << np.array(s, dtype=dt))
        check(x >> s, a >> np.array(s, dtype=dt))
    # reflected shifts: the tensor is the count
    c = shift_counts(dt)
    check(3 << ct.asarray(c), np.array(3, dtype=dt) << c)
    check(100 >> ct.asarray(c), np.array(100, dtype=dt) >> c)
    # NEP 50: a Python int the dtype cannot hold is an OverflowError
    if dt == "int8":
        with pytest.raises(OverflowError):
            x & 300


def test_in_place_forms():
    a = np.array([12, -12, 7, 0], dtype=np.int32)
    b = np.array([10, 10, 1, 31], dtype=np.int32)
    x = ct.asarray(a.copy())  # asarray may share a's memory: the in-place ops would write it
    x &= ct.asarray(b)
    check(x, a & b)
    x |= 3
    check(x, (a & b) | 3)
    x ^= ct.asarray(b)
    check(x, ((a & b) | 3) ^ b)
    x <<= 2
    check(x, (((a & b) | 3) ^ b) << 2)
    x >>= ct.asarray(np.array([1, 2, 40, -1], dtype=np.int32))
    want = ((((a & b) | 3) ^ b) << 2) >> np.array([1, 2, 40, -1], dtype=np.int32)
    check(x, want)


def test_bool_operands():
    p = np.array([False, False, True, True])
    q = np.array([False, True, False, True])
    for op in ["__and__", "__or__", "__xor__"]:
        check(getattr(ct.asarray(p), op)(ct.asarray(q)), getattr(p, op)(q))
        check(getattr(ct.asarray(p), op)(True), getattr(p, op)(True))
    check(ct.bitwise_and(ct.asarray(p), ct.asarray(q)), p & q)
    check(~ct.asarray(p), ~p)
    check(ct.bitwise_invert(ct.asarray(p)), np.invert(p))
    # bool with an integer array: the integer dtype
    i = np.array([6, 7, -2, 3], dtype=np.int16)
    check(ct.asarray(p) | ct.asarray(i), p | i)
    with pytest.raises(TypeError):
        ct.asarray(p) << ct.asarray(q)


def test_mixed_dtypes_promote():
    a = np.array([-1, 100, -128], dtype=np.int8)
    b = np.array([255, 3, 1], dtype=np.uint8)
    check(ct.asarray(a) & ct.asarray(b), a & b)
    check(ct.bitwise_left_shift(ct.asarray(a), ct.asarray(b)), np.left_shift(a, b))


def test_floating_operands_are_errors():
    f = ct.asarray([1.0, 2.0])
    i = ct.asarray([1, 2])
    for fn in [ct.bitwise_and, ct.bitwise_or, ct.bitwise_xor, ct.bitwise_left_shift,
               ct.bitwise_right_shift]:
        with pytest.raises(TypeError, match="integer or bool"):
            fn(f, i)
    with pytest.raises(TypeError, match="integer or bool"):
        ~f
    with pytest.raises(TypeError, match="integer or bool"):
        i & 1.5
