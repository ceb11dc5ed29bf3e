"""JAX's dtype rules for the runtime: the names of ``transpiler/dtypes.py`` (where the compiler keeps them, since it
types what it builds), reading ``jax_enable_x64`` from the configuration."""

from __future__ import annotations

import warnings
from typing import Any

from srcjax.runtime.config import config
from srcjax.transpiler import dtypes as _rules
from srcjax.transpiler.dtypes import (  # noqa: F401 - re-exported
    WEAK_COMPLEX,
    WEAK_FLOAT,
    WEAK_INT,
    bfloat16,
    bool_,
    canonicalize_dtype,
    complex64,
    complex128,
    default_complex_dtype,
    default_float_dtype,
    default_int_dtype,
    default_uint_dtype,
    dtype_and_weak,
    extended,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    is_weakly_typed,
    issubdtype,
    prng_key,
    promote_types,
    promote_types_and_weak,
    result_type,
    to_complex_dtype,
    to_dtype,
    to_inexact_dtype,
    uint8,
    uint16,
    uint32,
    uint64,
    TypePromotionError,
)


def check_user_dtype(dtype: Any, name: str = "") -> Any:
    """The canonical form of a dtype a user asked for (``jnp.zeros(3, jnp.float64)``): with x64 off a 64-bit one
    narrows, with JAX's warning."""
    requested = to_dtype(dtype)
    canonical = canonicalize_dtype(requested)
    if canonical != requested:
        where = f" requested in {name}" if name else ""
        warnings.warn(f"Explicitly requested dtype {requested.name}{where} is not available, and will be truncated to "
                      f"dtype {canonical.name}. To enable more dtypes, set the jax_enable_x64 configuration option or "
                      "the JAX_ENABLE_X64 shell environment variable. See "
                      "https://github.com/jax-ml/jax#current-gotchas for more.", UserWarning, stacklevel=3)
    return canonical


def jax_result_type(*args: Any, return_weak_type_flag: bool = False) -> Any:
    """``jax.dtypes.result_type`` and ``jnp.result_type``: the dtype ``args`` promote to (None stands for the
    default float dtype, as in JAX), with whether it is weak if ``return_weak_type_flag``."""
    default = default_float_dtype()
    return result_type(*(default if a is None else a for a in args), return_weak_type=return_weak_type_flag)


_rules.use_flags(config._values)
