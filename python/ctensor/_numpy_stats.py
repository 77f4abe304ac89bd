"""NumPy's statistics over ctensor functions: quantile, percentile, median, average, histogram,
cov, corrcoef and the nan-ignoring reductions (nansum, nanmean, nanmax, nanmin). Each is a
composition (python/README.md lists them); results keep a float input's dtype, integers are
computed in the default float (float32).
"""

import builtins as _b
import math as _math

from . import _C
from . import _api
from ._numpy_compat import (  # noqa: A004  NumPy's names of the reductions
    _axis, _float, _ravel, all, asarray, builtins_bool, max, mean, min, sum, _f64, _i64,
)

def _nan_fill(a, value):
    a = asarray(a)
    return _C.where(_C.isnan(a), value, a) if a.dtype.is_floating_point else a


def nansum(a, axis=None, *, keepdims=False):
    """numpy.nansum: the sum, nans counted as zero."""
    return sum(_nan_fill(a, 0.0), axis=axis, keepdims=keepdims)


def nanmean(a, axis=None, *, keepdims=False):
    """numpy.nanmean: the mean of the numbers that are not nan (nan where there are none)."""
    a = _float(asarray(a))
    n = sum(_C.logical_not(_C.isnan(a)), axis=axis, keepdims=keepdims)
    return _C.div(nansum(a, axis=axis, keepdims=keepdims), _C.astype(n, a.dtype))


def nanmax(a, axis=None, *, keepdims=False):
    """numpy.nanmax: the largest number that is not nan (nan where there are none)."""
    a = asarray(a)
    r = max(_nan_fill(a, -_math.inf), axis=axis, keepdims=keepdims)
    if not a.dtype.is_floating_point:
        return r
    none = all(_C.isnan(a), axis=axis, keepdims=keepdims)
    return _C.where(none, _math.nan, r)


def nanmin(a, axis=None, *, keepdims=False):
    """numpy.nanmin: the smallest number that is not nan (nan where there are none)."""
    a = asarray(a)
    r = min(_nan_fill(a, _math.inf), axis=axis, keepdims=keepdims)
    if not a.dtype.is_floating_point:
        return r
    none = all(_C.isnan(a), axis=axis, keepdims=keepdims)
    return _C.where(none, _math.nan, r)


# ---- Statistics ---------------------------------------------------------------------------------


def _sorted_along(a, axis):
    a = _float(asarray(a))
    if axis is None:
        return _C.sort(_ravel(a), axis=0), 0
    axis = _axis(axis, a.ndim, "quantile")
    return _C.sort(a, axis=axis), axis


def quantile(a, q, axis=None, *, keepdims=False, method="linear"):
    """numpy.quantile (method 'linear'): q in [0, 1], a number or 1-d; NaN propagates."""
    if method != "linear":
        raise ValueError(f"quantile: method {method!r} (ctensor has 'linear')")
    src = asarray(a)
    s, ax = _sorted_along(src, axis)
    n = s.shape[ax]
    if n == 0:
        raise ValueError("quantile: an empty axis has no quantiles")
    qs = asarray(q, dtype=_f64)
    if builtins_bool(_C.any(_C.logical_or(_C.lt(qs, 0), _C.gt(qs, 1)))):
        raise ValueError("quantile: q must be in [0, 1]")
    outs = []
    last = s.dtype
    for qv in (qs.tolist() if qs.ndim else [qs.item()]):
        pos = qv * (n - 1)
        lo = _b.int(_math.floor(pos))
        hi = _b.min(lo + 1, n - 1)
        g = pos - lo
        key_lo = [slice(None)] * s.ndim
        key_hi = [slice(None)] * s.ndim
        key_lo[ax], key_hi[ax] = lo, hi
        vlo, vhi = s[tuple(key_lo)], s[tuple(key_hi)]
        r = _C.add(vlo, _C.mul(_C.sub(vhi, vlo), g)) if g else vlo
        # nan sorts last: a slice holding one gives nan (NumPy's propagation)
        key_last = [slice(None)] * s.ndim
        key_last[ax] = n - 1
        r = _C.where(_C.isnan(s[tuple(key_last)]), s[tuple(key_last)], r)
        if keepdims:
            r = _C.unsqueeze(r, ax) if axis is not None else _C.reshape(r, (1,) * src.ndim)
        outs.append(_C.astype(r, last) if r.dtype != last else r)
    return _C.stack(outs, axis=0) if qs.ndim else outs[0]


