"""Collectives over named axes: ``psum``, ``pmean``, ``pmax``, ``pmin``, ``all_gather``, ``psum_scatter``,
``axis_index``, with their derivative and batching rules.

A named axis exists while a ``vmap``/``pmap`` with that ``axis_name`` is being traced; the axis environment
records each name's size (``all_gather``, ``psum_scatter`` and ``axis_index`` need it for their shapes).
Bound to no axis, they are an error.

Derivatives follow JAX's: every example's output depends on every example's input, so a reduction's
transpose reduces the cotangents over the axis again (``psum``'s transpose is ``psum``), and ``all_gather``'s
is a reduce-scatter (``psum_scatter``), and back. Batching is an op rule (it needs the engine's named axis,
and applies even when no operand is batched): over the engine's own axis a collective becomes the array
operation along the batch axis (``psum`` a ``reduce_sum``, ``all_gather`` the batched value itself);
over another axis it stays a collective on the batched value.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

import numpy as np

import srcjax.transpiler.primitives.elementwise as ew
import srcjax.transpiler.primitives.processes as pr
import srcjax.transpiler.primitives.reduce as rd
import srcjax.transpiler.primitives.shape as sh
from srcjax.transpiler.primitives.ad import aval_of, defjvp2, is_undefined
from srcjax.transpiler.primitives.batching import moveaxis
from srcjax.transpiler.primitives.core import Primitive, check, register_module, registered
from srcjax.transpiler.types import TensorType

_axis_env: list[tuple[Any, int, int]] = []  # (name, size, processes) of the named axes being traced


@contextlib.contextmanager
def named_axis(name: Any, size: int, processes: int = 1) -> Iterator[None]:
    """``name`` is bound, of ``size`` examples in all; ``processes > 1``: they are spread over that many processes,
    ``size // processes`` each (a pmap after ``distributed.initialize``), and the collectives over ``name`` cross
    processes (``processes.py``)."""
    _axis_env.append((name, size, processes))
    try:
        yield
    finally:
        _axis_env.pop()


def bound_axes() -> tuple[tuple[Any, int, int], ...]:
    """The named axes bound now, outermost first: what a trace of collectives depends on (traces are cached by it)."""
    return tuple(_axis_env)


def _binding(name: Any) -> tuple[Any, int, int]:
    for bound in reversed(_axis_env):
        if bound[0] == name:
            return bound
    available = [n for n, _, _ in _axis_env]
    raise NameError(f"unbound axis name: {name}. The following axis names (e.g. defined by vmap or pmap) are "
                    f"available to collective operations: {available}")


def axis_size(name: Any) -> int:
    """The number of examples along ``name``, over every process."""
    return _binding(name)[1]


def processes_of(name: Any) -> int:
    """The number of processes the examples along ``name`` are spread over (1: this process holds them all)."""
    for bound, _, count in reversed(_axis_env):
        if bound == name:
            return count
    return 1


def _unbound(name: str):
    def impl(*args, **params):
        axes = params.get("axes", params.get("axis_name"))
        raise NameError(f"unbound axis name: {axes}: {name} needs an enclosing vmap or pmap with that axis_name")

    return impl


# -- batching: one op rule shape for every collective ----------------------------------------------------------------
def _collective_vmap(named: Callable[..., tuple[Any, int | None]], other: Callable[..., tuple[Any, int | None]]):
    """The op rule: over the engine's own axis, ``named(engine, x, **params)`` with ``x``'s batch axis first (an
    unbatched ``x``, the same on every example, broadcast); over other axes, ``other(x, dim, **params)`` with ``x``
    batched along ``dim``. Both give ``(out, out_dim)``."""

    def rule(engine, op) -> None:
        args = [engine.read(v) for v in op.operands]
        axes = op.params.get("axes", (op.params.get("axis_name"),))
        if engine.axis_name is not None and engine.axis_name in axes:
            out, dim = named(engine, *(engine.at_front(x, d) for x, d in args), **op.params)
        elif any(d is not None for _, d in args):
            (x, d), = args
            out, dim = other(x, d, **op.params)
        else:
            out, dim = op.prim.bind(*(x for x, _ in args), **op.params), None
        engine.write(op.results[0], out, dim)

    return rule


def _same_dim(prim: Primitive):
    """Over another axis an elementwise collective keeps the batch axis where it is."""
    return lambda x, d, **params: (prim.bind(x, **params), d)


# -- reductions -------------------------------------------------------------------------------------------------------
def _reduction(name: str, reduce_batch: Callable[[Any, int], Any], across: str) -> Primitive:
    """``name`` reduces over its named axes; ``reduce_batch(x, size)`` is the reduction along axis 0 of ``x``, and
    ``across`` the all-reduce that combines the processes' results when the axis spans several."""
    prim = Primitive(name, params=("axes",))

    def shape_rule(x: TensorType, *, axes) -> TensorType:
        check(x.dtype.kind in "biufc", name, f"does not accept {x.dtype.name} operands")
        return x

    def named(engine, x, *, axes):
        # one example (one device per process) reduces to itself: it stays as it is, batched, and is not copied
        out, dim = (x, 0) if engine.size == 1 else (reduce_batch(x, engine.size), None)
        count = processes_of(engine.axis_name)
        if count > 1:  # (pmean: the mean of the processes' means, each over as many examples)
            out = pr.process_allreduce_p.bind(out, op=across)
            if name == "pmean":
                out = ew.div_p.bind(out, _full_like(out, count))
        rest = tuple(a for a in axes if a != engine.axis_name)  # the named axes of enclosing vmaps
        return (prim.bind(out, axes=rest) if rest else out), dim

    prim.def_shape(shape_rule)
    prim.def_impl(_unbound(name))
    prim.always_record = True  # a concrete operand too: the result depends on the other examples' operands
    prim.def_vmap(_collective_vmap(named, _same_dim(prim)), op_rule=True)
    return prim


