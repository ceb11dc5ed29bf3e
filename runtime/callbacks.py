"""``srcjax.pure_callback`` (``jax.pure_callback``): a Python function's results, computed while the program runs,
inside ``jit``, ``vmap`` and loops (the op: transpiler/primitives/callback.py); ``io_callback``
(``jax.experimental.io_callback``), the same for a function with side effects."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from srcjax.runtime import tree_util
from srcjax.runtime.array import Array
from srcjax.runtime.eager import to_array
from srcjax.runtime.errors import callback_failed
from srcjax.transpiler import dtypes as ir_dtypes
from srcjax.transpiler.ir import Value
from srcjax.transpiler.primitives.callback import VMAP_METHODS, PureCallback, io_callback_p, pure_callback_p
from srcjax.transpiler.types import TensorType


def pure_callback(callback: Callable[..., Any], result_shape_dtypes: Any, *args: Any, sharding: Any = None,
                  vmap_method: str | None = None, **kwargs: Any) -> Any:
    """``callback(*args, **kwargs)`` computed in Python on the arguments' values, its results of the shapes and
    dtypes ``result_shape_dtypes`` gives (a pytree of ``ShapeDtypeStruct``s or arrays). It has no derivative, and
    ``vmap_method`` says how ``vmap`` calls it (``"sequential"``, ``"expand_dims"``, ``"broadcast_all"``,
    ``"legacy_vectorized"``; None: not under vmap). The callback gets the arrays as ``srcjax`` Arrays; it should
    return the same values each time (it may be called more often or less than the program says, or not at all
    if its results are not used)."""
    del sharding  # (one device)
    if vmap_method not in VMAP_METHODS:
        raise ValueError(f"vmap_method must be on of the allowed methods {list(VMAP_METHODS)}, but got: "
                         f"{vmap_method}")
    return _bind(pure_callback_p, "pure_callback", callback, result_shape_dtypes, args, kwargs,
                 vmap_method=vmap_method)


def io_callback(callback: Callable[..., Any], result_shape_dtypes: Any, *args: Any, sharding: Any = None,
                ordered: bool = False, **kwargs: Any) -> Any:
    """``callback(*args, **kwargs)``, a Python function with side effects, called with the arguments' values each
    time the program reaches it (kept though its results are unused, never merged with another call), its results
    of the shapes and dtypes ``result_shape_dtypes`` gives. It has no derivative; ``vmap`` calls it once per
    example, and refuses to batch an ``ordered`` one."""
    del sharding  # (one device)
    return _bind(io_callback_p, "io_callback", callback, result_shape_dtypes, args, kwargs, ordered=bool(ordered))


def _bind(prim: Any, what: str, callback: Callable[..., Any], result_shape_dtypes: Any, args: tuple, kwargs: dict,
          **params: Any) -> Any:
    if not callable(callback):
        raise TypeError(f"{what}: the callback must be callable, got {type(callback).__name__}")
    leaves, in_tree = tree_util.tree_flatten((args, kwargs))
    operands = [x if isinstance(x, (Array, Value)) else to_array(x, f"{what} argument") for x in leaves]
    specs, out_tree = tree_util.tree_flatten(result_shape_dtypes)
    result_avals = tuple(_result_type(spec, i, what) for i, spec in enumerate(specs))
    name = getattr(callback, "__name__", type(callback).__name__)

    def call(*arrays: np.ndarray) -> list[Any]:
        call_args, call_kwargs = tree_util.tree_unflatten(in_tree, [Array(a) for a in arrays])
        try:
            return tree_util.tree_leaves(callback(*call_args, **call_kwargs))
        except Exception as error:  # (JAX's runtime error, keeping the callback's own type: runtime/errors.py)
            raise callback_failed(error) from error

    outs = prim.bind(*operands, callback=PureCallback(name, call), result_avals=result_avals, **params)
    return tree_util.tree_unflatten(out_tree, list(outs))


def _result_type(spec: Any, i: int, what: str) -> TensorType:
    try:
        shape, dtype = tuple(int(d) for d in spec.shape), np.dtype(spec.dtype)
    except (AttributeError, TypeError) as e:
        raise TypeError(f"{what}: result_shape_dtypes leaf #{i} must have a shape and a dtype (a "
                        f"ShapeDtypeStruct), got {spec!r}") from e
    if ir_dtypes.canonicalize_dtype(dtype) != dtype:
        raise ValueError("result_shape_dtypes cannot specify 64-bit types when `jax_enable_x64` is disabled")
    return TensorType(dtype, shape)
