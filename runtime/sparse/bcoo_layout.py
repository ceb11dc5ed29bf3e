"""BCOO layout operations: sorting, summing duplicates, transposes, sums over axes, reshapes, and moving axes
between the batch, sparse and dense kinds (``update_layout``). Sorting is lexicographic along the nse axis
(``lax.sort`` with the index columns as keys); duplicates meet in runs of the sorted order."""

from __future__ import annotations

import math
import operator
from typing import Any, Sequence

import numpy as np

import srcjax.runtime.numpy as jnp
from srcjax.runtime import lax
from srcjax.runtime.numpy._core import aval
from srcjax.runtime.numpy.indexing import ConcretizationError, _concrete_value
from srcjax.runtime.sparse.bcoo import BCOO, Layout, _batch_iotas, _shape_of, _sparse_fill, validate

__all__ = [
    "SparseEfficiencyError", "SparseEfficiencyWarning", "bcoo_broadcast_in_dim", "bcoo_concatenate",
    "bcoo_eliminate_zeros", "bcoo_reduce_sum", "bcoo_reshape", "bcoo_sort_indices", "bcoo_sum_duplicates",
    "bcoo_transpose", "bcoo_update_layout",
]


# -- sorting and duplicates ------------------------------------------------------------------------------------
def _sort_rows(indices: Any, n_batch: int) -> tuple[list[Any], Any]:
    """The index columns sorted lexicographically along the nse axis (stably), and the permutation."""
    columns = [indices[..., i] for i in range(_shape_of(indices)[-1])]
    iota = lax.broadcasted_iota(np.int32, _shape_of(indices)[:-1], n_batch)
    *columns, perm = lax.sort((*columns, iota), dimension=n_batch, num_keys=len(columns))
    return columns, perm


def _take_along_nse(data: Any, perm: Any, n_batch: int) -> Any:
    """``data[b, perm[b, e]]`` for every batch b (perm's batch axes may be 1 where data's are not)."""
    d_shape, p_shape = _shape_of(data), _shape_of(perm)
    batch = tuple(max(a, b) for a, b in zip(d_shape[:n_batch], p_shape[:n_batch]))
    data = jnp.broadcast_to(data, batch + d_shape[n_batch:])
    perm = jnp.broadcast_to(perm, batch + p_shape[n_batch:])
    return data[_batch_iotas(batch, 1) + (perm,)]


def bcoo_sort_indices(mat: BCOO) -> BCOO:
    """The stored elements in lexicographic order of their indices (duplicates kept, in their order)."""
    layout = validate(mat.data, mat.indices, mat.shape)
    if layout.n_sparse == 0:
        return BCOO((mat.data, mat.indices), shape=mat.shape, indices_sorted=True, unique_indices=mat.unique_indices)
    columns, perm = _sort_rows(mat.indices, layout.n_batch)
    data = _take_along_nse(mat.data, perm, layout.n_batch)
    return BCOO((data, jnp.stack(columns, axis=-1)), shape=mat.shape, indices_sorted=True,
                unique_indices=mat.unique_indices)


def _unique_rows(indices: Any, shape: Sequence[int], layout: Layout) -> tuple[Any, Any, Any]:
    """Per batch: the distinct index rows in sorted order padded with the padding index, where each stored
    element went (its row's rank), and how many distinct in-bounds rows there are. Out-of-bounds rows become
    the padding row first, so they all meet in one (last) row."""
    nb = layout.n_batch
    fill = _sparse_fill(shape, layout, aval(indices).dtype)
    out_of_bounds = jnp.any(indices >= fill, axis=-1, keepdims=True)
    indices = jnp.where(out_of_bounds, fill, indices)
    columns, perm = _sort_rows(indices, nb)
    rows = jnp.stack(columns, axis=-1)
    prev = jnp.concatenate([rows[..., :1, :], rows[..., :-1, :]], axis=nb)
    first = jnp.any(rows != prev, axis=-1) | (lax.broadcasted_iota(np.int32, _shape_of(rows)[:-1], nb) == 0)
    rank = jnp.cumsum(first.astype(np.int32), axis=nb) - 1
    where = _batch_iotas(_shape_of(indices)[:nb], 1)
    inverse = jnp.zeros_like(rank).at[where + (perm,)].set(rank)
    unique = jnp.broadcast_to(fill, _shape_of(indices)).at[where + (rank,)].set(rows)
    count = jnp.sum(first.astype(np.int32), axis=nb) - jnp.any(out_of_bounds[..., 0], axis=nb).astype(np.int32)
    return unique, inverse, count