def _full_like(x, value):
    """``value`` in ``x``'s dtype and shape."""
    aval = aval_of(x)
    scalar = ew.convert_element_type_p.bind(np.asarray(value, aval.dtype), new_dtype=aval.dtype, weak_type=False)
    return scalar if aval.shape == () else sh.broadcast_in_dim_p.bind(scalar, shape=aval.shape, broadcast_dimensions=())


def _mean_of_batch(x, size: int):
    total = rd.reduce_sum_p.bind(x, axes=(0,))
    return ew.div_p.bind(total, _full_like(total, size))


psum_p = _reduction("psum", lambda x, n: rd.reduce_sum_p.bind(x, axes=(0,)), "sum")
pmean_p = _reduction("pmean", _mean_of_batch, "sum")
pmax_p = _reduction("pmax", lambda x, n: rd.reduce_max_p.bind(x, axes=(0,)), "max")
pmin_p = _reduction("pmin", lambda x, n: rd.reduce_min_p.bind(x, axes=(0,)), "min")
# y_j = sum_k x_k on every example j, so x_k's cotangent is sum_j ct_j: the transpose is psum again
psum_p.def_linear(lambda ct, x, *, axes: [psum_p.bind(ct, axes=axes)])
pmean_p.def_linear(lambda ct, x, *, axes: [pmean_p.bind(ct, axes=axes)])  # (the same, over n)


def _pchooser_jvp(g, ans, x, *, axes):
    """As ``reduce_max``'s JVP in JAX: the mean of the tangents of the examples whose value is the extremum (ties
    share it; JAX itself has no JVP for ``pmax``, so this is its ``jnp.max`` of the gathered values)."""
    mask = ew.convert_element_type_p.bind(ew.eq_p.bind(x, ans), new_dtype=aval_of(g).dtype, weak_type=False)
    return ew.div_p.bind(psum_p.bind(ew.mul_p.bind(g, mask), axes=axes), psum_p.bind(mask, axes=axes))


for _p in (pmax_p, pmin_p):
    defjvp2(_p, _pchooser_jvp)
    _p.def_unsupported("transpose", "not linear")

