"""The array API namespace (2023.12), table-driven.

Each standard function is either an extension function under its array API
name (``ELEMENTWISE``/``DIRECT``: name -> function of ctensor._C), or a thin
composition of extension functions defined below, or listed in ``MISSING``
with the C function it waits for. When the C library gains an op (acos,
log10...), exposing it is one entry in ctensor._C's tables
(python/src/ops.c) and one line here. tests/python/test_namespace.py checks
that every name of the standard is in exactly one of the two lists, and the
package documentation lists them (python/README.md).
"""

import builtins as _b
import math as _math
from collections import namedtuple as _namedtuple

from . import _C

__array_api_version__ = "2023.12"

# ---- Names of the standard, by category --------------------------------------------------------

STANDARD = {
    "constants": ["e", "inf", "nan", "newaxis", "pi"],
    "creation": ["arange", "asarray", "empty", "empty_like", "eye", "from_dlpack", "full", "full_like",
                 "linspace", "meshgrid", "ones", "ones_like", "tril", "triu", "zeros", "zeros_like"],
    "data type": ["astype", "can_cast", "finfo", "iinfo", "isdtype", "result_type"],
    "data types": ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                   "float32", "float64", "complex64", "complex128"],
    "elementwise": ["abs", "acos", "acosh", "add", "asin", "asinh", "atan", "atan2", "atanh",
                    "bitwise_and", "bitwise_left_shift", "bitwise_invert", "bitwise_or",
                    "bitwise_right_shift", "bitwise_xor", "ceil", "clip", "conj", "copysign", "cos",
                    "cosh", "divide", "equal", "exp", "expm1", "floor", "floor_divide", "greater",
                    "greater_equal", "hypot", "imag", "isfinite", "isinf", "isnan", "less", "less_equal",
                    "log", "log1p", "log2", "log10", "logaddexp", "logical_and", "logical_not",
                    "logical_or", "logical_xor", "maximum", "minimum", "multiply", "negative",
                    "not_equal", "positive", "pow", "real", "remainder", "round", "sign", "signbit",
                    "sin", "sinh", "square", "sqrt", "subtract", "tan", "tanh", "trunc"],
    "indexing": ["take"],
    "inspection": ["__array_namespace_info__"],
    "linear algebra": ["matmul", "matrix_transpose", "tensordot", "vecdot"],
    "manipulation": ["broadcast_arrays", "broadcast_to", "concat", "expand_dims", "flip", "moveaxis",
                     "permute_dims", "repeat", "reshape", "roll", "squeeze", "stack", "tile", "unstack"],
    "searching": ["argmax", "argmin", "nonzero", "searchsorted", "where"],
    "set": ["unique_all", "unique_counts", "unique_inverse", "unique_values"],
    "sorting": ["argsort", "sort"],
    "statistical": ["cumulative_sum", "max", "mean", "min", "prod", "std", "sum", "var"],
    "utility": ["all", "any"],
}

# Elementwise functions of the extension, by array API name.
ELEMENTWISE = {
    "bitwise_and": "bitwise_and", "bitwise_or": "bitwise_or", "bitwise_xor": "bitwise_xor",
    "bitwise_invert": "bitwise_not", "bitwise_left_shift": "bitwise_left_shift",
    "bitwise_right_shift": "bitwise_right_shift",
    "copysign": "copysign",
    "logaddexp": "logaddexp",
    "hypot": "hypot",
    "signbit": "signbit",
    "log10": "log10",
    "sinh": "sinh",
    "cosh": "cosh",
    "atanh": "atanh",
    "atan": "atan",
    "asinh": "asinh",
    "asin": "asin",
    "acosh": "acosh",
    "acos": "acos",
    "abs": "abs", "add": "add", "atan2": "atan2", "ceil": "ceil", "cos": "cos", "divide": "div",
    "equal": "eq", "exp": "exp", "expm1": "expm1", "floor": "floor", "floor_divide": "floor_divide",
    "greater": "gt", "greater_equal": "ge", "isfinite": "isfinite", "isinf": "isinf", "isnan": "isnan",
    "less": "lt", "less_equal": "le", "log": "log", "log1p": "log1p", "log2": "log2",
    "logical_and": "logical_and", "logical_not": "logical_not", "logical_or": "logical_or",
    "logical_xor": "logical_xor", "maximum": "maximum", "minimum": "minimum", "multiply": "mul",
    "negative": "neg", "not_equal": "ne", "pow": "pow", "remainder": "remainder", "round": "round",
    "sign": "sign", "sin": "sin", "square": "square", "sqrt": "sqrt", "subtract": "sub", "tan": "tan",
    "tanh": "tanh", "trunc": "trunc",
}

