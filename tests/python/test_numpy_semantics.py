"""NumPy 2's meanings where ctensor's Python namespace used to follow PyTorch's, and the edge
cases of issue 29. The installed NumPy may be 1.x, whose value-based casting differs from
NumPy 2 (NEP 50), so the expected results here are written out from NumPy 2's rules."""

import inspect

import numpy as np
import pytest

import ctensor as ct


def vals(x):
    return ct.asnumpy(x).tolist()


# ---- NEP 50 promotion ---------------------------------------------------------------------------


def test_zero_d_arrays_are_not_weak():
    # NumPy 2: int8[1] + int16 0-d 300 is int16 301 (PyTorch's rule gave int8 45)
    r = ct.add(ct.asarray([1], dtype=ct.int8), ct.asarray(300, dtype=ct.int16))
    assert r.dtype == ct.int16 and vals(r) == [301]
    r = ct.asarray([1], dtype=ct.int8) + ct.asarray(300, dtype=ct.int16)
    assert r.dtype == ct.int16 and vals(r) == [301]
    r = ct.asarray(300, dtype=ct.int16) - ct.asarray([1], dtype=ct.int8)
    assert r.dtype == ct.int16 and vals(r) == [299]
    assert (ct.ones(2) + ct.asarray(1.0, dtype=ct.float64)).dtype == ct.float64
    assert (ct.asarray([1], dtype=ct.int8) < ct.asarray(300, dtype=ct.int16)).tolist() == [True]
    # two 0-d arrays, or two dimensioned ones, promote as before
    assert (ct.asarray(1, dtype=ct.int8) + ct.asarray(1, dtype=ct.int16)).dtype == ct.int16
    assert (ct.asarray([1], dtype=ct.uint8) + ct.asarray([1], dtype=ct.int8)).dtype == ct.int16


def test_result_type_says_what_the_operators_do():
    i8, i16 = ct.asarray([1], dtype=ct.int8), ct.asarray(300, dtype=ct.int16)
    assert ct.result_type(i8, i16) == (i8 + i16).dtype == ct.int16
    assert ct.result_type(i8, 1) == (i8 + 1).dtype == ct.int8
    assert ct.result_type(i8, 1.5) == (i8 + 1.5).dtype == ct.float32
    assert ct.result_type(ct.float16, 2.0) == ct.float16


def test_where_promotes_its_branches():
    r = ct.where(ct.asarray(False), ct.asarray([0], dtype=ct.int8), ct.asarray(128, dtype=ct.int16))
    assert r.dtype == ct.int16 and vals(r) == [128]


def test_python_scalars_are_weak():
    x = ct.asarray([1, 2], dtype=ct.int8)
    assert (x + 1).dtype == ct.int8
    assert (x * 2.5).dtype == ct.float32  # an int array with a Python float: the default float
    assert (ct.ones(2, dtype=ct.float16) + 1.0).dtype == ct.float16
    with pytest.raises(OverflowError, match="300"):
        x + 300
    with pytest.raises(OverflowError):
        ct.asarray([1], dtype=ct.uint8) - (-1)
    assert vals(x < 300) == [True, True]  # comparisons take the exact value
    with pytest.raises(OverflowError):
        x += 300
    assert vals(x) == [1, 2]
    x += 3
    assert vals(x) == [4, 5]


def test_numpy_scalars_are_strong():
    # NEP 50: a NumPy scalar is a 0-d array, not a weak Python number
    assert (ct.ones(2) + np.float64(1.5)).dtype == ct.float64
    assert (np.float64(1.5) * ct.ones(2)).dtype == ct.float64
    assert (ct.asarray([1], dtype=ct.int8) + np.int16(300)).tolist() == [301]
    assert (ct.ones(2, dtype=ct.float16) + np.float32(1)).dtype == ct.float32
    assert ct.asarray(np.float64(0.1)).dtype == ct.float64 and ct.asarray(0.1).dtype == ct.float32


