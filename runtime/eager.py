"""The eager interpreter: what ``prim.bind`` does when no function is being compiled.

It turns operands into canonical arrays, checks them against the primitive's shape rule (so a bad call
fails with the rule's message, and every result has exactly the type the compiler would give it),
runs the NumPy implementation and wraps the result as an immutable ``Array``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from srcjax.runtime import dtypes
from srcjax.runtime import gpu as _gpu
from srcjax.runtime.array import Array
from srcjax.runtime.config import config
from srcjax.transpiler.primitives import core
from srcjax.transpiler.types import TensorType

_SCALARS = (bool, int, float, complex, np.generic)


def to_array(x: Any, what: str = "operand") -> Array:
    """A concrete operand as an ``Array`` with a canonical dtype (Python scalars are weakly typed)."""
    if isinstance(x, Array):
        return x
    if isinstance(x, np.ndarray) or isinstance(x, _SCALARS):
        dtype, weak = dtypes.dtype_and_weak(x)
        if isinstance(x, int) and not isinstance(x, (bool, np.integer)):
            info = np.iinfo(dtype)
            if not info.min <= x <= info.max:
                raise OverflowError(f"Python int {x} too large to convert to {dtype.name}")
        value = np.asarray(x)
        if value.dtype.kind not in "biufc":
            raise TypeError(f"{what}: arrays of dtype {value.dtype} are not supported (use bool, int, float, complex)")
        return Array(value.astype(dtype, copy=False), weak_type=weak)
    from srcjax.transpiler.ir import Value, unexpected_tracer  # (not at the top: ir imports the primitives first)

    if isinstance(x, Value):  # a traced value here outlived the compilation that made it
        raise unexpected_tracer(x, what)
    raise TypeError(f"{what} must be an array or a scalar, got {type(x).__name__}")


def _check_nans(prim: core.Primitive, values: list[np.ndarray]) -> None:
    for value in values:
        if value.dtype.kind in "fc" and np.isnan(value).any() and config.jax_debug_nans:
            raise FloatingPointError(f"invalid value (nan) encountered in {prim.name}")


def _wrap(prim: core.Primitive, value: Any, typ: TensorType) -> Array:
    value = np.asarray(value)
    if value.shape != typ.shape:
        raise AssertionError(
            f"internal error: {prim.name} computed shape {value.shape} but its shape rule says {typ.shape}"
        )
    return Array(value.astype(typ.dtype, copy=False), weak_type=typ.weak_type)


class EagerInterpreter(core.Interpreter):
    def canonical(self, x):
        return to_array(x)

    def process(self, prim, operands, params):
        arrays = [to_array(x, f"{prim.name} operand {i}") for i, x in enumerate(operands)]
        out_types = prim.abstract_eval(*(a.aval for a in arrays), **params)
        if _gpu._found and _gpu._found[0] and not config.jax_debug_nans:  # (GPU arrays: their kernels)
            results = _gpu.eager(prim, arrays, params, out_types)
            if results is not None:
                return results if prim.multiple_results else results[0]
        if prim.impl is None:
            raise NotImplementedError(f"no implementation for '{prim.name}' ({prim.family})")
        with np.errstate(all="ignore"):
            out = prim.impl(*(a._value for a in arrays), **params)
        if prim.multiple_results:
            results = [_wrap(prim, v, t) for v, t in zip(out, out_types, strict=True)]
        else:
            results = [_wrap(prim, out, out_types)]
        if config.jax_debug_nans:
            _check_nans(prim, [r._value for r in results])
        return results if prim.multiple_results else results[0]


core.set_base_interpreter(EagerInterpreter())
