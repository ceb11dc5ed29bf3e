"""Products with a BCOO array: ``bcoo_dot_general`` (sparse x dense, dense x sparse), ``@``, and elementwise
``*``/``+`` with scalars, dense arrays and BCOO arrays of the same indices.

``bcoo_dot_general(lhs, rhs)`` forms, for every stored element, its dense block times the slice of ``rhs``
its coordinates select along the contracted and batch axes (a gather), and adds the products into the
output at the coordinates of its free axes (a scatter-add): duplicates and contracted positions add up
there, out-of-bounds elements gather zeros and drop.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

import srcjax.runtime.numpy as jnp
from srcjax.runtime import dtypes, lax
from srcjax.runtime.numpy._core import check_arraylike
from srcjax.runtime.sparse.bcoo import BCOO, _batch_iotas, _shape_of, validate
from srcjax.runtime.sparse.bcoo_layout import bcoo_sum_duplicates

__all__ = ["bcoo_dot_general", "bcoo_multiply_dense", "bcoo_multiply_sparse"]


def _index_tuple(dims: Any) -> tuple[int, ...]:
    return tuple(operator.index(d) for d in (dims if isinstance(dims, (tuple, list)) else (dims,)))


def _dot_shape(lhs_shape, rhs_shape, dimension_numbers) -> tuple[tuple[int, ...], tuple]:
    """lax.dot_general's checks and result shape, for the shapes alone."""
    (lc, rc), (lb, rb) = dimension_numbers
    lc, rc, lb, rb = map(_index_tuple, (lc, rc, lb, rb))
    for dims, rank, side in ((lc, len(lhs_shape), "lhs"), (lb, len(lhs_shape), "lhs"), (rc, len(rhs_shape), "rhs"),
                             (rb, len(rhs_shape), "rhs")):
        if any(not 0 <= d < rank for d in dims):
            raise TypeError(f"dot_general requires {side} dimension numbers to be nonnegative and less than the "
                            f"number of axes of the {side} value, got {dims} for {side} of rank {rank}")
    if len(lc) != len(rc) or len(lb) != len(rb):
        raise TypeError("dot_general requires equal numbers of lhs and rhs contracting and batch dimensions, got "
                        f"contracting {lc}, {rc} and batch {lb}, {rb}")
    if tuple(lhs_shape[d] for d in lb) != tuple(rhs_shape[d] for d in rb):
        raise TypeError("dot_general requires lhs batch dimensions and rhs batch dimensions to have the same "
                        f"shape, got {tuple(lhs_shape[d] for d in lb)} and {tuple(rhs_shape[d] for d in rb)}.")
    if tuple(lhs_shape[d] for d in lc) != tuple(rhs_shape[d] for d in rc):
        raise TypeError("dot_general requires contracting dimensions to have the same shape, got "
                        f"{tuple(lhs_shape[d] for d in lc)} and {tuple(rhs_shape[d] for d in rc)}.")
    lhs_free = [d for d in range(len(lhs_shape)) if d not in lc and d not in lb]
    rhs_free = [d for d in range(len(rhs_shape)) if d not in rc and d not in rb]
    shape = (*(lhs_shape[d] for d in lb), *(lhs_shape[d] for d in lhs_free), *(rhs_shape[d] for d in rhs_free))
    return shape, ((lc, rc), (lb, rb))


def bcoo_dot_general(lhs: Any, rhs: Any, *, dimension_numbers: Any, precision: Any = None,
                     preferred_element_type: Any = None, out_sharding: Any = None) -> Any:
    """``lax.dot_general`` with a BCOO operand: dense result when the other operand is dense."""
    del precision, out_sharding
    if isinstance(lhs, BCOO) and isinstance(rhs, BCOO):
        return _sparse_sparse(lhs, rhs, dimension_numbers, preferred_element_type)
    if isinstance(lhs, BCOO):
        return _sparse_dense(lhs, jnp.asarray(rhs), dimension_numbers, preferred_element_type)
    if isinstance(rhs, BCOO):  # lhs . rhs = transpose(rhs . lhs), the free axes swapped back
        (lc, rc), (lb, rb) = dimension_numbers
        out = _sparse_dense(rhs, jnp.asarray(lhs), ((rc, lc), (rb, lb)), preferred_element_type)
        n_batch, n_contract = len(_index_tuple(lb)), len(_index_tuple(lc))
        n_rhs_free = rhs.ndim - n_contract - n_batch
        split = n_batch + n_rhs_free
        return jnp.transpose(out, (*range(n_batch), *range(split, out.ndim), *range(n_batch, split)))
    return lax.dot_general(lhs, rhs, dimension_numbers, preferred_element_type=preferred_element_type)