def test_python_ints_beyond_2_53_are_exact():
    big = 2 ** 53 + 1
    assert vals(ct.asarray([0]) + big) == [big]
    assert vals(big - ct.asarray([0])) == [big]
    assert ct.asarray([big]).tolist() == [big]
    assert ct.full((2,), big).tolist() == [big, big]
    assert ct.arange(big, big + 2).tolist() == [big, big + 1]
    assert ct.arange(-big, -big - 5, -2).tolist() == [-big, -big - 2, -big - 4]
    x = ct.zeros(3, dtype=ct.int64)
    x[0] = big
    x[ct.asarray([False, True, False])] = big + 2
    assert x.tolist() == [big, big + 2, 0]
    assert ct.where(ct.asarray([True, False]), big, ct.asarray([0, 1])).tolist() == [big, 1]


# ---- Reductions ---------------------------------------------------------------------------------


def test_sum_prod_honour_dtype():
    x = ct.asarray([100, 100], dtype=ct.int8)
    assert ct.sum(x, dtype=ct.int16).dtype == ct.int16 and ct.sum(x, dtype=ct.int16).item() == 200
    assert ct.sum(x, dtype=ct.int8).item() == np.int8(-56)  # wraps, as NumPy's
    assert ct.prod(x, dtype=ct.int32).dtype == ct.int32 and ct.prod(x, dtype=ct.int32).item() == 10000
    assert x.sum(dtype=ct.int16).dtype == ct.int16


def test_all_any_give_bool():
    x = ct.asarray([1, 2], dtype=ct.uint8)
    assert ct.all(x).dtype == ct.bool and ct.any(x).dtype == ct.bool
    assert x.all().dtype == ct.bool and ct.any(x, axis=0).dtype == ct.bool


def test_std_var_over_no_axis():
    x = ct.asarray([[1.0, 2.0], [3.0, 5.0]])
    assert ct.std(x, axis=()).shape == (2, 2) and vals(ct.var(x, axis=())) == [[0, 0], [0, 0]]
    assert np.isnan(ct.asnumpy(ct.var(x, axis=(), correction=1))).all()


def test_std_var_correction_and_ddof():
    # the standard's correction= and NumPy's ddof= (NumPy 2 has both); one of them at a time
    x = ct.asarray([1.0, 2.0, 3.0, 5.0], dtype=ct.float64)
    ref = np.asarray([1.0, 2.0, 3.0, 5.0])
    for f, nf in ((ct.std, np.std), (ct.var, np.var)):
        assert float(f(x)) == pytest.approx(nf(ref))
        assert float(f(x, correction=1)) == pytest.approx(nf(ref, ddof=1))
        assert float(f(x, ddof=1)) == pytest.approx(nf(ref, ddof=1))
        assert float(f(x, axis=0, correction=1.5)) == pytest.approx(nf(ref, ddof=1.5))
        with pytest.raises(ValueError, match="ddof=1 and correction=1"):
            f(x, ddof=1, correction=1)
        assert "correction" in inspect.signature(f).parameters
    assert float(x.std(ddof=1)) == pytest.approx(np.std(ref, ddof=1))
    assert float(np.var(x, ddof=1)) == pytest.approx(np.var(ref, ddof=1))  # __array_function__


def test_clip_takes_the_standards_and_numpys_names():
    x = ct.asarray([1, 5, 9])
    assert list(inspect.signature(ct.clip).parameters)[:3] == ["x", "min", "max"]
    assert vals(ct.clip(x, 2, 6)) == [2, 5, 6]
    assert vals(ct.clip(x, min=2)) == [2, 5, 9] and vals(ct.clip(x, max=6)) == [1, 5, 6]
    assert vals(ct.clip(x, a_min=2, a_max=6)) == [2, 5, 6]
    assert vals(np.clip(x, 2, 6)) == [2, 5, 6]
    with pytest.raises(ValueError, match="min=2 and a_min=3"):
        ct.clip(x, 2, a_min=3)


def test_bad_axis_is_index_error():
    with pytest.raises(IndexError, match="axis 2"):
        ct.sum(ct.ones(3), axis=2)
    with pytest.raises(ValueError):  # NumPy's AxisError is both
        ct.mean(ct.ones((2, 2)), axis=-3)
    assert issubclass(ct.AxisError, IndexError) and issubclass(ct.AxisError, ValueError)
    assert issubclass(ct.AxisError, ct.ArgumentError)
    for bad in (lambda: ct.flip(ct.ones(3), axis=1), lambda: ct.sort(ct.ones(3), axis=-2),
                lambda: ct.stack([ct.ones(3)], axis=3), lambda: ct.expand_dims(ct.ones(3), 5),
                lambda: ct.cumsum(ct.ones(3), axis=1)):
        with pytest.raises(IndexError, match="out of"):
            bad()