def bcoo_sum_duplicates(mat: BCOO, nse: int | None = None) -> BCOO:
    """Duplicate indices summed into one element each, sorted; ``nse`` elements per batch (by default the
    most any batch needs, which must then be computable: pass ``nse`` under jit)."""
    data, indices, shape = mat.data, mat.indices, mat.shape
    layout = validate(data, indices, shape)
    nb = layout.n_batch
    if layout.n_sparse == 0:  # every element sits at the one position there is
        unique = jnp.zeros(_shape_of(indices)[:nb] + (1, 0), aval(indices).dtype)
        inverse = jnp.zeros(_shape_of(indices)[:-1], np.int32)
        nse = 1 if nse is None else nse
    else:
        unique, inverse, count = _unique_rows(indices, shape, layout)
        if nse is None:
            count = _concrete_value(count, "bcoo_sum_duplicates", "the indices (without nse=)", structure=True,
                                    error=ConcretizationError,
                                    why="the number of distinct indices would depend on them. Pass nse=...")
            nse = int(count.max()) if count.size and layout.nse else 0
    nse = operator.index(nse)
    have = _shape_of(unique)[-2]
    if nse <= have:
        unique = unique[..., :nse, :]
    else:
        pad = jnp.broadcast_to(_sparse_fill(shape, layout, aval(indices).dtype),
                               _shape_of(unique)[:-2] + (nse - have, layout.n_sparse))
        unique = jnp.concatenate([unique, pad], axis=nb)
    d_shape, i_shape = _shape_of(data), _shape_of(inverse)
    batch = tuple(max(a, b) for a, b in zip(d_shape[:nb], i_shape[:nb]))
    out = jnp.zeros(batch + (nse,) + d_shape[nb + 1:], data.dtype)
    inverse = jnp.broadcast_to(inverse, batch + i_shape[nb:])
    out = out.at[_batch_iotas(batch, 1) + (inverse,)].add(jnp.broadcast_to(data, batch + d_shape[nb:]), mode="drop")
    return BCOO((out, unique), shape=shape, indices_sorted=True, unique_indices=True)


def bcoo_eliminate_zeros(mat: BCOO, nse: int | None = None) -> BCOO:
    """``sum_duplicates`` after moving stored zero blocks to the padding index (so they are dropped)."""
    data, indices, shape = mat.data, mat.indices, mat.shape
    layout = validate(data, indices, shape)
    nb = layout.n_batch
    zero = jnp.all(data == 0, axis=tuple(range(nb + 1, data.ndim)))
    broadcast = tuple(i for i, s in enumerate(_shape_of(indices)[:nb]) if s == 1)
    zero = jnp.all(zero, axis=broadcast, keepdims=True) if broadcast else zero
    indices = jnp.where(zero[..., None], _sparse_fill(shape, layout, aval(indices).dtype), indices)
    return bcoo_sum_duplicates(BCOO((data, indices), shape=shape), nse=nse)


# -- transpose, reduce_sum, reshape ----------------------------------------------------------------------------
def _split_permutation(permutation: Sequence[int], layout: Layout, shape: Sequence[int]):
    if not isinstance(permutation, (tuple, list, np.ndarray)):
        raise TypeError(f"transpose permutation must be a tuple/list/ndarray, got {type(permutation)}.")
    permutation = tuple(int(p) for p in permutation)
    if tuple(sorted(permutation)) != tuple(range(len(shape))):
        raise TypeError("transpose permutation isn't a permutation of operand dimensions, "
                        f"got permutation {permutation} for shape {tuple(shape)}.")
    nb, ns = layout.n_batch, layout.n_sparse
    batch_perm = permutation[:nb]
    sparse_perm = [p - nb for p in permutation[nb:nb + ns]]
    dense_perm = [p - nb - ns for p in permutation[nb + ns:]]
    if nb and tuple(sorted(batch_perm)) != tuple(range(nb)):
        raise NotImplementedError("transpose permutation cannot permute batch axes with non-batch axes; "
                                  f"got permutation {permutation}, with n_batch={nb}.")
    if layout.n_dense and tuple(sorted(dense_perm)) != tuple(range(layout.n_dense)):
        raise NotImplementedError("transpose permutation cannot permute dense axes with non-dense axes; "
                                  f"got permutation {permutation}, with n_dense={layout.n_dense}.")
    return batch_perm, sparse_perm, dense_perm