# -- gathering and scattering -----------------------------------------------------------------------------------------
all_gather_p = Primitive("all_gather", params=("axes", "axis_size"))


@all_gather_p.def_shape
def _all_gather_shape(x: TensorType, *, axes, axis_size: int) -> TensorType:
    return x.update(shape=(axis_size, *x.shape))


all_gather_p.def_impl(_unbound("all_gather"))
all_gather_p.always_record = True
# y_j = stack_k x_k on every example j: x_k's cotangent is sum_j ct_j[k], a reduce-scatter of the cotangents
all_gather_p.def_linear(lambda ct, x, *, axes, axis_size: [
    psum_scatter_p.bind(ct, axes=axes, axis_size=axis_size, scatter_dimension=0, tiled=False)])


def _all_gather_named(engine, x, *, axes, axis_size: int):
    """The batch, whole, is what every example gathers (with the other processes' batches after ours)."""
    if processes_of(engine.axis_name) > 1:
        gathered = pr.process_allgather_p.bind(x)  # (processes, local, ...)
        shape = aval_of(gathered).shape
        x = sh.reshape_p.bind(gathered, new_sizes=(shape[0] * shape[1], *shape[2:]), dimensions=None)
    return x, None


all_gather_p.def_vmap(_collective_vmap(
    _all_gather_named, lambda x, d, **params: (all_gather_p.bind(x, **params), d + 1)), op_rule=True)

psum_scatter_p = Primitive("psum_scatter", params=("axes", "axis_size", "scatter_dimension", "tiled"))


