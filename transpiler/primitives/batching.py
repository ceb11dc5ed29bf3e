"""The vocabulary of batching rules (``vmap``).

A batching rule: ``rule(args, dims, **params) -> (out, out_dim)`` (lists of outs and dims for primitives
with several results). ``dims[i]`` is the axis of ``args[i]`` that is batched, or ``None`` (``NOT_MAPPED``)
when that argument is the same for every element of the batch; at least one argument is batched. The
rule computes the batched result with ``bind`` on the (batched) values and says which axis of its output
is the batch axis. Rules never loop over the batch: ``vmap`` of a matrix-vector product is one
matrix-matrix product.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Iterator, Sequence

import numpy as np

from srcjax.transpiler.primitives.ad import aval_of
from srcjax.transpiler.primitives.core import Primitive, registered
from srcjax.transpiler.types import StackType, TensorType

NOT_MAPPED = None


class _Level(threading.local):
    devices = False  # the batch a rule is applied for is pmap's devices (each runs the op on its own example)


_level = _Level()


def over_devices() -> bool:
    """Whether the batching rule being applied batches over pmap's devices rather than a vmap: an op with an
    effect on the host (a pure callback) then runs once per device, as each device runs it for itself."""
    return _level.devices


@contextlib.contextmanager
def batching_devices(devices: bool) -> Iterator[None]:
    saved, _level.devices = _level.devices, devices
    try:
        yield
    finally:
        _level.devices = saved


def batched_aval(aval: Any, dim: int | None, size: int) -> Any:
    """The type of a value batched along ``dim`` (a stack's entries are batched)."""
    if dim is None:
        return aval
    if isinstance(aval, StackType):
        return StackType(batched_aval(aval.elem, dim, size))
    return aval.update(shape=(*aval.shape[:dim], size, *aval.shape[dim:]))


def axis_size(args: Sequence[Any], dims: Sequence[int | None]) -> int:
    sizes = {aval_of(x).shape[d] for x, d in zip(args, dims) if d is not None}
    if len(sizes) != 1:
        raise ValueError(f"batched arguments have different sizes along their batch axes: {sorted(sizes)}")
    return sizes.pop()


def moveaxis(x: Any, src: int, dst: int) -> Any:
    """``x`` with axis ``src`` moved to position ``dst`` (a transpose, or nothing)."""
    ndim = aval_of(x).ndim
    src, dst = src % ndim, dst % ndim
    if src == dst:
        return x
    perm = [a for a in range(ndim) if a != src]
    perm.insert(dst, src)
    return registered("transpose").bind(x, permutation=tuple(perm))


def bdim_at_front(x: Any, dim: int | None, size: int) -> Any:
    """``x`` with its batch axis first; an unbatched ``x`` is broadcast along a new first axis."""
    return move_batch_axis(x, dim, size, 0)


def move_batch_axis(x: Any, dim: int | None, size: int, to: int) -> Any:
    """``x`` with its batch axis at ``to``: moved there, or, unbatched, broadcast along a new axis there."""
    if dim is not None:
        return moveaxis(x, dim, to)
    shape = aval_of(x).shape
    out = (*shape[:to], size, *shape[to:])
    return registered("broadcast_in_dim").bind(x, shape=out, broadcast_dimensions=tuple(
        a for a in range(len(out)) if a != to))


def elementwise_rule(prim: Primitive):
    """Batching for n-ary elementwise primitives: batch axes first, unbatched operands broadcast along it."""

    def rule(args: Sequence[Any], dims: Sequence[int | None], **params: Any):
        size = axis_size(args, dims)
        if all(d is not None for d in dims) and len(set(dims)) == 1:
            return prim.bind(*args, **params), dims[0]
        return prim.bind(*(bdim_at_front(x, d, size) for x, d in zip(args, dims)), **params), 0

    return rule


def unbatched_scalar_broadcast(x: Any, dim: int | None, like: TensorType, size: int) -> Any:
    """An operand that may be a scalar (``clamp``'s bounds, ``select_n``'s predicate) brought to ``like``'s
    batched shape with the batch axis first."""
    broadcast_in_dim_p = registered("broadcast_in_dim")
    x = bdim_at_front(x, dim, size) if dim is not None else x
    shape = (size, *like.shape)
    have = aval_of(x).shape
    if have == shape:
        return x
    if dim is None and have == like.shape:
        return bdim_at_front(x, None, size)
    if dim is not None and have == (size,):
        return broadcast_in_dim_p.bind(x, shape=shape, broadcast_dimensions=(0,))
    return broadcast_in_dim_p.bind(x, shape=shape, broadcast_dimensions=())


def to_index_dtype(n: int) -> np.dtype:
    return np.dtype(np.int32)
