"""The array's methods with NumPy's meanings, and the NumPy protocols on Tensor.

`install()` puts them on Tensor (a static type, through ctensor._C._set_tensor_attr):
x.transpose(), x.cumsum(), x.round(2), x.sum(0)... as NumPy's; `__array_ufunc__` and
`__array_function__`, so that numpy.exp(x) or numpy.sum(x) run in ctensor (as with CuPy) and what
ctensor lacks raises NumPy's TypeError naming the function; and `__array__`, which refuses a
tensor that requires grad, as torch's .numpy() does.
"""

import builtins as _b

from . import _C
from . import _api
from ._numpy_compat import (  # noqa: A004  NumPy's names
    all, any, argmax, argmin, clip, cumprod, cumsum, diagonal, dot, max, mean, min, prod, round, std,
    sum, swapaxes, transpose, var, _ravel,
)

# ---- Array methods with NumPy's meanings -----------------------------------------------------------


def _m_transpose(self, *axes):
    """x.transpose(*axes): NumPy's: axes reversed when none are given; x.transpose(1, 0) or
    x.transpose((1, 0)) permutes, so for a 2-d tensor x.transpose(0, 1) is the identity
    permutation, not PyTorch's swap (that is x.T, x.mT or x.swapaxes(0, 1)). Two axes of a
    tensor that is not 2-d, which NumPy refuses, swap as in PyTorch."""
    if not axes:
        return transpose(self)
    if len(axes) == 1 and not isinstance(axes[0], int):
        axes = tuple(axes[0])
    if len(axes) == 2 and self.ndim != 2:
        # PyTorch's two-axis swap, kept for tensors that are not 2-d (NumPy would refuse)
        return _C.transpose(self, axes[0], axes[1])
    return _C.permute_dims(self, axes)


def _m_cumsum(self, axis=None, dtype=None, **kw):
    return cumsum(self, kw.pop("dim", axis), dtype)


def _m_cumprod(self, axis=None, dtype=None, **kw):
    return cumprod(self, kw.pop("dim", axis), dtype)


def _m_round(self, decimals=0):
    return round(self, decimals)


def _m_dot(self, b):
    return dot(self, b)


def _method(fn):
    # x.sum(0), x.sum(0, 1) and x.sum((0, 1)) name axes positionally, as NumPy's and torch's methods
    def method(self, *axes, **kwargs):
        if axes:
            kwargs["axis"] = axes[0] if len(axes) == 1 else axes
        return fn(self, **kwargs)
    method.__name__ = fn.__name__
    method.__doc__ = fn.__doc__
    return method


def _m_ravel(self):
    return _ravel(self)


def _m_nonzero(self):
    return _C.nonzero(self)


def _m_clip(self, min=None, max=None):  # noqa: A002
    return clip(self, min, max)


def _m_diagonal(self, offset=0, axis1=0, axis2=1):
    return diagonal(self, offset, axis1, axis2)


def _m_repeat(self, repeats, axis=None):
    """x.repeat(repeats, axis=None): NumPy's (each element repeated; PyTorch's x.repeat(*sizes)
    is tile(x, sizes))."""
    return _C.repeat(self, repeats, axis=axis)


def _m_fill(self, value):
    """x.fill(value): NumPy's in-place fill (returns None)."""
    self.fill_(value)


def _m_swapaxes(self, axis1, axis2):
    return swapaxes(self, axis1, axis2)


# ---- The NumPy protocols ----------------------------------------------------------------------------

# numpy ufunc name -> ctensor function (for method '__call__')
_UFUNCS = {
    "add": "add", "subtract": "subtract", "multiply": "multiply", "divide": "divide",
    "true_divide": "divide", "floor_divide": "floor_divide", "power": "pow", "remainder": "remainder",
    "mod": "remainder", "fmod": "fmod", "negative": "negative", "positive": "positive",
    "absolute": "abs", "fabs": "abs", "sign": "sign", "exp": "exp", "expm1": "expm1", "log": "log",
    "log1p": "log1p", "log2": "log2", "sqrt": "sqrt", "square": "square", "sin": "sin", "cos": "cos",
    "tan": "tan", "tanh": "tanh", "arctan2": "atan2", "floor": "floor", "ceil": "ceil", "trunc": "trunc",
    "rint": "round", "maximum": "maximum", "minimum": "minimum", "equal": "equal",
    "not_equal": "not_equal", "less": "less", "less_equal": "less_equal", "greater": "greater",
    "greater_equal": "greater_equal", "logical_and": "logical_and", "logical_or": "logical_or",
    "logical_xor": "logical_xor", "logical_not": "logical_not", "isnan": "isnan", "isinf": "isinf",
    "isfinite": "isfinite", "reciprocal": "reciprocal", "matmul": "matmul",
}
# numpy ufunc name -> ctensor reduction (for method 'reduce')
_REDUCES = {"add": "sum", "multiply": "prod", "maximum": "max", "minimum": "min", "logical_and": "all",
            "logical_or": "any"}
_ACCUMULATES = {"add": "cumsum", "multiply": "cumprod"}


def _namespace():
    import sys
    return sys.modules["ctensor"]