def bcoo_transpose(mat: BCOO, *, permutation: Sequence[int]) -> BCOO:
    """Axes permuted within their kind: batch axes among themselves, sparse ones by reordering index
    columns, dense ones among themselves."""
    layout = validate(mat.data, mat.indices, mat.shape)
    batch_perm, sparse_perm, dense_perm = _split_permutation(permutation, layout, mat.shape)
    nb = layout.n_batch
    data, indices = mat.data, mat.indices
    if tuple(permutation) != tuple(range(mat.ndim)):
        indices = jnp.transpose(indices[..., np.array(sparse_perm, dtype=np.int32)] if sparse_perm else indices,
                                (*batch_perm, nb, nb + 1))
        data = jnp.transpose(data, (*batch_perm, nb, *(d + nb + 1 for d in dense_perm)))
    shape = tuple(mat.shape[p] for p in permutation)
    return BCOO((data, indices), shape=shape, unique_indices=mat.unique_indices)


def bcoo_reduce_sum(mat: BCOO, *, axes: Sequence[int]) -> BCOO:
    """A sum over axes: dense axes sum the data, sparse axes drop their index column (duplicates add),
    batch axes fold into the nse axis."""
    data, indices, shape = mat.data, mat.indices, mat.shape
    layout = validate(data, indices, shape)
    nb, ns, nse = layout.n_batch, layout.n_sparse, layout.nse
    if not all(0 <= a < len(shape) for a in axes):
        raise ValueError(f"bcoo_reduce_sum: axes {tuple(axes)} out of range for shape {shape}")
    axes = sorted(set(axes))
    data = jnp.sum(data, axis=tuple(a - ns + 1 for a in axes if a >= nb + ns))
    if ns:  # elements at out-of-bounds indices must not survive the loss of their index
        inside = jnp.all(indices < _sparse_fill(shape, layout, aval(indices).dtype), axis=-1)
        data = jnp.where(jnp.reshape(inside, _shape_of(inside) + (1,) * (data.ndim - inside.ndim)), data, 0)
    kept = [i for i in range(ns) if i + nb not in axes]
    indices = (indices[..., np.array(kept, dtype=np.int32)] if kept
               else jnp.zeros(_shape_of(indices)[:-1] + (0,), aval(indices).dtype))
    batch_axes = [a for a in axes if a < nb]
    for a in batch_axes:  # a broadcast batch axis: its one block stands for shape[a] of them
        d_size, i_size = _shape_of(data)[a], _shape_of(indices)[a]
        if d_size == 1 and i_size == 1:
            data = data * shape[a]
        elif d_size == 1:
            data = jnp.broadcast_to(data, _shape_of(data)[:a] + (shape[a],) + _shape_of(data)[a + 1:])
        elif i_size == 1:
            data = jnp.sum(data, axis=a, keepdims=True)
    kept_batch = [i for i in range(nb) if i not in batch_axes]
    order = (*kept_batch, *batch_axes, nb)
    folded = math.prod(_shape_of(data)[i] for i in batch_axes)
    # the summed batch axes join the nse axis (indices broadcast along them to the data's sizes first)
    i_shape = tuple(_shape_of(data)[i] if i in batch_axes else s for i, s in enumerate(_shape_of(indices)))
    indices = jnp.transpose(jnp.broadcast_to(indices, i_shape), (*order, nb + 1))
    indices = jnp.reshape(indices, (*(i_shape[i] for i in kept_batch), nse * folded, len(kept)))
    data = jnp.transpose(data, (*order, *range(nb + 1, data.ndim)))
    data = jnp.reshape(data, (*_shape_of(data)[:len(kept_batch)], nse * folded, *_shape_of(data)[len(order):]))
    out_shape = tuple(s for i, s in enumerate(shape) if i not in axes)
    return BCOO((data, indices), shape=out_shape)