# ---- Empty and edge cases -----------------------------------------------------------------------


def test_empty_arange_eye_tensordot():
    assert ct.arange(1, 0, 1).shape == (0,) and ct.arange(1, 0, 1).dtype == ct.int64
    assert ct.arange(0.0, -1.0, 0.5).shape == (0,)
    assert ct.eye(1, 0).shape == (1, 0) and ct.eye(0).shape == (0, 0)
    r = ct.tensordot(ct.ones((2, 0)), ct.ones((0, 3)), axes=1)
    assert r.shape == (2, 3) and vals(r) == [[0.0] * 3] * 2
    assert ct.linalg.tensordot(ct.ones((2, 0)), ct.ones((0, 3)), axes=1).shape == (2, 3)


def test_keyword_signatures():
    assert ct.broadcast_to(ct.ones(3), shape=(2, 3)).shape == (2, 3)
    assert ct.permute_dims(ct.ones((2, 3)), axes=(1, 0)).shape == (3, 2)


def test_zero_d_boolean_masks():
    x = ct.arange(6).reshape(2, 3)
    assert x[ct.asarray(True)].shape == (1, 2, 3) and x[ct.asarray(False)].shape == (0, 2, 3)
    assert x[1, ct.asarray(True)].tolist() == [[3, 4, 5]]
    x[ct.asarray(False)] = 7
    assert x.tolist() == [[0, 1, 2], [3, 4, 5]]
    x[ct.asarray(True)] = 7
    assert x.tolist() == [[7] * 3] * 2


def test_linalg_dtypes():
    r = ct.linalg.solve(ct.eye(2, dtype=ct.float64), ct.asarray([1.0, 2.0], dtype=ct.float32))
    assert r.dtype == ct.float64 and vals(r) == [1.0, 2.0]
    n = ct.linalg.norm(ct.asarray([3, 4]))
    assert n.dtype == ct.float32 and n.item() == 5.0


# ---- NumPy's meanings of NumPy's names ------------------------------------------------------------


def test_transpose_cumsum_dot_round_pad():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x = ct.asarray(a)
    assert ct.transpose(x).shape == (4, 3, 2) and x.transpose().shape == (4, 3, 2)
    assert x.transpose(1, 2, 0).shape == (3, 4, 2) and x.transpose((1, 2, 0)).shape == (3, 4, 2)
    assert x.transpose(0, 2).shape == (4, 3, 2)  # PyTorch's two-axis swap, kept when not 2-d
    m2 = ct.asarray(a[0])
    assert vals(m2.transpose(0, 1)) == a[0].transpose(0, 1).tolist()  # NumPy: the same order
    assert vals(m2.transpose(1, 0)) == a[0].T.tolist()
    assert vals(ct.cumsum(x)) == np.cumsum(a).tolist() and vals(x.cumsum(dim=1)) == np.cumsum(a, 1).tolist()
    m = a[0]
    assert vals(ct.dot(ct.asarray(m), ct.asarray(m.T))) == np.dot(m, m.T).tolist()
    assert vals(ct.dot(x, ct.asarray(m.T))) == np.dot(a, m.T).tolist()
    assert vals(ct.dot(ct.asarray(3.0), ct.asarray(m))) == (3 * m).tolist()
    f = np.array([1.2345, -2.5, 0.125, 1250.0], dtype=np.float64)
    for d in (0, 1, 2, -2):
        assert vals(ct.round(ct.asarray(f), d)) == np.round(f, d).tolist()
    assert vals(ct.round(ct.asarray([1250, 1350]), -2)) == np.round(np.array([1250, 1350]), -2).tolist()
    v = np.array([1, 2, 3])
    assert vals(ct.pad(ct.asarray(v), (2, 1))) == np.pad(v, (2, 1)).tolist()
    assert vals(ct.pad(ct.asarray(v), 2, mode="edge")) == np.pad(v, 2, mode="edge").tolist()
    assert vals(ct.pad(ct.asarray(v), 1, constant_values=9)) == np.pad(v, 1, constant_values=9).tolist()
    with pytest.raises(ValueError, match="wrap"):
        ct.pad(ct.asarray(v), 1, mode="wrap")