@psum_scatter_p.def_shape
def _psum_scatter_shape(x: TensorType, *, axes, axis_size: int, scatter_dimension: int, tiled: bool) -> TensorType:
    name, d = "psum_scatter", scatter_dimension
    check(x.dtype.kind in "biufc", name, f"does not accept {x.dtype.name} operands")
    check(0 <= d < x.ndim, name, f"scatter_dimension {d} out of range for {x}", kind="value")
    n = x.shape[d]
    if tiled:
        check(n % axis_size == 0, name, f"axis {d} of {x} does not split into {axis_size} parts", kind="value")
        return x.update(shape=(*x.shape[:d], n // axis_size, *x.shape[d + 1:]))
    check(n == axis_size, name, f"axis {d} of {x} must have the axis size {axis_size}", kind="value")
    return x.update(shape=(*x.shape[:d], *x.shape[d + 1:]))


def _psum_scatter_transpose(ct, x, *, axes, axis_size: int, scatter_dimension: int, tiled: bool):
    """Each example's cotangent is its part of the sum: gathering the parts back gives every example the same."""
    gathered = moveaxis(all_gather_p.bind(ct, axes=axes, axis_size=axis_size), 0, scatter_dimension)
    if tiled:  # (..., n, k, ...) -> (..., n * k, ...)
        gathered = sh.reshape_p.bind(gathered, new_sizes=aval_of(x).shape, dimensions=None)
    return [gathered if is_undefined(x) else None]


def _psum_scatter_named(engine, x, *, axes, axis_size: int, scatter_dimension: int, tiled: bool):
    """The sum over the batch, whose part ``j`` along the scatter axis is example ``j``'s: that axis (split in
    ``n`` parts when tiled) is the batch axis of the result."""
    total = rd.reduce_sum_p.bind(x, axes=(0,))
    if tiled:
        shape = aval_of(total).shape
        d = scatter_dimension
        total = sh.reshape_p.bind(total, new_sizes=(*shape[:d], axis_size, shape[d] // axis_size, *shape[d + 1:]),
                                  dimensions=None)
    count = processes_of(engine.axis_name)
    if count == 1:
        return total, scatter_dimension
    # across processes: the parts, one block of ``size`` per process, summed and scattered by MPI
    parts = moveaxis(total, scatter_dimension, 0)
    shape = aval_of(parts).shape
    blocks = sh.reshape_p.bind(parts, new_sizes=(count, shape[0] // count, *shape[1:]), dimensions=None)
    return pr.process_reduce_scatter_p.bind(blocks), 0


def _psum_scatter_other(x, d: int, *, scatter_dimension: int, **params):
    """Batch axis first, so that the scatter axis moves one place on."""
    out = psum_scatter_p.bind(moveaxis(x, d, 0), scatter_dimension=scatter_dimension + 1, **params)
    return out, 0


psum_scatter_p.def_impl(_unbound("psum_scatter"))
psum_scatter_p.always_record = True
psum_scatter_p.def_linear(_psum_scatter_transpose)
psum_scatter_p.def_vmap(_collective_vmap(_psum_scatter_named, _psum_scatter_other), op_rule=True)

# -- the index along an axis ------------------------------------------------------------------------------------------
axis_index_p = Primitive("axis_index", params=("axis_name",))
axis_index_p.def_shape(lambda *, axis_name: TensorType(np.int32, ()))
axis_index_p.def_impl(_unbound("axis_index"))
axis_index_p.always_record = True  # it has no operands, and differs between examples
axis_index_p.def_zero_jvp("an integer-valued index has zero derivative")
axis_index_p.def_unsupported("transpose", "not linear")


def _axis_index_named(engine, *, axis_name):
    """0, 1, ... along the batch (after the devices of the processes before this one)."""
    index = sh.iota_p.bind(dtype=np.dtype(np.int32), shape=(engine.size,), dimension=0)
    if processes_of(axis_name) > 1:
        index = ew.add_p.bind(index, _full_like(index, pr.process_index() * engine.size))
    return index, 0


axis_index_p.def_vmap(_collective_vmap(_axis_index_named, None), op_rule=True)

# -- all-to-all --------------------------------------------------------------------------------------------------------
all_to_all_p = Primitive("all_to_all", params=("axes", "axis_size", "split_axis", "concat_axis", "tiled"))


@all_to_all_p.def_shape
def _all_to_all_shape(x: TensorType, *, axes, axis_size: int, split_axis: int, concat_axis: int, tiled: bool
                      ) -> TensorType:
    name, shape = "all_to_all", list(x.shape)
    check(0 <= split_axis < x.ndim, name, f"split_axis {split_axis} out of range for {x}", kind="value")
    if tiled:
        check(0 <= concat_axis < x.ndim, name, f"concat_axis {concat_axis} out of range for {x}", kind="value")
        check(shape[split_axis] % axis_size == 0, name,
              f"axis {split_axis} of {x} does not split into {axis_size} parts", kind="value")
        shape[split_axis] //= axis_size
        shape[concat_axis] *= axis_size
        return x.update(shape=tuple(shape))
    check(shape[split_axis] == axis_size, name, f"axis {split_axis} of {x} must have the axis size {axis_size}",
          kind="value")
    del shape[split_axis]
    check(0 <= concat_axis <= len(shape), name, f"concat_axis {concat_axis} out of range for {x}", kind="value")
    shape.insert(concat_axis, axis_size)
    return x.update(shape=tuple(shape))


def _all_to_all_named(engine, x, *, axes, axis_size: int, split_axis: int, concat_axis: int, tiled: bool):
    """Example ``b``'s part ``j`` (along the split axis) becomes example ``j``'s part ``b`` (along the concat axis).
    With the batch first: the split axis (its ``axis_size`` parts) moved beside the batch and the two swapped; across
    processes, MPI's all-to-all moves the blocks bound for other processes."""
    n, count = engine.size, processes_of(engine.axis_name)
    shape = aval_of(x).shape[1:]  # one example's
    if tiled:  # the split axis as (parts, chunk): the parts are what moves
        part = shape[split_axis] // axis_size
        x = sh.reshape_p.bind(x, new_sizes=(n, *shape[:split_axis], axis_size, part, *shape[split_axis + 1:]),
                              dimensions=None)
    x = moveaxis(x, split_axis + 1, 1)  # (batch b, destination j, rest)
    if count == 1:
        y = sh.transpose_p.bind(x, permutation=(1, 0, *range(2, aval_of(x).ndim)))  # (j, source b, rest)
    else:
        rest = aval_of(x).shape[2:]
        blocks = sh.reshape_p.bind(x, new_sizes=(n, count, n, *rest), dimensions=None)  # (b, process q, local c)
        blocks = sh.transpose_p.bind(blocks, permutation=(1, 0, 2, *range(3, 3 + len(rest))))
        received = pr.process_alltoall_p.bind(blocks)  # (source process q, source b, local c, rest)
        received = sh.transpose_p.bind(received, permutation=(2, 0, 1, *range(3, 3 + len(rest))))
        y = sh.reshape_p.bind(received, new_sizes=(n, count * n, *rest), dimensions=None)
    if not tiled:
        return moveaxis(y, 1, concat_axis + 1), 0
    # tiled: the sources' chunks laid end to end along the concat axis (source major)
    y = moveaxis(y, 1, concat_axis + 1)  # (batch, ..., source, concat axis, ...)
    shape = aval_of(y).shape
    merged = (*shape[:concat_axis + 1], shape[concat_axis + 1] * shape[concat_axis + 2], *shape[concat_axis + 3:])
    return sh.reshape_p.bind(y, new_sizes=merged, dimensions=None), 0


def _all_to_all_other(x, d: int, *, split_axis: int, concat_axis: int, **params):
    """Batch axis first: the split and concat axes move one place on."""
    out = all_to_all_p.bind(moveaxis(x, d, 0), split_axis=split_axis + 1, concat_axis=concat_axis + 1, **params)
    return out, 0


all_to_all_p.def_impl(_unbound("all_to_all"))
all_to_all_p.always_record = True
# a permutation of the examples' parts: its transpose sends each part back, splitting where it was concatenated
all_to_all_p.def_linear(lambda ct, x, *, split_axis, concat_axis, **params: [
    all_to_all_p.bind(ct, split_axis=concat_axis, concat_axis=split_axis, **params)])
all_to_all_p.def_vmap(_collective_vmap(_all_to_all_named, _all_to_all_other), op_rule=True)

# -- permutations of the examples --------------------------------------------------------------------------------------
ppermute_p = Primitive("ppermute", params=("axes", "perm"))


@ppermute_p.def_shape
def _ppermute_shape(x: TensorType, *, axes, perm) -> TensorType:
    sources, destinations = [s for s, _ in perm], [d for _, d in perm]
    check(len(set(sources)) == len(sources) and len(set(destinations)) == len(destinations), "ppermute",
          f"perm sends from or to an index twice: {list(perm)}", kind="value")
    return x


def _ppermute_named(engine, x, *, axes, perm):
    """Example ``d`` gets example ``s``'s value for each ``(s, d)`` of ``perm``; the others get zeros."""
    n = engine.size
    if processes_of(engine.axis_name) > 1:
        return pr.process_permute_p.bind(x, perm=perm, local=n), 0
    source = dict((d, s) for s, d in perm)
    shape = aval_of(x).shape
    zero = None
    rows = []
    for d in range(n):
        if d in source:
            s = source[d]
            rows.append(registered("slice").bind(x, start_indices=(s, *[0] * (len(shape) - 1)),
                                                 limit_indices=(s + 1, *shape[1:]), strides=None))
        else:
            zero = zero if zero is not None else _full_like_shape(x, (1, *shape[1:]))
            rows.append(zero)
    return (rows[0] if n == 1 else sh.concatenate_p.bind(*rows, dimension=0)), 0


def _full_like_shape(x, shape):
    aval = aval_of(x)
    zero = ew.convert_element_type_p.bind(np.asarray(0, aval.dtype), new_dtype=aval.dtype, weak_type=False)
    return sh.broadcast_in_dim_p.bind(zero, shape=shape, broadcast_dimensions=())


ppermute_p.def_impl(_unbound("ppermute"))
ppermute_p.always_record = True
ppermute_p.def_linear(lambda ct, x, *, axes, perm: [ppermute_p.bind(ct, axes=axes,
                                                                   perm=tuple((d, s) for s, d in perm))])
ppermute_p.def_vmap(_collective_vmap(_ppermute_named, _same_dim(ppermute_p)), op_rule=True)

register_module(globals())