def bcoo_reshape(mat: BCOO, *, new_sizes: Sequence[int], dimensions: Sequence[int] | None = None) -> BCOO:
    """``lax.reshape`` of a BCOO array, batch, sparse and dense axes each reshaped among themselves."""
    layout = validate(mat.data, mat.indices, mat.shape)
    nb, ns = layout.n_batch, layout.n_sparse
    new_sizes = tuple(operator.index(s) for s in new_sizes)
    if _shape_of(mat.indices)[:nb] != mat.shape[:nb] or _shape_of(mat.data)[:nb] != mat.shape[:nb]:
        raise NotImplementedError("reshape of arrays with broadcasted batch dimensions.")
    batch_perm, sparse_perm, dense_perm = _split_permutation(
        tuple(range(mat.ndim)) if dimensions is None else dimensions, layout, mat.shape)
    batch_size = math.prod(mat.shape[:nb])
    sparse_size = math.prod(mat.shape[nb:nb + ns])
    cumulative = np.cumprod(new_sizes)
    if batch_size != 1 and batch_size not in cumulative:
        raise ValueError("bcoo_reshape: new shape cannot mix batch and sparse dimensions; "
                         f"got shape={mat.shape} new_shape={new_sizes} with n_batch={nb}")
    if sparse_size != 1 and batch_size * sparse_size not in cumulative:
        raise ValueError("bcoo_reshape: new shape cannot mix sparse and dense dimensions; "
                         f"got shape={mat.shape} new_shape={new_sizes} with n_dense={layout.n_dense}")
    i1 = int(cumulative.searchsorted(batch_size, side="right"))
    i2 = int(cumulative.searchsorted(batch_size * sparse_size, side="right"))
    new_batch, new_sparse, new_dense = new_sizes[:i1], new_sizes[i1:i2], new_sizes[i2:]
    data = jnp.reshape(jnp.transpose(mat.data, (*batch_perm, nb, *(p + nb + 1 for p in dense_perm))),
                       (*new_batch, layout.nse, *new_dense))
    indices = jnp.reshape(jnp.transpose(mat.indices, (*batch_perm, nb, nb + 1)),
                          (*new_batch, layout.nse, ns))
    if not new_sparse:
        indices = jnp.zeros((*new_batch, layout.nse, 0), aval(indices).dtype)
    elif ns:
        old_sparse = tuple(mat.shape[nb + i] for i in sparse_perm)
        flat = jnp.ravel_multi_index(tuple(indices[..., i] for i in sparse_perm), old_sparse, mode="clip")
        outside = jnp.any(indices >= _sparse_fill(mat.shape, layout, aval(indices).dtype), axis=-1, keepdims=True)
        columns = jnp.unravel_index(flat, new_sparse)
        indices = jnp.stack([c.astype(aval(indices).dtype) for c in columns], axis=-1)
        indices = jnp.where(outside, jnp.array(new_sparse, dtype=aval(indices).dtype), indices)
    return BCOO((data, indices), shape=new_sizes)


class SparseEfficiencyError(ValueError):
    pass


class SparseEfficiencyWarning(UserWarning):
    pass