def _sparse_dense(lhs: BCOO, rhs: Any, dimension_numbers: Any, preferred: Any) -> Any:
    layout = validate(lhs.data, lhs.indices, lhs.shape)
    nb, ns = layout.n_batch, layout.n_sparse
    out_shape, ((lc, rc), (lb, rb)) = _dot_shape(lhs.shape, _shape_of(rhs), dimension_numbers)
    if lb and max(lb) >= nb:
        raise NotImplementedError("bcoo_dot_general batch dimensions must be among the batch dimensions in the "
                                  f"sparse representation.\ngot lhs_batch={lb}, n_batch={nb}")
    if any(d >= nb + ns for d in lc):
        raise NotImplementedError("bcoo_dot_general: contracting over dense dimensions.")
    out_dtype = (dtypes.canonicalize_dtype(preferred) if preferred is not None
                 else jnp.result_type(lhs.data, rhs))
    batch = tuple(lhs.shape[:nb])
    data = jnp.broadcast_to(lhs.data, batch + _shape_of(lhs.data)[nb:]).astype(out_dtype)
    # the coordinate of every stored element along each lhs axis that is not dense: [*batch, nse] arrays
    coordinate = dict(enumerate(_batch_iotas(batch, 1)))
    coordinate.update({nb + i: lhs.indices[..., i] for i in range(ns)})
    coordinate = {d: jnp.broadcast_to(c, batch + (layout.nse,)) for d, c in coordinate.items()}
    # gather rhs at the coordinates of the contracted and batch axes; what stays are rhs's free axes
    pairs = list(zip(lb, rb)) + list(zip(lc, rc))
    rhs_free = [d for d in range(rhs.ndim) if d not in rc and d not in rb]
    rhs = jnp.transpose(rhs, (*(r for _, r in pairs), *rhs_free)).astype(out_dtype)
    if pairs:
        picked = rhs.at[tuple(coordinate[l] for l, _ in pairs)].get(mode="fill", fill_value=0)
    else:
        picked = jnp.broadcast_to(rhs, batch + (layout.nse,) + _shape_of(rhs))
    n_dense, n_rhs_free = layout.n_dense, len(rhs_free)
    product = (jnp.reshape(data, _shape_of(data) + (1,) * n_rhs_free)
               * jnp.reshape(picked, batch + (layout.nse,) + (1,) * n_dense + _shape_of(picked)[nb + 1:]))
    # scatter-add at the coordinates of the output's leading axes: lhs batch axes, then lhs free sparse ones
    lhs_free = [d for d in range(nb + ns) if d not in lc and d not in lb]
    targets = [coordinate[d] for d in (*lb, *lhs_free)]
    if not targets:
        return jnp.sum(product, axis=tuple(range(nb + 1)), dtype=out_dtype)
    return jnp.zeros(out_shape, out_dtype).at[tuple(targets)].add(product, mode="drop")


