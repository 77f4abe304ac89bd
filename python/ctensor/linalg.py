"""The array API's linear algebra extension (ctensor.linalg), for what the C library provides.

Covered: matmul, matrix_transpose, tensordot, vecdot, vector_norm, matrix_norm (Frobenius),
diagonal, outer, trace; and NumPy's norm (as numpy.linalg.norm / cupy.linalg.norm).
Not yet (they need factorizations in the C library): cholesky, cross, det, eigh, eigvalsh, inv,
matrix_power, matrix_rank, pinv, qr, slogdet, solve, svd, svdvals.
"""

from . import _C
from ._api import matmul, matrix_transpose, tensordot, vecdot, asarray  # noqa: F401

MISSING = ["cholesky", "cross", "det", "eigh", "eigvalsh", "inv", "matrix_power", "matrix_rank", "pinv",
           "qr", "slogdet", "solve", "svd", "svdvals"]


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    """The p-norm over axis (all elements when None); ord=inf is max |x|, ord=0 counts nonzeros."""
    return _C.norm(x, ord=float(ord), axis=axis, keepdims=keepdims)


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    """The Frobenius norm of the last two axes (other orders need an SVD: not yet)."""
    if ord != "fro":
        raise NotImplementedError(f"matrix_norm: ord={ord!r} needs an SVD, which ctensor does not have yet")
    return _C.norm(x, ord=2.0, axis=(-2, -1), keepdims=keepdims)


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
    """numpy.linalg.norm: the 2-norm of a vector (or of all elements), the Frobenius norm of a matrix."""
    x = asarray(x)
    if ord is None or ord == "fro":
        return _C.norm(x, ord=2.0, axis=axis, keepdims=keepdims)
    if isinstance(axis, tuple) and len(axis) == 2:
        return matrix_norm(x, keepdims=keepdims, ord=ord)
    return vector_norm(x, axis=axis, keepdims=keepdims, ord=ord)
