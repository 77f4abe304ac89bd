"""Everyday NumPy/CuPy idioms with ctensor swapped in for numpy: each runs on NumPy and on
ctensor from the same inputs and must give NumPy's values, dtype and shape. Where ctensor's
default float (float32) stands in for NumPy's float64 (a Python float or a float-default
creation), the idiom is marked and only the dtype's kind is compared."""

import numpy as np
import pytest

import ctensor as ct

F = "default float"  # the idiom's float64 is ctensor's default float32
# NumPy computes these in float64 whatever the input (cov, corrcoef, quantiles); ctensor keeps a
# float32 input's dtype (python/README.md), so only the kind is compared
W = F


def _inputs(xp):
    rng = np.random.default_rng(29)
    b = rng.standard_normal((3, 4)).astype(np.float32)
    m = rng.standard_normal((3, 3)) + 3 * np.eye(3)
    return {
        "a": xp.asarray(np.arange(12, dtype=np.float32).reshape(3, 4)),
        "b": xp.asarray(b),
        "v": xp.asarray(np.array([3, 1, 2, 3, 1], dtype=np.int64)),
        "m": xp.asarray(m),
        "s": xp.asarray(m @ m.T),
        "r": xp.asarray(np.array([1.0, 2.0, 3.0])),
        "t": xp.asarray(np.arange(24, dtype=np.float32).reshape(2, 3, 4)),
        "w": xp.asarray(np.array([1.0, 2.0, 1.0], dtype=np.float32)),
        "nanv": xp.asarray(np.array([1.0, np.nan, 3.0], dtype=np.float32)),
        "sorted": xp.asarray(np.array([1, 3, 5, 7], dtype=np.int64)),
        "q": xp.asarray(np.array([0, 3, 8], dtype=np.int64)),
        "i8": xp.asarray(np.array([1, -2, 3], dtype=np.int8)),
        "u8": xp.asarray(np.array([0, 2, 255], dtype=np.uint8)),
    }


def _copy_set(xp, d, key, value):
    x = d["a"].copy()
    x[key(x)] = value
    return x