# Other standard functions that are extension functions with the same calling convention.
DIRECT = {
    "arange": "arange", "asarray": "asarray", "empty": "empty", "empty_like": "empty_like", "eye": "eye",
    "from_dlpack": "from_dlpack", "full": "full", "full_like": "full_like", "linspace": "linspace",
    "ones": "ones", "ones_like": "ones_like", "tril": "tril", "triu": "triu", "zeros": "zeros",
    "zeros_like": "zeros_like", "matmul": "matmul", "broadcast_to": "broadcast_to",
    "permute_dims": "permute_dims", "stack": "stack", "argmax": "argmax", "argmin": "argmin",
    "where": "where", "max": "max", "mean": "mean", "min": "min", "prod": "prod", "std": "std",
    "sum": "sum", "var": "var", "all": "all", "any": "any", "sort": "sort", "argsort": "argsort",
    "searchsorted": "searchsorted", "cumulative_sum": "cumulative_sum", "flip": "flip", "roll": "roll",
    "repeat": "repeat", "tile": "tile", "nonzero": "nonzero",
}

# Standard names without an implementation yet, and what they wait for.
MISSING = {
    "conj": "complex dtypes", "real": "complex dtypes", "imag": "complex dtypes",
    "uint16": "the dtype", "uint32": "the dtype", "uint64": "the dtype", "complex64": "the dtype",
    "complex128": "the dtype",
}

for _name, _c_name in {**ELEMENTWISE, **DIRECT}.items():
    globals()[_name] = getattr(_C, _c_name)

# ---- Constants and dtypes ------------------------------------------------------------------------

e = _math.e
inf = _math.inf
nan = _math.nan
pi = _math.pi
newaxis = None

bool = _C._dtypes["bool"]  # noqa: A001  (the standard's name)
int8 = _C._dtypes["int8"]
int16 = _C._dtypes["int16"]
int32 = _C._dtypes["int32"]
int64 = _C._dtypes["int64"]
uint8 = _C._dtypes["uint8"]
float16 = _C._dtypes["float16"]
bfloat16 = _C._dtypes["bfloat16"]
float32 = _C._dtypes["float32"]
float64 = _C._dtypes["float64"]
_ALL_DTYPES = (bool, int8, int16, int32, int64, uint8, float16, bfloat16, float32, float64)
# The standard's data types that ctensor has: what __array_namespace_info__().dtypes() lists
# (float16 and bfloat16 are ctensor's own additions, not array API data types).
_STANDARD_DTYPES = (bool, int8, int16, int32, int64, uint8, float32, float64)

# ---- Compositions: thin Python over extension functions -----------------------------------------


def positive(x, /):
    """+x: the values of x (a new tensor handle)."""
    return +asarray(x)


def clip(x, /, min=None, max=None):  # noqa: A002
    """clip(x, min, max): numbers go to the C clamp; tensor bounds to maximum/minimum."""
    x = asarray(x)
    scalar = (int, float)
    if (min is None or isinstance(min, scalar)) and (max is None or isinstance(max, scalar)):
        if not x.dtype.is_floating_point and (isinstance(min, float) or isinstance(max, float)):
            raise _C.DTypeError("clip: float bounds for an integer tensor")
        r = _C.clamp(x, min, max)
        return r if r.dtype == x.dtype else astype(r, x.dtype)
    if min is not None:
        x = _C.maximum(x, min)
    if max is not None:
        x = _C.minimum(x, max)
    return x


