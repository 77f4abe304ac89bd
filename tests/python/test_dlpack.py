"""DLPack and the buffer protocol: round trips with NumPy and PyTorch without a copy (checked by
data address), layouts (strides, offsets), dtypes, capsule rules (versioned and legacy, consumed
once, released when never consumed), lifetimes, and copies where the protocol asks for them."""

import gc
import sys

import numpy as np
import pytest
import torch

import ctensor as ct
from conftest import assert_close

NP_DTYPES = [np.float32, np.float64, np.float16, np.int8, np.uint8, np.int16, np.int32, np.int64]


def np_address(a):
    return a.__array_interface__["data"][0]


@pytest.mark.parametrize("dtype", NP_DTYPES + [np.bool_], ids=lambda d: np.dtype(d).name)
def test_numpy_to_ctensor_and_back_without_a_copy(dtype, rng):
    a = (rng.uniform(-50, 50, (4, 6)) > 0) if dtype == np.bool_ else rng.uniform(-50, 50, (4, 6)).astype(dtype)
    x = ct.asarray(a, device="cpu")  # the buffer protocol
    assert x.data_ptr == np_address(a)
    assert_close(x, a, 0, 0)
    b = ct.asnumpy(x)  # back, through ctensor's buffer protocol
    assert np_address(b) == np_address(a) and b.dtype == a.dtype
    a.flat[0] = a.flat[1]
    assert x[0, 0].item() == a[0, 0]  # one memory
    if dtype != np.bool_:  # NumPy 1.24's DLPack has no bool
        y = ct.from_dlpack(a)
        assert y.data_ptr == np_address(a)
        c = np.from_dlpack(y)
        assert np_address(c) == np_address(a)
        assert_close(ct.asarray(c), a, 0, 0)


def test_numpy_views_keep_their_layout(rng):
    a = rng.normal(size=(6, 8))
    for view in (a.T, a[1:, ::3], a[::2, 2:5], a[3]):
        x = ct.asarray(view, device="cpu")
        assert x.data_ptr == np_address(view)
        assert_close(x, view, 0, 0)
        y = ct.from_dlpack(view)
        assert y.data_ptr == np_address(view)
        back = np.from_dlpack(x)
        assert np_address(back) == np_address(view) and back.strides == view.strides


def test_layouts_ctensor_cannot_view_are_copied(rng):
    a = rng.normal(size=(5, 4))
    rev = a[::-1]  # negative strides
    x = ct.asarray(rev, device="cpu")
    assert_close(x, rev, 0, 0)
    ro = np.frombuffer(bytes(16), dtype=np.float32)  # read-only: ctensor tensors are writable
    y = ct.asarray(ro)
    y[0] = 1
    assert ro[0] == 0
    with pytest.raises(ValueError):
        ct.asarray(ro, copy=False)
    big_endian = np.arange(3, dtype=">i4")
    with pytest.raises(TypeError):
        ct.asarray(big_endian)


def test_torch_round_trip_without_a_copy(rng):
    t = torch.from_numpy(rng.normal(size=(3, 5)).astype(np.float32))
    x = ct.from_dlpack(t)
    assert x.data_ptr == t.data_ptr()
    assert_close(x, t.numpy(), 0, 0)
    x[0, 0] = 42
    assert t[0, 0].item() == 42
    u = torch.utils.dlpack.from_dlpack(x)
    assert u.data_ptr() == t.data_ptr()
    # legacy capsules, as torch.utils.dlpack.to_dlpack makes them
    cap = torch.utils.dlpack.to_dlpack(t[1:, 2:])
    y = ct.from_dlpack(cap)
    assert y.data_ptr == t[1:, 2:].data_ptr() and y.shape == (2, 3)
    with pytest.raises(BufferError, match="not an unconsumed"):
        ct.from_dlpack(cap)  # a capsule is consumed once
    for dtype in (torch.float16, torch.bfloat16, torch.int64, torch.int8, torch.uint8, torch.float64):
        s = torch.arange(6, dtype=dtype).reshape(2, 3)
        z = ct.from_dlpack(s)
        assert z.data_ptr == s.data_ptr()
        assert torch.equal(torch.utils.dlpack.from_dlpack(z), s)


def test_ctensor_exports_keep_memory_alive():
    x = ct.arange(100, dtype=ct.float64, device="cpu")
    addr = x.data_ptr
    n = np.from_dlpack(x)
    del x
    gc.collect()
    assert np_address(n) == addr and n[99] == 99.0  # the export holds the storage
    t = torch.utils.dlpack.from_dlpack(ct.ones(4, device="cpu") * 3)
    gc.collect()
    assert t.tolist() == [3.0] * 4


def test_imports_keep_the_producer_alive():
    a = np.arange(10.0)
    refs = sys.getrefcount(a)
    x = ct.asarray(a, device="cpu")  # holds a's buffer
    assert sys.getrefcount(a) == refs + 1
    del a
    gc.collect()
    assert x.tolist() == list(np.arange(10.0))
    v = x[2:5]
    del x
    assert v.tolist() == [2.0, 3.0, 4.0]


def test_capsule_rules():
    x = ct.arange(6, dtype=ct.float32, device="cpu")
    legacy = x.__dlpack__()
    assert "dltensor" in repr(legacy) and "versioned" not in repr(legacy)
    versioned = x.__dlpack__(max_version=(1, 0))
    assert "dltensor_versioned" in repr(versioned)
    older = x.__dlpack__(max_version=(0, 8))
    assert "versioned" not in repr(older)
    y = ct.from_dlpack(versioned)
    assert y.data_ptr == x.data_ptr
    assert "used_dltensor_versioned" in repr(versioned)
    del legacy, older  # never consumed: their destructors release the exports
    gc.collect()
    assert x.__dlpack_device__() == (1, 0)
    with pytest.raises(BufferError):
        x.__dlpack__(stream=5)  # CPU tensors take no stream
    c = x.__dlpack__(max_version=(1, 0), copy=True)
    z = ct.from_dlpack(c)
    assert z.data_ptr != x.data_ptr and z.tolist() == x.tolist()
    w = ct.from_dlpack(x, copy=True)
    w[0] = 100
    assert x[0].item() == 0