def _sparse_sparse(lhs: BCOO, rhs: BCOO, dimension_numbers: Any, preferred: Any) -> BCOO:
    """Every pair of stored elements whose contracted indices agree gives a product at (lhs's free indices,
    rhs's free indices); the pairs that disagree stay as zeros, and duplicates are summed (not dropped: JAX
    keeps the structure for autodiff). nse = the product of the operands' nse, at most the output's size."""
    out_shape, ((lc, rc), (lb, rb)) = _dot_shape(lhs.shape, rhs.shape, dimension_numbers)
    left, right = validate(lhs.data, lhs.indices, lhs.shape), validate(rhs.data, rhs.indices, rhs.shape)
    if left.n_dense or right.n_dense:
        raise NotImplementedError("bcoo_spdot_general with dense dimensions.")
    if lb or rb or left.n_batch or right.n_batch:
        raise NotImplementedError("bcoo_dot_general of two BCOO arrays with batch dimensions is not built in srcjax; "
                                  "convert one operand with .todense()")
    lhs_free = [d for d in range(left.n_sparse) if d not in lc]
    rhs_free = [d for d in range(right.n_sparse) if d not in rc]
    out_nse = min((left.nse if lhs_free else 1) * (right.nse if rhs_free else 1), int(np.prod(out_shape)))
    dtype = (dtypes.canonicalize_dtype(preferred) if preferred is not None
             else jnp.result_type(lhs.data, rhs.data))

    def columns(mat: BCOO, dims: list[int]) -> Any:
        return mat.indices[:, np.array(dims, dtype=np.int32)] if dims else mat.indices[:, :0]

    lhs_i, rhs_i = columns(lhs, list(lc)), columns(rhs, list(rc))
    overlap = jnp.all(lhs_i[:, None, :] == rhs_i[None, :, :], axis=-1)
    lhs_valid = jnp.all(lhs_i < jnp.array([lhs.shape[d] for d in lc], lhs_i.dtype), axis=-1)
    rhs_valid = jnp.all(rhs_i < jnp.array([rhs.shape[d] for d in rc], rhs_i.dtype), axis=-1)
    products = lhs.data.astype(dtype)[:, None] * rhs.data.astype(dtype)[None, :]
    data = jnp.where(overlap & lhs_valid[:, None] & rhs_valid[None, :], products, 0).ravel()
    index_dtype = jnp.result_type(lhs.indices, rhs.indices)
    lhs_j, rhs_j = columns(lhs, lhs_free).astype(index_dtype), columns(rhs, rhs_free).astype(index_dtype)
    indices = jnp.concatenate([jnp.broadcast_to(lhs_j[:, None, :], (left.nse, right.nse, len(lhs_free))),
                               jnp.broadcast_to(rhs_j[None, :, :], (left.nse, right.nse, len(rhs_free)))], axis=-1)
    indices = jnp.reshape(indices, (left.nse * right.nse, len(lhs_free) + len(rhs_free)))
    summed = bcoo_sum_duplicates(BCOO((data, indices), shape=out_shape), nse=out_nse)
    return BCOO((summed.data, summed.indices), shape=out_shape)


def matmul(a: Any, b: Any) -> Any:
    """``a @ b`` with one BCOO operand, as jnp.matmul's contraction: the last axis of ``a`` with the
    second-to-last of ``b`` (the only one of a vector), leading axes batched where both have them."""
    check_arraylike("matmul", *(0 if isinstance(x, BCOO) else x for x in (a, b)))
    a_shape, b_shape = tuple(jnp.shape(a)), tuple(jnp.shape(b))
    if isinstance(a, BCOO) and isinstance(b, BCOO):
        return bcoo_dot_general(a, b, dimension_numbers=(((a.ndim - 1,), (max(len(b_shape) - 2, 0),)), ((), ())))
    if not a_shape or not b_shape:
        raise ValueError("matmul: inputs must be at least 1-dimensional, got shapes "
                         f"{a_shape} and {b_shape}")
    a_vec, b_vec = len(a_shape) == 1, len(b_shape) == 1
    a_lead, b_lead = a_shape[:-2] if not a_vec else (), b_shape[:-2] if not b_vec else ()
    n = max(len(a_lead), len(b_lead))
    batch_a, batch_b, free_a, free_b = [], [], [], []
    for i in range(n):  # leading axes aligned from the right, as broadcasting aligns them
        ia, ib = i - (n - len(a_lead)), i - (n - len(b_lead))
        if ia >= 0 and ib >= 0:
            if a_lead[ia] != b_lead[ib]:
                raise NotImplementedError(f"matmul of a BCOO array with broadcasting leading axes: shapes {a_shape} "
                                          f"and {b_shape}")
            batch_a.append(ia)
            batch_b.append(ib)
        elif ia >= 0:
            free_a.append(ia)
        else:
            free_b.append(ib)
    contract = ((len(a_shape) - 1,), (0 if b_vec else len(b_shape) - 2,))
    out = bcoo_dot_general(a, b, dimension_numbers=(contract, (tuple(batch_a), tuple(batch_b))))
    # dot_general gives [batch, a's free leading, a's row, b's free leading, b's column]: put the free
    # leading axes where broadcasting puts them (before the batch ones, a's lead being longer or b's)
    nb, nfa, nfb = len(batch_a), len(free_a), len(free_b)
    a_rows = 0 if a_vec else 1
    order = [*range(nb, nb + nfa), *range(nb + nfa + a_rows, nb + nfa + a_rows + nfb), *range(nb),
             *range(nb + nfa, nb + nfa + a_rows), *range(nb + nfa + a_rows + nfb, out.ndim)]
    return out if order == list(range(out.ndim)) else jnp.transpose(out, order)