def astype(x, dtype, /, *, copy=True, device=None):
    """x converted to dtype (a copy unless copy=False and nothing changes)."""
    if device is not None:
        x = x.to_device(device)
    if x.dtype == dtype:
        return x.clone() if copy else x
    return _C.astype(x, dtype)


def can_cast(from_, to, /):
    """Whether from_ (a dtype or a tensor) casts to `to` without changing kind (PyTorch's rule)."""
    return _C._can_cast(from_, to)


def result_type(*arrays_and_dtypes):
    """The dtype of an operation on these tensors, dtypes and Python scalars, as the operators
    promote (NEP 50): tensors (0-d ones too) and dtypes by promote_types, Python scalars weak
    (a float with only integer or bool dtypes gives the default float, float32)."""
    kinds = [a.dtype if isinstance(a, Tensor) else a for a in arrays_and_dtypes
             if not isinstance(a, (int, float))]
    if not kinds:
        raise ValueError("result_type: at least one tensor or dtype")
    r = kinds[0]
    for k in kinds[1:]:
        r = _C.promote_types(r, k)
    if not r.is_floating_point and _b.any(isinstance(a, float) for a in arrays_and_dtypes):
        r = float32
    return r


_KINDS = {
    "bool": (bool,),
    "signed integer": (int8, int16, int32, int64),
    "unsigned integer": (uint8,),
    "integral": (int8, int16, int32, int64, uint8),
    "real floating": (float16, bfloat16, float32, float64),
    "complex floating": (),
    "numeric": (int8, int16, int32, int64, uint8, float16, bfloat16, float32, float64),
}


def isdtype(dtype, kind):
    """Whether dtype is of kind: a dtype, a kind name ('integral', 'real floating', ...) or a tuple of those."""
    if isinstance(kind, tuple):
        return _b.any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, str):
        if kind not in _KINDS:
            raise ValueError(f"isdtype: unknown kind {kind!r}")
        return dtype in _KINDS[kind]
    return dtype == kind


class finfo:
    """Machine limits of a floating dtype: bits, eps, max, min, smallest_normal, dtype."""

    _TABLE = {  # bits, eps, max, smallest normal (IEEE 754 binary16/32/64 and bfloat16)
        "float16": (16, 2.0 ** -10, 65504.0, 2.0 ** -14),
        "bfloat16": (16, 2.0 ** -7, 3.3895313892515355e38, 2.0 ** -126),
        "float32": (32, 2.0 ** -23, 3.4028234663852886e38, 2.0 ** -126),
        "float64": (64, 2.0 ** -52, 1.7976931348623157e308, 2.0 ** -1022),
    }

    def __init__(self, type):  # noqa: A002
        d = type.dtype if isinstance(type, Tensor) else type
        if str(d) not in self._TABLE:
            raise ValueError(f"finfo: {d} is not a floating dtype")
        self.bits, self.eps, self.max, self.smallest_normal = self._TABLE[str(d)]
        self.min = -self.max
        self.dtype = d

    def __repr__(self):
        return f"finfo(dtype={self.dtype}, bits={self.bits}, eps={self.eps}, max={self.max})"


class iinfo:
    """Limits of an integer dtype: bits, max, min, dtype."""

    _TABLE = {"int8": (8, True), "int16": (16, True), "int32": (32, True), "int64": (64, True),
              "uint8": (8, False)}

    def __init__(self, type):  # noqa: A002
        d = type.dtype if isinstance(type, Tensor) else type
        if str(d) not in self._TABLE:
            raise ValueError(f"iinfo: {d} is not an integer dtype")
        self.bits, signed = self._TABLE[str(d)]
        self.min = -(1 << (self.bits - 1)) if signed else 0
        self.max = (1 << (self.bits - 1)) - 1 if signed else (1 << self.bits) - 1
        self.dtype = d

    def __repr__(self):
        return f"iinfo(dtype={self.dtype}, min={self.min}, max={self.max})"


