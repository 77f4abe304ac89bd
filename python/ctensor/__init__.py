"""ctensor for Python: tensors on CPUs and NVIDIA GPUs over the ctensor C library.

The namespace follows the Python array API standard (2023.12) for what the C
library provides, plus NumPy/CuPy conveniences (asnumpy, get_array_module,
array) and PyTorch's training pieces (autograd, ctensor.nn, ctensor.optim,
ctensor.data)::

    import ctensor as ct
    x = ct.asarray([1.0, 2.0, 3.0])          # on the default device (a GPU if any)
    y = ct.exp(x) * 2 + 1
    print(ct.asnumpy(y))

Every operation runs in the C library: this package is a CPython extension
(ctensor._C) and thin modules mapping names onto it. docs: python/README.md.
"""


def _load_bundled_library():
    # A pip install bundles libctensor.so.MAJOR.MINOR (its soname) next to the extension: load
    # it first, so that the extension's dependency on it is met by this copy whatever its rpath
    # says. The backends bundled beside it are found there when first used.
    import glob
    import os
    for bundled in glob.glob(os.path.join(os.path.dirname(__file__), "libctensor.so.*")):
        import ctypes
        ctypes.CDLL(bundled)


_load_bundled_library()

from ._C import (  # noqa: E402,F401  the extension's own names
    Tensor, Device, dtype, Error, ArgumentError, ShapeError, DTypeError, DeviceError, OutOfMemoryError,
    CudaError, FileError, FormatError, UnavailableError, StateError, InternalError,
    get_default_device, set_default_device, synchronize, build_info, memory_stats, set_num_threads, get_num_threads,
    use_deterministic_algorithms, are_deterministic_algorithms_enabled,
    promote_types, is_grad_enabled, backward, same_storage, manual_seed, from_dlpack, asarray,
    zeros, ones, empty, full, zeros_like, ones_like, empty_like, full_like, arange, linspace, eye,
    rand, randn, randint, randperm, normal, uniform, bernoulli, uniform_, normal_,
    matmul, mm, bmm, dot, where, clamp, leaky_relu, index_select, gather, scatter, scatter_,
    scatter_add, scatter_add_, masked_select, masked_fill, masked_fill_, cat, one_hot, tril, triu,
    allclose, softmax, log_softmax, logsumexp, norm, view, flatten, transpose, unsqueeze, diagonal,
    split, chunk, expand_as,
)
from ._C import __version__  # noqa: E402,F401
from . import _api  # noqa: E402
from ._api import *  # noqa: E402,F401,F403  the array API namespace
from ._api import __array_api_version__, __array_namespace_info__  # noqa: E402,F401
from ._numpy_compat import *  # noqa: E402,F401,F403  NumPy's meanings of NumPy's names
from ._numpy_stats import *  # noqa: E402,F401,F403
from . import _numpy_protocols  # noqa: E402
_numpy_protocols.install()

ndarray = Tensor  # NumPy's and CuPy's name of the array type

_LAZY = ("nn", "optim", "data", "linalg", "cuda", "random")


def __getattr__(name):
    # Submodules load on first use, so that `import ctensor` stays quick.
    if name in _LAZY:
        import importlib
        module = importlib.import_module("." + name, __name__)
        globals()[name] = module
        return module
    raise AttributeError(f"module 'ctensor' has no attribute '{name}'")


def __dir__():
    return sorted(list(globals()) + list(_LAZY))

# Files (ctensor/io.py) and the PyTorch round trip (ctensor/_torch_format.py).
from .io import save, load, savez, savez_compressed, save_file, load_file  # noqa: E402,F401
from ._torch_format import torch_to_safetensors, safetensors_to_torch  # noqa: E402,F401