def percentile(a, q, axis=None, *, keepdims=False, method="linear"):
    """numpy.percentile: quantile of q / 100."""
    qs = asarray(q, dtype=_f64)
    return quantile(a, _C.div(qs, 100.0) if qs.ndim else qs.item() / 100.0, axis, keepdims=keepdims,
                    method=method)


def median(a, axis=None, *, keepdims=False):
    """numpy.median: the middle value (the mean of the two middle ones); NaN propagates."""
    return quantile(a, 0.5, axis, keepdims=keepdims)


def average(a, axis=None, weights=None):
    """numpy.average: the mean, or the weighted mean along axis."""
    a = _float(asarray(a))
    if weights is None:
        return mean(a, axis=axis)
    w = _float(asarray(weights))
    if w.shape != a.shape:
        if axis is None or w.ndim != 1:
            raise ValueError("average: weights of another shape need a 1-d weights and an axis")
        shape = [1] * a.ndim
        shape[_axis(axis, a.ndim, "average")] = w.shape[0]
        w = _C.reshape(w, shape)
    return _C.div(sum(_C.mul(a, w), axis=axis), sum(_C.broadcast_to(w, a.shape), axis=axis))


def histogram(a, bins=10, range=None, density=False, weights=None):  # noqa: A002
    """numpy.histogram: counts in `bins` equal bins over range (default: min to max), the last
    bin closed; or in the bins whose edges are given. Returns (hist, bin_edges)."""
    a = _ravel(a)
    if isinstance(bins, int):
        if range is None:
            lo, hi = (float(_C.min(a)), float(_C.max(a))) if a.shape[0] else (0.0, 1.0)
        else:
            lo, hi = float(range[0]), float(range[1])
        if lo > hi:
            raise ValueError(f"histogram: max must be larger than min in range ({lo}, {hi})")
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        edges = _C.linspace(lo, hi, bins + 1, dtype=_f64, device=a.device)
    else:
        edges = _C.astype(asarray(bins, device=a.device), _f64)
        bins = edges.shape[0] - 1
    x = _C.astype(a, _f64)
    idx = _C.sub(_api.searchsorted(edges, x, side="right"), 1)
    last = float(edges[bins])
    idx = _C.where(_C.eq(x, last), bins - 1, idx)  # the last bin includes its right edge
    inside = _C.logical_and(_C.ge(idx, 0), _C.lt(idx, bins))
    idx = _C.where(inside, idx, 0)
    if weights is None:
        w = _C.astype(inside, _i64)
        hist = _C.zeros((bins,), dtype=_i64, device=a.device)
    else:
        wt = _ravel(weights)
        w = _C.where(inside, wt, 0)
        hist = _C.zeros((bins,), dtype=w.dtype, device=a.device)
    hist = _C.scatter_add(hist, 0, idx, w)
    if density:
        widths = _C.sub(edges[1:], edges[:-1])
        hist = _C.div(_C.div(_C.astype(hist, _f64), widths), float(_C.sum(hist)))
    # the edges in a's floating dtype (float64 for integers), as NumPy
    return hist, (_C.astype(edges, a.dtype) if a.dtype.is_floating_point else edges)


def cov(m, y=None, rowvar=True, bias=False, ddof=None):
    """numpy.cov: the covariance matrix of the variables (rows when rowvar), a 0-d array for one
    variable."""
    x = _float(asarray(m))
    if x.ndim == 1:
        x = _C.reshape(x, (1, -1))
    elif not rowvar:
        x = x.mT
    if y is not None:
        yy = _float(asarray(y))
        yy = _C.reshape(yy, (1, -1)) if yy.ndim == 1 else (yy if rowvar else yy.mT)
        x = _C.cat([x, yy], axis=0)
    if ddof is None:
        ddof = 0 if bias else 1
    n = x.shape[1]
    xc = _C.sub(x, _C.mean(x, axis=1, keepdims=True))
    c = _C.div(_C.matmul(xc, xc.mT), float(n - ddof))
    return _C.reshape(c, ()) if c.shape == (1, 1) else c


def corrcoef(x, y=None, rowvar=True):
    """numpy.corrcoef: the correlation coefficients (cov over the outer product of the standard
    deviations), clipped to [-1, 1]."""
    c = cov(x, y, rowvar)
    if c.ndim == 0:
        return _C.div(c, c)
    d = _C.sqrt(_C.diagonal(c))
    r = _C.div(_C.div(c, _C.reshape(d, (-1, 1))), _C.reshape(d, (1, -1)))
    return _C.clamp(r, -1.0, 1.0)


__all__ = [
    "nansum", "nanmean", "nanmax", "nanmin", "quantile", "percentile", "median", "average", "histogram",
    "cov", "corrcoef",
]