def _broadcast_shapes(*shapes):
    ndim = _b.max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        for i, n in enumerate(s):
            j = ndim - len(s) + i
            if out[j] == 1:
                out[j] = n
            elif n != 1 and n != out[j]:
                raise _C.ShapeError(f"broadcast_arrays: shapes {shapes} do not broadcast")
    return tuple(out)


def broadcast_arrays(*arrays):
    """The arrays broadcast to one shape (views)."""
    arrays = [asarray(a) for a in arrays]
    shape = _broadcast_shapes(*(a.shape for a in arrays))
    return [_C.broadcast_to(a, shape) for a in arrays]


def meshgrid(*arrays, indexing="xy"):
    """Coordinate grids from 1-d arrays (views), NumPy's 'xy' or 'ij' indexing."""
    if indexing not in ("xy", "ij"):
        raise ValueError("meshgrid: indexing must be 'xy' or 'ij'")
    arrays = [asarray(a) for a in arrays]
    n = len(arrays)
    sizes = [a.shape[0] for a in arrays]
    if indexing == "xy" and n >= 2:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for i, a in enumerate(arrays):
        shape = [1] * n
        axis = i
        if indexing == "xy" and n >= 2 and i < 2:
            axis = 1 - i
        shape[axis] = a.shape[0]
        out.append(_C.broadcast_to(_C.reshape(a, shape), tuple(sizes)))
    return out


def concat(arrays, /, *, axis=0):
    """Joins tensors along an existing axis (axis=None: flattened first)."""
    if axis is None:
        return _C.cat([_C.reshape(asarray(a), (-1,)) for a in arrays], axis=0)
    return _C.cat(list(arrays), axis=axis)


def expand_dims(x, /, *, axis=0):
    """x with a new axis of size 1 at `axis` (a view)."""
    return _C.unsqueeze(x, axis)


def squeeze(x, /, axis=None):
    """x without the size-1 axes named (all of them when axis is None, as torch)."""
    x = asarray(x)
    if axis is None:
        return _C.squeeze_all(x)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    axes = sorted({a % x.ndim if x.ndim else a for a in axes}, reverse=True)
    for a in axes:
        if not -x.ndim <= a < _b.max(x.ndim, 1) or x.shape[a] != 1:
            raise ValueError(f"squeeze: axis {a} of shape {x.shape} does not have size 1")
    for a in axes:
        x = _C.squeeze_dim(x, a)
    return x


def reshape(x, /, shape, *, copy=None):
    """A view when the strides allow one (copy=False insists on it), else a copy (copy=True: always)."""
    if copy is False:
        return _C.view(asarray(x), shape)
    r = _C.reshape(x, shape)
    return r.clone() if copy else r