def bcoo_update_layout(mat: BCOO, *, n_batch: int | None = None, n_dense: int | None = None,
                       on_inefficient: str | None = "error") -> BCOO:
    """The same array with ``n_batch`` batch and ``n_dense`` dense axes (JAX's steps, in its order: dense axes
    become sparse, batch axes fold into the nse axis, sparse axes become dense, then batch). Making a sparse
    axis of size > 1 dense or batch stores its zeros: JAX's SparseEfficiencyError unless ``on_inefficient``."""
    import warnings

    n_batch = mat.n_batch if n_batch is None else operator.index(n_batch)
    n_dense = mat.n_dense if n_dense is None else operator.index(n_dense)
    if (n_batch, n_dense) == (mat.n_batch, mat.n_dense):
        return mat
    if on_inefficient not in ("error", "warn", None):
        raise ValueError(f"on_inefficent={on_inefficient!r}; expected one of ['error', 'warn', None].")
    if n_batch < 0:
        raise ValueError(f"n_batch must be non-negative; got {n_batch}")
    if n_dense < 0:
        raise ValueError(f"n_dense must be non-negative; got {n_dense}")
    if mat.ndim - n_batch - n_dense < 0:
        raise ValueError(f"sum of n_batch={n_batch} and n_dense={n_dense} cannot be larger than mat.ndim={mat.ndim}.")

    def inefficient(msg: str) -> None:
        if on_inefficient == "error":
            raise SparseEfficiencyError(msg + " To disable this error, set the on_inefficient argument of "
                                        "bcoo_update_layout to 'warn' or None.")
        if on_inefficient == "warn":
            warnings.warn(msg + " To disable this warning, set the on_inefficient argument of bcoo_update_layout "
                          "to None.", SparseEfficiencyWarning, stacklevel=3)

    shape = mat.shape
    if n_dense > mat.n_dense and any(d > 1 for d in shape[len(shape) - n_dense:len(shape) - mat.n_dense]):
        inefficient(f"For matrix of shape {shape}, increasing n_dense from {mat.n_dense} to {n_dense} results in "
                    "inefficient storage.")
    if n_batch > mat.n_batch and any(d > 1 for d in shape[mat.n_batch:n_batch]):
        inefficient(f"For matrix of shape {shape}, increasing n_batch from {mat.n_batch} to {n_batch} results in "
                    "inefficient storage.")
    nb = mat.n_batch
    batch = tuple(shape[:nb])
    data = jnp.broadcast_to(mat.data, batch + _shape_of(mat.data)[nb:])
    indices = jnp.broadcast_to(mat.indices, batch + _shape_of(mat.indices)[nb:])
    dtype = aval(indices).dtype
    nd = mat.n_dense
    if n_dense < nd:  # the first dense axes become sparse: each block splits into its rows
        lead = _shape_of(data)[nb + 1:nb + 1 + nd - n_dense]
        count, nse, ns = math.prod(lead), _shape_of(indices)[-2], _shape_of(indices)[-1]
        data = jnp.reshape(data, batch + (nse * count,) + _shape_of(data)[nb + 1 + len(lead):])
        mesh = jnp.array(np.indices(lead).reshape(len(lead), count).T, dtype)
        indices = jnp.concatenate([jnp.broadcast_to(indices[..., None, :], batch + (nse, count, ns)),
                                   jnp.broadcast_to(mesh, batch + (nse, count, len(lead)))], axis=-1)
        indices = jnp.reshape(indices, batch + (nse * count, ns + len(lead)))
        nd = n_dense
    if n_batch < nb:  # the last batch axes fold into the nse axis, their coordinates first
        folded = batch[n_batch:]
        nse, ns = _shape_of(indices)[-2], _shape_of(indices)[-1]
        count = math.prod(folded) * nse
        mesh = jnp.array(np.indices(folded + (nse,)).reshape(len(folded) + 1, count)[:-1].T, dtype)
        data = jnp.reshape(data, batch[:n_batch] + (count,) + _shape_of(data)[nb + 1:])
        indices = jnp.concatenate([jnp.broadcast_to(mesh, batch[:n_batch] + (count, len(folded))),
                                   jnp.reshape(indices, batch[:n_batch] + (count, ns))], axis=-1)
        nb, batch = n_batch, batch[:n_batch]
    if n_dense > nd:  # the last sparse axes become dense: each block lands at its index in a larger block
        n = n_dense - nd
        nse, ns = _shape_of(indices)[-2], _shape_of(indices)[-1]
        where = _batch_iotas(batch + (nse,), 0)
        block = jnp.zeros(batch + (nse,) + shape[len(shape) - n_dense:], data.dtype)
        data = block.at[where + tuple(indices[..., ns - n + j] for j in range(n))].set(data, mode="drop")
        indices = indices[..., :ns - n]
        nd = n_dense
    if n_batch > nb:  # the first sparse axes become batch axes: each element moves to its batch
        n = n_batch - nb
        nse, ns = _shape_of(indices)[-2], _shape_of(indices)[-1]
        new_batch = tuple(shape[nb:n_batch])
        where = _batch_iotas(batch, 1) + tuple(indices[..., j] for j in range(n))
        where += (lax.broadcasted_iota(np.int32, batch + (nse,), nb),)
        block = jnp.zeros(batch + new_batch + (nse,) + _shape_of(data)[nb + 1:], data.dtype)
        data = block.at[where].set(data, mode="drop")
        rest = jnp.reshape(indices[..., n:], batch + (1,) * n + (nse, ns - n))
        indices = jnp.broadcast_to(rest, batch + new_batch + (nse, ns - n))
    return BCOO((data, indices), shape=shape)


