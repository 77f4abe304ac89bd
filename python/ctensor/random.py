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


def choice(a, size=None, replace=True, p=None, device=None):
    """numpy.random.choice: elements of a (or of arange(a) for an int) drawn uniformly, or with
    probabilities p; without replacement, distinct positions (a random permutation's first ones,
    or for p, ordered exponential races: Efraimidis and Spirakis' weighted sampling)."""
    from . import _api
    pool = _C.arange(a, device=device) if isinstance(a, int) else _api.asarray(a, device=device)
    if pool.ndim != 1:
        raise ValueError(f"choice: a must be 1-d or an int, got shape {pool.shape}")
    n = pool.shape[0]
    shape = _shape(size)
    k = 1
    for s in shape:
        k *= s
    if n == 0 and k > 0:
        raise ValueError("choice: a cannot be empty unless no samples are taken")
    if not replace and k > n:
        raise ValueError(f"choice: cannot take a larger sample ({k}) than the population ({n}) without replacement")
    if p is not None:
        w = _api.asarray(p, dtype=_C._dtypes["float64"], device=pool.device)
        if w.shape != (n,) or bool(_api.any(w < 0)) or abs(float(_api.sum(w)) - 1.0) > 1e-8:
            raise ValueError("choice: p must be n non-negative probabilities summing to 1")
    if replace:
        if p is None:
            idx = _C.randint(0, n, (k,), device=pool.device)
        else:
            cdf = _C.cumsum(w, 0)
            u = _C.rand((k,), dtype=_C._dtypes["float64"], device=pool.device) * float(cdf[n - 1])
            idx = _C.clamp(_api.searchsorted(cdf, u, side="right"), 0, n - 1)
    elif p is None:
        idx = _C.randperm(n, device=pool.device)[:k]
    else:
        keys = _C.log(_C.rand((n,), dtype=_C._dtypes["float64"], device=pool.device)) / w
        idx = _api.argsort(keys, descending=True)[:k]
    out = _C.index_select(pool, 0, idx)
    return out[0] if size is None else _C.reshape(out, shape)


def shuffle(x):
    """numpy.random.shuffle: permutes x along its first axis, in place."""
    perm = _C.randperm(x.shape[0], device=x.device)
    x[...] = _C.index_select(x, 0, perm)