def bcoo_multiply_dense(sp_mat: BCOO, v: Any) -> Any:
    """The stored data times ``v`` at the stored positions (``v`` broadcasts to the sparse array's shape):
    the data of the product, whose indices are ``sp_mat``'s."""
    v = jnp.asarray(v)
    shape = sp_mat.shape
    if v.ndim == 0:
        return sp_mat.data * v
    if jnp.broadcast_shapes(_shape_of(v), shape) != shape:
        raise NotImplementedError("multiplication between sparse and dense is only implemented for cases where the "
                                  f"output shape matches the sparse matrix shape. Got shape={shape}, "
                                  f"v.shape={_shape_of(v)}")
    layout = validate(sp_mat.data, sp_mat.indices, shape)
    nb, ns = layout.n_batch, layout.n_sparse
    v = jnp.reshape(v, (1,) * (len(shape) - v.ndim) + _shape_of(v))
    v_shape = _shape_of(v)
    batch = tuple(max(a, b) for a, b in zip(_shape_of(sp_mat.data)[:nb], _shape_of(sp_mat.indices)[:nb]))
    # the element of v at each stored position; the dense axes as slices. As JAX's: of a v of the full shape an
    # out-of-bounds position reads 0; of a broadcast v, a size-1 axis is read at 0 and the others clamp
    full = v_shape == shape
    where = tuple(c if v_shape[i] != 1 or full else jnp.zeros_like(c) for i, c in enumerate(_batch_iotas(batch, 1)))
    where += tuple(sp_mat.indices[..., i] if v_shape[nb + i] != 1 or full else jnp.zeros_like(sp_mat.indices[..., i])
                   for i in range(ns))
    picked = (v.at[where].get(mode="fill", fill_value=0) if full else v.at[where].get(mode="clip")) if where else v
    return sp_mat.data * picked


def multiply(a: Any, b: Any) -> BCOO:
    """``a * b`` with a BCOO operand: a BCOO array of the same indices (sparse x sparse: the same indices)."""
    if isinstance(a, BCOO) and isinstance(b, BCOO):
        return bcoo_multiply_sparse(a, b)
    mat, other = (a, b) if isinstance(a, BCOO) else (b, a)
    if not isinstance(other, (int, float, complex, bool, np.generic)) and not hasattr(other, "shape"):
        return NotImplemented
    data = bcoo_multiply_dense(mat, other)
    return BCOO((data, mat.indices), shape=mat.shape, indices_sorted=mat.indices_sorted,
                unique_indices=mat.unique_indices)


