"""Planning the indexed ops: concatenation and padding (operands written into slices of one buffer), small window
reductions (strided views of the operand, combined), gathers (loads at addresses the indices shift), scatters (a
serial nest over the updates), arg-reductions (two reductions) and cumulative scans."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

import numpy as np

from srcjax.codegen.llvm.fusion import Planner
from srcjax.codegen.llvm.layout import View, contiguous_strides
from srcjax.codegen.llvm.plan import Expr, Gathered, Nest, ResultOf, Scattered, Unsupported
from srcjax.transpiler.ir import Literal, Op, Value
from srcjax.transpiler.primitives.indexing import GatherScatterMode, default_fill_value
from srcjax.transpiler.types import TensorType

if TYPE_CHECKING:
    from srcjax.codegen.llvm.table import Row

# window reductions with at most WINDOW_MAX_ELEMENTS elements (no padding, no base dilation) are the combination
# of that many strided views of the operand: one fused nest (max pooling)
WINDOW_MAX_ELEMENTS = 16


def small_window(op: Op) -> bool:
    p = op.params
    return (
        int(np.prod([int(d) for d in p["window_dimensions"]], dtype=np.int64)) <= WINDOW_MAX_ELEMENTS
        and all(int(lo) == 0 and int(hi) == 0 for lo, hi in p["padding"])
        and all(int(b) == 1 for b in p["base_dilation"])
    )



def _indexed_address(operand_strides, operand_shape, sizes, windows, batching, batch_axes, index_map, rank):
    """Where a gather reads (a scatter writes) an element of its operand, for each element of its result
    (updates) of rank ``rank``: per axis, the operand stride it walks (``windows``: (operand axis, window
    axis) pairs; ``batching``: (operand axis, indices batch axis) pairs, the latter following ``batch_axes``),
    and per index component (operand axes ``index_map``), its operand stride and largest start (the window,
    ``sizes``, must fit)."""
    strides = [0] * rank
    for a, axis in windows:
        strides[axis] += operand_strides[a]
    for a, j in batching:
        strides[batch_axes[j]] += operand_strides[a]
    starts = tuple((operand_strides[a], operand_shape[a] - sizes[a]) for a in index_map)
    return tuple(strides), starts



def plan_assemble(planner: Planner, op: Op, row: Row) -> None:
    """``concatenate`` and ``pad`` write their operands (fused expressions included) into slices of the
    result's buffer: one nest per operand, after a fill with the padding value."""
    (result,) = op.results
    buffer = planner._temp(result)
    strides = contiguous_strides(result.aval.shape)
    order = planner.position[id(result)]

    def place(x: Value, at_strides: tuple[int, ...], offset: int) -> None:
        if x.aval.size:
            holder = planner._holder(x, Expr(operand=x, index_map=tuple(range(x.aval.ndim))), "part")
            planner.steps.append(
                Nest(x.aval.shape, stores=[(holder, buffer)], order=order, placement=(at_strides, offset))
            )

    if op.name == "concatenate":
        dim, offset = int(op.params["dimension"]), 0
        for x in op.operands:
            place(x, strides, offset)
            offset += x.aval.shape[dim] * strides[dim]
    else:
        x, value = op.operands
        config = [tuple(int(c) for c in dims) for dims in op.params["padding_config"]]
        if any(lo < 0 or hi < 0 or interior < 0 for lo, hi, interior in config):
            raise Unsupported("'pad' with negative padding is not compiled natively yet")
        fill = planner._holder(result, Expr(operand=value, index_map=()), "padding")
        planner.steps.append(Nest(result.aval.shape, stores=[(fill, buffer)], order=order))
        offset = sum(lo * st for (lo, _, _), st in zip(config, strides))
        place(x, tuple(st * (interior + 1) for (_, _, interior), st in zip(config, strides)), offset)
    planner._root(result, buffer)


def plan_window(planner: Planner, op: Op, row: Row) -> None:
    """A small window reduction: its operand seen through one strided view per window offset (the
    window's strides and dilation scale the operand's), combined elementwise."""
    (result,) = op.results
    (x,) = op.operands
    view = planner.materialise(x)
    p = op.params
    strides = tuple(st * int(s) for st, s in zip(view.strides, p["window_strides"]))
    acc: Value | None = None
    for offset in itertools.product(*(range(int(d)) for d in p["window_dimensions"])):
        start = view.offset + sum(o * int(d) * st for o, d, st in zip(offset, p["window_dilation"], view.strides))
        part = planner._holder(result, View(view.base, result.aval.shape, strides, start), "window")
        if acc is not None:
            part = planner._holder(result, Expr(op=ResultOf(row.combine, [acc, part], {})), "window")
        acc = part
    assert acc is not None  # (a window has at least one element)
    planner.sources[id(result)] = planner.sources[id(acc)]


def _index_components(planner: Planner, indices: Value) -> list[Value]:
    """The components of the indices' index vector (their last axis): views over the batch axes."""
    view = planner.materialise(indices)
    batch = indices.aval.shape[:-1]
    aval = TensorType(indices.aval.dtype, batch)
    return [
        planner._new(aval, View(view.base, batch, view.strides[:-1], view.offset + k * view.strides[-1]), "index")
        for k in range(indices.aval.shape[-1])
    ]


