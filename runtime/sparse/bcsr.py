"""``BCSR``: JAX's batched compressed-sparse-row array (two sparse axes), by way of BCOO.

``data`` [*batch, nse, *dense], ``indices`` [*batch, nse] (the column of each element) and ``indptr``
[*batch, rows + 1] (row r's elements are ``indptr[r]:indptr[r + 1]``). The row of element e is the number
of row starts at or before e, minus one: a scatter-add of ones at ``indptr`` and a running sum. Everything
else converts to BCOO (whose indices are then sorted) and back.
"""

from __future__ import annotations

import math
import operator
from typing import Any, Sequence

import numpy as np

import srcjax.runtime.numpy as jnp
from srcjax.runtime import tree_util
from srcjax.runtime.numpy._core import aval
from srcjax.runtime.sparse.bcoo import BCOO, SparseArray, _batch_iotas, _shape_of, bcoo_fromdense
from srcjax.runtime.sparse.bcoo_layout import bcoo_eliminate_zeros, bcoo_sum_duplicates

__all__ = ["BCSR", "bcsr_dot_general", "bcsr_fromdense", "bcsr_sum_duplicates", "bcsr_todense"]


def _validate(data: Any, indices: Any, indptr: Any, shape: tuple[int, ...]) -> tuple[int, int, int]:
    """JAX's checks; (n_batch, n_dense, nse)."""
    i_shape, p_shape, d_shape = _shape_of(indices), _shape_of(indptr), _shape_of(data)
    if not (jnp.issubdtype(aval(indices).dtype, jnp.integer) and jnp.issubdtype(aval(indptr).dtype, jnp.integer)):
        raise TypeError("BCSR indices and indptr must be of integer dtypes")
    nse, n_batch = i_shape[-1], len(i_shape) - 1
    n_dense = len(shape) - n_batch - 2
    if n_dense < 0:
        raise ValueError("BCSR array must have 2 sparse dimensions; "
                         f"{len(shape) - n_batch} is given.")
    for name, s in (("indices", i_shape), ("indptr", p_shape), ("data", d_shape)):
        if any(a not in (1, b) for a, b in zip(s[:n_batch], shape[:n_batch])):
            raise ValueError(f"{name} batch dimensions not compatible for {name}.shape={s}, shape={shape}")
    if p_shape[n_batch:] != (shape[n_batch] + 1,):
        raise ValueError("indptr shape must match the matrix shape plus 1.")
    if d_shape[len(d_shape) - n_dense - 1:] != (nse,) + shape[n_batch + 2:]:
        raise ValueError(f"Invalid data.shape={d_shape} for nse={nse}, n_batch={n_batch}, n_dense={n_dense}")
    return n_batch, n_dense, nse


def _bcoo_indices(indices: Any, indptr: Any, n_batch: int) -> Any:
    """The (row, column) of every element: [*batch, nse, 2]."""
    i_shape, p_shape = _shape_of(indices), _shape_of(indptr)
    batch = tuple(max(a, b) for a, b in zip(i_shape[:n_batch], p_shape[:n_batch]))
    indices = jnp.broadcast_to(indices, batch + i_shape[n_batch:])
    indptr = jnp.broadcast_to(indptr, batch + p_shape[n_batch:])
    starts = jnp.zeros_like(indices).at[_batch_iotas(batch, 1) + (indptr,)].add(1, mode="drop")
    rows = jnp.cumsum(starts, axis=-1, dtype=aval(indices).dtype) - 1
    return jnp.stack([rows, indices], axis=-1)


def _bcsr_parts(indices: Any, shape: Sequence[int], n_batch: int, index_dtype: Any) -> tuple[Any, Any]:
    """(columns, indptr) of sorted BCOO indices: indptr counts each row's elements and sums them up."""
    rows = indices[..., 0]
    n_rows = shape[n_batch]
    batch = _shape_of(rows)[:n_batch]
    counts = jnp.zeros(batch + (n_rows,), index_dtype).at[_batch_iotas(batch, 1) + (rows,)].add(1, mode="drop")
    indptr = jnp.concatenate([jnp.zeros(batch + (1,), index_dtype), jnp.cumsum(counts, axis=-1, dtype=index_dtype)],
                             axis=-1)
    return indices[..., 1], indptr


