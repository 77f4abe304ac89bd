"""GPUs: availability, the current device (a `with` block, as cupy.cuda.Device), streams,
synchronization."""

from . import _C

Stream = _C.Stream


def is_available():
    """Whether this build has CUDA and a usable GPU (compute capability 8.0 or newer) is visible."""
    return _C._cuda_is_available()


def unavailable_reason():
    """Why no GPU is used: None when `is_available()`, else the reason as a sentence: this ctensor
    was built without CUDA, its CUDA backend (libctensor-cuda.so) was not found, could not be
    loaded (the system loader's message) or is damaged, the CUDA driver is not installed (the
    loader's message for libcuda.so.1) or too old, the driver sees no GPU, or only GPUs too old
    for this build."""
    return _C._cuda_unavailable_reason()


def device_count():
    """Visible GPUs, usable or not."""
    return _C._cuda_device_count()


def synchronize(device=None):
    """Waits for the work queued on a GPU (the default device when None)."""
    _C.synchronize(device)


class Device:
    """A GPU by index; `with Device(1):` makes new tensors go to cuda:1 on this thread (CuPy's
    cupy.cuda.Device)."""

    def __init__(self, device=None):
        if device is None:
            d = _C.get_default_device()
            device = d.index if d.type == "cuda" else 0
        self.id = int(device)
        self._saved = []

    def __enter__(self):
        self._saved.append(_C._push_device(f"cuda:{self.id}"))
        return self

    def __exit__(self, *exc):
        _C._pop_device(self._saved.pop())
        return False

    def synchronize(self):
        _C.synchronize(f"cuda:{self.id}")

    def __int__(self):
        return self.id

    def __str__(self):
        return f"cuda:{self.id}"

    def __repr__(self):
        return f"<CUDA Device {self.id}>"


def current_stream_handle(device=None):
    """The native handle (cudaStream_t as an int; 0 for the default stream) of ctensor's current stream."""
    return _C._cuda_current_stream_handle(device if device is not None else f"cuda:{Device().id}")
