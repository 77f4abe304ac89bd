"""Memory safety at the Python boundary: asarray of sequences whose items are built on access or
that change while read, element counts that overflow, and exports (buffer protocol, DLPack) that
keep their memory alive when a module moves its tensors to another dtype. Run under the sanitizer
build too (ctest -L python in a CTENSOR_SANITIZE build), where a use after free is an error."""

import gc

import numpy as np
import pytest

import ctensor as ct


@pytest.fixture(autouse=True)
def on_the_cpu():
    """The cases are about host memory and threads: on the CPU also where a GPU is the default."""
    saved = ct.get_default_device()
    ct.set_default_device("cpu")
    yield
    ct.set_default_device(saved)


class Built:
    """A sequence whose items exist only while the caller holds them (made in __getitem__)."""

    def __init__(self, n, make):
        self.n, self.make = n, make

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return self.make(i)


def test_items_built_on_access():
    x = ct.asarray(Built(3, lambda i: Built(2, lambda j: [float(10 * i + j)] * 4)))
    assert x.shape == (3, 2, 4)
    want = np.array([[[10 * i + j] * 4 for j in range(2)] for i in range(3)], dtype=np.float32)
    np.testing.assert_array_equal(ct.asnumpy(x), want)


def test_element_count_overflow_is_refused():
    # 2^21 * 2^21 * 2^22 = 2^64 wraps to 0 in int64
    leaf = Built(2**22, lambda i: 1.0)
    x = Built(2**21, lambda i: Built(2**21, lambda j: leaf))
    with pytest.raises(MemoryError, match=r"asarray: nested sequences of shape \(2097152, 2097152, 4194304\)"):
        ct.asarray(x)
    with pytest.raises(MemoryError, match="too many elements"):
        ct.asarray(Built(2**40, lambda i: Built(2**40, lambda j: 0)))


class Shrinker:
    """A number whose conversion empties the list it sits in."""

    def __init__(self, owner):
        self.owner = owner

    def __float__(self):
        self.owner.clear()
        gc.collect()
        return 1.5

    def __index__(self):
        self.owner.clear()
        return 2


def test_a_list_emptied_while_read():
    row = [0.0, 0.0, 0.0]
    row[0] = Shrinker(row)
    outer = [row, [1.0, 2.0, 3.0]]
    x = ct.asarray(outer)  # the values read before the list changed
    assert x.shape == (2, 3)
    np.testing.assert_array_equal(ct.asnumpy(x), np.array([[2, 0, 0], [1, 2, 3]], np.float32))  # through __index__
    shape = [3, 4]
    shape[0] = Shrinker(shape)
    assert ct.zeros(shape).shape == (2, 4)
    ts = [ct.ones(2), ct.ones(2)]

    class Clearing:  # a sequence that empties the list of tensors when converted
        def __len__(self):
            ts.clear()
            gc.collect()
            return 2

        def __getitem__(self, i):
            if i >= 2:
                raise IndexError(i)
            return 3.0

    ts.append(Clearing())
    np.testing.assert_array_equal(ct.asnumpy(ct.stack(ts)), [[1, 1], [1, 1], [3, 3]])


def test_ragged_and_depth_errors_stay_errors():
    with pytest.raises(ValueError, match="ragged"):
        ct.asarray([[1, 2], [3]])
    with pytest.raises(ValueError, match="different depths"):
        ct.asarray([[1, 2], 3])


def module_buffer():
    bn = ct.nn.BatchNorm2d(1000)
    rm = bn.running_mean
    assert not rm.requires_grad
    return bn, rm


@pytest.mark.parametrize("dtype", [ct.float64, ct.float16])
def test_a_numpy_view_outlives_a_module_move(dtype):
    bn, rm = module_buffer()
    a = ct.asnumpy(rm)  # a view through the buffer protocol, no copy
    assert a.__array_interface__["data"][0] == rm.data_ptr
    a[:] = np.arange(1000)  # the module's statistics, written through the view
    before = a.copy()
    bn.to(dtype)
    assert bn.running_mean.dtype == dtype and rm.dtype == dtype  # the handle moved
    assert rm.data_ptr != a.__array_interface__["data"][0]
    # the exported memory is still the view's: new tensors do not get it
    others = [ct.zeros(1000) for _ in range(16)]
    assert all(o.data_ptr != a.__array_interface__["data"][0] for o in others)
    np.testing.assert_array_equal(a, before)
    a[:] = 7.0  # writes to the old memory, nobody else's
    assert all(float(o.sum().item()) == 0.0 for o in others)
    np.testing.assert_array_equal(ct.asnumpy(bn.running_mean.astype(ct.float32)), before)
    del a
    gc.collect()


def test_memoryview_and_dlpack_outlive_a_module_move():
    bn, rm = module_buffer()
    mv = memoryview(rm)
    cap = rm.__dlpack__()
    bn.to(ct.float64)
    others = [ct.zeros(1000) for _ in range(16)]
    mv.cast("B")[:4] = b"\0\0\0\0"
    mv.release()
    imported = ct.from_dlpack(type("Holder", (), {"__dlpack__": lambda self, **k: cap,
                                                  "__dlpack_device__": lambda self: (1, 0)})())
    assert imported.shape == (1000,) and imported.dtype == ct.float32
    assert all(float(o.sum().item()) == 0.0 for o in others)
