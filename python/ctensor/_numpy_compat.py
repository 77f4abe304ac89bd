"""NumPy's meanings for NumPy's names in the top-level namespace.

Where PyTorch gives a NumPy name another meaning (transpose swapping two axes, cumsum needing an
axis, dot of vectors only, round without decimals, pad taking torch's flat list, split by part
size), the name here means what NumPy says; NumPy's edge cases (empty arange, eye(n, 0),
zero-length contractions, axis errors) behave as NumPy's; the functions NumPy users reach for
that are not single C calls (concatenate, unique, diff, split...) are compositions of ctensor
functions, listed in python/README.md. Statistics are in _numpy_stats.py, the array's methods
and the NumPy protocols in _numpy_protocols.py.
"""

import builtins as _b
import math as _math
import operator as _operator

from . import _C
from . import _api

asarray = _C.asarray
_f32 = _C._dtypes["float32"]
_f64 = _C._dtypes["float64"]
_i64 = _C._dtypes["int64"]
_boolean = _C._dtypes["bool"]
_Tensor = _C.Tensor
_FLOATS = frozenset(_C._dtypes[n] for n in ("float16", "bfloat16", "float32", "float64"))
_BOOLS = frozenset([_boolean])
_ALL_DTYPES = frozenset(_C._dtypes.values())


# An axis out of range: an ArgumentError (a ValueError) that is also an IndexError, as NumPy's
# AxisError; the extension raises it for the C library's "dim N out of range" errors too.
AxisError = _C.AxisError