def bcoo_multiply_sparse(lhs: BCOO, rhs: BCOO) -> BCOO:
    """Elementwise product of two BCOO arrays (shapes broadcasting): per batch of the fewer batch axes, each
    pair of stored elements whose indices agree (on the axes neither has of length 1) gives an element at the
    larger of the two indices; nse = lhs.nse * rhs.nse, JAX's bound. Batches are unrolled."""
    if lhs.ndim != rhs.ndim:
        raise TypeError("bcoo_multiply_sparse: arrays must have same number of dimensions, "
                        f"got {lhs.shape}, {rhs.shape}")
    if lhs.n_dense != rhs.n_dense:
        raise NotImplementedError("bcoo_multiply_sparse: arrays with differing numbers of dense dimensions")
    from srcjax.runtime.sparse.bcoo_layout import bcoo_update_layout

    shape = jnp.broadcast_shapes(lhs.shape, rhs.shape)
    n = min(lhs.n_batch, rhs.n_batch)
    lhs, rhs = (bcoo_update_layout(x, n_batch=n) for x in (lhs, rhs))
    batch = shape[:n]
    if any(_shape_of(x)[:n] != batch for x in (lhs.data, lhs.indices, rhs.data, rhs.indices)):
        raise NotImplementedError("bcoo_multiply_sparse of arrays with broadcast batch axes is not built in srcjax")
    count = int(np.prod(batch, dtype=np.int64))
    if count == 0:
        raise NotImplementedError("bcoo_multiply_sparse of arrays with an empty batch is not built in srcjax")
    (ld, li), (rd, ri) = [tuple(jnp.reshape(x, (count,) + _shape_of(x)[n:]) for x in (m.data, m.indices))
                          for m in (lhs, rhs)]
    parts = [_multiply_unbatched(BCOO((ld[b], li[b]), shape=lhs.shape[n:]), BCOO((rd[b], ri[b]), shape=rhs.shape[n:]))
             for b in range(count)]
    data = jnp.stack([d for d, _ in parts])
    indices = jnp.stack([i for _, i in parts])
    data = jnp.reshape(data, batch + _shape_of(data)[1:])
    indices = jnp.reshape(indices, batch + _shape_of(indices)[1:])
    return BCOO((data, indices), shape=shape)


def _multiply_unbatched(lhs: BCOO, rhs: BCOO) -> tuple[Any, Any]:
    n_sparse = lhs.n_sparse
    axes = np.array([i for i, (a, b) in enumerate(zip(lhs.shape[:n_sparse], rhs.shape[:n_sparse]))
                     if a != 1 and b != 1], dtype=np.int32)
    nse = lhs.nse * rhs.nse
    same = jnp.all(lhs.indices[:, None, axes] == rhs.indices[None, :, axes], axis=-1)
    i_lhs, i_rhs = jnp.nonzero(same, size=nse, fill_value=(lhs.nse, rhs.nse))
    data = (lhs.data.at[i_lhs].get(mode="fill", fill_value=0) * rhs.data.at[i_rhs].get(mode="fill", fill_value=0))
    indices = jnp.maximum(lhs.indices.at[i_lhs].get(mode="fill", fill_value=max(lhs.shape, default=0)),
                          rhs.indices.at[i_rhs].get(mode="fill", fill_value=max(rhs.shape, default=0)))
    return data, indices


def subtract(a: Any, b: Any) -> BCOO:
    """``a - b`` of two BCOO arrays (JAX subtracts no dense array from a sparse one, nor the reverse)."""
    if not (isinstance(a, BCOO) and isinstance(b, BCOO)):
        raise NotImplementedError("Subtraction between sparse and dense array.")
    return add(a, -b)


def add(a: Any, b: Any) -> BCOO:
    """``a + b`` of two BCOO arrays of one shape and layout: their stored elements side by side."""
    if not (isinstance(a, BCOO) and isinstance(b, BCOO)):  # sparse + dense of the sparse one's shape: dense
        mat, other = (a, b) if isinstance(a, BCOO) else (b, a)
        if tuple(jnp.shape(other)) != jnp.broadcast_shapes(mat.shape, jnp.shape(other)):
            raise NotImplementedError("Addition between a sparse array X and a dense array Y is not implemented when "
                                      "the output shape is larger than Y.shape. This is to prevent silent "
                                      "densification of a large sparse array. If this is your intent, you can "
                                      "explicitly cast the sparse array to a dense matrix.")
        return mat.todense() + other if mat is a else other + mat.todense()
    if a.shape != b.shape:
        raise NotImplementedError("Addition between sparse matrices of different shapes.")
    if a.indices is b.indices:
        return BCOO((a.data + b.data, a.indices), shape=a.shape, indices_sorted=a.indices_sorted,
                    unique_indices=a.unique_indices)
    if a.indices.ndim != b.indices.ndim or a.data.ndim != b.data.ndim:
        raise NotImplementedError("Addition between sparse matrices with different batch/dense dimensions.")
    nb = a.n_batch
    dtype = jnp.result_type(a.data, b.data)
    return BCOO((jnp.concatenate([a.data.astype(dtype), b.data.astype(dtype)], axis=nb),
                 jnp.concatenate([a.indices, b.indices], axis=nb)), shape=a.shape)
