"""The Tensor type: operators (reflected and in-place), indexing and assignment against NumPy,
properties, conversions, devices, errors (Python classes carrying the C library's message) and
autograd from Python."""

import gc
import operator
import pickle

import numpy as np
import pytest

import ctensor as ct
from conftest import assert_close

# ---- operators ----------------------------------------------------------------------------------

OPS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod, operator.pow,
       operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne]


@pytest.mark.parametrize("op", OPS, ids=lambda f: f.__name__)
def test_operators_with_tensors_and_numbers(op, device, rng):
    a = rng.uniform(0.5, 2, (3, 4)).astype(np.float32)
    b = rng.uniform(0.5, 2, (4,)).astype(np.float32)
    x, y = ct.asarray(a, device=device), ct.asarray(b, device=device)
    assert_close(op(x, y), op(a, b), rtol=1e-5)
    assert_close(op(x, 2), op(a, np.float32(2)), rtol=1e-5)
    assert_close(op(3, x), op(np.float32(3), a), rtol=1e-5)  # reflected
    assert_close(op(x, 1.5), op(a, np.float32(1.5)), rtol=1e-5)
    assert_close(op(2.5, x), op(np.float32(2.5), a), rtol=1e-5)


INPLACE = [(operator.iadd, np.add), (operator.isub, np.subtract), (operator.imul, np.multiply),
           (operator.itruediv, np.divide), (operator.ifloordiv, np.floor_divide), (operator.imod, np.remainder),
           (operator.ipow, np.power)]


@pytest.mark.parametrize("op,ref", INPLACE, ids=lambda f: getattr(f, "__name__", ""))
def test_inplace_operators_write_the_same_tensor(op, ref, device, rng):
    a = rng.uniform(0.5, 2, (3, 4)).astype(np.float32)
    b = rng.uniform(0.5, 2, (4,)).astype(np.float32)
    x = ct.asarray(a.copy(), device=device)  # asarray shares a NumPy array's memory
    view = x[1]
    handle = x
    x = op(x, ct.asarray(b, device=device))
    assert x is handle
    want = ref(a, b)
    assert_close(x, want, rtol=1e-5)
    assert_close(view, want[1], rtol=1e-5)  # views see the write
    x = op(x, 2)
    assert_close(x, ref(want, np.float32(2)), rtol=1e-5)


def test_integer_tensors_and_python_floats(device):
    i = ct.asarray([1, 2, 3], device=device)
    assert (i + 1).dtype == ct.int64
    assert (i * 2.0).dtype == ct.float32  # a Python float gives a float result, as PyTorch
    assert (i / 2).dtype == ct.float32
    assert_close(2.5 - i, [1.5, 0.5, -0.5])
    with pytest.raises(TypeError, match="float"):
        i += 1.5
    with pytest.raises(TypeError):
        i /= 2  # true division of integers gives floats: not in place


def test_matmul_operator_and_numpy_scalars(device):
    a = ct.ones((2, 3), device=device)
    b = ct.ones((3, 4), device=device)
    assert (a @ b).shape == (2, 4)
    assert_close(a @ [1.0, 2.0, 3.0], [6.0, 6.0])
    r = np.float32(2) * a  # NumPy defers to ctensor
    assert isinstance(r, ct.Tensor) and r.dtype == ct.float32
    assert isinstance(a * np.float64(2), ct.Tensor)


def test_unary_and_logical_operators(device):
    x = ct.asarray([-1.5, 0.0, 2.0], device=device)
    assert_close(-x, [1.5, 0, -2])
    assert_close(+x, [-1.5, 0, 2])
    assert_close(abs(x), [1.5, 0, 2])
    m = x > 0
    assert_close(~m, [True, True, False], 0, 0)
    assert_close(m & (x < 3), [False, False, True], 0, 0)
    assert_close(m | True, [True, True, True], 0, 0)
    assert_close(m ^ (x < 0), [True, False, True], 0, 0)
    m &= x < 1
    assert_close(m, [False, False, False], 0, 0)
    # on integers, the bitwise ops (tests/python/test_bitwise.py); floats have none
    assert_close(ct.asarray([1, 2], device=device) & 1, [1, 0], 0, 0)
    assert_close(ct.asarray([1, 2], device=device) << 1, [2, 4], 0, 0)
    with pytest.raises(TypeError, match="integer or bool"):
        x & 1


