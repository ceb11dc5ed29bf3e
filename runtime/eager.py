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
        # (a NumPy array the caller may still write, itself or through another view, is copied, as JAX copies it
        # onto its device: the Array must not change, and marking it read-only must not reach the caller's array)
        own = isinstance(x, np.ndarray) and (x.flags.writeable or x.base is not None)
        return Array(value.astype(dtype, copy=own), weak_type=weak)
    from srcjax.transpiler.ir import Value, unexpected_tracer  # (not at the top: ir imports the primitives first)

    if isinstance(x, Value):  # a traced value here outlived the compilation that made it
        raise unexpected_tracer(x, what)
    raise TypeError(f"{what} must be an array or a scalar, got {type(x).__name__}")


def _check_nans(prim: core.Primitive, values: list[np.ndarray]) -> None:
    """``jax_debug_nans`` / ``jax_debug_infs``: a NaN (an infinity) in a result is an error, as in JAX."""
    for value in values:
        if value.dtype.kind not in "fc":
            continue
        if _flags["jax_debug_nans"] and np.isnan(value).any():
            raise FloatingPointError(f"invalid value (nan) encountered in {prim.name}")
        if _flags["jax_debug_infs"] and np.isinf(value).any():
            raise FloatingPointError(f"invalid value (inf) encountered in {prim.name}")


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
        checked = _flags["jax_debug_nans"] or _flags["jax_debug_infs"]  # (a flag lookup: this is every eager op)
        if _gpu._found and _gpu._found[0] and not checked:  # (GPU arrays: their kernels)
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
        if checked:
            _check_nans(prim, [r._value for r in results])
        return results if prim.multiple_results else results[0]


_EAGER = EagerInterpreter()
core.set_base_interpreter(_EAGER)


# -- the eager fast path ----------------------------------------------------------------------------------
class _Recorder(core.Interpreter):
    """The eager interpreter, noting each op it computes: how ``fast_path`` learns what a call binds."""

    def __init__(self) -> None:
        self.ops: list[tuple[core.Primitive, list[Any], dict, Any]] = []

    def canonical(self, x):
        return to_array(x)

    def process(self, prim, operands, params):
        out = _EAGER.process(prim, operands, params)
        self.ops.append((prim, list(operands), params, out))
        return out


_FAST_CACHE_MAX = 256  # entries per function (operand types and scalar values)
_flags = config._values
_PY_SCALAR_TYPES = (float, int, bool)