def test_malformed_arguments_are_type_errors():
    x = ct.arange(3, dtype=ct.float32, device="cpu")
    for kwargs in [{"max_version": 3}, {"max_version": (1,)}, {"max_version": (1, "0")},
                   {"max_version": [1, 0]}, {"dl_device": 1}, {"dl_device": (1, 0, 0)},
                   {"dl_device": ("cpu", 0)}, {"stream": "1"}]:
        with pytest.raises(TypeError):
            x.__dlpack__(**kwargs)

    class BadDevice:
        def __dlpack_device__(self):
            return 1

        def __dlpack__(self, **kwargs):
            return x.__dlpack__(**kwargs)

    with pytest.raises(TypeError, match="device_type, device_id"):
        ct.from_dlpack(BadDevice())

    class NoCapsule:
        def __dlpack_device__(self):
            return (1, 0)

        def __dlpack__(self, **kwargs):
            return 5

    with pytest.raises(TypeError, match="did not return a capsule"):
        ct.from_dlpack(NoCapsule())
    with pytest.raises(TypeError):
        ct.from_dlpack(x, copy=None, device=None, extra=1)


def test_requires_grad_tensors_are_exported_detached_only():
    p = ct.ones(3, requires_grad=True, device="cpu")
    with pytest.raises(RuntimeError, match="detach"):
        p.__dlpack__()
    with pytest.raises(BufferError):
        memoryview(p)
    assert np.from_dlpack(p.detach()).tolist() == [1.0, 1.0, 1.0]


def test_gpu_tensors_cross_by_copy_or_dlpack(device):
    x = ct.arange(5, dtype=ct.float32, device=device)
    assert x.__dlpack_device__() == ((2, 0) if device.type == "cuda" else (1, 0))
    n = x.get()  # to the host, from any device
    assert n.tolist() == [0, 1, 2, 3, 4]
    if device.type == "cuda":
        with pytest.raises(BufferError):
            memoryview(x)
        host = ct.from_dlpack(x.__dlpack__(dl_device=(1, 0), max_version=(1, 0)))
        assert host.device == ct.Device("cpu") and host.tolist() == n.tolist()
        if torch.cuda.is_available():
            t = torch.utils.dlpack.from_dlpack(x)
            assert t.data_ptr() == x.data_ptr
            y = ct.from_dlpack(t)
            assert y.data_ptr == t.data_ptr() and y.device == device


def test_memoryview_of_cpu_tensors():
    x = ct.arange(12, dtype=ct.int16, device="cpu").reshape((3, 4))
    m = memoryview(x)
    assert m.format == "h" and m.shape == (3, 4) and m.strides == (8, 2) and not m.readonly
    assert m.tolist() == x.tolist()
    t = x.T  # a strided view is exported as one, without a copy
    mt = memoryview(t)
    assert not mt.c_contiguous and mt.strides == (2, 8) and mt.tolist() == t.tolist()
    assert np_address(np.asarray(t)) == x.data_ptr and np.asarray(t).T.tolist() == x.tolist()
    with pytest.raises(BufferError, match="bfloat16"):
        memoryview(ct.ones(2, dtype=ct.bfloat16, device="cpu"))
    assert ct.asnumpy(ct.ones(2, dtype=ct.bfloat16, device="cpu")).dtype == np.float32


def test_streams_order_dlpack_exchanges(device):
    # the producer (inside `with side`) exports to a consumer on the default stream (DLPack's
    # stream 1): the export makes the default stream wait for the side stream's work; on the
    # emulated GPU, which runs a stream's queue only when something waits, a missing wait
    # reads memory not yet written
    side = ct.cuda.Stream(device)
    assert (side.ptr != 0) == (device.type == "cuda") and side.device == device
    want = [3.0 * i + 1 for i in range(1000)]
    with side:
        x = ct.arange(1000, dtype=ct.float32, device=device) * 3 + 1
        cap = x.__dlpack__(stream=1 if device.type == "cuda" else None, max_version=(1, 0))
    y = ct.from_dlpack(cap)
    assert y.tolist() == want
    # the consumer side: from_dlpack asks the producer for ctensor's current stream (1, the
    # legacy default stream, outside any `with`), and copes with producers older than max_version
    class Producer:
        def __init__(self, t, old=False):
            self.t, self.old, self.asked = t, old, []

        def __dlpack_device__(self):
            return self.t.__dlpack_device__()

        def __dlpack__(self, stream=None, **kwargs):
            if self.old and kwargs:
                raise TypeError("__dlpack__() got an unexpected keyword argument")
            self.asked.append((stream, kwargs.get("max_version")))
            return self.t.__dlpack__(stream=stream, **kwargs)

    cuda = device.type == "cuda"
    other = ct.cuda.Stream(device)
    p = Producer(x)
    assert ct.from_dlpack(p).tolist() == want
    with other:
        q = Producer(x, old=True)
        assert ct.from_dlpack(q).data_ptr == x.data_ptr
    assert p.asked == [(1 if cuda else None, (1, 0))]
    assert q.asked == [(other.ptr if cuda else None, None)]
    side.synchronize()