def test_comparison_with_other_objects_is_not_equal():
    x = ct.asarray([1, 2])
    assert (x == None) is False  # noqa: E711  (falls back to identity)
    assert (x != "a") is True


# ---- indexing ------------------------------------------------------------------------------------

KEYS = [
    1, -1, (0, 2), (slice(None), 1), slice(1, None), slice(None, None, 2), (slice(None), slice(1, 7, 3)),
    (Ellipsis, 0), (None, 1), (slice(None), None, slice(0, 2)), (1, Ellipsis, None), slice(None, None, -1),
    (slice(None), slice(5, 0, -2)), (slice(3, 1),), (slice(-2, None), -3, slice(None, None, -1)),
]


@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_basic_indexing(key, device):
    a = np.arange(3 * 8 * 5, dtype=np.float32).reshape(3, 8, 5)
    x = ct.asarray(a, device=device)
    assert_close(x[key], a[key], 0, 0)


def test_basic_indexing_gives_views(device):
    x = ct.zeros((4, 6), device=device)
    v = x[1:3, ::2]
    v += 1
    assert ct.sum(x).item() == 6
    assert ct.same_storage(x, x[None, 2, ...])


ADVANCED = [
    "mask_all", "mask_rows", "mask_middle", "int_list", "int_array_2d", "negative_ints", "two_arrays",
    "separated_arrays", "array_and_slice", "mask_and_int",
]


@pytest.mark.parametrize("case", ADVANCED)
def test_advanced_indexing(case, device, rng):
    a = rng.normal(size=(4, 5, 6)).astype(np.float32)
    x = ct.asarray(a, device=device)
    rows = rng.uniform(size=4) > 0.4
    keys = {
        "mask_all": a > 0,
        "mask_rows": rows,
        "mask_middle": (slice(None), rng.uniform(size=5) > 0.5),
        "int_list": [3, 0, 0],
        "int_array_2d": np.array([[1, 2], [3, 0]]),
        "negative_ints": (slice(None), np.array([-1, -5, 2])),
        "two_arrays": (np.array([0, 3, 1]), np.array([4, 0, 2])),
        "separated_arrays": (np.array([0, 3]), slice(1, 3), np.array([5, 1])),
        "array_and_slice": (slice(None, 2), np.array([[1], [4]]), slice(None)),
        "mask_and_int": (rows, 2),
    }
    key = keys[case]
    tkey = tuple(ct.asarray(k, device=device) if isinstance(k, np.ndarray) else k for k in key) \
        if isinstance(key, tuple) else (ct.asarray(key, device=device) if isinstance(key, np.ndarray) else key)
    assert_close(x[tkey], a[key], 0, 0)


def test_index_errors(device):
    x = ct.zeros((3, 4), device=device)
    with pytest.raises(IndexError, match="out of bounds"):
        x[3]
    with pytest.raises(IndexError, match="out of bounds"):
        x[:, -5]
    with pytest.raises(IndexError, match="too many indices"):
        x[0, 0, 0]
    with pytest.raises(IndexError, match="out of bounds"):
        x[ct.asarray([0, 7], device=device)]
    with pytest.raises(IndexError, match="boolean index"):
        x[ct.asarray([True, False], device=device)]
    with pytest.raises(IndexError):
        x[1.5]
    with pytest.raises(IndexError):
        x[ct.asarray([0.5], device=device)]