def fast_path(fn=None, *, chain: bool = False):
    """``fn`` (a ``jnp`` function of arrays and Python scalars), eagerly, at the cost of one NumPy call where it
    can: the first call with some operand types (and scalar values) runs ``fn`` and notes what it binds; when
    that is one primitive applied to the array operands themselves (and to constants made from the scalars),
    later calls with the same types apply that primitive's NumPy implementation directly and wrap the result
    in its recorded type. Everything else (transformations, keyword arguments, GPU or pending arrays,
    ``jax_debug_nans``, more than one primitive) takes ``fn`` itself.

    ``chain=True`` (for functions whose Python code reads only the operands' types, never their values, and
    whose keyword arguments are options: reductions, reshapes) also replays several primitives in the order
    they ran, and keys on keyword arguments that are Python values (an array among them takes ``fn``)."""
    if fn is None:
        return lambda f: fast_path(f, chain=chain)
    cache: dict[tuple, Any] = {}

    def call(*args, **kwargs):
        if (kwargs and not chain) or core.current_interpreter() is not _EAGER or _flags["jax_debug_nans"] \
                or _flags["jax_debug_infs"] or _flags["jax_numpy_rank_promotion"] != "allow":
            return fn(*args, **kwargs)
        key = [_flags["jax_enable_x64"], _flags["jax_default_matmul_precision"], _flags["jax_numpy_dtype_promotion"]]
        if kwargs:
            options = _options_key(kwargs)
            if options is None:
                return fn(*args, **kwargs)
            key.append(options)
        for arg in args:
            kind = type(arg)
            if kind is Array:
                if not hasattr(arg, "_buffer"):  # (pending, deleted or on a GPU)
                    return fn(*args, **kwargs)
                key.append(arg.aval)
            elif kind is float:
                if arg != arg:  # (a NaN: its sign and payload reach the result, and .hex() drops both)
                    return fn(*args, **kwargs)
                key.append(arg.hex())  # (-0.0 is not 0.0 here)
            elif kind in _PY_SCALAR_TYPES:
                key.append((kind, arg))
            else:
                return fn(*args, **kwargs)
        # which operands are one array (x * x is recorded as one operand in two places)
        count = len(args)
        if count == 2:
            key.append(args[0] is args[1])
        elif count == 3:
            key.append((args[0] is args[1], args[0] is args[2], args[1] is args[2]))
        elif count > 3:
            key.append(tuple(next(j for j in range(i + 1) if args[j] is a) for i, a in enumerate(args)))
        key = tuple(key)
        entry = cache.get(key)
        if entry is None:
            if len(cache) >= _FAST_CACHE_MAX:
                cache.clear()
            out, cache[key] = _record(fn, args, kwargs, chain)
            return out
        if entry is False:
            return fn(*args, **kwargs)
        if type(entry) is tuple:  # one primitive (most calls: kept to one NumPy call and a wrap)
            impl, params, sources, aval = entry
            with np.errstate(all="ignore"):
                value = np.asarray(impl(*[args[s]._buffer if type(s) is int else s for s in sources], **params))
            if value.dtype != aval.dtype:
                value = value.astype(aval.dtype)
        elif type(entry) is int:  # (the function returns that operand itself)
            return args[entry]
        else:
            steps, aval = entry
            values = []
            with np.errstate(all="ignore"):
                for impl, params, sources, dtype in steps:
                    value = np.asarray(impl(*[args[s]._buffer if type(s) is int else values[s[0]]
                                              if type(s) is tuple else s for s in sources], **params))
                    values.append(value if value.dtype == dtype else value.astype(dtype))
            value = values[-1]
        value.setflags(write=False)
        result = Array.__new__(Array)
        result._buffer, result.aval, result._device = value, aval, None
        return result

    call.__name__, call.__qualname__, call.__doc__ = fn.__name__, fn.__qualname__, fn.__doc__
    call.__wrapped__ = fn
    return call


def _options_key(kwargs: dict) -> tuple | None:
    """Keyword arguments as part of a cache key, or None when one is not a plain Python value (an array)."""
    items = []
    for name, value in sorted(kwargs.items()):
        kind = type(value)
        if kind is float:
            if value != value:  # (a NaN: .hex() drops its sign and payload)
                return None
            value = value.hex()  # (-0.0 is not 0.0 here)
        elif kind is tuple:
            if not all(type(v) is int for v in value):
                return None
        elif value is not None and kind not in (int, bool, str, type) and not isinstance(value, np.dtype):
            return None
        items.append((name, kind, value))  # (the kind too: keepdims=1 and keepdims=True are told apart)
    return tuple(items)


def _record(fn, args: tuple, kwargs: dict, chain: bool) -> tuple[Any, Any]:
    """``fn(*args, **kwargs)`` and what later calls of these operand types may do instead: False to call ``fn``,
    an operand's position when ``fn`` returns it, a tuple (implementation, parameters, sources, result type) for
    one primitive, else a list of the recorded steps (each a primitive's implementation, parameters, sources and
    result dtype; a source is an operand's position, ``(k,)`` for step k's result or a constant) and the result's
    type."""
    recorder = _Recorder()
    with core.interpreting(recorder):
        out = fn(*args, **kwargs)
    if type(out) is not Array:
        return out, False
    positions = {id(a): i for i, a in enumerate(args) if type(a) is Array}
    if id(out) in positions:
        return out, positions[id(out)]
    steps, made = [], {}  # made: id of a step's result -> its step
    for prim, operands, params, result in recorder.ops:
        if not any(id(x) in positions or id(x) in made for x in operands):
            continue  # (a constant: computed once, here)
        if (steps and not chain) or prim.multiple_results or prim.impl is None \
                or not all(type(x) is Array for x in operands):
            return out, False
        sources = [positions[id(x)] if id(x) in positions else (made[id(x)],) if id(x) in made else x._value
                   for x in operands]
        made[id(result)] = len(steps)
        steps.append((prim.impl, dict(params), sources, result.aval.dtype))
    if not steps or made.get(id(out)) != len(steps) - 1:
        return out, False
    if len(steps) == 1:
        impl, params, sources, _ = steps[0]
        return out, (impl, params, sources, out.aval)
    return out, [steps, out.aval]
