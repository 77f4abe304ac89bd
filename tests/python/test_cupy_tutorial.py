"""CuPy's "Basics of CuPy" tutorial, written with ctensor: the README's block runs as it is, then
each of its steps is checked on each device (arrays, the current device, transfers between host
and devices, CPU/GPU-agnostic code without a hand-written kernel)."""

import os
import re

import numpy as np
import pytest

import ctensor as ct
from conftest import assert_close

README = os.path.join(os.path.dirname(__file__), "..", "..", "README.md")


def readme_block():
    text = open(README).read()
    section = text[text.index("## Python: NumPy code on the GPU"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_readme_tutorial_runs():
    namespace = {}
    exec(compile(readme_block(), "README.md (the CuPy tutorial)", "exec"), namespace)
    assert isinstance(namespace["x_gpu"], ct.Tensor)
    assert namespace["result_cpu"].shape == (1000,)
    assert namespace["x_gpu"].device == ct.get_default_device()


def test_basics_on_the_current_device(device):
    with ct.cuda.Device(device.index) if device.type == "cuda" else _cpu_default():
        x_gpu = ct.array([1, 2, 3])
        assert x_gpu.device == device and x_gpu.dtype == ct.int64
        l2 = ct.linalg.norm(ct.array([1.0, 2.0, 3.0]))
        assert l2.device == device
        assert abs(float(l2) - np.linalg.norm([1, 2, 3])) < 1e-6


class _cpu_default:
    def __enter__(self):
        self.saved = ct.get_default_device()
        ct.set_default_device("cpu")

    def __exit__(self, *exc):
        ct.set_default_device(self.saved)


def test_data_transfer(device, rng):
    x_cpu = rng.normal(size=(4, 5)).astype(np.float32)
    x_gpu = ct.asarray(x_cpu, device=device)  # host -> device
    assert x_gpu.device == device
    if device.type == "cpu":
        assert x_gpu.data_ptr == x_cpu.__array_interface__["data"][0]  # the host's memory, shared
    back = ct.asnumpy(x_gpu)  # device -> host
    assert isinstance(back, np.ndarray) and np.array_equal(back, x_cpu)
    got = x_gpu.get()
    assert np.array_equal(got, x_cpu) and got.__array_interface__["data"][0] != x_gpu.data_ptr
    moved = x_gpu.to_device("cpu").to_device(device)  # device -> host -> device
    assert_close(moved, x_cpu, 0, 0)


@pytest.mark.skipif(ct.cuda.device_count() < 2, reason="fewer than 2 GPUs: multi-GPU steps skipped")
def test_two_devices():
    with ct.cuda.Device(1):
        x_on_gpu1 = ct.array([1, 2, 3, 4, 5])
    assert x_on_gpu1.device == "cuda:1"
    with ct.cuda.Device(0):
        x_gpu_0 = ct.array([1, 2, 3])
    x_gpu_1 = x_gpu_0.to_device("cuda:1")
    assert x_gpu_1.device == "cuda:1" and x_gpu_1.tolist() == [1, 2, 3]


def softplus(x):
    xp = ct.get_array_module(x)
    return xp.maximum(0, x) + xp.log1p(xp.exp(-abs(x)))


def test_agnostic_elementwise_code(device, rng):
    x = rng.normal(size=(10, 10)) * 30  # large |x|: the stable form matters
    assert ct.get_array_module(x) is np
    y_cpu = softplus(x)
    x_dev = ct.asarray(x, device=device)
    assert ct.get_array_module(x_dev) is ct
    y_dev = softplus(x_dev)
    assert y_dev.device == device and y_dev.dtype == ct.float64
    assert_close(y_dev, y_cpu, rtol=1e-12, atol=1e-12)
    a, b = rng.random(1000), rng.random(1000)
    assert_close(ct.asarray(a, device=device) + ct.asarray(b, device=device), a + b, 0, 0)
