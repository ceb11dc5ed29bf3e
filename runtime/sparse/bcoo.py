"""``BCOO``: JAX's batched-coordinate sparse array, its conversions from and to dense arrays, written over jnp.

A BCOO array of shape ``batch + sparse + dense`` stores ``data`` [*batch, nse, *dense] and ``indices``
[*batch, nse, n_sparse]: element ``e`` of batch ``b`` holds the dense block at ``(b, indices[b, e])``.
Duplicate indices add; an index out of bounds (the padding ``fromdense`` and ``sum_duplicates`` write is
the sparse shape itself) stands for nothing. The batch axes of ``data`` and ``indices`` may be 1 where
the array's are not (broadcast). Everything (here, in ``bcoo_layout``, ``bcoo_index`` and ``bcoo_dot``) is
gathers, scatter-adds and sorts on ``data`` and ``indices``, so it runs eagerly and under jit, and grad (of
``data``) and vmap go through it. (The methods import those modules when called: they import this one.)
"""

from __future__ import annotations

import math
import operator
from typing import Any, NamedTuple, Sequence

import numpy as np

import srcjax.runtime.numpy as jnp
from srcjax.runtime import lax, tree_util
from srcjax.runtime.numpy._core import aval
from srcjax.runtime.numpy.indexing import ConcretizationError, _concrete_value

__all__ = ["BCOO", "bcoo_fromdense", "bcoo_todense"]


class Layout(NamedTuple):
    n_batch: int
    n_sparse: int
    n_dense: int
    nse: int


def _shape_of(x: Any) -> tuple[int, ...]:
    return tuple(aval(x).shape)


def validate(data: Any, indices: Any, shape: Sequence[int]) -> Layout:
    """JAX's checks of a (data, indices, shape) triple; the layout they imply."""
    shape, d_shape, i_shape = tuple(shape), _shape_of(data), _shape_of(indices)
    if len(i_shape) < 2:
        raise ValueError(f"BCOO indices must have at least 2 dimensions [..., nse, n_sparse], got {i_shape}")
    if not jnp.issubdtype(aval(indices).dtype, jnp.integer):
        raise TypeError(f"BCOO indices must be of an integer dtype, got {aval(indices).dtype}")
    nse, n_sparse = i_shape[-2:]
    n_batch = len(i_shape) - 2
    n_dense = len(shape) - n_batch - n_sparse
    if n_dense < 0:
        raise ValueError(f"BCOO indices {i_shape} imply {n_batch} batch and {n_sparse} sparse dimensions, more "
                         f"than shape={shape} has")
    if any(s not in (1, t) for s, t in zip(i_shape[:n_batch], shape[:n_batch])):
        raise ValueError(f"indices batch dimensions not compatible for indices.shape={i_shape}, shape={shape}")
    if any(s not in (1, t) for s, t in zip(d_shape[:n_batch], shape[:n_batch])):
        raise ValueError(f"data batch dimensions not compatible for data.shape={d_shape}, shape={shape}")
    if d_shape[n_batch:] != (nse,) + shape[n_batch + n_sparse:]:
        raise ValueError(f"Invalid data.shape={d_shape} for nse={nse}, n_batch={n_batch}, n_dense={n_dense}")
    return Layout(n_batch, n_sparse, n_dense, nse)


def _batch_iotas(batch_shape: Sequence[int], trailing: int) -> tuple[Any, ...]:
    """One index array per batch axis, shaped to broadcast against [*batch, *(1,)*trailing]."""
    n = len(batch_shape)
    return tuple(lax.broadcasted_iota(np.int32, tuple(s if j == i else 1 for j, s in enumerate(batch_shape))
                                      + (1,) * trailing, i) for i in range(n))


def _sparse_fill(shape: Sequence[int], layout: Layout, dtype: Any) -> Any:
    """The padding index: the sparse shape itself, one past the last element along every sparse axis."""
    return jnp.array(tuple(shape[layout.n_batch:layout.n_batch + layout.n_sparse]), dtype=dtype)


class SparseArray:
    """What BCOO and BCSR share: ``len`` and JAX's repr, ``BCOO(float32[3, 4], nse=2)``."""

    def __len__(self) -> int:
        return self.shape[0]

    def __repr__(self) -> str:
        name = type(self).__name__
        try:
            extra = f", nse={self.nse}"
            extra += f", n_batch={self.n_batch}" if self.n_batch else ""
            extra += f", n_dense={self.n_dense}" if self.n_dense else ""
            return f"{name}({np.dtype(self.dtype).name}{list(self.shape)}{extra})"
        except Exception:
            return f"{name}(<invalid>)"


