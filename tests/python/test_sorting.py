"""Sorting, searching, set functions and running sums (sort, argsort, searchsorted, unique_*,
cumulative_sum; PyTorch's cumsum, cumprod, topk, kthvalue, pad, interpolate) against NumPy and PyTorch on
random inputs, on each device, with empty and nan inputs; and gradients through them."""

import numpy as np
import pytest

import ctensor as ct
from conftest import assert_close

# The standard's names these tests exercise (test_namespace.py counts them as tested).
COVERS = {"sort", "argsort", "searchsorted", "unique_all", "unique_counts", "unique_inverse",
          "unique_values", "cumulative_sum", "nonzero"}

DTYPES = [np.float32, np.float64, np.int32, np.int64, np.uint8]


def sample(rng, dtype, shape, nan=False):
    """Values with many repeats (to see stability) and, for floats, nans and infinities."""
    a = rng.integers(0, 6, shape).astype(dtype)
    if np.issubdtype(dtype, np.floating) and a.size:
        a = a + rng.uniform(0, 1, shape).round(1).astype(dtype)
        if nan:
            flat = a.reshape(-1)
            flat[rng.integers(0, a.size, max(1, a.size // 5))] = np.nan
            flat[0] = -np.inf
    return a


def descending_argsort(a, axis):
    """Indices of a stable descending sort: equal elements keep their order (nan first)."""
    n = a.shape[axis]
    return n - 1 - np.flip(np.argsort(np.flip(a, axis), axis=axis, kind="stable"), axis)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,axis", [((7,), -1), ((4, 9), 0), ((4, 9), 1), ((2, 3, 5), -2),
                                        ((0, 4), 0), ((3, 0), -1)])
def test_sort_argsort(dtype, shape, axis, device, rng):
    a = sample(rng, dtype, shape, nan=True)
    x = ct.asarray(a, device=device)
    assert_close(ct.sort(x, axis=axis), np.sort(a, axis=axis, kind="stable"), 0, 0)
    assert_close(ct.argsort(x, axis=axis), np.argsort(a, axis=axis, kind="stable"), 0, 0)
    assert_close(ct.sort(x, axis=axis, descending=True), np.flip(np.sort(a, axis=axis), axis), 0, 0)
    assert_close(ct.argsort(x, axis=axis, descending=True, stable=True), descending_argsort(a, axis), 0, 0)
    assert ct.sort(x, axis=axis).dtype == x.dtype and ct.argsort(x, axis=axis).dtype == ct.int64


def test_sort_errors_and_gradient(device, rng):
    with pytest.raises(ValueError, match="sort"):
        ct.sort(ct.ones((2, 3), device=device), axis=2)
    a = rng.normal(size=(3, 5))
    w = rng.normal(size=(3, 5))
    x = ct.asarray(a, device=device)
    x.requires_grad = True
    (ct.sort(x, axis=1, descending=True) * ct.asarray(w, device=device)).sum().backward()
    expected = np.zeros_like(a)
    np.put_along_axis(expected, descending_argsort(a, 1), w, axis=1)
    assert_close(x.grad, expected, rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted(dtype, side, device, rng):
    base = np.sort(sample(rng, dtype, (12,)))
    values = sample(rng, dtype, (3, 4))
    x1, x2 = ct.asarray(base, device=device), ct.asarray(values, device=device)
    assert_close(ct.searchsorted(x1, x2, side=side), np.searchsorted(base, values, side=side), 0, 0)
    perm = rng.permutation(12)
    shuffled = base[perm]
    sorter = np.argsort(shuffled, kind="stable")
    assert_close(ct.searchsorted(ct.asarray(shuffled, device=device), x2, side=side,
                                 sorter=ct.asarray(sorter, device=device)),
                 np.searchsorted(shuffled, values, side=side, sorter=sorter), 0, 0)
    empty = ct.asarray(np.zeros(0, dtype), device=device)
    assert ct.searchsorted(x1, empty).shape == (0,)
    with pytest.raises(ValueError, match="side"):
        ct.searchsorted(x1, x2, side="middle")


@pytest.mark.parametrize("dtype", DTYPES + [np.bool_])
@pytest.mark.parametrize("shape", [(20,), (4, 6), (0,), (2, 0, 3)])
def test_unique(dtype, shape, device, rng):
    a = sample(rng, dtype, shape, nan=True) if dtype != np.bool_ else rng.uniform(size=shape) > 0.5
    x = ct.asarray(a, device=device)
    # the standard's unique (NumPy's equal_nan=False): each nan distinct, after every number
    values, index, inverse, counts = np.unique(a, return_index=True, return_inverse=True, return_counts=True,
                                               equal_nan=False)
    inverse = inverse.reshape(a.shape)
    r = ct.unique_all(x)
    assert_close(r.values, values, 0, 0)
    assert r.values.dtype == x.dtype
    assert_close(r.indices, index, 0, 0)
    assert_close(r.inverse_indices, inverse, 0, 0)
    assert_close(r.counts, counts, 0, 0)
    assert_close(ct.unique_values(x), values, 0, 0)
    c = ct.unique_counts(x)
    assert_close(c.values, values, 0, 0)
    assert_close(c.counts, counts, 0, 0)
    i = ct.unique_inverse(x)
    assert_close(i.values, values, 0, 0)
    assert_close(i.inverse_indices, inverse, 0, 0)
    if np.issubdtype(dtype, np.floating):
        assert int(np.isnan(a).sum()) == int(ct.sum(ct.isnan(r.values)).item())
    # the values back from the inverse indices
    if a.size:
        assert_close(ct.take(r.values, ct.reshape(r.inverse_indices, (-1,))), a.reshape(-1), 0, 0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.uint8, np.bool_])
def test_cumulative_sum(dtype, device, rng):
    a = sample(rng, dtype, (3, 5)) if dtype != np.bool_ else rng.uniform(size=(3, 5)) > 0.5
    x = ct.asarray(a, device=device)
    ref_dtype = a.dtype if np.issubdtype(dtype, np.floating) else np.int64
    tol = 1e-6 if dtype == np.float32 else 0
    for axis in (0, 1, -1):
        r = ct.cumulative_sum(x, axis=axis)
        assert_close(r, np.cumsum(a, axis=axis, dtype=ref_dtype), tol, tol)
        assert r.dtype == ct.asarray(np.zeros(1, ref_dtype)).dtype
        z = np.zeros_like(np.take(a, [0], axis=axis), dtype=ref_dtype)
        assert_close(ct.cumulative_sum(x, axis=axis, include_initial=True),
                     np.concatenate([z, np.cumsum(a, axis=axis, dtype=ref_dtype)], axis=axis), tol, tol)
    r = ct.cumulative_sum(x, axis=1, dtype=ct.float64)
    assert r.dtype == ct.float64
    assert_close(r, np.cumsum(a.astype(np.float64), axis=1), 1e-12, 0)
    assert_close(ct.cumulative_sum(ct.asarray(a[0], device=device)), np.cumsum(a[0], dtype=ref_dtype), tol, tol)
    with pytest.raises(ValueError, match="axis"):
        ct.cumulative_sum(x)
    e = ct.asarray(np.zeros((0, 3), dtype), device=device)
    assert ct.cumulative_sum(e, axis=0).shape == (0, 3)
    assert ct.cumulative_sum(e, axis=0, include_initial=True).shape == (1, 3)


def test_cumulative_sum_nan_and_gradient(device, rng):
    a = np.array([1.0, np.nan, 2.0, 3.0])
    assert_close(ct.cumulative_sum(ct.asarray(a, device=device)), np.cumsum(a))
    x = ct.asarray(rng.normal(size=(2, 4)), device=device)
    x.requires_grad = True
    ct.cumulative_sum(x, axis=1, include_initial=True).sum().backward()
    assert_close(x.grad, np.tile([4.0, 3.0, 2.0, 1.0], (2, 1)), rtol=1e-12)


def test_nonzero_direct(device, rng):
    a = rng.integers(-1, 2, (3, 4, 2)).astype(np.int32)
    r = ct.nonzero(ct.asarray(a, device=device))
    for got, want in zip(r, np.nonzero(a)):
        assert_close(got, want, 0, 0)
    assert all(t.shape == (0,) for t in ct.nonzero(ct.zeros((2, 3), device=device)))
    with pytest.raises(ValueError, match="0-d"):
        ct.nonzero(ct.asarray(1.0, device=device))


# ---- PyTorch's extras ------------------------------------------------------------------------------


def test_torch_scans_topk_kthvalue(device, rng):
    torch = pytest.importorskip("torch")
    a = rng.normal(size=(4, 6))
    a[1, 2] = np.nan
    x, t = ct.asarray(a, device=device), torch.from_numpy(a)
    for dim in (0, 1, -1):
        assert_close(ct.cumsum(x, dim), torch.cumsum(t, dim).numpy(), 1e-12, 1e-12)
        assert_close(ct.cumprod(x, dim), torch.cumprod(t, dim).numpy(), 1e-12, 1e-12)
    i = rng.integers(0, 5, (3, 4)).astype(np.int32)
    assert ct.cumsum(ct.asarray(i, device=device), 1).dtype == ct.int64
    assert ct.cumsum(ct.asarray(i, device=device), 1, dtype=ct.int32).dtype == ct.int32
    b = rng.permutation(24).reshape(4, 6).astype(np.float32)  # distinct values: one answer
    y, u = ct.asarray(b, device=device), torch.from_numpy(b)
    for k, dim, largest in ((2, 1, True), (3, 0, False), (0, 1, True), (6, -1, False)):
        r, e = ct.topk(y, k, dim=dim, largest=largest), torch.topk(u, k, dim=dim, largest=largest)
        assert_close(r.values, e.values.numpy(), 0, 0)
        assert_close(r.indices, e.indices.numpy(), 0, 0)
    for k, dim, keepdim in ((1, 1, False), (3, 0, True), (6, -1, False)):
        r, e = ct.kthvalue(y, k, dim, keepdim), torch.kthvalue(u, k, dim, keepdim)
        assert_close(r.values, e.values.numpy(), 0, 0)
        assert_close(r.indices, e.indices.numpy(), 0, 0)
    with pytest.raises(ValueError, match="topk"):
        ct.topk(y, 7, dim=1)


def test_pad(device, rng):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    a = rng.normal(size=(2, 3, 4, 5)).astype(np.float32)
    x, t = ct.asarray(a, device=device), torch.from_numpy(a)
    for pad, mode, value in (((1, 2), "constant", None), ((1, 0, 2, 1), "constant", 3.5),
                             ((2, 1, 1, 2), "reflect", None), ((1, 1, 0, 2, 3, 0), "replicate", None)):
        kw = {} if value is None else {"value": value}
        assert_close(ct.nn.functional.pad(x, pad, mode=mode, **kw), F.pad(t, pad, mode=mode, **kw).numpy())
    # the top-level pad is NumPy's (pad_width per axis, 'edge' for replicate)
    assert_close(ct.pad(x, ((0, 0), (0, 0), (2, 1), (1, 2)), mode="reflect"),
                 np.pad(a, ((0, 0), (0, 0), (2, 1), (1, 2)), mode="reflect"))
    assert_close(ct.pad(x, 1, constant_values=3.5), np.pad(a, 1, constant_values=3.5))
    with pytest.raises(ValueError, match="circular"):
        ct.pad(x, (1, 1), mode="circular")
    with pytest.raises(ValueError):
        ct.pad(x, (5, 5), mode="reflect")


def test_interpolate(device, rng):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    a4, a3 = rng.normal(size=(2, 3, 5, 7)), rng.normal(size=(2, 3, 6))
    for a, kw in ((a4, dict(size=(8, 11))), (a4, dict(scale_factor=1.7)),
                  (a4, dict(scale_factor=(2.5, 1.3), mode="nearest-exact")),
                  (a4, dict(size=(9, 4), mode="bilinear", align_corners=True)),
                  (a4, dict(scale_factor=(1.3, 2.2), mode="bilinear", recompute_scale_factor=True)),
                  (a3, dict(scale_factor=2.5, mode="linear")), (a3, dict(size=4)),
                  (a4, dict(size=(2, 3), mode="area")), (a3, dict(scale_factor=1.5, mode="area"))):
        x = ct.asarray(a, device=device)
        x.requires_grad = True
        t = torch.from_numpy(a).requires_grad_(True)
        y, e = ct.nn.functional.interpolate(x, **kw), F.interpolate(t, **kw)
        assert_close(y, e.detach().numpy(), 1e-10, 1e-10)
        y.sum().backward()
        e.sum().backward()
        assert_close(x.grad, t.grad.numpy(), 1e-10, 1e-10)
    # the module: the same options, fixed at construction
    for kw in (dict(scale_factor=2), dict(size=(3, 9), mode="bilinear", align_corners=True)):
        m, tm = ct.nn.Upsample(**kw), torch.nn.Upsample(**kw)
        assert_close(m(ct.asarray(a4, device=device)), tm(torch.from_numpy(a4)).numpy(), 1e-10, 1e-10)
    assert repr(ct.nn.Upsample(scale_factor=2.0)) == "Upsample(scale_factor=2.0, mode='nearest')"
    x = ct.asarray(a4, device=device)
    with pytest.raises(ValueError, match="align_corners"):
        ct.nn.functional.interpolate(x, size=(4, 4), align_corners=True)
    with pytest.raises(ValueError, match="size"):
        ct.nn.functional.interpolate(x, size=(4, 4), scale_factor=2)