def test_assignment(device, rng):
    a = np.zeros((4, 5), np.float32)
    x = ct.asarray(a.copy(), device=device)

    def check(key, value):
        a[key] = value
        x[key] = ct.asarray(value, device=device) if isinstance(value, np.ndarray) else value
        assert_close(x, a, 0, 0)

    check(0, 1.0)
    check((slice(None), 2), np.arange(4, dtype=np.float32))
    check((slice(1, 3), slice(None, None, 2)), np.float32(7))
    check((Ellipsis, -1), np.arange(4, dtype=np.float32) * 2)
    mask = a > 1
    a[mask] = -1
    x[ct.asarray(mask, device=device)] = -1
    assert_close(x, a, 0, 0)
    check(np.array([3, 0]), np.array([[9, 8, 7, 6, 5]], dtype=np.float32))
    check((slice(None), np.array([4, 1])), 3.0)
    check((np.array([0, 2]), np.array([1, 3])), np.array([10, 20], dtype=np.float32))
    rows = np.array([True, False, True, False])
    check(rows, np.arange(5, dtype=np.float32))
    with pytest.raises(IndexError, match="negative step"):
        x[::-1] = 0
    with pytest.raises(TypeError):
        del x[0]


def test_iteration_and_len(device):
    x = ct.asarray([[1, 2], [3, 4], [5, 6]], device=device)
    assert len(x) == 3
    assert [r.tolist() for r in x] == [[1, 2], [3, 4], [5, 6]]
    with pytest.raises(TypeError):
        len(ct.asarray(1))


# ---- properties and conversions --------------------------------------------------------------------


def test_properties(device):
    x = ct.zeros((2, 3, 4), dtype=ct.float64, device=device)
    assert x.shape == (2, 3, 4) and x.ndim == 3 and x.size == 24
    assert x.dtype == ct.float64 and x.dtype == "float64" and str(x.dtype) == "float64"
    assert x.device == device and str(x.device) == str(device)
    assert x.T.shape == (4, 3, 2) and x.mT.shape == (2, 4, 3)
    assert x.itemsize == 8 and x.nbytes == 192
    with pytest.raises(ValueError):
        ct.zeros(3).mT
    assert repr(ct.float32) == "ctensor.float32"
    assert pickle.loads(pickle.dumps(ct.Device("cpu"))) == ct.Device("cpu")


def test_python_values():
    assert ct.asarray(2.5).item() == 2.5
    assert isinstance(ct.asarray(3).item(), int)
    assert ct.asarray(2**62).item() == 2**62  # exact, not through a double
    assert ct.asarray(-(2**62) - 1, dtype=ct.int64).item() == -(2**62) - 1
    with pytest.raises(OverflowError):
        ct.asarray(2**70)
    assert ct.asarray(True).item() is True
    assert float(ct.asarray([1.5])) == 1.5
    assert int(ct.asarray([7])) == 7
    assert [10, 20, 30][ct.asarray(1)] == 20  # __index__
    assert bool(ct.asarray([1])) and not bool(ct.asarray(0.0))
    with pytest.raises(ValueError, match="ambiguous"):
        bool(ct.asarray([1, 2]))
    assert ct.asarray([[1, 2], [3, 4]], dtype=ct.float16).tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert "shape=(2,)" in repr(ct.asarray([1, 2]))


def test_to_device_and_to(device):
    x = ct.arange(6, device="cpu")
    y = x.to_device(device)
    assert y.device == device and y.tolist() == list(range(6))
    z = y.to("cpu", ct.float64)
    assert z.device == ct.Device("cpu") and z.dtype == ct.float64
    assert y.to(ct.int8).dtype == ct.int8
    assert ct.asarray(y, device="cpu").device == ct.Device("cpu")
    assert y.get().tolist() == list(range(6))


