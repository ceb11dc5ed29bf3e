"""Planning matrix products (``dot_general``: BLAS where the dtypes allow, else a loop nest) and convolutions
(im2col: the patches of the input as one nest, then a product per group)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from srcjax.codegen.llvm.fusion import Planner
from srcjax.codegen.llvm.layout import View, contiguous_strides, matrix_layout, reshape_view
from srcjax.codegen.llvm.plan import Expr, Gemm, Nest, ResultOf, Unsupported, Windowed
from srcjax.transpiler.ir import Op, Value
from srcjax.transpiler.types import TensorType

if TYPE_CHECKING:
    from srcjax.codegen.llvm.table import Row


def plan_dot(planner: Planner, op: Op, row: Row) -> None:
    (result,) = op.results
    lhs, rhs = op.operands
    (lc, rc), (lb, rb) = op.params["dimension_numbers"]
    first = len(planner.steps)
    _contract(planner, lhs, rhs, *(tuple(int(a) for a in axes) for axes in (lc, rc, lb, rb)), result)
    for step in planner.steps[first:]:  # (the GPU's float32 products follow the op's precision)
        if isinstance(step, Gemm):
            step.precision = op.params.get("precision")


def _contract(planner: Planner, lhs: Value, rhs: Value, lc, rc, lb, rb, result: Value) -> None:
    """``result`` = the product of ``lhs`` and ``rhs`` contracting lc with rc, batched over lb with rb (XLA's
    dot_general, result axes batch, lhs free, rhs free): BLAS, or a loop nest."""
    lf = tuple(a for a in range(lhs.aval.ndim) if a not in lc + lb)
    rf = tuple(a for a in range(rhs.aval.ndim) if a not in rc + rb)
    out_dtype = result.aval.dtype
    same = lhs.aval.dtype == rhs.aval.dtype == out_dtype
    if all(lhs.aval.shape[a] == 1 for a in lc) and same and out_dtype.kind != "b":
        _outer(planner, lhs, rhs, lb, rb, lf, rf, result)
        return
    order = planner.position[id(result)]
    buffer = planner._temp(result)
    if same and out_dtype in planner.gemm_dtypes and lhs.aval.size and rhs.aval.size:
        if _read_transposed(planner, result, len(lb), len(lf), len(rf)):
            # out^T = rhs^T @ lhs^T: the buffer holds (batch, rhs free, lhs free), which its readers want
            planner.steps.append(_gemm(planner, rhs, lhs, rc, lc, rb, lb, rf, lf, buffer, order))
            shape = result.aval.shape
            nb, nlf = len(lb), len(lf)
            held = tuple(range(nb)) + tuple(range(nb + nlf, len(shape))) + tuple(range(nb, nb + nlf))
            held_strides = contiguous_strides(tuple(shape[a] for a in held))
            strides = tuple(held_strides[position] for position in np.argsort(held))
            planner.buffers[id(result)] = buffer
            planner.sources[id(result)] = View(result, shape, strides)
            return
        planner.steps.append(_gemm(planner, lhs, rhs, lc, rc, lb, rb, lf, rf, buffer, order))
        planner._root(result, buffer)
        return
    if out_dtype.kind == "b":
        raise Unsupported("boolean matrix products are not compiled natively")
    # a loop nest over (batch, lhs free, contracting, rhs free): the innermost axis runs along rows of
    # rhs and out, so it vectorises; the contraction accumulates in out.
    nb, nlf, nc = len(lb), len(lf), len(lc)
    shape = (
        tuple(lhs.aval.shape[a] for a in lb)
        + tuple(lhs.aval.shape[a] for a in lf)
        + tuple(lhs.aval.shape[a] for a in lc)
        + tuple(rhs.aval.shape[a] for a in rf)
    )
    lmap = [None] * lhs.aval.ndim
    rmap = [None] * rhs.aval.ndim
    for i, a in enumerate(lb):
        lmap[a] = i
        rmap[rb[i]] = i
    for i, a in enumerate(lf):
        lmap[a] = nb + i
    for i, a in enumerate(lc):
        lmap[a] = nb + nlf + i
        rmap[rc[i]] = nb + nlf + i
    for i, a in enumerate(rf):
        rmap[a] = nb + nlf + nc + i
    planner.materialise(lhs)
    planner.materialise(rhs)
    axes = tuple(range(nb + nlf, nb + nlf + nc))
    planner.steps.append(
        Nest(
            shape,
            combine="add",
            axes=axes,
            target=buffer,
            order=order,
            product=(lhs, tuple(lmap), rhs, tuple(rmap), out_dtype),
        )
    )
    planner._root(result, buffer)


def _outer(planner: Planner, lhs: Value, rhs: Value, lb, rb, lf, rf, result: Value) -> None:
    """A product that contracts nothing, or only axes of size 1 (an outer product: reverse mode's weight gradient
    of a matrix-vector product) is the elementwise product of the operands broadcast to the result, an
    expression: the nests that read it compute it where they need it (``dW + outer(g, h)`` in a loop is one
    pass), where a BLAS call of k = 1 would write it out first. Each element is one product, as XLA makes it
    (BLAS adds it to 0, making -0.0 0.0)."""
    nb, nlf = len(lb), len(lf)
    lmap, rmap = [None] * lhs.aval.ndim, [None] * rhs.aval.ndim  # (a contracted axis of size 1 stays at 0)
    for i, (a, b) in enumerate(zip(lb, rb)):
        lmap[a] = rmap[b] = i
    for i, a in enumerate(lf):
        lmap[a] = nb + i
    for i, a in enumerate(rf):
        rmap[a] = nb + nlf + i
    spread = [planner._new(result.aval, Expr(operand=x, index_map=tuple(m)), "outer")
              for x, m in ((lhs, lmap), (rhs, rmap))]
    planner.sources[id(result)] = Expr(op=ResultOf("mul", spread, {}))


def _read_transposed(planner: Planner, result: Value, nb: int, nlf: int, nrf: int) -> bool:
    """Whether every reader of a product's (batch, lhs free, rhs free) result transposes it to (batch, rhs
    free, lhs free), as reverse mode does with weight gradients: then the product is computed transposed."""
    if any(r is result for r in planner.fn.results) or not nlf or not nrf:
        return False
    swapped = list(range(nb)) + list(range(nb + nlf, nb + nlf + nrf)) + list(range(nb, nb + nlf))
    readers = planner.users.get(id(result), [])
    return bool(readers) and all(
        op.name == "transpose" and [int(p) for p in op.params["permutation"]] == swapped for op in readers
    )


def _gemm(planner: Planner, lhs, rhs, lc, rc, lb, rb, lf, rf, buffer, order) -> Gemm:
    """A BLAS call; an operand whose (batch, rows, columns) stack BLAS cannot read in place (no unit
    stride along rows or columns, or axes that do not merge) is copied to a contiguous one first."""

    def matrices(x: Value, batch, rows, cols) -> tuple[View, int, bool, int]:
        view = planner.materialise(x)
        layout = matrix_layout(view, batch, rows, cols)
        if layout is None:
            order_ = batch + rows + cols
            view = planner._copy_view(
                View(
                    view.base,
                    tuple(view.shape[a] for a in order_),
                    tuple(view.strides[a] for a in order_),
                    view.offset,
                )
            )
            nb, nr = len(batch), len(rows)
            layout = matrix_layout(
                view, tuple(range(nb)), tuple(range(nb, nb + nr)), tuple(range(nb + nr, len(view.shape)))
            )
            assert layout is not None
        return (view, *layout)

    lview, lbatch, ltrans, lld = matrices(lhs, lb, lf, lc)
    rview, rbatch, rtrans, rld = matrices(rhs, rb, rc, rf)
    size = lambda axes, x: int(np.prod([x.aval.shape[a] for a in axes], dtype=np.int64))  # noqa: E731
    symmetric = (
        lview.base is rview.base
        and lview.offset == rview.offset
        and lbatch == rbatch
        and ltrans != rtrans
        and lld == rld
        and size(lf, lhs) == size(rf, rhs)
    )
    return Gemm(
        lview,
        rview,
        buffer,
        size(lb, lhs),
        size(lf, lhs),
        size(rf, rhs),
        size(lc, lhs),
        (lbatch, ltrans, lld),
        (rbatch, rtrans, rld),
        order,
        symmetric,
    )


def plan_conv(planner: Planner, op: Op, row: Row) -> None:
    """im2col: the patches (G, N/bg, *out, *kernel, C/fg) of the padded, dilated input as one map nest (0 in
    padding and holes), then one product per group with the kernel (BLAS, or a loop nest). With groups, the
    product is computed transposed, (G, O/G, N/bg, *out), so the result is a view either way."""
    (result,) = op.results
    x, w = op.operands
    p = op.params
    lspec, rspec, ospec = p["dimension_numbers"]
    fg, bg = int(p.get("feature_group_count") or 1), int(p.get("batch_group_count") or 1)
    groups, rank = fg * bg, x.aval.ndim - 2
    xs, ws = x.aval.shape, w.aval.shape
    batch, out_features, cin = xs[lspec[0]] // bg, ws[rspec[0]], ws[rspec[1]]
    kernel = [ws[a] for a in rspec[2:]]
    out_sizes = [result.aval.shape[a] for a in ospec[2:]]
    view = planner.materialise(x)
    st = view.strides
    # the patches: axes (group, batch, *out, *kernel, channel)
    shape = (groups, batch, *out_sizes, *kernel, cin)
    strides = [0] * len(shape)
    strides[0] = st[lspec[0]] * batch if bg > 1 else st[lspec[1]] * cin
    strides[1], strides[-1] = st[lspec[0]], st[lspec[1]]
    spatial = []
    for a in range(rank):
        coeffs = [0] * len(shape)
        coeffs[2 + a] = int(p["window_strides"][a])
        coeffs[2 + rank + a] = int(p["rhs_dilation"][a])
        low, dilation = int(p["padding"][a][0]), int(p["lhs_dilation"][a])
        top = (xs[lspec[2 + a]] - 1) * dilation
        spatial.append((tuple(coeffs), -low, top, dilation, st[lspec[2 + a]]))
    dtype = result.aval.dtype
    windowed = Windowed(view, tuple(strides), tuple(spatial))
    patches = planner._new(TensorType(dtype, shape), Expr(op=windowed), "patches")
    # the kernel as (G, O/G, C/fg, *kernel)
    wview = planner.materialise(w)
    permuted = View(wview.base, tuple(ws[a] for a in rspec), tuple(wview.strides[a] for a in rspec), wview.offset)
    kernel_view = reshape_view(permuted, (groups, out_features // groups, cin, *kernel))
    assert kernel_view is not None  # (splitting the leading axis is always a view)
    weights = planner._new(TensorType(dtype, kernel_view.shape), kernel_view, "kernel")
    pc = (*range(2 + rank, 2 + 2 * rank), 2 + 2 * rank)  # the patches' (kernel, channel) axes
    wc = (*range(3, 3 + rank), 2)
    positions = int(np.prod(out_sizes, dtype=np.int64))
    # (1, N, *out, O), or with groups (G, O/G, N, *out): canonical (N, O, *out) is a view of either
    held_shape = (1, batch, *out_sizes, out_features) if groups == 1 else (
        groups, out_features // groups, batch, *out_sizes)
    held = planner._new(TensorType(dtype, held_shape), None, "conv")
    # (the patches' nest and the product run where the convolution stands in the program)
    planner.position[id(patches)] = planner.position[id(held)] = planner.position[id(result)]
    if groups == 1:
        _contract(planner, patches, weights, pc, wc, (0,), (0,), held)
        canonical = [positions * out_features, 1] + list(contiguous_strides((*out_sizes, out_features))[:-1])
    else:
        _contract(planner, weights, patches, wc, pc, (0,), (0,), held)
        canonical = [positions, batch * positions] + list(contiguous_strides(tuple(out_sizes)))
    out_strides = [0] * len(canonical)
    for i, axis in enumerate(ospec):
        out_strides[axis] = canonical[i]
    if tuple(out_strides) == contiguous_strides(result.aval.shape) or not result.aval.size:
        planner._root(result, planner.buffers[id(held)])  # (a result written by the product itself)
    else:
        planner.sources[id(result)] = View(held, result.aval.shape, tuple(out_strides))