def moveaxis(x, source, destination, /):
    """x with axes moved (a view)."""
    x = asarray(x)
    n = x.ndim
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    if len(src) != len(dst):
        raise ValueError("moveaxis: source and destination need as many axes")
    src = [s % n for s in src]
    dst = [d % n for d in dst]
    order = [a for a in range(n) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return _C.permute_dims(x, order)


def matrix_transpose(x, /):
    """The last two axes swapped (a view)."""
    return asarray(x).mT


def unstack(x, /, *, axis=0):
    """The slices of x along axis, as a tuple of views."""
    x = asarray(x)
    key = [slice(None)] * x.ndim
    out = []
    for i in range(x.shape[axis]):
        key[axis] = i
        out.append(x[tuple(key)])
    return tuple(out)


def take_along_axis(x, indices, /, *, axis=-1):
    """Elements of x at indices along axis (standard 2024.12): indices has x's ndim, the other
    axes broadcast, negative indices count from the end."""
    x = asarray(x)
    return _C.take_along_axis(x, asarray(indices, device=x.device), axis)


def take(x, indices, /, *, axis=None):
    """Elements of x at integer indices along axis (axis may be None for a 1-d x)."""
    x = asarray(x)
    if axis is None:
        if x.ndim != 1:
            raise ValueError("take: axis=None needs a 1-d tensor")
        axis = 0
    idx = asarray(indices, device=x.device)
    if idx.ndim == 0:
        idx = _C.reshape(idx, (1,))
    n = x.shape[axis]
    idx = _C.where(_C.lt(idx, 0), _C.add(idx, n), idx)
    return _C.index_select(x, axis, idx)


def vecdot(x1, x2, /, *, axis=-1):
    """The dot product of vectors along axis, broadcasting the others; the result has the
    operands' promoted dtype (an integer sum accumulates in int64, then is cast back)."""
    x1, x2 = asarray(x1), asarray(x2)
    nd = _b.max(x1.ndim, x2.ndim)
    if not -nd <= axis < nd:
        raise _C.AxisError(f"vecdot: axis {axis} is out of range for operands of {nd} dimensions")
    ax = axis - nd if axis >= 0 else axis  # from the end of the broadcast shape
    n1 = x1.shape[ax] if -ax <= x1.ndim else 1
    n2 = x2.shape[ax] if -ax <= x2.ndim else 1
    if n1 != n2:  # the contracted axis is not broadcast
        raise _C.ArgumentError(f"vecdot: axis {axis} has size {n1} in x1 and {n2} in x2")
    p = _C.mul(x1, x2)
    r = _C.sum(p, axis=ax)
    return r if r.dtype == p.dtype else _C.astype(r, p.dtype)


def tensordot(x1, x2, /, *, axes=2):
    """Sums of products over axes (an int: the last of x1 with the first of x2)."""
    x1, x2 = asarray(x1), asarray(x2)
    if isinstance(axes, int):
        a1 = list(range(x1.ndim - axes, x1.ndim))
        a2 = list(range(axes))
    else:
        a1 = [a % x1.ndim for a in axes[0]]
        a2 = [a % x2.ndim for a in axes[1]]
    free1 = [a for a in range(x1.ndim) if a not in a1]
    free2 = [a for a in range(x2.ndim) if a not in a2]
    k = _math.prod(x1.shape[a] for a in a1)  # sizes, not -1: a zero-length axis gives zeros
    m = _math.prod(x1.shape[a] for a in free1)
    n = _math.prod(x2.shape[a] for a in free2)
    m1 = _C.reshape(_C.permute_dims(x1, free1 + a1), (m, k))
    m2 = _C.reshape(_C.permute_dims(x2, a2 + free2), (k, n))
    shape = tuple(x1.shape[a] for a in free1) + tuple(x2.shape[a] for a in free2)
    return _C.reshape(_C.matmul(m1, m2), shape)


# ---- Set functions: the tuples of ctensor._C.unique, named -----------------------------------------

UniqueAllResult = _namedtuple("UniqueAllResult", ["values", "indices", "inverse_indices", "counts"])
UniqueCountsResult = _namedtuple("UniqueCountsResult", ["values", "counts"])
UniqueInverseResult = _namedtuple("UniqueInverseResult", ["values", "inverse_indices"])


def unique_all(x, /):
    """The distinct values of x (ascending; each nan distinct, after every number), the index of
    each one's first occurrence in x flattened, the index of each element's value (x's shape),
    and how often each value occurs."""
    return UniqueAllResult(*_C.unique(x, indices=True, inverse=True, counts=True))


def unique_counts(x, /):
    """The distinct values of x and how often each occurs."""
    values, _, _, counts = _C.unique(x, counts=True)
    return UniqueCountsResult(values, counts)


def unique_inverse(x, /):
    """The distinct values of x and, for each element, the index of its value (x's shape)."""
    values, _, inverse, _ = _C.unique(x, inverse=True)
    return UniqueInverseResult(values, inverse)


def unique_values(x, /):
    """The distinct values of x, ascending."""
    return _C.unique(x)[0]


# ---- PyTorch's extras with several results ---------------------------------------------------------

TopKResult = _namedtuple("topk", ["values", "indices"])
KthValueResult = _namedtuple("kthvalue", ["values", "indices"])


def topk(x, k, dim=-1, largest=True, sorted=True):  # noqa: A002  (torch's name)
    """The k largest (or smallest) elements along dim and their positions, as torch.topk."""
    return TopKResult(*_C.topk(x, k, dim, largest, sorted))


def kthvalue(x, k, dim=-1, keepdim=False):
    """The k-th smallest element along dim and its position, as torch.kthvalue."""
    return KthValueResult(*_C.kthvalue(x, k, dim, keepdim))


# ---- Inspection -----------------------------------------------------------------------------------


class _Info:
    """What this namespace supports (the standard's __array_namespace_info__)."""

    def capabilities(self):
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 8}

    def default_device(self):
        return _C.get_default_device()

    def default_dtypes(self, *, device=None):
        return {"real floating": float32, "complex floating": None, "integral": int64, "indexing": int64}

    def devices(self):
        return [Device("cpu")] + [Device(f"cuda:{i}") for i in range(_C._cuda_device_count())
                                  if _C._cuda_is_available()]

    def dtypes(self, *, device=None, kind=None):
        chosen = [d for d in _STANDARD_DTYPES if kind is None or isdtype(d, kind)]
        return {str(d): d for d in chosen}