class BCOO(SparseArray):
    """JAX's ``BCOO(args=(data, indices), shape=..., indices_sorted=False, unique_indices=False)``."""

    def __init__(self, args: tuple[Any, Any], *, shape: Sequence[int], indices_sorted: bool = False,
                 unique_indices: bool = False):
        data, indices = args
        self.data, self.indices = jnp.asarray(data), jnp.asarray(indices)
        self.shape = tuple(operator.index(s) for s in shape)
        self.indices_sorted = indices_sorted
        self.unique_indices = unique_indices
        validate(self.data, self.indices, self.shape)

    # -- layout -----------------------------------------------------------------------------------------------
    nse = property(lambda self: _shape_of(self.indices)[-2])
    n_batch = property(lambda self: len(_shape_of(self.indices)) - 2)
    n_sparse = property(lambda self: _shape_of(self.indices)[-1])
    n_dense = property(lambda self: len(_shape_of(self.data)) - 1 - self.n_batch)
    dtype = property(lambda self: aval(self.data).dtype)
    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: math.prod(self.shape))
    T = property(lambda self: self.transpose())
    __hash__ = None

    def block_until_ready(self) -> BCOO:
        self.data.block_until_ready()
        self.indices.block_until_ready()
        return self

    # -- pytree -----------------------------------------------------------------------------------------------
    def tree_flatten(self):
        # (nse and n_dense ride along so that vmap can tell a mapped batch axis from a mapped nse or dense one)
        return (self.data, self.indices), {"shape": self.shape, "indices_sorted": self.indices_sorted,
                                           "unique_indices": self.unique_indices,
                                           "layout": (self.nse, self.n_sparse, self.n_dense)}

    @classmethod
    def tree_unflatten(cls, aux: dict, children: Sequence[Any]) -> BCOO:
        obj = object.__new__(cls)
        obj.data, obj.indices = children
        obj.shape = _mapped_shape(aux["shape"], aux.get("layout"), *children)
        obj.indices_sorted, obj.unique_indices = aux["indices_sorted"], aux["unique_indices"]
        return obj

    # -- constructors -----------------------------------------------------------------------------------------
    @classmethod
    def fromdense(cls, mat: Any, *, nse: int | None = None, index_dtype: Any = np.int32, n_dense: int = 0,
                  n_batch: int = 0) -> BCOO:
        return bcoo_fromdense(mat, nse=nse, index_dtype=index_dtype, n_dense=n_dense, n_batch=n_batch)

    @classmethod
    def from_scipy_sparse(cls, mat: Any, *, index_dtype: Any = None, n_dense: int = 0, n_batch: int = 0) -> BCOO:
        """A ``scipy.sparse`` array's COO triplets, as they stand (not sorted or deduplicated)."""
        if n_dense != 0 or n_batch != 0:
            raise NotImplementedError("BCOO.fromscipy with nonzero n_dense/n_batch")
        mat = mat.tocoo()
        indices = jnp.asarray(np.column_stack((mat.row, mat.col))).astype(index_dtype or jnp.int32)
        return cls((jnp.asarray(mat.data), indices), shape=mat.shape)

    @classmethod
    def _empty(cls, shape: Sequence[int], *, dtype: Any = None, index_dtype: Any = "int32", n_dense: int = 0,
               n_batch: int = 0, nse: int = 0) -> BCOO:
        shape = tuple(shape)
        n_sparse = len(shape) - n_dense - n_batch
        if n_sparse < 0 or n_dense < 0 or n_batch < 0 or nse < 0:
            raise ValueError(f"Invalid inputs: shape={shape}, n_dense={n_dense}, n_batch={n_batch}, nse={nse}")
        batch, sparse, dense = shape[:n_batch], shape[n_batch:n_batch + n_sparse], shape[n_batch + n_sparse:]
        data = jnp.zeros((*batch, nse, *dense), dtype)
        indices = jnp.full((*batch, nse, n_sparse), jnp.array(sparse, index_dtype), index_dtype)
        return cls((data, indices), shape=shape, indices_sorted=True, unique_indices=True)

    @classmethod
    def _eye(cls, N: int, M: int, k: int, *, dtype: Any = None, index_dtype: Any = "int32", n_batch: int = 0,
             n_dense: int = 0) -> BCOO:
        if 2 - n_batch - n_dense < 0 or n_dense < 0 or n_batch < 0:
            raise ValueError(f"Invalid inputs: shape={(N, M)}, n_dense={n_dense}, n_batch={n_batch}")
        diag_size = min(N, M - k) if k > 0 else min(N + k, M)
        if diag_size <= 0:  # the diagonal misses the matrix: nothing stored
            return cls._empty((N, M), dtype=dtype, index_dtype=index_dtype, n_batch=n_batch, n_dense=n_dense)
        if n_dense > 0 or n_batch > 1:  # (these layouts store every zero anyway)
            return cls.fromdense(jnp.eye(N, M, k, dtype=dtype), n_batch=n_batch, n_dense=n_dense,
                                 index_dtype=index_dtype)
        if n_batch == 0:
            idx = jnp.arange(diag_size, dtype=index_dtype)
            indices = jnp.stack([idx + max(-k, 0), idx + max(k, 0)], axis=1)
            data = jnp.ones(diag_size, dtype=dtype)
        else:  # one stored element per row, a zero where the diagonal misses the row: JAX puts it at the
            # padding column M before the diagonal starts, and after it ends at M for the first row, past M after
            row = np.arange(N)
            valid = row + k >= 0 if k < 0 else row + k < M if k > 0 else row >= 0  # (as JAX zeroes them)
            col = np.where(row + k < 0, M, np.where(row == M - k, M, row + k)) if k else row
            ones = jnp.ones(N, dtype=dtype)
            data = jnp.where(jnp.asarray(valid), ones, jnp.zeros_like(ones))[:, None]
            indices = jnp.array(col, dtype=index_dtype)[:, None, None]
        return cls((data, indices), shape=(N, M), indices_sorted=True, unique_indices=True)

    # -- methods ----------------------------------------------------------------------------------------------
    def todense(self) -> Any:
        return bcoo_todense(self)

    def sort_indices(self) -> BCOO:
        from srcjax.runtime.sparse.bcoo_layout import bcoo_sort_indices
        return bcoo_sort_indices(self)

    def update_layout(self, *, n_batch: int | None = None, n_dense: int | None = None,
                      on_inefficient: str | None = "error") -> BCOO:
        from srcjax.runtime.sparse.bcoo_layout import bcoo_update_layout
        return bcoo_update_layout(self, n_batch=n_batch, n_dense=n_dense, on_inefficient=on_inefficient)

    def sum_duplicates(self, nse: int | None = None, remove_zeros: bool = True) -> BCOO:
        from srcjax.runtime.sparse.bcoo_layout import bcoo_eliminate_zeros, bcoo_sum_duplicates
        return bcoo_eliminate_zeros(self, nse=nse) if remove_zeros else bcoo_sum_duplicates(self, nse=nse)

    def transpose(self, axes: Sequence[int] | None = None) -> BCOO:
        perm = list(range(self.ndim))[::-1] if axes is None else list(axes)
        from srcjax.runtime.sparse.bcoo_layout import bcoo_transpose
        out = bcoo_transpose(self, permutation=perm)
        sparse_perm = [p - self.n_batch for p in perm[self.n_batch:self.n_batch + self.n_sparse]]
        keeps_order = tuple(sparse_perm) == tuple(range(self.n_sparse))
        return BCOO((out.data, out.indices), shape=out.shape, indices_sorted=keeps_order and self.indices_sorted,
                     unique_indices=self.unique_indices)

    def reshape(self, *new_sizes: Any, order: str = "C") -> BCOO:
        if order != "C":
            raise NotImplementedError("BCOO.reshape: only order='C' is supported")
        sizes = new_sizes[0] if len(new_sizes) == 1 and isinstance(new_sizes[0], (tuple, list)) else new_sizes
        sizes = tuple(operator.index(s) for s in (sizes if isinstance(sizes, (tuple, list)) else (sizes,)))
        if sizes.count(-1) == 1:  # (numpy's one inferred axis)
            known = math.prod(s for s in sizes if s != -1)
            sizes = tuple(self.size // known if s == -1 else s for s in sizes)
        if math.prod(sizes) != self.size:
            given = new_sizes[0] if len(new_sizes) == 1 else new_sizes
            raise TypeError(f"cannot reshape array of shape {self.shape} (size {self.size}) into shape {given} "
                            f"(size {math.prod(sizes)})")
        from srcjax.runtime.sparse.bcoo_layout import bcoo_reshape
        return self if sizes == self.shape else bcoo_reshape(self, new_sizes=sizes)  # (jnp's reshape: no op)

    def sum(self, axis: int | Sequence[int] | None = None, **kwargs: Any) -> BCOO:
        if kwargs:  # (dtype=, keepdims=: jnp.sum's program, run on the sparse array, as JAX's method does)
            from srcjax.runtime.sparse.transform import sparsify
            return sparsify(lambda x: jnp.sum(x, axis, **kwargs))(self)
        axes = range(self.ndim) if axis is None else (axis,) if isinstance(axis, int) else axis
        from srcjax.runtime.sparse.bcoo_layout import bcoo_reduce_sum
        out = bcoo_reduce_sum(self, axes=[operator.index(a) % max(self.ndim, 1) for a in axes])
        return jnp.sum(out.data) if out.shape == () else out  # (a sum to a scalar is dense, as JAX's)

    def astype(self, dtype: Any) -> BCOO:
        return BCOO((self.data.astype(dtype), self.indices), shape=self.shape, indices_sorted=self.indices_sorted,
                    unique_indices=self.unique_indices)

    def _with_data(self, data: Any) -> BCOO:
        return BCOO((data, self.indices), shape=self.shape, indices_sorted=self.indices_sorted,
                    unique_indices=self.unique_indices)

    def __getitem__(self, index: Any) -> BCOO:
        from srcjax.runtime.sparse.bcoo_index import bcoo_getitem
        return bcoo_getitem(self, index)

    def __iter__(self):
        return (self[i] for i in range(self.shape[0]))

    def __neg__(self) -> BCOO:
        return self._with_data(-self.data)

    def __pos__(self) -> BCOO:
        return self

    def __abs__(self) -> BCOO:  # |x| keeps zeros zero, but duplicates must be summed first
        from srcjax.runtime.sparse.bcoo_layout import bcoo_sum_duplicates
        mat = self if self.unique_indices else bcoo_sum_duplicates(self, nse=self.nse)
        return mat._with_data(jnp.abs(mat.data))

    def __matmul__(self, other: Any) -> Any:
        from srcjax.runtime.sparse.bcoo_dot import matmul
        return matmul(self, other)

    def __rmatmul__(self, other: Any) -> Any:
        from srcjax.runtime.sparse.bcoo_dot import matmul
        return matmul(other, self)

    def __mul__(self, other: Any) -> Any:
        from srcjax.runtime.sparse.bcoo_dot import multiply
        return multiply(self, other)

    def __rmul__(self, other: Any) -> Any:
        from srcjax.runtime.sparse.bcoo_dot import multiply
        return multiply(self, other)

    def __truediv__(self, other: Any) -> BCOO:  # (jnp.divide's promotion, then the data over other's values)
        from srcjax.runtime.sparse.transform import sparsify
        return sparsify(jnp.divide)(self, other)

    def __add__(self, other: Any) -> BCOO:
        from srcjax.runtime.sparse.bcoo_dot import add
        return add(self, other)

    __radd__ = __add__

    def __sub__(self, other: Any) -> BCOO:
        from srcjax.runtime.sparse.bcoo_dot import subtract
        return subtract(self, other)

    def __rsub__(self, other: Any) -> BCOO:
        from srcjax.runtime.sparse.bcoo_dot import subtract
        return subtract(other, self)

    def __pow__(self, exponent: Any) -> BCOO:
        from srcjax.runtime.sparse.transform import sparsify
        return sparsify(lambda x: jnp.power(x, exponent))(self)


tree_util.register_pytree_node_class(BCOO)


def _mapped_shape(shape: tuple[int, ...], layout: tuple[int, int, int] | None, data: Any,
                  indices: Any) -> tuple[int, ...]:
    """The shape of a BCOO rebuilt from leaves that gained or lost one leading axis: ``vmap`` maps a BCOO over
    a batch axis (JAX's vmappable rule), so what the function sees (and what comes out stacked) has its
    batch axes from the leaves and its sparse and dense axes from ``shape``. Leaves that lost or gained their
    nse or sparse axis instead are JAX's error. Other leaves (same ranks, or no shapes) keep ``shape``."""
    d_shape, i_shape = getattr(data, "shape", None), getattr(indices, "shape", None)
    if not (isinstance(d_shape, tuple) and isinstance(i_shape, tuple)) or layout is None:
        return shape
    nse, n_sparse, n_dense = layout
    old_batch = len(shape) - n_sparse - n_dense
    if abs(len(i_shape) - (old_batch + 2)) != 1 or len(d_shape) - len(i_shape) != n_dense - 1:
        return shape
    new_batch = len(i_shape) - 2
    if i_shape[-2:] != (nse, n_sparse) or d_shape[new_batch:] != (nse,) + shape[len(shape) - n_dense:]:
        if new_batch < old_batch:
            raise ValueError(f"Cannot map a BCOO array with n_batch={old_batch} along an axis that is not a batch "
                             "axis: in_axes for batched BCOO operations must correspond to a batch dimension.")
        raise ValueError(f"BCOO: cannot add an out_axis after the {old_batch} batch axes of a BCOO array: BCOO batch "
                         "axes must be a contiguous block of leading dimensions.")
    batch = tuple(max(a, b) for a, b in zip(d_shape[:new_batch], i_shape[:new_batch]))
    return batch + tuple(shape[old_batch:])


# -- todense / fromdense ---------------------------------------------------------------------------------------
def bcoo_todense(mat: BCOO) -> Any:
    """The dense array: each stored block added at its index (duplicates add, out-of-bounds ones drop)."""
    data, indices, shape = mat.data, mat.indices, mat.shape
    layout = validate(data, indices, shape)
    nb, ns = layout.n_batch, layout.n_sparse
    batch = tuple(shape[:nb])
    position = _batch_iotas(batch, 1)  # [*batch, 1] each: the batch coordinates of every stored element
    if ns == 0:  # no sparse axes: every stored block is the whole dense block
        data = jnp.sum(data, axis=nb, dtype=data.dtype)
        return jnp.zeros(shape, data.dtype).at[tuple(p[..., 0] for p in position)].add(data) if nb else data
    sparse = tuple(indices[..., i] for i in range(ns))
    full = jnp.broadcast_to(data, batch + _shape_of(data)[nb:])
    return jnp.zeros(shape, data.dtype).at[position + sparse].add(full, mode="drop")


def _count_nse(mask: Any, n_batch: int) -> int:
    """The most nonzero (sparse-position) entries any batch holds: ``fromdense``'s default nse."""
    counts = _concrete_value(mask, "BCOO.fromdense", "the array (without nse=)", structure=True,
                             error=ConcretizationError,
                             why="the number of stored elements would depend on its data. Pass nse=...")
    counts = counts.reshape(counts.shape[:n_batch] + (-1,)).sum(-1)
    return int(counts.max()) if counts.size else 0


def bcoo_fromdense(mat: Any, *, nse: int | None = None, n_batch: int = 0, n_dense: int = 0,
                   index_dtype: Any = np.int32) -> BCOO:
    """The nonzero blocks of ``mat`` in row-major order, ``nse`` per batch (padded with zeros at the padding
    index, or cut short)."""
    mat = jnp.asarray(mat)
    shape = _shape_of(mat)
    n_sparse = len(shape) - n_batch - n_dense
    if n_batch < 0 or n_dense < 0 or n_sparse < 0:
        raise ValueError(f"Invalid n_batch={n_batch}, n_dense={n_dense} for an array of shape {shape}")
    mask = mat != 0
    if n_dense:
        mask = jnp.any(mask, axis=tuple(range(mat.ndim - n_dense, mat.ndim)))
    nse = _count_nse(mask, n_batch) if nse is None else nse
    try:
        nse = operator.index(nse)
    except TypeError:
        raise ConcretizationError("BCOO.fromdense: nse must be a concrete int; to use BCOO.fromdense under "
                                  "jit or another transformation, pass a Python int as nse") from None
    batch, sparse = shape[:n_batch], shape[n_batch:n_batch + n_sparse]
    size = math.prod(sparse)
    flat_mask = jnp.reshape(mask, batch + (size,))
    # the k-th nonzero of each batch writes its flat position into slot k (slots past the count keep `size`)
    rank = jnp.cumsum(flat_mask.astype(np.int32), axis=n_batch) - 1
    slot = jnp.where(flat_mask, rank, nse)
    where = _batch_iotas(batch, 1)
    positions = jnp.full(batch + (nse,), size, np.int32).at[where + (slot,)].set(
        jnp.broadcast_to(jnp.arange(size, dtype=np.int32), batch + (size,)), mode="drop")
    valid = positions < size
    coords = jnp.unravel_index(jnp.where(valid, positions, 0), sparse) if n_sparse else ()
    columns = [jnp.where(valid, c, s).astype(index_dtype) for c, s in zip(coords, sparse)]
    indices = (jnp.stack(columns, axis=-1) if columns else jnp.zeros(batch + (nse, 0), index_dtype))
    flat_mat = jnp.reshape(mat, batch + (size,) + shape[len(shape) - n_dense:])
    data = flat_mat.at[where + (positions,)].get(mode="fill", fill_value=0)
    data = jnp.where(jnp.reshape(valid, _shape_of(valid) + (1,) * n_dense), data, 0)
    return BCOO((data, indices), shape=shape, indices_sorted=True, unique_indices=True)