def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    """NumPy's ufuncs applied to ctensor arrays run in ctensor (as CuPy's do); others raise
    NumPy's TypeError naming the ufunc."""
    if kwargs.get("out") is not None or kwargs.get("where", True) is not True:
        return NotImplemented
    dtype = kwargs.pop("dtype", None)
    kwargs.pop("casting", None)
    kwargs.pop("order", None)
    kwargs.pop("out", None)
    kwargs.pop("where", None)
    ns = _namespace()
    if method == "__call__":
        name = _UFUNCS.get(ufunc.__name__)
        if name is None or kwargs:
            return NotImplemented
        r = getattr(ns, name)(*inputs)
    elif method == "reduce" and ufunc.__name__ in _REDUCES and len(inputs) == 1:
        axis = kwargs.pop("axis", 0)
        keepdims = kwargs.pop("keepdims", False)
        if kwargs:
            return NotImplemented
        r = getattr(ns, _REDUCES[ufunc.__name__])(inputs[0], axis=axis, keepdims=keepdims)
    elif method == "accumulate" and ufunc.__name__ in _ACCUMULATES and len(inputs) == 1:
        r = getattr(ns, _ACCUMULATES[ufunc.__name__])(inputs[0], kwargs.pop("axis", 0))
    else:
        return NotImplemented
    return r if dtype is None else _api.astype(r, dtype)


# numpy functions that run as the ctensor function of the same name
_FUNCTIONS = {
    "sum", "prod", "mean", "std", "var", "max", "min", "amax", "amin", "all", "any", "argmax", "argmin",
    "cumsum", "cumprod", "transpose", "reshape", "ravel", "concatenate", "stack", "vstack", "hstack",
    "column_stack", "expand_dims", "squeeze", "moveaxis", "flip", "roll", "repeat", "tile", "where",
    "argwhere", "nonzero", "flatnonzero", "count_nonzero", "sort", "argsort", "searchsorted", "unique",
    "clip", "dot", "vdot", "inner", "outer", "tensordot", "matmul", "einsum", "isclose", "allclose",
    "array_equal", "median", "percentile", "quantile", "average", "histogram", "cov", "corrcoef", "diff",
    "pad", "round", "around", "around", "zeros_like", "ones_like", "empty_like", "full_like",
    "broadcast_to", "broadcast_arrays", "tril", "triu", "take", "linalg.norm", "linalg.solve", "linalg.inv",
    "linalg.det", "linalg.eigh", "linalg.svd", "linalg.qr", "linalg.cholesky", "trace", "diagonal",
    "atleast_1d", "atleast_2d", "meshgrid", "split", "array_split", "diag", "identity", "isin", "nan_to_num",
    "nansum", "nanmean", "nanmax", "nanmin", "ndim", "shape", "size", "copy", "swapaxes", "clip",
    "take", "linalg.eigvalsh", "linalg.matrix_rank", "linalg.pinv", "linalg.matrix_power",
}
_NP_NAMES = {"amax": "max", "amin": "min"}


def _array_function(self, func, types, args, kwargs):
    """NumPy's functions applied to ctensor arrays run in ctensor (as CuPy's); those ctensor lacks
    return NotImplemented, so NumPy raises its TypeError naming the function."""
    from . import Tensor
    if not _b.all(issubclass(t, Tensor) or t.__module__.startswith("numpy") for t in types):
        return NotImplemented
    module = getattr(func, "__module__", "") or ""
    name = func.__name__
    qual = "linalg." + name if module.endswith("linalg") else name
    if qual not in _FUNCTIONS:
        return NotImplemented
    ns = _namespace()
    if qual.startswith("linalg."):
        target = getattr(ns.linalg, name)
    else:
        target = getattr(ns, _NP_NAMES.get(name, name))
    if kwargs.get("out") is not None:
        return NotImplemented
    kwargs = {k: v for k, v in kwargs.items() if k != "out"}
    return target(*args, **kwargs)


def _array(self, dtype=None, copy=None):
    """numpy.asarray(x): the values as a NumPy array; refused for a tensor that requires grad
    (torch's .numpy() refuses it too: the array would not be tracked)."""
    if self.requires_grad:
        raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach() first.")
    r = self.get()
    return r if dtype is None else r.astype(dtype)


def install():
    """Puts NumPy's method meanings and the NumPy protocols on Tensor."""
    methods = {
        "transpose": _m_transpose, "cumsum": _m_cumsum, "cumprod": _m_cumprod, "round": _m_round,
        "dot": _m_dot, "ravel": _m_ravel, "fill": _m_fill, "swapaxes": _m_swapaxes, "nonzero": _m_nonzero,
        "clip": _m_clip, "diagonal": _m_diagonal, "repeat": _m_repeat,
        "sum": _method(sum), "prod": _method(prod), "mean": _method(mean), "std": _method(std),
        "var": _method(var), "max": _method(max), "min": _method(min), "all": _method(all),
        "any": _method(any), "argmax": _method(argmax), "argmin": _method(argmin),
        "__array_ufunc__": _array_ufunc, "__array_function__": _array_function, "__array__": _array,
    }
    for name, fn in methods.items():
        _C._set_tensor_attr(name, fn)
