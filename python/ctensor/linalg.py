"""The array API's linear algebra extension (ctensor.linalg), for what the C library provides.

Factorizations are single calls of ctensor/linalg.h (LAPACK on the CPU, cuSOLVER on CUDA), with
autograd: cholesky, det, eigh, eigvalsh, inv, qr, slogdet, solve, svd, svdvals, matrix_norm (every
order), and PyTorch's lstsq. matrix_power, matrix_rank and pinv are compositions of them. Also matmul,
matrix_transpose, tensordot, vecdot, vector_norm, diagonal, outer, trace, cross; and NumPy's norm
(as numpy.linalg.norm / cupy.linalg.norm).
"""

import math as _math
from collections import namedtuple as _namedtuple

from . import _C
from ._api import matmul, matrix_transpose, tensordot, vecdot, asarray, finfo  # noqa: F401

MISSING = []

EighResult = _namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
QRResult = _namedtuple("QRResult", ["Q", "R"])
SlogdetResult = _namedtuple("SlogdetResult", ["sign", "logabsdet"])
SVDResult = _namedtuple("SVDResult", ["U", "S", "Vh"])
LstsqResult = _namedtuple("LstsqResult", ["solution", "residuals", "rank", "singular_values"])

inv = _C.linalg_inv
det = _C.linalg_det
eigvalsh = _C.linalg_eigvalsh
svdvals = _C.linalg_svdvals


def _floating(*xs):
    """The operands as one floating dtype: integers become the default float (float32, as
    numpy.linalg does with float64), mixed floats promote (f32 with f64 gives f64)."""
    xs = [asarray(x) for x in xs]
    d = xs[0].dtype
    for x in xs[1:]:
        d = _C.promote_types(d, x.dtype)
    if not d.is_floating_point:
        d = _C._dtypes["float32"]
    return [x if x.dtype == d else _C.astype(x, d) for x in xs]


def cross(x1, x2, /, *, axis=-1):
    """The cross product of 3-vectors along axis (size 3 in both; the other axes broadcast)."""
    return _C.linalg_cross(x1, x2, axis=axis)


def solve(x1, x2, /):
    """x with x1 @ x = x2 (x2 a vector only when 1-d); mixed float dtypes promote."""
    return _C.linalg_solve(*_floating(x1, x2))


def cholesky(x, /, *, upper=False):
    """The Cholesky factor L (a = L L^T) of symmetric positive-definite matrices, or U = L^T."""
    return _C.linalg_cholesky(x, upper=upper)


def eigh(x, /):
    """Eigenvalues (ascending) and orthonormal eigenvectors (columns) of symmetric matrices."""
    return EighResult(*_C.linalg_eigh(x))


def qr(x, /, *, mode="reduced"):
    """Q with orthonormal columns and upper-triangular R, x = Q R; mode 'reduced' or 'complete'."""
    return QRResult(*_C.linalg_qr(x, mode=mode))


def slogdet(x, /):
    """The sign and log |det| of square matrices (sign 0 and -inf for a singular one)."""
    return SlogdetResult(*_C.linalg_slogdet(x))


def svd(x, /, *, full_matrices=True):
    """U, S (descending), Vh with x = U diag(S) Vh."""
    return SVDResult(*_C.linalg_svd(x, full_matrices=full_matrices))


def lstsq(A, B, rcond=None, *, driver=None):
    """torch.linalg.lstsq: X minimizing |A X - B| (the minimum-norm one when several do), with
    the residuals, rank and singular values the driver computes (empty tensors otherwise).
    driver: 'gelsy' (the CPU's default), 'gelsd', 'gelss', 'gels' (CUDA's only one)."""
    return LstsqResult(*_C.linalg_lstsq(A, B, rcond, driver=driver))


def matrix_power(x, n, /):
    """x multiplied by itself n times (repeated squaring); n < 0 raises inv(x) to -n."""
    x = asarray(x)
    if not isinstance(n, int):
        raise TypeError(f"matrix_power: n must be an int, got {type(n).__name__}")
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ValueError(f"matrix_power: square matrices expected, got shape {x.shape}")
    if n < 0:
        x, n = inv(x), -n
    result = None
    while True:  # binary powering: O(log n) products
        if n & 1:
            result = x if result is None else _C.matmul(result, x)
        n >>= 1
        if not n:
            break
        x = _C.matmul(x, x)
    if result is None:  # n == 0: identities of x's batch shape
        eye = _C.eye(x.shape[-1], dtype=x.dtype, device=x.device)
        result = _C.add(_C.zeros(x.shape, dtype=x.dtype, device=x.device), eye)
    return result