IDIOMS = [
    # creation
    ("zeros", lambda xp, d: xp.zeros((2, 3)), F),
    ("ones", lambda xp, d: xp.ones(4), F),
    ("full int", lambda xp, d: xp.full((2, 2), 7), None),
    ("arange", lambda xp, d: xp.arange(10), None),
    ("arange step", lambda xp, d: xp.arange(2, 10, 3), None),
    ("arange float", lambda xp, d: xp.arange(0, 1, 0.25), F),
    ("arange empty", lambda xp, d: xp.arange(1, 0, 1), None),
    ("linspace", lambda xp, d: xp.linspace(0, 1, 5), F),
    ("eye", lambda xp, d: xp.eye(3), F),
    ("eye rect k", lambda xp, d: xp.eye(3, 4, k=1), F),
    ("eye no columns", lambda xp, d: xp.eye(1, 0), F),
    ("zeros_like", lambda xp, d: xp.zeros_like(d["a"]), None),
    ("ones_like int", lambda xp, d: xp.ones_like(d["v"]), None),
    ("full_like", lambda xp, d: xp.full_like(d["a"], 2.5), None),
    ("empty shape", lambda xp, d: xp.empty((2, 3)).shape, None),
    ("asarray nested", lambda xp, d: xp.asarray([[1, 2], [3, 4]]), None),
    ("array dtype", lambda xp, d: xp.array([1.5, 2.5], dtype=xp.float32), None),
    ("arange reshape", lambda xp, d: xp.arange(6).reshape(2, 3), None),
    ("tril", lambda xp, d: xp.tril(xp.ones((3, 3))), F),
    ("triu k", lambda xp, d: xp.triu(d["a"], 1), None),
    ("meshgrid", lambda xp, d: xp.meshgrid(xp.arange(3), xp.arange(2)), None),
    # indexing
    ("row", lambda xp, d: d["a"][1], None),
    ("column", lambda xp, d: d["a"][:, 1], None),
    ("slices", lambda xp, d: d["a"][1:, ::2], None),
    ("ellipsis", lambda xp, d: d["a"][..., -1], None),
    ("mask", lambda xp, d: d["a"][d["a"] > 5], None),
    ("0-d mask", lambda xp, d: d["a"][xp.asarray(True)], None),
    ("fancy rows", lambda xp, d: d["a"][[0, 2]], None),
    ("fancy pairs", lambda xp, d: d["a"][[0, 2], [1, 3]], None),
    ("newaxis", lambda xp, d: d["a"][None, :, 1], None),
    ("reversed", lambda xp, d: d["a"][::-1], None),
    ("mask assign", lambda xp, d: _copy_set(xp, d, lambda x: x > 5, 0), None),
    ("row assign", lambda xp, d: _copy_set(xp, d, lambda x: 0, 9), None),
    ("take", lambda xp, d: xp.take(d["v"], xp.asarray([0, 2])), None),
    ("take flattened", lambda xp, d: xp.take(d["a"], xp.asarray([0, 5, 7])), None),
    ("diagonal 3-d", lambda xp, d: xp.diagonal(d["t"]), None),
    ("method diagonal", lambda xp, d: d["t"].diagonal(1), None),
    ("method repeat", lambda xp, d: d["a"].repeat(2, axis=1), None),
    ("where 3", lambda xp, d: xp.where(d["a"] > 5, d["a"], 0), None),
    ("where 1", lambda xp, d: xp.where(d["a"] > 5), None),
    ("argwhere", lambda xp, d: xp.argwhere(d["a"] > 5), None),
    ("nonzero", lambda xp, d: xp.nonzero(d["v"] > 1), None),
    ("count_nonzero", lambda xp, d: xp.count_nonzero(d["a"] > 5), None),
    ("count_nonzero axis", lambda xp, d: xp.count_nonzero(d["a"] > 5, axis=0), None),
    ("flatnonzero", lambda xp, d: xp.flatnonzero(d["v"] > 1), None),
    # reductions
    ("sum", lambda xp, d: d["a"].sum(), None),
    ("sum axis", lambda xp, d: d["a"].sum(axis=0), None),
    ("sum positional axis", lambda xp, d: xp.sum(d["a"], 0), None),
    ("mean positional axis", lambda xp, d: xp.mean(d["a"], 1), None),
    ("max numpy int axis", lambda xp, d: xp.max(d["a"], axis=np.int64(1)), None),
    ("argmax positional", lambda xp, d: xp.argmax(d["b"], 1), None),
    ("sum keepdims", lambda xp, d: xp.sum(d["a"], axis=1, keepdims=True), None),
    ("sum int8 dtype", lambda xp, d: xp.sum(d["i8"], dtype=xp.int8), None),
    ("prod int16 dtype", lambda xp, d: xp.prod(d["i8"], dtype=xp.int16), None),
    ("mean", lambda xp, d: d["a"].mean(), None),
    ("mean axis", lambda xp, d: d["a"].mean(axis=0), None),
    ("mean int", lambda xp, d: xp.mean(d["v"]), F),
    ("std int", lambda xp, d: d["v"].std(), F),
    ("max", lambda xp, d: d["a"].max(), None),
    ("min axis", lambda xp, d: d["a"].min(axis=1), None),
    ("argmax", lambda xp, d: d["b"].argmax(), None),
    ("argmin axis", lambda xp, d: d["b"].argmin(axis=0), None),
    ("std", lambda xp, d: d["b"].std(), None),
    ("var axis", lambda xp, d: d["b"].var(axis=1), None),
    ("std ddof", lambda xp, d: xp.std(d["b"], ddof=1), None),
    ("prod axis", lambda xp, d: d["a"].prod(axis=1), None),
    ("cumsum flat", lambda xp, d: xp.cumsum(d["a"]), None),
    ("cumsum axis", lambda xp, d: d["a"].cumsum(axis=1), None),
    ("cumprod", lambda xp, d: xp.cumprod(d["v"]), None),
    ("all", lambda xp, d: xp.all(d["a"] >= 0), None),
    ("any axis", lambda xp, d: xp.any(d["a"] > 10, axis=0), None),
    ("all uint8", lambda xp, d: xp.all(d["u8"]), None),
    ("any uint8", lambda xp, d: xp.any(d["u8"]), None),
    ("sum int", lambda xp, d: d["v"].sum(), None),
    ("median", lambda xp, d: xp.median(d["b"]), None),
    ("median axis", lambda xp, d: xp.median(d["b"], axis=0), None),
    ("median nan", lambda xp, d: xp.median(d["nanv"]), None),
    ("percentile", lambda xp, d: xp.percentile(d["b"], 75), W),
    ("quantile list axis", lambda xp, d: xp.quantile(d["b"], [0.25, 0.5], axis=1), W),
    ("histogram", lambda xp, d: xp.histogram(d["b"], bins=4), None),
    ("histogram range", lambda xp, d: xp.histogram(d["v"], bins=3, range=(0, 3)), None),
    ("cov", lambda xp, d: xp.cov(d["b"]), W),
    ("corrcoef", lambda xp, d: xp.corrcoef(d["b"]), W),
    ("diff", lambda xp, d: xp.diff(d["v"]), None),
    ("diff axis", lambda xp, d: xp.diff(d["a"], axis=0), None),
    ("diff n", lambda xp, d: xp.diff(d["v"], n=2), None),
    ("average weights", lambda xp, d: xp.average(d["a"][:, :3].T, axis=0, weights=d["w"]), None),
    ("nansum", lambda xp, d: xp.nansum(d["nanv"]), None),
    ("nanmean", lambda xp, d: xp.nanmean(d["nanv"]), None),
    ("nanmax", lambda xp, d: xp.nanmax(d["nanv"]), None),
    ("nanmin axis", lambda xp, d: xp.nanmin(xp.stack([d["nanv"], d["nanv"]]), axis=1), None),
    ("nan_to_num", lambda xp, d: xp.nan_to_num(d["nanv"]), None),
    ("isin", lambda xp, d: xp.isin(d["v"], xp.asarray([1, 2])), None),
    # elementwise and broadcasting
    ("add scalar", lambda xp, d: d["a"] + 1, None),
    ("mul float", lambda xp, d: d["a"] * 2.5, None),
    ("divide", lambda xp, d: d["a"] / 3, None),
    ("floor divide", lambda xp, d: d["a"] // 3, None),
    ("mod", lambda xp, d: d["a"] % 3, None),
    ("square", lambda xp, d: d["a"] ** 2, None),
    ("negate", lambda xp, d: -d["a"], None),
    ("row broadcast", lambda xp, d: d["a"] + xp.arange(4, dtype=xp.float32), None),
    ("column broadcast", lambda xp, d: d["a"] + d["a"][:, :1], None),
    ("exp", lambda xp, d: xp.exp(d["b"]), None),
    ("log1p abs", lambda xp, d: xp.log(xp.abs(d["b"]) + 1), None),
    ("sqrt", lambda xp, d: xp.sqrt(d["a"]), None),
    ("sin", lambda xp, d: xp.sin(d["b"]), None),
    ("maximum scalar", lambda xp, d: xp.maximum(d["a"], 5), None),
    ("clip", lambda xp, d: xp.clip(d["a"], 2, 8), None),
    ("power", lambda xp, d: xp.power(d["a"], 2), None),
    ("round decimals", lambda xp, d: xp.round(d["b"], 2), None),
    ("method round", lambda xp, d: d["b"].round(1), None),
    ("floor", lambda xp, d: xp.floor(d["b"]), None),
    ("isclose", lambda xp, d: xp.isclose(d["a"], d["a"] + 1e-7), None),
    ("allclose", lambda xp, d: xp.allclose(d["a"], d["a"]), None),
    ("isnan", lambda xp, d: xp.isnan(d["nanv"]), None),
    ("equal int", lambda xp, d: d["v"] == 3, None),
    ("greater arrays", lambda xp, d: d["a"] > d["b"], None),
    ("logical_and", lambda xp, d: xp.logical_and(d["a"] > 2, d["a"] < 8), None),
    ("outer", lambda xp, d: xp.outer(d["v"], d["v"]), None),
    ("sign", lambda xp, d: xp.sign(d["b"]), None),
    ("int8 plus int8 0-d", lambda xp, d: d["i8"] + xp.asarray(np.int8(5)), None),
    # shapes
    ("reshape", lambda xp, d: d["a"].reshape(4, 3), None),
    ("reshape -1", lambda xp, d: d["a"].reshape(-1), None),
    ("T", lambda xp, d: d["t"].T, None),
    ("transpose()", lambda xp, d: d["t"].transpose(), None),
    ("transpose axes", lambda xp, d: xp.transpose(d["t"], (1, 0, 2)), None),
    ("method transpose axes", lambda xp, d: d["t"].transpose(2, 0, 1), None),
    ("ravel", lambda xp, d: d["a"].ravel(), None),
    ("flatten", lambda xp, d: d["a"].flatten(), None),
    ("expand_dims", lambda xp, d: xp.expand_dims(d["a"], 0), None),
    ("squeeze", lambda xp, d: xp.squeeze(xp.ones((1, 3, 1))), F),
    ("concatenate", lambda xp, d: xp.concatenate([d["a"], d["a"]]), None),
    ("concatenate axis", lambda xp, d: xp.concatenate([d["a"], d["a"]], axis=1), None),
    ("concatenate None", lambda xp, d: xp.concatenate([d["a"], d["a"]], axis=None), None),
    ("stack", lambda xp, d: xp.stack([d["v"], d["v"]]), None),
    ("vstack", lambda xp, d: xp.vstack([d["v"], d["v"]]), None),
    ("hstack", lambda xp, d: xp.hstack([d["v"], d["v"]]), None),
    ("column_stack", lambda xp, d: xp.column_stack([d["v"], d["v"]]), None),
    ("split sections", lambda xp, d: xp.split(d["a"], 2, axis=1), None),
    ("split indices", lambda xp, d: xp.split(d["v"], [1, 3]), None),
    ("array_split", lambda xp, d: xp.array_split(d["v"], 3), None),
    ("diag of vector", lambda xp, d: xp.diag(d["v"]), None),
    ("diag k", lambda xp, d: xp.diag(d["v"], -1), None),
    ("diag of matrix", lambda xp, d: xp.diag(d["a"], 1), None),
    ("identity", lambda xp, d: xp.identity(3, dtype=xp.float32), None),
    ("flip", lambda xp, d: xp.flip(d["a"], axis=0), None),
    ("roll", lambda xp, d: xp.roll(d["v"], 2), None),
    ("repeat", lambda xp, d: xp.repeat(d["v"], 2), None),
    ("tile", lambda xp, d: xp.tile(d["v"], 2), None),
    ("moveaxis", lambda xp, d: xp.moveaxis(d["t"], 0, -1), None),
    ("broadcast_to", lambda xp, d: xp.broadcast_to(d["v"], (2, 5)), None),
    ("pad", lambda xp, d: xp.pad(d["v"], 2), None),
    ("pad edge", lambda xp, d: xp.pad(d["a"], ((1, 0), (0, 2)), mode="edge"), None),
    ("pad constant_values", lambda xp, d: xp.pad(d["a"], 1, constant_values=-1), None),
    ("ndim shape size", lambda xp, d: (xp.ndim(d["t"]), xp.shape(d["t"]), xp.size(d["t"], 1)), None),
    ("copy", lambda xp, d: xp.copy(d["a"]), None),
    ("fill", lambda xp, d: (lambda x: (x.fill(3), x)[1])(d["a"].copy()), None),
    ("swapaxes", lambda xp, d: d["t"].swapaxes(0, 2), None),
    ("swapaxes function", lambda xp, d: xp.swapaxes(d["t"], 1, 2), None),
    ("logspace", lambda xp, d: xp.logspace(0, 2, 3), F),
    ("clip int with float bounds", lambda xp, d: xp.clip(d["v"], 1.5, 2.5), F),
    ("arctan2", lambda xp, d: xp.arctan2(d["a"], d["a"] + 1), None),
    ("isscalar", lambda xp, d: (xp.isscalar(3.0), xp.isscalar(d["a"])), None),
    # sorting and sets
    ("sort", lambda xp, d: xp.sort(d["v"]), None),
    ("sort axis", lambda xp, d: xp.sort(d["b"], axis=0), None),
    ("argsort", lambda xp, d: xp.argsort(d["b"], axis=1), None),
    ("unique", lambda xp, d: xp.unique(d["v"]), None),
    ("unique counts", lambda xp, d: xp.unique(d["v"], return_counts=True), None),
    ("unique index inverse", lambda xp, d: xp.unique(d["v"], return_index=True, return_inverse=True), None),
    ("searchsorted", lambda xp, d: xp.searchsorted(d["sorted"], d["q"]), None),
    # linear algebra
    ("matmul operator", lambda xp, d: d["a"] @ d["a"].T, None),
    ("dot 2-d", lambda xp, d: xp.dot(d["a"], d["a"].T), None),
    ("dot vectors", lambda xp, d: xp.dot(d["v"], d["v"]), None),
    ("dot matrix vector", lambda xp, d: d["m"].dot(d["r"]), None),
    ("matmul", lambda xp, d: xp.matmul(d["m"], d["m"]), None),
    ("inv", lambda xp, d: xp.linalg.inv(d["m"]), None),
    ("det", lambda xp, d: xp.linalg.det(d["m"]), None),
    ("solve", lambda xp, d: xp.linalg.solve(d["m"], d["r"]), None),
    ("norm", lambda xp, d: xp.linalg.norm(d["a"]), None),
    ("norm int", lambda xp, d: xp.linalg.norm(xp.asarray([3, 4])), F),
    ("norm axis", lambda xp, d: xp.linalg.norm(d["a"], axis=1), None),
    ("eigh values", lambda xp, d: xp.linalg.eigh(d["s"])[0], None),
    ("svd values", lambda xp, d: xp.linalg.svd(d["m"])[1], None),
    ("tensordot", lambda xp, d: xp.tensordot(d["a"], d["b"], axes=([1], [1])), None),
    ("tensordot empty axis", lambda xp, d: xp.tensordot(xp.ones((2, 0)), xp.ones((0, 3)), axes=1), F),
    ("einsum", lambda xp, d: xp.einsum("ij,kj->ik", d["a"], d["b"]), None),
    ("trace", lambda xp, d: xp.trace(d["m"]), None),
    # dtypes
    ("astype int32", lambda xp, d: d["a"].astype(xp.int32), None),
    ("astype float32", lambda xp, d: d["v"].astype(xp.float32), None),
    ("dtype == xp.float32", lambda xp, d: d["a"].dtype == xp.float32, None),
    ("dtype == np.float32", lambda xp, d: d["a"].dtype == np.float32, None),
    ("dtype == np.dtype", lambda xp, d: d["a"].dtype == np.dtype("float32"), None),
    ("dtype == str", lambda xp, d: d["v"].dtype == "int64", None),
    ("itemsize", lambda xp, d: d["v"].dtype.itemsize, None),
    ("asarray dtype", lambda xp, d: xp.asarray(d["a"], dtype=xp.float64), None),
    ("int plus float scalar", lambda xp, d: d["v"] + 1.5, F),
    ("finfo eps", lambda xp, d: float(xp.finfo(xp.float32).eps), None),
    ("iinfo max", lambda xp, d: xp.iinfo(xp.int8).max, None),
    ("shape ndim size", lambda xp, d: (d["t"].shape, d["t"].ndim, d["t"].size), None),
]


def _host(r):
    if isinstance(r, ct.Tensor):
        return ct.asnumpy(r)
    if isinstance(r, (tuple, list)):
        return type(r)(_host(x) for x in r) if not hasattr(r, "_fields") else tuple(_host(x) for x in r)
    return r


def _compare(expected, got, flag, name):
    if isinstance(expected, (tuple, list)) and not isinstance(got, np.ndarray):
        assert isinstance(got, (tuple, list)) and len(got) == len(expected), name
        for e, g in zip(expected, got):
            _compare(e, g, flag, name)
        return
    if isinstance(expected, (bool, int, float)) and not isinstance(expected, np.generic):
        assert type(got) is type(expected) or np.isclose(got, expected), (name, got, expected)
        assert np.isclose(float(got), float(expected)), (name, got, expected)
        return
    e, g = np.asarray(expected), np.asarray(got)
    assert g.shape == e.shape, (name, g.shape, e.shape)
    if flag == F and e.dtype == np.float64:
        assert g.dtype == np.float32, (name, g.dtype)
    else:
        assert g.dtype == e.dtype, (name, g.dtype, e.dtype)
    tol = 1e-5 if g.dtype != np.float64 else 1e-12
    assert np.allclose(g.astype(np.float64), e.astype(np.float64), rtol=tol, atol=tol, equal_nan=True), \
        (name, g, e)


@pytest.mark.parametrize("name,idiom,flag", IDIOMS, ids=[i[0] for i in IDIOMS])
def test_idiom(name, idiom, flag):
    expected = idiom(np, _inputs(np))
    got = _host(idiom(ct, _inputs(ct)))
    _compare(expected, got, flag, name)


def test_idiom_count():
    assert len(IDIOMS) >= 100


# NumPy's functions applied to ctensor arrays run in ctensor and give ctensor arrays.
NUMPY_CALLS = [
    ("exp", lambda np_, x: np_.exp(x)),
    ("add", lambda np_, x: np_.add(x, 1)),
    ("sqrt", lambda np_, x: np_.sqrt(np_.abs(x))),
    ("maximum", lambda np_, x: np_.maximum(x, 0)),
    ("sum", lambda np_, x: np_.sum(x, axis=0)),
    ("mean", lambda np_, x: np_.mean(x)),
    ("std", lambda np_, x: np_.std(x, axis=1)),
    ("max", lambda np_, x: np_.max(x)),
    ("sum positional", lambda np_, x: np_.sum(x, 1)),
    ("mean positional", lambda np_, x: np_.mean(x, 0)),
    ("add.reduce", lambda np_, x: np_.add.reduce(x, axis=1)),
    ("concatenate", lambda np_, x: np_.concatenate([x, x])),
    ("transpose", lambda np_, x: np_.transpose(x)),
    ("reshape", lambda np_, x: np_.reshape(x, (4, 3))),
    ("where", lambda np_, x: np_.where(x > 0, x, 0)),
    ("dot", lambda np_, x: np_.dot(x, x.T)),
    ("linalg.norm", lambda np_, x: np_.linalg.norm(x)),
    ("cumsum", lambda np_, x: np_.cumsum(x)),
    ("median", lambda np_, x: np_.median(x)),
    ("sort", lambda np_, x: np_.sort(x, axis=1)),
    ("diagonal", lambda np_, x: np_.diagonal(x)),
    ("take", lambda np_, x: np_.take(x, [0, 5])),
    ("linalg.pinv", lambda np_, x: np_.linalg.pinv(x)),
]


@pytest.mark.parametrize("name,call", NUMPY_CALLS, ids=[c[0] for c in NUMPY_CALLS])
def test_numpy_function_on_ctensor(name, call):
    a = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
    r = call(np, ct.asarray(a))
    assert isinstance(r, ct.Tensor), (name, type(r))
    _compare(call(np, a), ct.asnumpy(r), None, name)


def test_numpy_function_missing_in_ctensor_raises_type_error():
    x = ct.ones(3)
    with pytest.raises(TypeError, match="fft"):
        np.fft.fft(x)
    with pytest.raises(TypeError, match="arccosh"):
        np.arccosh(x)


def test_asarray_of_grad_tensor_raises():
    x = ct.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="requires grad"):
        np.asarray(x)
    assert np.asarray(x.detach()).tolist() == [1.0, 1.0, 1.0]