def _set_nse(mat: BCOO, nse: int) -> BCOO:
    """``mat`` with ``nse`` elements per batch: cut short, or padded with zeros at the padding index."""
    nb, have = mat.n_batch, mat.nse
    if nse <= have:
        return BCOO((mat.data[(slice(None),) * nb + (slice(nse),)], mat.indices[..., :nse, :]), shape=mat.shape,
                    indices_sorted=mat.indices_sorted, unique_indices=mat.unique_indices)
    d_shape, i_shape = _shape_of(mat.data), _shape_of(mat.indices)
    data = jnp.concatenate([mat.data, jnp.zeros(d_shape[:nb] + (nse - have,) + d_shape[nb + 1:], mat.dtype)], axis=nb)
    layout = validate(mat.data, mat.indices, mat.shape)
    fill = jnp.broadcast_to(_sparse_fill(mat.shape, layout, aval(mat.indices).dtype),
                            i_shape[:nb] + (nse - have, i_shape[-1]))
    return BCOO((data, jnp.concatenate([mat.indices, fill], axis=nb)), shape=mat.shape,
                indices_sorted=mat.indices_sorted, unique_indices=mat.unique_indices)


def bcoo_concatenate(operands: Sequence[BCOO], *, dimension: int) -> BCOO:
    """``lax.concatenate`` of BCOO arrays along a batch axis (nse evened out first) or a sparse one (the later
    operands' indices shifted along it); a dense axis is JAX's NotImplementedError."""
    dimension = operator.index(dimension)
    if not all(isinstance(op, BCOO) for op in operands):
        raise ValueError(f"bcoo_concatenate: expected operands to be a sequence of BCOO arrays. Got {operands}")
    if not operands:
        raise TypeError("concatenate requires a non-empty sequence of operands")
    first = operands[0].shape
    if not 0 <= dimension < len(first):
        raise ValueError(f"concatenate dimension out of bounds: dimension {dimension} for shape {first}")
    if any(op.ndim != len(first) or op.shape[:dimension] + op.shape[dimension + 1:]
           != first[:dimension] + first[dimension + 1:] for op in operands):
        raise TypeError("Cannot concatenate arrays with shapes that differ in dimensions other than the one being "
                        f"concatenated: concatenating along dimension {dimension} for shapes "
                        f"{', '.join(str(op.shape) for op in operands)}.")
    if len({np.dtype(op.dtype) for op in operands}) > 1:
        raise TypeError("lax.concatenate requires arguments to have the same dtypes, got "
                        f"{', '.join(np.dtype(op.dtype).name for op in operands)}.")
    if len({op.n_dense for op in operands}) > 1:
        raise ValueError("bcoo_concatenate requires inputs to have matching nse dimensions.")
    n_batches = {op.n_batch for op in operands}
    if len(n_batches) != 1 and max(n_batches) == 1:  # (x[None] beside arrays with a batch axis: align them)
        if all(op.shape[0] == 1 for op in operands if op.n_batch == 0):
            operands = [bcoo_update_layout(op, n_batch=1) if op.n_batch == 0 else op for op in operands]
        elif all(op.shape[0] == 1 for op in operands if op.n_batch == 1):
            operands = [bcoo_update_layout(op, n_batch=0) if op.n_batch == 1 else op for op in operands]
        n_batches = {op.n_batch for op in operands}
    if len(n_batches) != 1:
        raise ValueError("bcoo_concatenate requires inputs to have matching batch dimensions.")
    nb, ns = operands[0].n_batch, operands[0].n_sparse
    drop = (lambda s: s[:dimension] + s[dimension + 1:]) if dimension < nb else (lambda s: s)
    if len({drop(_shape_of(op.indices)[:nb]) for op in operands}) != 1 or \
            len({drop(_shape_of(op.data)[:nb]) for op in operands}) != 1:
        raise NotImplementedError("concatenation of arrays with broadcasted batch indices")
    shape = first[:dimension] + (sum(op.shape[dimension] for op in operands),) + first[dimension + 1:]
    if dimension < nb:
        nse = max(op.nse for op in operands)
        operands = [_set_nse(op, nse) for op in operands]
        data = jnp.concatenate([op.data for op in operands], axis=dimension)
        indices = jnp.concatenate([op.indices for op in operands], axis=dimension)
    elif dimension < nb + ns:
        offsets = np.cumsum([0] + [op.shape[dimension] for op in operands[:-1]])
        data = jnp.concatenate([op.data for op in operands], axis=nb)
        indices = jnp.concatenate([op.indices.at[..., dimension - nb].add(int(offset))
                                   for op, offset in zip(operands, offsets)], axis=nb)
    else:
        raise NotImplementedError("Concatenation along dense dimensions.")
    return BCOO((data, indices), shape=shape)