def test_where_one_argument():
    idx = ct.where(ct.asarray([[0, 1], [1, 0]]))
    assert isinstance(idx, tuple) and [vals(i) for i in idx] == [[0, 1], [1, 0]]
    with pytest.raises(ValueError):
        ct.where(ct.asarray([True]), 1)


def test_unique_flags_and_nan():
    a = np.array([2.0, np.nan, 1.0, 2.0, np.nan])
    v, i, inv, c = ct.unique(ct.asarray(a), return_index=True, return_inverse=True, return_counts=True)
    ev, ei, einv, ec = np.unique(a, return_index=True, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(ct.asnumpy(v), ev)
    assert vals(i) == ei.tolist() and vals(inv) == einv.tolist() and vals(c) == ec.tolist()


def test_histogram_edges_and_weights():
    a = np.array([0.0, 0.5, 1.0, 1.0, 2.5, 3.0, -1.0])
    for kw in ({"bins": 3}, {"bins": 4, "range": (0, 2)}, {"bins": [0, 1, 2.5, 4]},
               {"bins": 3, "weights": np.linspace(0, 1, 7)}, {"bins": 3, "density": True}):
        ctk = {k: (ct.asarray(w) if k == "weights" else w) for k, w in kw.items()}
        h, e = ct.histogram(ct.asarray(a), **ctk)
        eh, ee = np.histogram(a, **kw)
        np.testing.assert_allclose(ct.asnumpy(h), eh, rtol=1e-12)
        np.testing.assert_allclose(ct.asnumpy(e), ee, rtol=1e-12)


def test_quantiles_median_cov():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((4, 7))
    for q in (0.0, 0.3, 1.0, [0.1, 0.9]):
        np.testing.assert_allclose(ct.asnumpy(ct.quantile(ct.asarray(a), q, axis=1)),
                                   np.quantile(a, q, axis=1), rtol=1e-12)
    np.testing.assert_allclose(ct.asnumpy(ct.median(ct.asarray(a), axis=0, keepdims=True)),
                               np.median(a, axis=0, keepdims=True), rtol=1e-12)
    np.testing.assert_allclose(ct.asnumpy(ct.cov(ct.asarray(a), rowvar=False, ddof=0)),
                               np.cov(a, rowvar=False, ddof=0), rtol=1e-12)
    np.testing.assert_allclose(ct.asnumpy(ct.corrcoef(ct.asarray(a[0]), ct.asarray(a[1]))),
                               np.corrcoef(a[0], a[1]), rtol=1e-12)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        ct.quantile(ct.asarray(a), 1.5)


def test_diff_prepend_append_bool():
    v = np.array([1, 4, 9, 16])
    assert vals(ct.diff(ct.asarray(v), prepend=0, append=[20])) == np.diff(v, prepend=0, append=[20]).tolist()
    b = np.array([True, True, False])
    assert vals(ct.diff(ct.asarray(b))) == np.diff(b).tolist()


def test_dtype_equality_with_numpy():
    x = ct.ones(2)
    assert x.dtype == np.float32 and x.dtype == np.dtype("float32") and x.dtype == "float32"
    assert x.dtype != np.float64 and not (x.dtype == None)  # noqa: E711
    assert ct.asarray([1], dtype=ct.int8).dtype == np.int8


# ---- Cases the array API suite found ------------------------------------------------------------


def test_eye_diagonal_outside_the_matrix():
    # NumPy: any offset outside the matrix gives zeros, an offset past int64 included
    for n, m, k in ((14, None, -(10 ** 38)), (3, None, 5), (3, 4, 4), (3, 4, -3), (2, 3, 10 ** 30)):
        r = ct.eye(n, m, k=k)
        assert r.shape == np.eye(n, m).shape and not ct.asnumpy(r).any()
    assert vals(ct.eye(3, 4, k=3)) == np.eye(3, 4, k=3).tolist()
    assert vals(ct.eye(3, k=-2)) == np.eye(3, k=-2).tolist()


def test_vecdot_keeps_the_integer_dtype():
    a = ct.asarray([200, 100], dtype=ct.uint8)
    r = ct.vecdot(a, a)
    n = np.asarray([200, 100], dtype=np.uint8)
    assert r.dtype == ct.uint8 and int(r) == int(np.sum(n * n, dtype=np.uint8))  # wraps as NumPy's
    r = ct.linalg.vecdot(ct.asarray([[1, 2]], dtype=ct.int16), ct.asarray([3, 4], dtype=ct.int8))
    assert r.dtype == ct.int16 and vals(r) == [11]
    assert ct.vecdot(ct.ones((2, 3)), ct.ones(3)).dtype == ct.float32
    # the contracted axis is not broadcast (the other axes are)
    assert ct.vecdot(ct.ones((4, 1, 2)), ct.ones((3, 2)), axis=-1).shape == (4, 3)
    with pytest.raises(ValueError, match="size 2 in x1 and 1 in x2"):
        ct.vecdot(ct.ones((3, 2)), ct.ones((4, 1, 1)))
    with pytest.raises(IndexError):
        ct.vecdot(ct.ones(3), ct.ones(3), axis=1)


def test_vector_norm_over_no_axis():
    x = np.asarray([[-1.5, 0.0], [2.0, -3.0]], dtype=np.float32)
    for ord in (2, 1, np.inf, -np.inf, 3.5, -1):
        r = ct.linalg.vector_norm(ct.asarray(x), axis=(), ord=ord)
        assert r.shape == (2, 2) and r.dtype == ct.float32
        assert np.array_equal(ct.asnumpy(r), np.abs(x))
    r = ct.linalg.vector_norm(ct.asarray(x), axis=(), ord=0, keepdims=True)
    assert r.shape == (2, 2) and vals(r) == [[1.0, 0.0], [1.0, 1.0]]


def test_mixed_integer_dtypes_promote_and_compare_exactly():
    # the suite's cases: int16 + int8 is int16, and int64 1007689639 >= int8 11 does not wrap,
    # whichever operand comes first and whether the operands are 0-d or not
    for shape in ((), (3,)):
        a = ct.full(shape, 300, dtype=ct.int16)
        b = ct.full(shape, 11, dtype=ct.int8)
        for r, want in ((a + b, 311), (b + a, 311), (a - b, 289), (ct.multiply(b, a), 3300)):
            assert r.dtype == ct.int16 and ct.asnumpy(r).tolist() == np.full(shape, want).tolist()
        big = ct.full(shape, 1007689639, dtype=ct.int64)
        for r, want in ((big >= b, True), (b >= big, False), (ct.less(big, b), False),
                        (ct.greater(big, b), True), (b < big, True), (big == b, False)):
            assert r.dtype == ct.bool and ct.asnumpy(r).tolist() == np.full(shape, want).tolist()
        assert ct.result_type(a, b) == ct.int16 and (a + b).dtype == ct.result_type(a, b)


def test_zero_d_mask_assignment_on_zero_d_tensors():
    for dtype in (ct.int64, ct.float32, ct.uint8):
        x = ct.asarray(5, dtype=dtype)
        x[ct.asarray(True)] = 7
        assert x.shape == () and x.dtype == dtype and int(x) == 7
        x[ct.asarray(False)] = 9
        assert int(x) == 7
        x[ct.asarray(True)] = ct.asarray(3, dtype=dtype)
        assert int(x) == 3
        assert x[ct.asarray(True)].shape == (1,) and x[ct.asarray(False)].shape == (0,)


def test_size_zero_boolean_index_selects_nothing():
    # a mask dim of size 0 over a dim of any size selects nothing (NumPy, the array API suite)
    y = np.arange(12.0).reshape(4, 3)
    x = ct.asarray(y)
    for key in (np.zeros(0, bool), np.zeros((4, 0), bool), np.zeros((0, 3), bool)):
        r = x[ct.asarray(key)]
        assert r.shape == y[key].shape and r.dtype == x.dtype
    assert x[:, ct.asarray(np.zeros(0, bool))].shape == y[:, np.zeros(0, bool)].shape == (4, 0)
    x[ct.asarray(np.zeros(0, bool))] = 5
    x[ct.asarray(np.zeros(0, bool))] = ct.ones(3)  # a (0, 3) selection
    x[ct.asarray(np.zeros((0, 3), bool))] = ct.ones(1)  # a (0,) selection
    assert np.array_equal(ct.asnumpy(x), y)
    with pytest.raises(IndexError, match="size 3 in dim 0"):
        x[ct.asarray(np.zeros(3, bool))]
