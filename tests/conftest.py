"""Fixtures shared by the test folders."""

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
def cpu_backend(monkeypatch):
    """The CPU as the default backend for the test, and for the processes it starts: for tests of the virtual
    CPU devices (pmap over eight of them), the native CPU code and its dispatch, which a GPU (present, or
    emulated with ``SRCJAX_GPU=emulate``) would otherwise take over."""
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    saved = srcjax.config.jax_platforms
    srcjax.config.update("jax_platforms", "cpu")
    yield
    srcjax.config.update("jax_platforms", saved)