def test_random_with_seed():
    ct.random.seed(7)
    r1 = ct.random.rand(3, 2)
    ct.random.seed(7)
    r2 = ct.random.rand(3, 2)
    assert r1.shape == np.random.rand(3, 2).shape and r1.dtype == ct.float32
    assert ct.asnumpy(r1).tolist() == ct.asnumpy(r2).tolist()
    assert bool(ct.all((r1 >= 0) & (r1 < 1)))
    k = ct.asnumpy(ct.random.randint(0, 10, size=50))
    assert k.dtype == np.int64 and k.min() >= 0 and k.max() < 10
    c = ct.asnumpy(ct.random.choice(10, 6, replace=False))
    assert len(set(c.tolist())) == 6 and c.min() >= 0 and c.max() < 10
    pick = ct.asnumpy(ct.random.choice(ct.asarray([5.0, 6.0, 7.0]), size=(2, 2)))
    assert pick.shape == (2, 2) and set(pick.ravel().tolist()) <= {5.0, 6.0, 7.0}
    weighted = ct.asnumpy(ct.random.choice(3, 400, p=[0.0, 0.25, 0.75]))
    assert 0 not in weighted.tolist() and 40 < (weighted == 1).sum() < 160
    x = ct.arange(10)
    ct.random.shuffle(x)
    assert sorted(ct.asnumpy(x).tolist()) == list(range(10))
    with pytest.raises(ValueError, match="larger sample"):
        ct.random.choice(3, 4, replace=False)
