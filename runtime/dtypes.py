"""JAX's dtype rules for the runtime: the names of ``transpiler/dtypes.py`` (where the compiler keeps them, since it
types what it builds), reading ``jax_enable_x64`` from the configuration."""

from __future__ import annotations

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
)


_rules.use_flags(config._values)
