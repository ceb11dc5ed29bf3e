"""The 'debug' family: ``debug_callback``, the op that calls back into Python with its operands' values while the
program runs (``srcjax.debug.print``, ``callback`` and ``breakpoint`` make it: runtime/debug.py).

The call is its one effect: it has no results, so the passes that remove what nothing reads, merge equal ops or
move ops out of loops ask ``passes.has_effect`` first, and it stays where the program put it. Its ``callback``
param is a ``Callback``, called with one NumPy array per operand (a copy it may keep: compiled code reuses its
buffers once the call returns). As JAX's ``debug_callback``:

- eager, it runs at once; traced, it runs each time the program reaches it (each trip of a loop), on the values
  of that run, from native code as a host call (codegen/llvm/host.py);
- differentiated, it runs once, on the primal values: its JVP binds it on the primals alone, and no cotangent
  flows back to its operands;
- batched, it runs once per example, in order. Under nested vmaps the innermost vmap's loop is the outermost one:
  JAX unrolls each vmap's batch into binds of the vmap around it, which unrolls each of those in turn.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Protocol, Sequence

import numpy as np

from srcjax.transpiler.primitives.batching import axis_size, bdim_at_front
from srcjax.transpiler.primitives.core import Primitive, check, register_module
from srcjax.transpiler.types import TensorType

# one vmap around the op: per operand its batch axis (None: shared by the batch), and the batch size
Level = tuple[tuple["int | None", ...], int]


@dataclasses.dataclass(init=False, eq=False)
class Callback:
    """The ``callback`` param of a ``debug_callback`` op. ``call(*arrays)`` is the runtime's function of one array
    per operand; ``levels`` are the vmaps around the op, the outermost loop first; ``spell(texts)`` writes the call
    in Python given its operands' source texts: the ``srcjax.debug`` function and its arguments (``("print",
    "'x={x}', x=x")``), or None. (A dataclass whose one field is a name: the IR prints it as
    ``Callback(name="print('x={x}')")``.)"""

    name: str

    def __init__(self, name: str, call: Callable[..., None],
                 spell: Callable[[list[str]], tuple[str, str] | None] | None = None, levels: tuple[Level, ...] = ()):
        self.name, self.call, self.spell, self.levels = name, call, spell, levels

    def __call__(self, *arrays: np.ndarray) -> None:
        _run(self.call, list(arrays), list(self.levels))

    def batched(self, dims: Sequence[int | None], size: int) -> Callback:
        """This callback under one more vmap (operand i batched along ``dims[i]``): the new loop is the innermost."""
        return Callback(f"batched({self.name})", self.call, None, with_level(self.levels, dims, size))

    def source(self, texts: list[str]) -> tuple[str, str] | None:
        """``spell(texts)``; None under a vmap, whose loop over the examples has no spelling."""
        return self.spell(texts) if self.spell is not None and not self.levels else None


def with_level(levels: tuple[Level, ...], dims: Sequence[int | None], size: int) -> tuple[Level, ...]:
    """``levels`` and, last, one more vmap (operand i batched along ``dims[i]``); the batch axes of the levels already
    there move past the new one's."""
    def moved(axis: int | None, new: int | None) -> int | None:
        return axis if axis is None or new is None or axis < new else axis + 1

    return (*((tuple(map(moved, axes, dims)), n) for axes, n in levels), (tuple(dims), size))


def without_level(levels: Sequence[Level], axes: tuple[int | None, ...]) -> list[Level]:
    """``levels`` once an example of the level batched along ``axes`` is taken: their axes beyond it move down."""
    return [(tuple(b if a is None or b is None or b < a else b - 1 for a, b in zip(axes, bs)), n) for bs, n in levels]


def example(arrays: Sequence[np.ndarray], axes: tuple[int | None, ...], i: int) -> list[np.ndarray]:
    """Example ``i`` of a level: each operand batched along its axis, indexed there."""
    return [x if a is None else np.take(x, i, axis=a) for x, a in zip(arrays, axes)]


