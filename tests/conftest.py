"""Fixtures shared by the test folders."""

import os

import pytest

import srcjax


@pytest.fixture
def x64():
    """64-bit types on (``jax_enable_x64``) for the test, and the setting restored after it."""
    saved = srcjax.config.jax_enable_x64
    srcjax.config.update("jax_enable_x64", True)
    yield
    srcjax.config.update("jax_enable_x64", saved)


@pytest.fixture
def four_devices():
    """Four virtual CPU devices (``jax_num_cpu_devices``) for the test, and the setting restored after it."""
    saved = srcjax.config.jax_num_cpu_devices
    srcjax.config.update("jax_num_cpu_devices", 4)
    yield
    srcjax.config.update("jax_num_cpu_devices", saved)


@pytest.fixture
def cpu_backend(monkeypatch):
    """The CPU as the default backend for the test, and for the processes it starts: for tests of the virtual
    CPU devices (pmap over eight of them), the native CPU code and its dispatch, which a GPU (present, or
    emulated with ``SRCJAX_GPU=emulate``) would otherwise take over."""
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    saved = srcjax.config.jax_platforms
    srcjax.config.update("jax_platforms", "cpu")
    yield
    srcjax.config.update("jax_platforms", saved)


@pytest.fixture(autouse=True, scope="session")
def _float32_products_in_float32():
    """On a real GPU, float32 products default to TF32 (10 bits of mantissa), as JAX's do; the suite's oracles
    are NumPy's float32 and float64, so it runs with products in float32 unless a test asks for the default
    (tests/runtime/test_gpu.py tests TF32 itself). Elsewhere, nothing changes."""
    from srcjax.runtime import gpu

    real_gpu = not gpu._emulated() and bool(gpu.gpu_devices()) and gpu.default_is_gpu()
    saved = srcjax.config.jax_default_matmul_precision
    if real_gpu and saved is None:
        srcjax.config.update("jax_default_matmul_precision", "highest")
        os.environ.setdefault("JAX_DEFAULT_MATMUL_PRECISION", "highest")  # (and the programs tests start)
    yield
    srcjax.config.update("jax_default_matmul_precision", saved)