def test_default_device_and_cuda_device_block():
    before = ct.get_default_device()
    ct.set_default_device("cpu")
    try:
        assert ct.zeros(2).device == ct.Device("cpu")
        if ct.cuda.is_available():
            with ct.cuda.Device(0):
                assert ct.zeros(2).device == ct.Device("cuda:0")
            assert ct.zeros(2).device == ct.Device("cpu")
    finally:
        ct.set_default_device(before)


def test_deterministic_algorithms(device, rng):
    was = ct.are_deterministic_algorithms_enabled()
    try:
        ct.use_deterministic_algorithms(True)
        assert ct.are_deterministic_algorithms_enabled() is True
        # 3000 mixed-magnitude float32 values into 5 slots: with the flag, the GPU's sums are the
        # CPU's (in source order) bit for bit, on every call
        src_np = (rng.uniform(-1, 1, 3000) * 2.0 ** rng.integers(-8, 8, 3000)).astype(np.float32)
        idx_np = rng.integers(0, 5, 3000)
        want = ct.asnumpy(ct.scatter_add(ct.zeros(5), 0, ct.asarray(idx_np), ct.asarray(src_np)))
        x = ct.zeros(5, device=device)
        idx, src = ct.asarray(idx_np, device=device), ct.asarray(src_np, device=device)
        for _ in range(3):
            got = ct.asnumpy(ct.scatter_add(x, 0, idx, src).cpu())
            assert got.tobytes() == want.tobytes()
        ct.use_deterministic_algorithms(False)
        assert ct.are_deterministic_algorithms_enabled() is False
        with pytest.raises(TypeError, match="use_deterministic_algorithms"):
            ct.use_deterministic_algorithms(1)
    finally:
        ct.use_deterministic_algorithms(was)


def test_cuda_paths_report_unavailable_without_gpu():
    if ct.cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.raises(ct.UnavailableError) as info:
        ct.zeros(2, device="cuda:0")
    assert isinstance(info.value, RuntimeError)


def test_cuda_unavailable_reason_agrees_with_is_available():
    why = ct.cuda.unavailable_reason()
    assert (why is None) == ct.cuda.is_available()
    if why is None:
        return
    # the same reason as the error of asking for a GPU, a sentence naming its cause
    assert isinstance(why, str) and len(why) > 20
    with pytest.raises(ct.UnavailableError) as info:
        ct.zeros(2, device="cuda:0")
    assert why in str(info.value)


CPU_ONLY_LOADER = """
import numpy as np
import ctensor as ct
from ctensor.data import DataLoader, TensorDataset
ds = TensorDataset(np.arange(192, dtype=np.float32).reshape(64, 3), np.arange(64))
seen = sum(len(y) for _ in range(2) for _, y in DataLoader(ds, batch_size=10, shuffle=True, num_workers=2))
assert seen == 128, seen
x = ct.ones((4, 4), device="cpu") @ ct.ones((4, 4), device="cpu")
maps = open("/proc/self/maps").read()
print([lib for lib in ("libctensor-cuda", "libcudart", "libcudnn", "libcublas") if lib in maps])
"""


def test_cpu_only_dataloader_loads_no_cuda_backend():
    # A fresh interpreter: this one may have loaded the backend for other tests.
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", CPU_ONLY_LOADER], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]", out


EXPLICIT_DEVICE = """
import ctensor as ct
for make in (lambda: ct.zeros(2), lambda: ct.asarray([1.0, 2.0]), ct.get_default_device):
    try:
        make()
    except ct.UnavailableError as e:
        print("raised:", e)
    else:
        print("fell back")
print("cpu works:", float(ct.ones(3, device="cpu").sum()))
"""


def test_explicit_ct_device_that_cannot_be_used_raises_never_falls_back():
    # cuda:99 exists on no machine: the request fails with the reason, on the CPU and on a GPU.
    import os
    import subprocess
    import sys
    env = dict(os.environ, CT_DEVICE="cuda:99")
    out = subprocess.run([sys.executable, "-c", EXPLICIT_DEVICE], capture_output=True, text=True,
                         check=True, env=env).stdout.splitlines()
    assert len(out) == 4, out
    for line in out[:3]:
        assert line.startswith("raised: ") and "CT_DEVICE=cuda:99 cannot be used" in line, line
    assert out[3] == "cpu works: 3.0", out