def __array_namespace_info__():
    return _Info()


# ---- NumPy and CuPy conveniences ------------------------------------------------------------------


def array(obj, dtype=None, *, copy=True, device=None):
    """A new tensor from obj (a copy by default, as numpy.array / cupy.array)."""
    return _C.asarray(obj, dtype=dtype, device=device, copy=copy)


def asnumpy(x, /):
    """A NumPy array of x: its memory for a CPU tensor without grad, else a copy on the host."""
    import numpy
    if not isinstance(x, Tensor):
        return numpy.asarray(x)
    if x.device.type == "cpu" and not x.requires_grad and x.dtype != bfloat16:
        return numpy.asarray(x)
    return x.get()


def get_array_module(*args):
    """ctensor if any argument is a ctensor Tensor, else numpy (as cupy.get_array_module)."""
    import sys
    for a in args:
        if isinstance(a, Tensor):
            return sys.modules["ctensor"]
    import numpy
    return numpy


def array_equal(a, b, /):
    """Whether a and b have the same shape and values (a Python bool)."""
    return _C.equal(a, b)


class no_grad:
    """A region (a `with` block, or a decorated function) where ops record no gradients."""

    def __enter__(self):
        _C._no_grad_begin()
        return self

    def __exit__(self, *exc):
        _C._no_grad_end()
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with no_grad():
                return fn(*args, **kwargs)
        return wrapped


Tensor = _C.Tensor
Device = _C.Device
asarray = _C.asarray
arange = _C.arange

# torch-style names for ctensor's own extras, kept in the namespace
exp, log, relu, sigmoid = _C.exp, _C.log, _C.relu, _C.sigmoid
gelu, silu, softplus, erf, rsqrt, reciprocal = _C.gelu, _C.silu, _C.softplus, _C.erf, _C.rsqrt, _C.reciprocal
fmod = _C.fmod
cumsum, cumprod, einsum, pad = _C.cumsum, _C.cumprod, _C.einsum, _C.pad

__all__ = sorted(
    [n for n in {**ELEMENTWISE, **DIRECT}]
    + ["e", "inf", "nan", "pi", "newaxis", "bool", "int8", "int16", "int32", "int64", "uint8", "float16",
       "bfloat16", "float32", "float64", "positive", "clip", "astype", "can_cast", "result_type", "isdtype",
       "finfo", "iinfo", "broadcast_arrays", "meshgrid", "concat", "expand_dims", "squeeze", "reshape",
       "moveaxis", "matrix_transpose", "unstack", "take", "vecdot", "tensordot", "unique_all",
       "unique_counts", "unique_inverse", "unique_values", "topk", "kthvalue", "cumsum", "cumprod", "einsum",
       "pad", "take_along_axis", "array", "asnumpy", "get_array_module", "array_equal", "no_grad", "relu",
       "sigmoid", "gelu", "silu", "softplus", "erf", "rsqrt", "reciprocal", "fmod"])


def covered():
    """The standard's names this namespace implements."""
    g = globals()
    return sorted(n for names in STANDARD.values() for n in names if n in g and n not in MISSING)
