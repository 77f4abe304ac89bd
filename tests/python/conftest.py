"""Shared fixtures of the Python package's tests: the devices to run on (a CUDA run is skipped,
and says so, without a usable GPU) and a seeded NumPy generator."""

import os

import numpy as np
import pytest

import ctensor as ct

# CTENSOR_TEST_DEVICES=cuda runs only the CUDA cases (the emulated-GPU runs: the CPU cases
# already ran against the real library).
DEVICES = os.environ.get("CTENSOR_TEST_DEVICES", "cpu,cuda").split(",")


def pytest_report_header(config):
    return (f"ctensor {ct.__version__} ({ct.__file__}); {ct.build_info()}; "
            f"GPU: {'yes' if ct.cuda.is_available() else 'no (CUDA tests are skipped)'}")


@pytest.fixture(params=DEVICES)
def device(request):
    """Each test taking `device` runs on the CPU and on the first GPU."""
    if request.param == "cuda" and not ct.cuda.is_available():
        pytest.skip("no usable GPU: CUDA path skipped")
    return ct.Device("cuda:0" if request.param == "cuda" else "cpu")


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def to_numpy(x):
    """The values of a ctensor tensor as a NumPy array (float64 for half types)."""
    if x.dtype in (ct.float16, ct.bfloat16):
        x = x.astype(ct.float32)
    return ct.asnumpy(x.detach()) if x.requires_grad else ct.asnumpy(x)


def assert_close(actual, expected, rtol=1e-5, atol=1e-6):
    a = to_numpy(actual) if isinstance(actual, ct.Tensor) else np.asarray(actual)
    e = np.asarray(expected)
    assert a.shape == e.shape, f"shape {a.shape} != {e.shape}"
    np.testing.assert_allclose(a.astype(np.float64), e.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True)