def bcoo_broadcast_in_dim(mat: BCOO, *, shape: Sequence[int], broadcast_dimensions: Sequence[int],
                          sharding: Any = None) -> BCOO:
    """``lax.broadcast_in_dim`` of a BCOO array: new leading axes become batch axes (and new axes among the
    dense ones dense), the data broadcast along them; new sparse axes must have length 1 (index 0)."""
    del sharding
    shape, dims = tuple(shape), tuple(broadcast_dimensions)
    if len(mat.shape) != len(dims):
        raise ValueError(f"spinfo.shape={mat.shape} and broadcast_dimensions={dims} must have the same length")
    layout = validate(mat.data, mat.indices, mat.shape)
    nb, ns, nd, nse = layout
    batch_dims, sparse_dims, dense_dims = dims[:nb], dims[nb:nb + ns], dims[nb + ns:]
    if max(batch_dims, default=0) > min(sparse_dims, default=len(shape)):
        raise ValueError("Cannot mix batch and sparse dimensions during broadcast_in_dim")
    if max(sparse_dims, default=0) > min(dense_dims, default=len(shape)):
        raise ValueError("Cannot mix sparse and dense dimensions during broadcast_in_dim")
    new_nb = min(dims[nb:], default=len(shape))  # every new axis before a sparse or dense one is a batch axis
    new_nd = nd and len(shape) - min(dims[len(dims) - nd:])
    new_ns = len(shape) - new_nb - new_nd
    if math.prod(mat.shape[nb:nb + ns]) != math.prod(shape[new_nb:new_nb + new_ns]):
        raise NotImplementedError("Adding sparse dimensions with lengths != 1")
    data, indices = mat.data, mat.indices
    if (new_nb, new_nd) != (nb, nd):
        data = lax.broadcast_in_dim(data, (*shape[:new_nb], nse, *shape[new_nb + new_ns:]),
                                    (*batch_dims, new_nb, *(b + 1 - new_ns for b in dense_dims)))
        indices = lax.broadcast_in_dim(indices, (*shape[:new_nb], nse, ns), (*batch_dims, new_nb, new_nb + 1))
    if new_ns != ns:  # the new (length-1) sparse axes get index 0
        columns = np.array(sparse_dims, dtype=np.int32) - new_nb
        indices = jnp.zeros(_shape_of(indices)[:-1] + (new_ns,), aval(indices).dtype).at[..., columns].set(indices)
    return BCOO((data, indices), shape=shape)