def plan_gather(planner: Planner, op: Op, row: Row) -> None:
    """A gather is an expression: each element loads from the operand at an address the indices shift."""
    (result,) = op.results
    x, indices = op.operands
    p, view = op.params, planner.materialise(x)
    dn, sizes = p["dimension_numbers"], [int(k) for k in p["slice_sizes"]]
    batch_axes = tuple(a for a in range(result.aval.ndim) if a not in dn.offset_dims)
    windowed = [a for a in range(x.aval.ndim) if a not in dn.collapsed_slice_dims + dn.operand_batching_dims]
    strides, starts = _indexed_address(
        view.strides, x.aval.shape, sizes, zip(windowed, dn.offset_dims),
        zip(dn.operand_batching_dims, dn.start_indices_batching_dims), batch_axes, dn.start_index_map,
        result.aval.ndim,
    )
    fill = None
    if p.get("mode") == GatherScatterMode.FILL_OR_DROP:
        fill = default_fill_value(x.aval.dtype) if p.get("fill_value") is None else p["fill_value"]
        with np.errstate(all="ignore"):  # (cast as the NumPy implementation casts it: NaN or 2**40 into int32)
            fill = np.asarray(fill).astype(x.aval.dtype)[()]
    gathered = Gathered(_index_components(planner, indices), view, strides, starts, batch_axes, fill)
    planner.sources[id(result)] = Expr(op=gathered)


def plan_scatter(planner: Planner, op: Op, row: Row) -> None:
    """The operand copied into the result's buffer, then a serial nest over the updates that stores (or
    combines) each one where its indices say."""
    (result,) = op.results
    x, indices, updates = op.operands
    dn, order = op.params["dimension_numbers"], planner.position[id(result)]
    components = _index_components(planner, indices)
    buffer = planner._temp(result)
    operand = planner._holder(x, Expr(operand=x, index_map=tuple(range(x.aval.ndim))), "operand")
    planner.steps.append(Nest(x.aval.shape, stores=[(operand, buffer)], order=order))
    windowed = [a for a in range(x.aval.ndim) if a not in dn.inserted_window_dims + dn.operand_batching_dims]
    batch_axes = tuple(i for i in range(updates.aval.ndim) if i not in dn.update_window_dims)
    sizes = [1] * x.aval.ndim
    for a, u in zip(windowed, dn.update_window_dims):
        sizes[a] = updates.aval.shape[u]
    strides, starts = _indexed_address(
        contiguous_strides(x.aval.shape), x.aval.shape, sizes, zip(windowed, dn.update_window_dims),
        zip(dn.operand_batching_dims, dn.scatter_indices_batching_dims), batch_axes,
        dn.scatter_dims_to_operand_dims, updates.aval.ndim,
    )
    combine = row.combine
    if x.aval.dtype.kind == "b" and combine in ("add", "mul"):
        combine = "or" if combine == "add" else "and"  # (NumPy's add and multiply on booleans)
    clip = op.params.get("mode") == GatherScatterMode.CLIP
    scattered = Scattered(combine, components, strides, starts, batch_axes, clip)
    planner.steps.append(Nest(updates.aval.shape, stores=[(updates, buffer)], order=order, scatter=scattered))
    planner._root(result, buffer)


def plan_arg_reduction(planner: Planner, op: Op, row: Row) -> None:
    """argmax (argmin) as two reductions: the extremum along the axis, then the smallest index where the
    operand equals it (or is NaN: a NaN is the extremum, and the first one wins, as in NumPy and XLA)."""
    (result,) = op.results
    (x,) = op.operands
    (axis,) = (int(a) for a in op.params["axes"])
    index_dtype, order = np.dtype(op.params["index_dtype"]), planner.position[id(result)]
    kept = result.aval.shape
    extremum = Value(TensorType(x.aval.dtype, kept), name="extremum")
    buffer = planner._temp(extremum)
    combine = row.combine
    planner.steps.append(Nest(x.aval.shape, combine=combine, operand=x, axes=(axis,), target=buffer, order=order))
    planner._root(extremum, buffer)
    shape = x.aval.shape
    flags, indices = TensorType(np.dtype(bool), shape), TensorType(index_dtype, shape)

    def expr(aval, name, *operands, **params):
        return planner._new(aval, Expr(op=ResultOf(name, list(operands), params)), "arg")

    spread = planner._new(
        x.aval, Expr(operand=extremum, index_map=tuple(a + (a >= axis) for a in range(len(kept)))), "arg"
    )
    hit = expr(flags, "eq", x, spread)
    if x.aval.dtype.kind == "f":
        hit = expr(flags, "or", hit, expr(flags, "ne", x, x))
    position = expr(indices, "iota", dimension=axis)
    last = Literal(shape[axis] - 1, TensorType(index_dtype, ()))
    chosen = expr(indices, "select_n", hit, last, position)
    target = planner._temp(result)
    planner.steps.append(Nest(shape, combine="min", operand=chosen, axes=(axis,), target=target, order=order))
    planner._root(result, target)


def plan_scan(planner: Planner, op: Op, row: Row) -> None:
    (result,) = op.results
    (x,) = op.operands
    buffer = planner._temp(result)
    planner.steps.append(
        Nest(x.aval.shape, combine=row.combine, operand=x, axes=(int(op.params["axis"]),), target=buffer,
             order=planner.position[id(result)], scan=True, reverse=bool(op.params.get("reverse", False)))
    )
    planner._root(result, buffer)
