"""The modules the special functions call, imported when first called (``srcjax.runtime.numpy`` and ``lax`` import
parts of ``scipy.special`` themselves)."""

from __future__ import annotations

from typing import Any


def _jnp() -> Any:
    from srcjax.runtime import numpy as jnp

    return jnp


def _lax() -> Any:
    from srcjax.runtime import lax

    return lax


def _custom_jvp() -> Any:
    from srcjax.runtime.autodiff import custom_jvp

    return custom_jvp
