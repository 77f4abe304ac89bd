"""Random numbers, NumPy/CuPy style (sizes as separate ints or a tuple), from ctensor's Philox generator.

Values differ from NumPy's (another generator), the distributions are the same."""

from . import _C


def _shape(size):
    if size is None:
        return ()
    return (size,) if isinstance(size, int) else tuple(size)


def seed(seed=0):
    """Seeds the default generator."""
    _C.manual_seed(seed)


def rand(*size, dtype=None, device=None):
    """Uniform [0, 1) of shape size (float32)."""
    return _C.rand(size, dtype=dtype, device=device)


def randn(*size, dtype=None, device=None):
    """Standard normal of shape size."""
    return _C.randn(size, dtype=dtype, device=device)


def random(size=None, dtype=None, device=None):
    """Uniform [0, 1) of shape size."""
    return _C.rand(_shape(size), dtype=dtype, device=device)


def uniform(low=0.0, high=1.0, size=None, dtype=None, device=None):
    """Uniform on [low, high) of shape size, as numpy.random.uniform."""
    return _C.uniform(low, high, _shape(size), dtype=dtype, device=device)


def normal(loc=0.0, scale=1.0, size=None, dtype=None, device=None):
    """Normal with mean loc and standard deviation scale, of shape size, as numpy.random.normal."""
    return _C.normal(loc, scale, _shape(size), dtype=dtype, device=device)


def randint(low, high=None, size=None, dtype=None, device=None):
    """Integers in [low, high) (in [0, low) when high is None), int64 by default."""
    if high is None:
        low, high = 0, low
    return _C.randint(low, high, _shape(size), dtype=dtype, device=device)


def permutation(n, device=None):
    """A random permutation of 0..n-1 (int64)."""
    return _C.randperm(n, device=device)
