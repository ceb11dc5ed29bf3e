"""The 'callback' family: ``pure_callback``, an op whose results a Python function computes from its operands'
values while the program runs (``srcjax.pure_callback`` makes it: runtime/callbacks.py), and ``io_callback``, the
same with an effect (at the end).

It has no effect: the passes may drop it when nothing reads its results, or merge two equal ones, as XLA may
JAX's. Its ``callback`` param is a ``PureCallback``, called with one NumPy array per operand (copies it may
keep) and returning one array per result, of the result types the op declares (``result_avals``), checked. As
JAX's ``pure_callback``:

- eager, it runs at once; traced, it runs each time the program reaches it, from native code as a host call
  (codegen/llvm/host.py);
- it has no derivative: a nonzero tangent reaching it is an error that points to ``custom_jvp``;
- batched, it does what its ``vmap_method`` says: "sequential" (or "sequential_unrolled") calls it once per
  example and stacks the results; "expand_dims" calls it once with the batch axis first in every operand, of
  size 1 where the operand is not batched; "broadcast_all" the same with every operand broadcast to the batch;
  "legacy_vectorized" leaves the operands that are not batched as they are. None refuses to be batched. Over
  pmap's (or shard_map's) devices it is called once per device, whatever the method, as each device runs it.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Sequence

import numpy as np

from srcjax.transpiler.primitives.batching import axis_size, move_batch_axis, moveaxis, over_devices
from srcjax.transpiler.primitives.core import Primitive, check, register_module
from srcjax.transpiler.primitives.debug import Level, example, with_level, without_level
from srcjax.transpiler.types import TensorType

VMAP_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all", "legacy_vectorized", None)


@dataclasses.dataclass(init=False, eq=False)
class PureCallback:
    """The ``callback`` param of a ``pure_callback`` op. ``call(*arrays)`` is the runtime's function of one array per
    operand, returning the results' values (checked against the op's types, as JAX checks them); ``levels`` are the
    sequential vmaps around the op, the latest last: its batch is the results' first axis. (A dataclass whose one
    field is a name: the IR prints it as ``PureCallback(name='...')``.)"""

    name: str

    def __init__(self, name: str, call: Callable[..., list[np.ndarray]], levels: tuple[Level, ...] = ()):
        self.name, self.call, self.levels = name, call, levels

    def __call__(self, *arrays: np.ndarray, avals: Sequence[TensorType]) -> list[np.ndarray]:
        """The results, of the types ``avals`` (the op's: under sequential vmaps, with the batches first)."""
        each = [a.update(shape=a.shape[len(self.levels):]) for a in avals]
        return _run(lambda *xs: _checked(self.call(*xs), each), list(arrays), list(self.levels))

    def batched(self, dims: Sequence[int | None], size: int) -> PureCallback:
        """This callback under one more sequential vmap (operand i batched along ``dims[i]``)."""
        return PureCallback(self.name, self.call, with_level(self.levels, dims, size))


def _checked(values: Sequence[Any], avals: Sequence[TensorType]) -> list[np.ndarray]:
    from srcjax.transpiler.dtypes import canonicalize_dtype
    from srcjax.transpiler.ir import JaxRuntimeError  # (a RuntimeError, as JAX's)

    if len(values) != len(avals):
        raise JaxRuntimeError(f"Mismatched number of outputs from callback. Expected: {len(avals)}, "
                              f"Actual: {len(values)}")
    results = []
    for i, (value, aval) in enumerate(zip(values, avals)):
        value = np.asarray(value)
        dtype = canonicalize_dtype(value.dtype) if value.dtype.kind in "biufc" else value.dtype
        if dtype != aval.dtype:
            raise JaxRuntimeError(f"Incorrect output dtype for return value #{i}: Expected: {aval.dtype}, "
                                  f"Actual: {dtype}")
        if value.shape != aval.shape:
            raise JaxRuntimeError(f"Incorrect output shape for return value #{i}: Expected: {aval.shape}, "
                                  f"Actual: {value.shape}")
        results.append(np.asarray(value, aval.dtype))
    return results


def _run(call: Callable[..., list[np.ndarray]], arrays: list[np.ndarray], levels: list[Level]) -> list[np.ndarray]:
    """``call`` on each example of the latest level, its results stacked along a new first axis."""
    if not levels:
        return list(call(*arrays))
    (axes, size), others = levels[-1], levels[:-1]
    rest = without_level(others, axes)
    per_example = [_run(call, example(arrays, axes, i), rest) for i in range(size)]
    return [np.stack(results) for results in zip(*per_example)]


pure_callback_p = Primitive("pure_callback", params=("callback", "result_avals", "vmap_method"), multiple_results=True)


@pure_callback_p.def_shape
def _pure_callback_shape(*operands: TensorType, callback: PureCallback, result_avals: tuple[TensorType, ...],
                         vmap_method: str | None) -> list[TensorType]:
    check(isinstance(callback, PureCallback), "pure_callback", f"callback must be a PureCallback, got {callback!r}")
    check(all(isinstance(x, TensorType) for x in operands), "pure_callback", "expects arrays")
    check(vmap_method in VMAP_METHODS, "pure_callback", f"unknown vmap_method {vmap_method!r}")
    return list(result_avals)


@pure_callback_p.def_impl
def _pure_callback_impl(*operands: Any, callback: PureCallback, result_avals: tuple[TensorType, ...],
                        vmap_method: str | None) -> list[Any]:
    return callback(*(np.array(x) for x in operands), avals=result_avals)  # (copies: the callback may keep them)


def _no_jvp(primals, tangents, **params):
    raise ValueError("Pure callbacks do not support JVP. Please use `jax.custom_jvp` to use callbacks while taking "
                     "gradients.")


pure_callback_p.def_jvp(_no_jvp)
pure_callback_p.def_unsupported("transpose", "not linear (a pure callback has no derivative)")


def _pure_callback_vmap(args: list[Any], dims: list[int | None], *, callback: PureCallback,
                        result_avals: tuple[TensorType, ...], vmap_method: str | None):
    method = "sequential" if over_devices() else vmap_method  # (pmap's devices each call it for themselves)
    if method is None:
        raise NotImplementedError(
            "vmap is only supported for the pure_callback primitive when vmap_method is one of 'sequential', "
            "'sequential_unrolled', 'expand_dims', 'broadcast_all', or 'legacy_vectorized'. Got vmap_method=None.")
    size = axis_size(args, dims)
    batched_avals = tuple(a.update(shape=(size, *a.shape)) for a in result_avals)
    if method.startswith("sequential"):
        callback = callback.batched(dims, size)
    else:  # one call on the whole batch, first in every operand (or of size 1, or left out)
        args = [moveaxis(x, d, 0) if d is not None else x if method == "legacy_vectorized"
                else move_batch_axis(x, None, size if method == "broadcast_all" else 1, 0)
                for x, d in zip(args, dims)]
    outs = pure_callback_p.bind(*args, callback=callback, result_avals=batched_avals, vmap_method=vmap_method)
    return outs, [0] * len(outs)


pure_callback_p.def_vmap(_pure_callback_vmap)


# ``io_callback`` (``jax.experimental.io_callback``): a callback with a side effect. As ``debug_callback`` it is kept
# though nothing reads its results, runs where and as often as the program says, and is never merged with an equal
# one; as JAX's, it has no derivative, and batched it runs once per example ("sequential"), unless ``ordered``,
# which refuses to be batched.
io_callback_p = Primitive("io_callback", params=("callback", "result_avals", "ordered"), multiple_results=True)
io_callback_p.effect = True
io_callback_p.always_record = True


@io_callback_p.def_shape
def _io_callback_shape(*operands: TensorType, callback: PureCallback, result_avals: tuple[TensorType, ...],
                       ordered: bool) -> list[TensorType]:
    return _pure_callback_shape(*operands, callback=callback, result_avals=result_avals, vmap_method="sequential")


@io_callback_p.def_impl
def _io_callback_impl(*operands: Any, callback: PureCallback, result_avals: tuple[TensorType, ...],
                      ordered: bool) -> list[Any]:
    return callback(*(np.array(x) for x in operands), avals=result_avals)


def _io_no_jvp(primals, tangents, **params):
    raise ValueError("IO callbacks do not support JVP.")


io_callback_p.def_jvp(_io_no_jvp)
io_callback_p.def_unsupported("transpose", "not linear (an IO callback has no derivative)")


def _io_callback_vmap(args: list[Any], dims: list[int | None], *, callback: PureCallback,
                      result_avals: tuple[TensorType, ...], ordered: bool):
    if ordered and not over_devices():
        raise ValueError("Cannot `vmap` ordered IO callback.")
    size = axis_size(args, dims)
    outs = io_callback_p.bind(*args, callback=callback.batched(dims, size), ordered=ordered,
                              result_avals=tuple(a.update(shape=(size, *a.shape)) for a in result_avals))
    return outs, [0] * len(outs)


io_callback_p.def_vmap(_io_callback_vmap)

register_module(globals())