class BCSR(SparseArray):
    """JAX's ``BCSR(args=(data, indices, indptr), shape=..., indices_sorted=False, unique_indices=False)``."""

    def __init__(self, args: tuple[Any, Any, Any], *, shape: Sequence[int], indices_sorted: bool = False,
                 unique_indices: bool = False):
        self.data, self.indices, self.indptr = (jnp.asarray(a) for a in args)
        self.shape = tuple(operator.index(s) for s in shape)
        self.indices_sorted, self.unique_indices = indices_sorted, unique_indices
        _validate(self.data, self.indices, self.indptr, self.shape)

    nse = property(lambda self: _shape_of(self.indices)[-1])
    n_batch = property(lambda self: len(_shape_of(self.indices)) - 1)
    n_sparse = property(lambda self: 2)
    n_dense = property(lambda self: len(_shape_of(self.data)) - len(_shape_of(self.indices)))
    dtype = property(lambda self: aval(self.data).dtype)
    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: math.prod(self.shape))
    __hash__ = None

    def tree_flatten(self):
        return (self.data, self.indices, self.indptr), {
            "shape": self.shape, "indices_sorted": self.indices_sorted, "unique_indices": self.unique_indices}

    @classmethod
    def tree_unflatten(cls, aux: dict, children: Sequence[Any]) -> BCSR:
        obj = object.__new__(cls)
        obj.data, obj.indices, obj.indptr = children
        obj.__dict__.update(aux)
        obj.shape = _mapped_shape(aux["shape"], *children)
        return obj

    @classmethod
    def fromdense(cls, mat: Any, *, nse: int | None = None, index_dtype: Any = np.int32, n_dense: int = 0,
                  n_batch: int = 0) -> BCSR:
        return bcsr_fromdense(mat, nse=nse, index_dtype=index_dtype, n_dense=n_dense, n_batch=n_batch)

    @classmethod
    def from_bcoo(cls, arr: BCOO) -> BCSR:
        if arr.n_sparse != 2:
            raise NotImplementedError(f"BSCR.from_bcoo requires n_sparse=2; got arr.n_sparse={arr.n_sparse}")
        arr = arr if arr.indices_sorted else arr.sort_indices()
        indices, indptr = _bcsr_parts(arr.indices, arr.shape, arr.n_batch, aval(arr.indices).dtype)
        return cls((arr.data, indices, indptr), shape=arr.shape)

    @classmethod
    def from_scipy_sparse(cls, mat: Any, *, index_dtype: Any = None, n_dense: int = 0, n_batch: int = 0) -> BCSR:
        """A 2-D ``scipy.sparse`` array's CSR arrays, as they stand."""
        if n_dense != 0 or n_batch != 0:
            raise NotImplementedError("BCSR from_scipy_sparse with nonzero n_dense/n_batch.")
        if mat.ndim != 2:
            raise ValueError(f"BCSR from_scipy_sparse requires 2D array; {mat.ndim}D is given.")
        mat = mat.tocsr()
        index_dtype = index_dtype or jnp.int32
        return cls((jnp.asarray(mat.data), jnp.asarray(mat.indices).astype(index_dtype),
                    jnp.asarray(mat.indptr).astype(index_dtype)), shape=mat.shape)

    @classmethod
    def _empty(cls, shape: Sequence[int], *, dtype: Any = None, index_dtype: Any = "int32", n_dense: int = 0,
               n_batch: int = 0, nse: int = 0) -> BCSR:
        shape = tuple(shape)
        if n_dense < 0 or n_batch < 0 or nse < 0:
            raise ValueError(f"Invalid inputs: shape={shape}, n_dense={n_dense}, n_batch={n_batch}, nse={nse}")
        if len(shape) - n_dense - n_batch != 2:
            raise ValueError("BCSR sparse.empty: must have 2 sparse dimensions.")
        batch, (rows, cols), dense = shape[:n_batch], shape[n_batch:n_batch + 2], shape[n_batch + 2:]
        data = jnp.zeros((*batch, nse, *dense), dtype)
        indices = jnp.full((*batch, nse), cols, index_dtype)
        indptr = jnp.zeros((*batch, rows + 1), index_dtype)
        return cls((data, indices, indptr), shape=shape)

    def to_bcoo(self) -> BCOO:
        return BCOO((self.data, _bcoo_indices(self.indices, self.indptr, self.n_batch)), shape=self.shape)

    def todense(self) -> Any:
        return bcsr_todense(self)

    def sum_duplicates(self, nse: int | None = None, remove_zeros: bool = True) -> BCSR:
        summed = (bcoo_eliminate_zeros if remove_zeros else bcoo_sum_duplicates)(self.to_bcoo(), nse=nse)
        return BCSR.from_bcoo(summed)

    def transpose(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("Transpose is not implemented.")

    def __matmul__(self, other: Any) -> Any:
        from srcjax.runtime.sparse.bcoo_dot import matmul
        if isinstance(other, (BCSR, BCOO)):
            raise NotImplementedError("bcsr_dot_general currently implemented for BCSR lhs and ndarray rhs.")
        return matmul(self.to_bcoo(), other)

    def __rmatmul__(self, other: Any) -> Any:
        from srcjax.runtime.sparse.bcoo_dot import matmul
        return matmul(other, self.to_bcoo())


tree_util.register_pytree_node_class(BCSR)


def _mapped_shape(shape: tuple[int, ...], data: Any, indices: Any, indptr: Any) -> tuple[int, ...]:
    """As BCOO's: under vmap the batch axes come from the leaves, the sparse and dense axes from ``shape``."""
    shapes = [getattr(x, "shape", None) for x in (data, indices, indptr)]
    if not all(isinstance(s, tuple) for s in shapes) or not shapes[1]:
        return shape
    d_shape, i_shape, p_shape = shapes
    n_batch = len(i_shape) - 1
    n_dense = len(d_shape) - len(i_shape)
    if n_dense < 0 or abs(len(shape) - (n_batch + 2 + n_dense)) != 1:
        return shape
    if p_shape[n_batch:] != (shape[len(shape) - 2 - n_dense] + 1,):
        raise ValueError("Cannot map a BCSR array along an axis that is not a batch axis: in_axes for batched BCSR "
                         "operations must correspond to a batch dimension.")
    batch = tuple(max(a, b, c) for a, b, c in zip(d_shape[:n_batch], i_shape[:n_batch], p_shape[:n_batch]))
    return batch + tuple(shape[len(shape) - 2 - n_dense:])


def bcsr_fromdense(mat: Any, *, nse: int | None = None, n_batch: int = 0, n_dense: int = 0,
                   index_dtype: Any = np.int32) -> BCSR:
    """The nonzero blocks of ``mat`` in CSR form (JAX's: BCOO.fromdense, then rows compressed)."""
    mat = jnp.asarray(mat)
    if mat.ndim - n_batch - n_dense != 2:
        raise ValueError("bcsr_fromdense: must have 2 sparse dimensions.")
    coo = bcoo_fromdense(mat, nse=nse, n_batch=n_batch, n_dense=n_dense, index_dtype=index_dtype)
    indices, indptr = _bcsr_parts(coo.indices, coo.shape, n_batch, index_dtype)
    return BCSR((coo.data, indices, indptr), shape=coo.shape)


def bcsr_sum_duplicates(mat: BCSR, nse: int | None = None) -> BCSR:
    """Duplicate (row, column) pairs summed, each row's columns sorted (by way of BCOO, as JAX's)."""
    return BCSR.from_bcoo(bcoo_sum_duplicates(mat.to_bcoo(), nse=nse))


def bcsr_todense(mat: BCSR) -> Any:
    return mat.to_bcoo().todense()


def bcsr_dot_general(lhs: Any, rhs: Any, *, dimension_numbers: Any, precision: Any = None,
                     preferred_element_type: Any = None, out_sharding: Any = None) -> Any:
    """``lax.dot_general`` of a BCSR lhs and a dense rhs (as JAX's, the only pairing it takes)."""
    from srcjax.runtime import lax
    from srcjax.runtime.sparse.bcoo_dot import bcoo_dot_general
    if isinstance(rhs, (BCSR, BCOO)):
        raise NotImplementedError("bcsr_dot_general currently implemented for BCSR lhs and ndarray rhs.")
    if not isinstance(lhs, BCSR):
        return lax.dot_general(lhs, rhs, dimension_numbers, preferred_element_type=preferred_element_type)
    return bcoo_dot_general(lhs.to_bcoo(), rhs, dimension_numbers=dimension_numbers,
                            preferred_element_type=preferred_element_type)