def _tolerance(s, shape, rtol, dtype):
    """The singular values below which matrix_rank and pinv treat as zero: rtol * max(S), rtol
    max(m, n) * eps by default (the standard's)."""
    if rtol is None:
        rtol = max(shape[-2:]) * finfo(dtype).eps
    largest = _C.max(s, axis=-1, keepdims=True)
    if isinstance(rtol, (int, float)):
        return _C.mul(largest, float(rtol))
    return _C.mul(largest, _C.unsqueeze(asarray(rtol, device=s.device), -1))


def matrix_rank(x, /, *, rtol=None):
    """The number of singular values above rtol * the largest one."""
    x = asarray(x)
    s = svdvals(x)
    if s.shape[-1] == 0:
        return _C.sum(_C.gt(s, 0), axis=-1)
    return _C.sum(_C.gt(s, _tolerance(s, x.shape, rtol, x.dtype)), axis=-1)


def pinv(x, /, *, rtol=None):
    """The Moore-Penrose pseudo-inverse, from the SVD without the singular values below
    rtol * the largest one."""
    x = asarray(x)
    u, s, vh = svd(x, full_matrices=False)
    if s.shape[-1] == 0:
        return _C.zeros(x.shape[:-2] + (x.shape[-1], x.shape[-2]), dtype=x.dtype, device=x.device)
    keep = _C.gt(s, _tolerance(s, x.shape, rtol, x.dtype))
    s_inv = _C.where(keep, _C.reciprocal(s), 0.0)
    return _C.matmul(_C.mul(vh.mT, _C.unsqueeze(s_inv, -2)), u.mT)


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    """The p-norm over axis (all elements when None); ord=inf is max |x|, ord=0 counts nonzeros.
    axis=() reduces nothing: each element's own norm, |x| (ord=0: 1 where x is not zero)."""
    if isinstance(axis, tuple) and not axis:
        x = asarray(x)
        return _C.astype(_C.ne(x, 0), x.dtype) if ord == 0 else _C.abs(x)
    return _C.norm(x, ord=float(ord), axis=axis, keepdims=keepdims)


_MATRIX_ORDS = {"fro": "fro", "nuc": "nuc", 1: "1", -1: "-1", 2: "2", -2: "-2", _math.inf: "inf",
                -_math.inf: "-inf"}


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    """The norm of the last two axes: 'fro', 'nuc', 1, -1, 2, -2, inf or -inf."""
    if ord not in _MATRIX_ORDS:
        raise ValueError(f"matrix_norm: ord must be one of 'fro', 'nuc', 1, -1, 2, -2, inf, -inf; got {ord!r}")
    return _C.linalg_matrix_norm(x, keepdims=keepdims, ord=_MATRIX_ORDS[ord])


def diagonal(x, /, *, offset=0):
    """The diagonal of the last two axes (a view)."""
    return _C.diagonal(x, offset, -2, -1)


def trace(x, /, *, offset=0, dtype=None):
    """The sum of the diagonal of the last two axes."""
    return _C.sum(diagonal(x, offset=offset), axis=-1, dtype=dtype)


def outer(x1, x2, /):
    """The outer product of two 1-d tensors."""
    x1, x2 = asarray(x1), asarray(x2)
    return _C.mul(_C.unsqueeze(x1, 1), _C.unsqueeze(x2, 0))


def norm(x, ord=None, axis=None, keepdims=False):
    """numpy.linalg.norm: the 2-norm of a vector (or of all elements), the matrix norm of ord
    over a pair of axes. Integer input is computed in the default float (float32)."""
    (x,) = _floating(x)
    if axis is None and ord is not None and x.ndim == 2:
        axis = (0, 1)
    if ord is None or (ord == "fro" and not (isinstance(axis, tuple) and len(axis) == 2)):
        return _C.norm(x, ord=2.0, axis=axis, keepdims=keepdims)
    if isinstance(axis, tuple) and len(axis) == 2:
        a0, a1 = (a % x.ndim for a in axis)
        if (a0, a1) != (x.ndim - 2, x.ndim - 1):
            rest = [a for a in range(x.ndim) if a not in (a0, a1)]
            x = _C.permute_dims(x, rest + [a0, a1])
        r = matrix_norm(x, keepdims=False, ord=ord)
        if keepdims:
            r = _C.unsqueeze(_C.unsqueeze(r, min(a0, a1)), max(a0, a1))
        return r
    return vector_norm(x, axis=axis, keepdims=keepdims, ord=ord)