# ---- errors ------------------------------------------------------------------------------------


def test_errors_carry_the_c_message_and_python_classes(device):
    a = ct.ones((3, 4), device=device)
    b = ct.ones((5, 6), device=device)
    with pytest.raises(ValueError, match=r"matmul: .*\(3, 4\).*\(5, 6\)") as info:
        a @ b
    assert isinstance(info.value, ct.ShapeError) and isinstance(info.value, ct.Error)
    with pytest.raises(ct.DTypeError):
        # the C mean needs floating input (the namespace's mean, NumPy's, averages ints as floats)
        ct._C.mean(ct.asarray([1, 2], device=device))
    with pytest.raises(TypeError):
        ct.exp("text")
    with pytest.raises(ct.ArgumentError):
        ct.arange(0, 1, 0)
    with pytest.raises(ct.ShapeError):
        ct.zeros((2, -1))
    with pytest.raises(ValueError):
        ct.reshape(a, (5, 5))
    with pytest.raises(ct.DeviceError):
        ct.Device("tpu:0")
    assert issubclass(ct.OutOfMemoryError, MemoryError)
    assert issubclass(ct.FileError, OSError)
    assert issubclass(ct.StateError, RuntimeError)
    # the library's error state does not leak into the next call
    assert (a + a).shape == (3, 4)


def test_python_objects_release_their_tensors(device):
    # every wrapper, view and temporary lets go of its memory (256 KiB blocks: counted by the
    # caching allocators)
    gc.collect()
    base = ct.memory_stats(device)["allocated"]
    x = ct.ones((256, 256), device=device)
    if ct.memory_stats(device)["allocated"] == base:
        pytest.skip("this build does not count CPU blocks (the host cache is off in sanitizer builds)")
    for _ in range(50):
        y = (x + 1) * 2
        y = y[::2] @ x
        z = ct.asarray(y.get(), device=device)
        y[0] = z[1]
        del y, z
    del x
    gc.collect()
    assert ct.memory_stats(device)["allocated"] == base


# ---- autograd -------------------------------------------------------------------------------------


def test_autograd(device):
    w = ct.asarray([1.0, 2.0, 3.0], device=device, requires_grad=True) if False else \
        ct.ones(3, device=device, requires_grad=True)
    assert w.requires_grad and w.is_leaf and w.grad is None
    x = ct.asarray([1.0, 2.0, 3.0], device=device)
    loss = ct.sum((w * x) ** 2)
    assert loss.grad_fn is not None and not loss.is_leaf
    loss.backward()
    assert_close(w.grad, 2 * np.array([1, 4, 9.0]))
    loss2 = ct.sum(w * x)
    loss2.backward()
    assert_close(w.grad, 2 * np.array([1, 4, 9.0]) + np.array([1, 2, 3.0]))  # accumulates
    w.grad = None
    assert w.grad is None
    with ct.no_grad():
        assert not ct.is_grad_enabled()
        y = w * 2
    assert ct.is_grad_enabled() and not y.requires_grad

    @ct.no_grad()
    def f(t):
        return t * 3

    assert not f(w).requires_grad
    d = w.detach()
    assert not d.requires_grad and ct.same_storage(d, w)
    with pytest.raises(RuntimeError, match="requires grad"):
        w += 1  # in place on a leaf that requires grad
    with pytest.raises(RuntimeError):
        w.numpy()
    v = ct.ones(2, device=device, requires_grad=True)
    z = v * 3
    z.backward(ct.asarray([1.0, 2.0], device=device))
    assert_close(v.grad, [3.0, 6.0])