def _axis(axis, ndim, what):
    if not -_b.max(ndim, 1) <= axis < _b.max(ndim, 1):
        raise AxisError(f"{what}: axis {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim if ndim else 0


def _axes(axis, ndim, what):
    if axis is None:
        return None
    if not isinstance(axis, (tuple, list)):
        return _axis(_operator.index(axis), ndim, what)  # an int, numpy.int64, a 0-d tensor
    return tuple(_axis(_operator.index(a), ndim, what) for a in axis)


def _float(x):
    """x in a floating dtype: integers and bool in the default float (float32)."""
    return x if x.dtype.is_floating_point else _C.astype(x, _f32)


# ---- Reductions with NumPy's results ----------------------------------------------------------------


def _reduction(name, fn):
    def reduce(x, /, axis=None, dtype=None, *, keepdims=False, **kw):
        if axis is None and dtype is None and not kw and not keepdims and type(x) is _Tensor:
            return fn(x)  # the common case, at the C function's cost
        x = asarray(x)
        if "dim" in kw:
            axis = kw.pop("dim")
        if "keepdim" in kw:
            keepdims = kw.pop("keepdim")
        axis = _axes(axis, x.ndim, name)
        if dtype is not None and x.dtype != dtype:
            x = _C.astype(x, dtype)  # accumulate in the dtype asked for
        if dtype is not None:
            kw["dtype"] = dtype
        r = fn(x, axis=axis, keepdims=keepdims, **kw)
        return r if dtype is None or r.dtype == dtype else _C.astype(r, dtype)
    reduce.__name__ = name
    reduce.__doc__ = fn.__doc__
    return reduce


sum = _reduction("sum", _C.sum)  # noqa: A001
prod = _reduction("prod", _C.prod)


def _plain_reduction(name, fn, result=None):
    # dtypes whose result needs no adjustment (an integer mean is computed as a float)
    fast = _FLOATS if name in ("mean", "std", "var") else _BOOLS if result is not None else _ALL_DTYPES
    def reduce(x, /, axis=None, *, keepdims=False, **kw):
        if axis is None and not kw and not keepdims and type(x) is _Tensor and x.dtype in fast:
            return fn(x)  # the common case, at the C function's cost
        x = asarray(x)
        if "dim" in kw:
            axis = kw.pop("dim")
        if "keepdim" in kw:
            keepdims = kw.pop("keepdim")
        axes = _axes(axis, x.ndim, name)
        if name in ("mean", "std", "var") and not x.dtype.is_floating_point:
            x = _float(x)  # NumPy: integers average in the default float
        if "ddof" in kw:  # NumPy's name of the correction
            kw["correction"] = kw.pop("ddof")
        if axes == () and name in ("std", "var"):
            # no axis reduced: each element against itself
            c = kw.get("correction", 0)
            r = _C.sub(_float(x), _float(x))
            return r if c == 0 else _C.div(r, r)  # 0/0: NaN where n - correction <= 0
        r = fn(x, axis=axes, keepdims=keepdims, **kw)
        return r if result is None or r.dtype == result else _C.astype(r, result)
    reduce.__name__ = name
    reduce.__doc__ = fn.__doc__
    return reduce


def _spread(name, fn):
    # The standard's correction= and NumPy's ddof= (NumPy 2 takes both names, one at a time).
    plain = _plain_reduction(name, fn)

    def reduce(x, /, axis=None, *, correction=0.0, keepdims=False, ddof=None, **kw):
        if ddof is not None:
            if correction != 0:
                raise _C.ArgumentError(f"{name}: ddof={ddof} and correction={correction} given; pass one")
            correction = ddof
        if correction != 0:
            kw["correction"] = correction
        return plain(x, axis, keepdims=keepdims, **kw)
    reduce.__name__ = name
    reduce.__doc__ = fn.__doc__
    return reduce


mean = _plain_reduction("mean", _C.mean)
std = _spread("std", _C.std)
var = _spread("var", _C.var)
max = _plain_reduction("max", _C.max)  # noqa: A001
min = _plain_reduction("min", _C.min)  # noqa: A001
all = _plain_reduction("all", _C.all, _boolean)  # noqa: A001
any = _plain_reduction("any", _C.any, _boolean)  # noqa: A001


def argmax(x, /, axis=None, *, keepdims=False):
    """argmax(x, /, axis=None, *, keepdims=False): the index (int64) of the largest value, over
    the flattened array when axis is None, else along axis; the first one where it repeats."""
    x = asarray(x)
    return _C.argmax(x, axis=_axes(axis, x.ndim, "argmax"), keepdims=keepdims)


def argmin(x, /, axis=None, *, keepdims=False):
    """argmin(x, /, axis=None, *, keepdims=False): the index (int64) of the smallest value, over
    the flattened array when axis is None, else along axis; the first one where it repeats."""
    x = asarray(x)
    return _C.argmin(x, axis=_axes(axis, x.ndim, "argmin"), keepdims=keepdims)


def count_nonzero(a, axis=None, *, keepdims=False):
    """numpy.count_nonzero: how many elements are not zero (int64)."""
    a = asarray(a)
    return _C.sum(_C.ne(a, 0), axis=_axes(axis, a.ndim, "count_nonzero"), keepdims=keepdims, dtype=_i64)


# ---- Creation with NumPy's edge cases ---------------------------------------------------------------


_EXACT = 2 ** 53  # ints of this magnitude or more are not exact as doubles


def _big(*values):
    return _b.any(isinstance(v, int) and not isinstance(v, _b.bool) and _b.abs(v) >= _EXACT for v in values)


def arange(start, /, stop=None, step=1, *, dtype=None, device=None):
    """Values from start up to stop by step; empty when step goes away from stop (NumPy)."""
    lo, hi = (0, start) if stop is None else (start, stop)
    if step != 0 and (hi - lo) * step <= 0:
        if dtype is None:
            dtype = _f32 if _b.any(isinstance(v, float) for v in (lo, hi, step)) else _i64
        return _C.empty((0,), dtype=dtype, device=device)
    if _big(lo, hi, step) and _b.all(isinstance(v, int) for v in (lo, hi, step)) and dtype in (None, _i64):
        # exact int64: the count in Python ints, the values as lo + step * i in int64
        n = -((lo - hi) // step)
        i = _C.arange(0, n, 1, dtype=_i64, device=device)
        step_t = asarray(step, dtype=_i64, device=device)
        return _C.add(_C.mul(i, step_t), asarray(lo, dtype=_i64, device=device))
    return _C.arange(start, stop, step, dtype=dtype, device=device)


def full(shape, fill_value, *, dtype=None, device=None):
    """shape filled with fill_value (an int of 2^53 or more stays exact in int64)."""
    if _big(fill_value) and dtype in (None, _i64):
        r = _C.empty(shape, dtype=_i64, device=device)
        r[...] = fill_value
        return r
    return _C.full(shape, fill_value, dtype=dtype, device=device)


def eye(n_rows, n_cols=None, /, *, k=0, dtype=None, device=None):
    """The identity (ones on diagonal k) of n_rows x n_cols; n_cols=0 gives no columns."""
    cols = n_rows if n_cols is None else n_cols
    if n_rows == 0 or cols == 0 or k >= cols or k <= -n_rows:
        # no column left, or a diagonal outside the matrix (k of any size, as NumPy's)
        return _C.zeros((n_rows, cols), dtype=dtype, device=device)
    return _C.eye(n_rows, n_cols, k=k, dtype=dtype, device=device)


# ---- Manipulation --------------------------------------------------------------------------------


def broadcast_to(x, /, shape):
    """x broadcast to shape (a view)."""
    return _C.broadcast_to(x, shape)


def permute_dims(x, /, axes):
    """x with its axes in the order given (a view)."""
    return _C.permute_dims(x, axes)


def expand_dims(a, axis=0):
    """x with a new axis of size 1 at axis (a view; axis positional as in NumPy)."""
    return _C.unsqueeze(a, axis)


def tril(m, k=0):
    """The lower triangle (on and below diagonal k); k positional as in NumPy."""
    return _C.tril(m, k=k)


def triu(m, k=0):
    """The upper triangle (on and above diagonal k); k positional as in NumPy."""
    return _C.triu(m, k=k)


def transpose(a, axes=None):
    """numpy.transpose: axes reversed (axes=None), else permuted as given."""
    a = asarray(a)
    if axes is None:
        return _C.permute_dims(a, tuple(range(a.ndim))[::-1])
    return _C.permute_dims(a, tuple(axes))


def _ravel(a):
    return _C.reshape(asarray(a), (-1,))


def ravel(a):
    """The elements in row-major order, 1-d (a view when the strides allow one)."""
    return _ravel(a)


def concatenate(arrays, axis=0, *, dtype=None):
    """numpy.concatenate: joins arrays along an existing axis (axis=None: flattened first)."""
    arrays = [asarray(a) for a in arrays]
    if dtype is not None:
        arrays = [_C.astype(a, dtype) for a in arrays]
    return _api.concat(arrays, axis=axis)


def _atleast(a, n):
    a = asarray(a)
    if a.ndim >= n:
        return a
    if n == 1 or a.ndim == 0:
        return _C.reshape(a, (1,) * n)
    if n == 2:
        return _C.reshape(a, (1, a.shape[0]))
    return _C.reshape(a, (1,) + a.shape + (1,) * (3 - a.ndim - 1))


def atleast_1d(a):
    """numpy.atleast_1d: a as an array of one dimension or more (a 0-d array becomes shape (1,))."""
    return _atleast(a, 1)


def atleast_2d(a):
    """numpy.atleast_2d: a as an array of two dimensions or more (a 1-d array of n becomes a row,
    shape (1, n); a 0-d array shape (1, 1))."""
    return _atleast(a, 2)


def vstack(tup):
    """Rows stacked: 1-d arrays become rows."""
    return _C.cat([_atleast(a, 2) for a in tup], axis=0)


def hstack(tup):
    """Columns stacked (1-d arrays joined end to end)."""
    arrays = [_atleast(a, 1) for a in tup]
    return _C.cat(arrays, axis=0 if arrays[0].ndim == 1 else 1)


def column_stack(tup):
    """1-d arrays as the columns of a 2-d array (2-d ones joined as they are)."""
    cols = []
    for a in tup:
        a = asarray(a)
        cols.append(_C.reshape(a, (-1, 1)) if a.ndim < 2 else a)
    return _C.cat(cols, axis=1)


def array_split(ary, indices_or_sections, axis=0):
    """numpy.array_split: n nearly equal parts (the first ones one longer), or the parts between
    the given indices (views)."""
    a = asarray(ary)
    axis = _axis(axis, a.ndim, "array_split")
    n = a.shape[axis]
    if isinstance(indices_or_sections, int):
        k = indices_or_sections
        if k <= 0:
            raise ValueError(f"array_split: number sections must be larger than 0, got {k}")
        size, extra = divmod(n, k)
        bounds = [0]
        for i in range(k):
            bounds.append(bounds[-1] + size + (1 if i < extra else 0))
    else:
        bounds = [0] + [_b.min(_b.max(i if i >= 0 else n + i, 0), n) for i in indices_or_sections] + [n]
    key = [slice(None)] * a.ndim
    out = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        key[axis] = slice(lo, _b.max(lo, hi))
        out.append(a[tuple(key)])
    return out


def split(ary, indices_or_sections, axis=0):
    """numpy.split: `indices_or_sections` equal parts (which must divide the axis), or the parts
    between the given indices. (PyTorch's split by part size is x.split(size).)"""
    a = asarray(ary)
    if isinstance(indices_or_sections, int) and a.shape[_axis(axis, a.ndim, "split")] % indices_or_sections:
        raise ValueError("split: array split does not result in an equal division")
    return array_split(a, indices_or_sections, axis)


def diag(v, k=0):
    """numpy.diag: the matrix with 1-d v on diagonal k, or the diagonal k of a 2-d v."""
    v = asarray(v)
    if v.ndim == 2:
        return _C.diagonal(v, k, 0, 1)
    if v.ndim != 1:
        raise ValueError(f"diag: input must be 1-d or 2-d, got {v.ndim}-d")
    n = v.shape[0] + _b.abs(k)
    out = _C.zeros((n, n), dtype=v.dtype, device=v.device)
    if v.shape[0]:
        rows = _C.arange(v.shape[0], device=v.device)
        cols = _C.add(rows, k) if k >= 0 else rows
        rows = rows if k >= 0 else _C.add(rows, -k)
        out[rows, cols] = v
    return out


def identity(n, dtype=None, *, device=None):
    """numpy.identity: the n x n identity."""
    return eye(n, dtype=dtype, device=device)


def isin(element, test_elements, *, invert=False):
    """numpy.isin: whether each element of `element` is among test_elements."""
    e = asarray(element)
    t = _C.reshape(asarray(test_elements, device=e.device), (-1,))
    r = _C.any(_C.eq(_C.unsqueeze(e, -1), t), axis=-1) if t.shape[0] else _C.zeros(e.shape, dtype=_boolean,
                                                                                        device=e.device)
    return _C.logical_not(r) if invert else r


def nan_to_num(x, nan=0.0, posinf=None, neginf=None):
    """numpy.nan_to_num: nan, +inf and -inf replaced (by 0 and the dtype's largest numbers)."""
    x = asarray(x)
    if not x.dtype.is_floating_point:
        return x.clone()
    big = _api.finfo(x.dtype).max
    x = _C.where(_C.isnan(x), nan, x)
    x = _C.where(_C.eq(x, _math.inf), big if posinf is None else posinf, x)
    return _C.where(_C.eq(x, -_math.inf), -big if neginf is None else neginf, x)


def ndim(a):
    """numpy.ndim: the number of axes of a (an array, a sequence or a number)."""
    return asarray(a).ndim


def shape(a):
    """numpy.shape: the shape of a."""
    return asarray(a).shape


def size(a, axis=None):
    """numpy.size: the number of elements of a (along axis when given)."""
    a = asarray(a)
    return a.size if axis is None else a.shape[_axis(axis, a.ndim, "size")]


def copy(a):
    """numpy.copy: a new array with a's values."""
    return asarray(a).clone()


def isscalar(element):
    """numpy.isscalar: whether element is a scalar (a Python or NumPy number, a str, bytes)."""
    import numbers
    return isinstance(element, (numbers.Number, str, bytes))


def swapaxes(a, axis1, axis2):
    """numpy.swapaxes: a with two axes exchanged (a view)."""
    return _C.transpose(asarray(a), axis1, axis2)


def logspace(start, stop, num=50, endpoint=True, base=10.0, *, dtype=None, device=None):
    """numpy.logspace: base ** linspace(start, stop, num, endpoint)."""
    e = _C.linspace(start, stop, num, endpoint=endpoint, dtype=dtype, device=device)
    return _C.pow(asarray(base, dtype=e.dtype, device=e.device), e)


def clip(x, /, min=None, max=None, *, a_min=None, a_max=None):  # noqa: A002
    """clip(x, /, min=None, max=None): x limited to [min, max] (the standard's names; NumPy's
    a_min=/a_max= too); float bounds with an integer array give the default float, as NumPy
    gives a float."""
    if a_min is not None:
        if min is not None:
            raise _C.ArgumentError(f"clip: min={min} and a_min={a_min} given; pass one")
        min = a_min  # noqa: A001
    if a_max is not None:
        if max is not None:
            raise _C.ArgumentError(f"clip: max={max} and a_max={a_max} given; pass one")
        max = a_max  # noqa: A001
    x = asarray(x)
    if not x.dtype.is_floating_point and (isinstance(min, float) or isinstance(max, float)):
        x = _float(x)
    return _api.clip(x, min, max)


arctan2 = _C.atan2


def cumsum(a, axis=None, dtype=None, **kw):
    """numpy.cumsum: running sums along axis, over the flattened array when axis is None."""
    axis = kw.pop("dim", axis)
    a = asarray(a)
    if axis is None:
        a, axis = _ravel(a), 0
    return _C.cumsum(a, _axis(axis, a.ndim, "cumsum"), dtype=dtype)


def cumprod(a, axis=None, dtype=None, **kw):
    """numpy.cumprod: running products along axis, over the flattened array when axis is None."""
    axis = kw.pop("dim", axis)
    a = asarray(a)
    if axis is None:
        a, axis = _ravel(a), 0
    return _C.cumprod(a, _axis(axis, a.ndim, "cumprod"), dtype=dtype)


def diff(a, n=1, axis=-1, prepend=None, append=None):
    """numpy.diff: n-th differences along axis (bool: whether neighbours differ); 0-d prepend
    and append values are broadcast to one slice along axis, as NumPy."""
    a = asarray(a)
    axis = _axis(axis, a.ndim, "diff")

    def extra(e):
        if e is None:
            return None
        e = asarray(e, device=a.device)
        if e.ndim == 0:
            shape = list(a.shape)
            shape[axis] = 1
            e = _C.broadcast_to(e, tuple(shape))
        return e

    return _C.diff(a, n, axis, extra(prepend), extra(append))


def pad(array, pad_width, mode="constant", constant_values=0, **kw):
    """numpy.pad: pad_width is an int, (before, after), or one pair per axis; modes 'constant'
    (constant_values), 'edge', 'reflect'. (ctensor.nn.functional.pad is PyTorch's.)"""
    a = asarray(array)
    if isinstance(pad_width, int):
        pairs = [(pad_width, pad_width)] * a.ndim
    else:
        pw = [tuple(p) if not isinstance(p, int) else (p, p) for p in
              (pad_width if not isinstance(pad_width[0], int) else [pad_width])]
        pairs = pw * a.ndim if len(pw) == 1 else pw
    if len(pairs) != a.ndim:
        raise ValueError(f"pad: {len(pairs)} (before, after) pairs for an array of dimension {a.ndim}")
    flat = []
    for before, after in reversed(pairs):  # torch's order: the last axis first
        if before < 0 or after < 0:
            raise ValueError(f"pad: negative pad width ({before}, {after})")
        flat += [before, after]
    torch_mode = {"constant": "constant", "edge": "replicate", "reflect": "reflect"}.get(mode)
    if torch_mode is None:
        raise ValueError(f"pad: mode {mode!r} (ctensor has 'constant', 'edge', 'reflect')")
    if torch_mode == "constant":
        return _C.pad(a, flat, "constant", constant_values)
    return _C.pad(a, flat, torch_mode)


def round(x, decimals=0):  # noqa: A001
    """numpy.round: to `decimals` places (half to even), as NumPy: round(x * 10**d) / 10**d."""
    x = asarray(x)
    if decimals == 0:
        return _C.round(x)
    if not x.dtype.is_floating_point:
        if decimals > 0:
            return x.clone()
        f = 10 ** (-decimals)
        return _C.mul(_C.astype(_C.round(_C.div(_C.astype(x, _f64), f)), x.dtype), f)
    if decimals > 0:
        f = 10.0 ** decimals
        return _C.div(_C.round(_C.mul(x, f)), f)
    f = 10.0 ** -decimals
    return _C.mul(_C.round(_C.div(x, f)), f)


around = round


# ---- Products ---------------------------------------------------------------------------------


tensordot = _api.tensordot


def dot(a, b):
    """numpy.dot: products for 0-d operands, the inner product of vectors, matmul of 2-d
    arrays, else a sum over a's last axis and b's second-to-last."""
    a, b = asarray(a), asarray(b)
    if a.ndim == 0 or b.ndim == 0:
        return _C.mul(a, b)
    if a.ndim == 1 and b.ndim == 1:
        return _C.dot(a, b)
    if b.ndim == 1:
        return tensordot(a, b, axes=([-1], [0]))
    return tensordot(a, b, axes=([-1], [-2]))


def trace(a, offset=0, axis1=0, axis2=1):
    """numpy.trace: the sum of the diagonal (offset) over axis1 and axis2."""
    return _C.sum(_C.diagonal(asarray(a), offset, axis1, axis2), axis=-1)


def diagonal(a, offset=0, axis1=0, axis2=1):
    """numpy.diagonal: the diagonal (offset) over axis1 and axis2, which default to the first two
    axes as NumPy's (linalg.diagonal takes the last two), as the last axis of the result."""
    return _C.diagonal(asarray(a), offset, axis1, axis2)


def take(a, indices, axis=None):
    """numpy.take: elements at integer indices along axis, of a flattened when axis is None."""
    a = asarray(a)
    return _api.take(_ravel(a) if axis is None else a, indices, axis=0 if axis is None else axis)


def vdot(a, b):
    """The inner product of a and b flattened."""
    return _C.dot(_ravel(a), _ravel(b))


def inner(a, b):
    """Sums of products over the last axes of a and b."""
    a, b = asarray(a), asarray(b)
    if a.ndim == 0 or b.ndim == 0:
        return _C.mul(a, b)
    return tensordot(a, b, axes=([-1], [-1]))


def outer(a, b):
    """numpy.outer: every product of a's and b's elements (both flattened)."""
    return _C.mul(_C.reshape(asarray(a), (-1, 1)), _C.reshape(asarray(b), (1, -1)))


power = _C.pow
true_divide = _C.div
absolute = _C.abs
mod = _C.remainder


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """numpy.isclose: |a - b| <= atol + rtol * |b| elementwise (infinities close to themselves)."""
    a, b = asarray(a), asarray(b)
    if not a.dtype.is_floating_point:
        a = _float(a)
    if not b.dtype.is_floating_point:
        b = _float(b)
    close = _C.le(_C.abs(_C.sub(a, b)), _C.add(_C.mul(_C.abs(b), rtol), atol))
    close = _C.logical_or(_C.logical_and(close, _C.isfinite(_C.sub(a, b))), _C.eq(a, b))
    if equal_nan:
        close = _C.logical_or(close, _C.logical_and(_C.isnan(a), _C.isnan(b)))
    return close


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """numpy.allclose: whether every element is close (a Python bool)."""
    return builtins_bool(_C.all(isclose(a, b, rtol, atol, equal_nan)))


builtins_bool = _b.bool


# ---- Searching ------------------------------------------------------------------------------------


def where(condition, x=None, y=None, /):
    """where(c, x, y): x where c else y; where(c): the indices of c's nonzero elements (nonzero)."""
    if x is None and y is None:
        return _C.nonzero(asarray(condition))
    if x is None or y is None:
        raise ValueError("where: either both or neither of x and y should be given")
    return _C.where(condition, x, y)


def argwhere(a):
    """numpy.argwhere: the indices of the nonzero elements, one row each (n, ndim)."""
    a = asarray(a)
    if a.ndim == 0:
        return _C.zeros((1 if builtins_bool(a) else 0, 0), dtype=_i64, device=a.device)
    return _C.stack(list(_C.nonzero(a)), axis=1)


def flatnonzero(a):
    """The indices of the nonzero elements of a flattened."""
    return _C.nonzero(_ravel(a))[0]


# ---- Sets ---------------------------------------------------------------------------------------


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None):
    """numpy.unique: the sorted distinct values of ar flattened (nans as one value, after every
    number), and on request the index of each one's first occurrence, the index of each
    element's value (1-d) and the counts."""
    if axis is not None:
        raise NotImplementedError("unique: axis= is not in ctensor yet (the values of ar flattened only)")
    a = _ravel(ar)
    values, index, inverse, counts = _C.unique(a, indices=return_index, inverse=return_inverse,
                                               counts=return_counts)
    if a.dtype.is_floating_point and values.shape[0] and builtins_bool(_C.isnan(values[-1])):
        # NumPy's equal_nan: the nans (each distinct in ctensor, all last) are one value
        first = _b.int(_C.sum(_C.logical_not(_C.isnan(values))))
        if return_index:
            index = _C.cat([index[:first], _C.min(index[first:], axis=0, keepdims=True)], axis=0)
        if return_inverse:
            inverse = _C.clamp(inverse, None, first)
        if return_counts:
            counts = _C.cat([counts[:first], _C.sum(counts[first:], axis=0, keepdims=True)], axis=0)
        values = values[:first + 1]
    out = [values]
    if return_index:
        out.append(index)
    if return_inverse:
        out.append(_C.reshape(inverse, (-1,)))
    if return_counts:
        out.append(counts)
    return out[0] if len(out) == 1 else tuple(out)


__all__ = [
    "full", "diagonal", "take", "ndim", "shape", "size", "copy", "isscalar", "swapaxes", "logspace",
    "clip", "arctan2", "AxisError", "sum", "prod", "mean", "std", "var", "max", "min", "all", "any",
    "argmax", "argmin", "count_nonzero", "arange", "eye", "expand_dims", "tril", "triu",
    "broadcast_to", "permute_dims", "transpose", "ravel", "concatenate", "array_split", "split",
    "diag", "identity", "isin", "nan_to_num", "atleast_1d", "atleast_2d", "vstack", "hstack",
    "column_stack", "cumsum", "cumprod", "diff", "pad", "round", "around", "tensordot", "dot",
    "trace", "vdot", "inner", "outer", "power", "true_divide", "absolute", "mod", "isclose",
    "allclose", "where", "argwhere", "flatnonzero", "unique",
]
