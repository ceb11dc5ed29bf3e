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