def _run(call: Callable[..., None], arrays: list[np.ndarray], levels: list[Level]) -> None:
    """``call`` on each example of the outermost level, in order."""
    if not levels:
        call(*arrays)
        return
    (axes, size), inner = levels[0], levels[1:]
    for i in range(size):
        _run(call, example(arrays, axes, i), without_level(inner, axes))


debug_callback_p = Primitive("debug_callback", params=("callback", "ordered"), multiple_results=True)
debug_callback_p.effect = True
debug_callback_p.always_record = True  # (a print of constants prints when the program runs, not when it is read)


@debug_callback_p.def_shape
def _debug_callback_shape(*operands: TensorType, callback: Callback, ordered: bool) -> list[TensorType]:
    check(isinstance(callback, Callback), "debug_callback", f"callback must be a Callback, got {callback!r}")
    check(all(isinstance(x, TensorType) for x in operands), "debug_callback", "expects arrays")
    return []


@debug_callback_p.def_impl
def _debug_callback_impl(*operands: Any, callback: Callback, ordered: bool) -> list[Any]:
    callback(*(np.array(x) for x in operands))  # (copies: the callback may keep them)
    return []


# The tangents play no part: the op runs on the primals (once, in the forward pass of reverse mode).
debug_callback_p.def_jvp(lambda primals, tangents, **params: (debug_callback_p.bind(*primals, **params), []))
debug_callback_p.def_zero_transpose("it has no results, so no cotangent flows back to its operands")


def _debug_callback_vmap(args: list[Any], dims: list[int | None], *, callback: Callback, ordered: bool):
    # (the one rule that loops over the batch, as JAX's does: a callback sees one example at a time)
    out = debug_callback_p.bind(*args, callback=callback.batched(dims, axis_size(args, dims)), ordered=ordered)
    return out, []


debug_callback_p.def_vmap(_debug_callback_vmap)


# ``check``: a ``checkify`` error (``srcjax.experimental.checkify``) that raises when it is set. Its operands are the
# error's leaves (per kind of error: whether it is set, which check set it, and the values its message shows); its
# ``error`` param is the runtime's ``ErrorTree``, which rebuilds the error from them. Eager, a set error raises
# ``JaxRuntimeError``; ``checkify`` turns the op into values its function returns; a compiled function that still
# holds one is refused (``ErrorTree.refuse_compiled``), as JAX refuses to stage a check ``checkify`` did not
# functionalize. ``debug=True`` (``debug_check``): nothing happens unless ``checkify`` functionalizes it.
class ErrorTree(Protocol):
    def throw(self, *leaves: Any) -> None: ...

    def reduce_batched(self, leaves: list[Any]) -> tuple[list[Any], ErrorTree]:
        """The error of a batch (leaves batched along axis 0) as one error: JAX keeps one failing example's."""


check_p = Primitive("check", params=("error", "debug"), multiple_results=True)
check_p.effect = True
check_p.always_record = True


@check_p.def_shape
def _check_shape(*operands: TensorType, error: ErrorTree, debug: bool) -> list[TensorType]:
    check(all(isinstance(x, TensorType) for x in operands), "check", "expects arrays")
    return []


@check_p.def_impl
def _check_impl(*operands: Any, error: ErrorTree, debug: bool) -> list[Any]:
    if not debug:
        error.throw(*operands)
    return []


# as a debug callback: the primal values are checked, once; the tangents play no part
check_p.def_jvp(lambda primals, tangents, **params: (check_p.bind(*primals, **params), []))
check_p.def_zero_transpose("it has no results, so no cotangent flows back to its operands")


def _check_vmap(args: list[Any], dims: list[int | None], *, error: ErrorTree, debug: bool):
    size = axis_size(args, dims)
    leaves, reduced = error.reduce_batched([bdim_at_front(x, d, size) for x, d in zip(args, dims)])
    return check_p.bind(*leaves, error=reduced, debug=debug), []


check_p.def_vmap(_check_vmap)

register_module(globals())
