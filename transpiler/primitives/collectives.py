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
import srcjax.transpiler.primitives.reduce as rd
import srcjax.transpiler.primitives.shape as sh
from srcjax.transpiler.primitives.ad import aval_of, defjvp2, is_undefined
from srcjax.transpiler.primitives.batching import moveaxis
from srcjax.transpiler.primitives.core import Primitive, check, register_module
from srcjax.transpiler.types import TensorType

_axis_env: list[tuple[Any, int]] = []


@contextlib.contextmanager
def named_axis(name: Any, size: int) -> Iterator[None]:
    _axis_env.append((name, size))
    try:
        yield
    finally:
        _axis_env.pop()


def axis_size(name: Any) -> int:
    for bound, size in reversed(_axis_env):
        if bound == name:
            return size
    available = [n for n, _ in _axis_env]
    raise NameError(f"unbound axis name: {name}. The following axis names (e.g. defined by vmap or pmap) are "
                    f"available to collective operations: {available}")


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
def _reduction(name: str, reduce_batch: Callable[[Any, int], Any]) -> Primitive:
    """``name`` reduces over its named axes; ``reduce_batch(x, size)`` is the reduction along axis 0 of ``x``."""
    prim = Primitive(name, params=("axes",))

    def shape_rule(x: TensorType, *, axes) -> TensorType:
        check(x.dtype.kind in "biufc", name, f"does not accept {x.dtype.name} operands")
        return x

    def named(engine, x, *, axes):
        out = reduce_batch(x, engine.size)
        rest = tuple(a for a in axes if a != engine.axis_name)  # the named axes of enclosing vmaps
        return (prim.bind(out, axes=rest) if rest else out), None

    prim.def_shape(shape_rule)
    prim.def_impl(_unbound(name))
    prim.always_record = True  # a concrete operand too: the result depends on the other examples' operands
    prim.def_vmap(_collective_vmap(named, _same_dim(prim)), op_rule=True)
    return prim


def _mean_of_batch(x, size: int):
    total = rd.reduce_sum_p.bind(x, axes=(0,))
    aval = aval_of(total)
    count = np.asarray(size, aval.dtype)
    count = ew.convert_element_type_p.bind(count, new_dtype=aval.dtype, weak_type=False) if aval.shape == () else \
        sh.broadcast_in_dim_p.bind(count, shape=aval.shape, broadcast_dimensions=())
    return ew.div_p.bind(total, count)


psum_p = _reduction("psum", lambda x, n: rd.reduce_sum_p.bind(x, axes=(0,)))
pmean_p = _reduction("pmean", _mean_of_batch)
pmax_p = _reduction("pmax", lambda x, n: rd.reduce_max_p.bind(x, axes=(0,)))
pmin_p = _reduction("pmin", lambda x, n: rd.reduce_min_p.bind(x, axes=(0,)))
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
all_gather_p.def_vmap(_collective_vmap(
    lambda engine, x, *, axes, axis_size: (x, None),  # the batch, whole, is what every example gathers
    lambda x, d, **params: (all_gather_p.bind(x, **params), d + 1)), op_rule=True)

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
    return total, scatter_dimension


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
axis_index_p.def_vmap(_collective_vmap(
    lambda engine, *, axis_name: (sh.iota_p.bind(dtype=np.dtype(np.int32), shape=(engine.size,), dimension=0), 0),
    None), op_rule=True)

register_module(globals())
