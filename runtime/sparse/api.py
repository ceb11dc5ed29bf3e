"""``jax.experimental.sparse``'s format-generic functions: ``empty``, ``eye``, ``todense``, ``fromdense``, and
``random_bcoo``."""

from __future__ import annotations

import contextvars
import math
import operator
from typing import Any, Callable, Sequence

import numpy as np

import srcjax.runtime.numpy as jnp
from srcjax.runtime import dtypes, lax, random
from srcjax.runtime.numpy._core import is_concrete
from srcjax.runtime.sparse.bcoo import BCOO, bcoo_fromdense
from srcjax.runtime.sparse.bcsr import BCSR

__all__ = ["empty", "eye", "fromdense", "random_bcoo", "todense"]

SPARSIFY_TRACING = contextvars.ContextVar("sparsify_tracing", default=False)  # (set while sparsify reads f)

_FORMATS = {"bcoo": BCOO, "bcsr": BCSR}


def _format(sparse_format: str, known: Sequence[str]) -> type:
    if sparse_format not in known:
        raise ValueError(f"sparse_format={sparse_format!r} not recognized; must be one of {list(known)}")
    if sparse_format not in _FORMATS:
        raise NotImplementedError(f"sparse_format={sparse_format!r} is not built in srcjax (use 'bcoo')")
    return _FORMATS[sparse_format]


def empty(shape: Sequence[int], dtype: Any = None, index_dtype: Any = "int32", sparse_format: str = "bcoo",
          **kwds: Any) -> Any:
    """A sparse array of ``shape`` with ``nse`` (default 0) stored zeros."""
    cls = _format(sparse_format, ("bcsr", "bcoo", "coo", "csr", "csc"))
    return cls._empty(tuple(shape), dtype=dtype, index_dtype=index_dtype, **kwds)


def eye(N: int, M: int | None = None, k: int = 0, dtype: Any = None, index_dtype: Any = "int32",
        sparse_format: str = "bcoo", **kwds: Any) -> Any:
    """The sparse 2-D identity (ones on the k-th diagonal)."""
    cls = _format(sparse_format, ("bcoo", "coo", "csr", "csc"))  # (JAX has no BCSR eye)
    N = operator.index(N)
    M = N if M is None else operator.index(M)
    return cls._eye(N, M, operator.index(k), dtype=dtype, index_dtype=index_dtype, **kwds)


def todense(arr: Any) -> Any:
    """A sparse array's dense form; a dense array passes through. While ``sparsify`` reads a function, an
    argument it stands for may be sparse: the value is passed through an ``add`` of -0 (x + -0 is x, bit for
    bit), which ``sparsify``'s rules turn into the dense form of a sparse one, as JAX's ``todense`` does."""
    if isinstance(arr, (BCOO, BCSR)):
        return arr.todense()
    arr = jnp.asarray(arr)
    if SPARSIFY_TRACING.get() and not is_concrete(arr) and arr.dtype != np.bool_:
        return lax.add(arr, lax.full_like(arr, -0.0 if jnp.issubdtype(arr.dtype, jnp.inexact) else 0))
    return arr


def fromdense(mat: Any, *, nse: int | None = None, index_dtype: Any = "int32", n_batch: int = 0,
              n_dense: int = 0) -> BCOO:
    """``BCOO.fromdense``."""
    return bcoo_fromdense(mat, nse=nse, index_dtype=index_dtype, n_batch=n_batch, n_dense=n_dense)


def random_bcoo(key: Any, shape: Sequence[int], *, dtype: Any = None, indices_dtype: Any = None,
                nse: float | int = 0.2, n_batch: int = 0, n_dense: int = 0, unique_indices: bool = True,
                sorted_indices: bool = False, generator: Callable[..., Any] = random.uniform, **kwds: Any) -> BCOO:
    """A BCOO array with ``nse`` random positions per batch (a fraction of the sparse size when 0 < nse < 1)
    and ``generator(key, shape, dtype)`` values. As JAX's: the key splits into one for the data and one per
    batch for the positions, drawn by ``random.choice`` (without replacement when ``unique_indices``)."""
    shape = tuple(map(operator.index, shape))
    n_batch, n_dense = operator.index(n_batch), operator.index(n_dense)
    if n_batch < 0 or n_dense < 0 or n_batch + n_dense > len(shape):
        raise ValueError(f"Invalid n_batch={n_batch}, n_dense={n_dense} for shape={shape}")
    n_sparse = len(shape) - n_batch - n_dense
    batch, sparse, dense = shape[:n_batch], shape[n_batch:n_batch + n_sparse], shape[n_batch + n_sparse:]
    batch_size, sparse_size = math.prod(batch), math.prod(sparse)
    if not 0 <= nse < sparse_size:
        raise ValueError(f"got nse={nse}, expected to be between 0 and {sparse_size}")
    if 0 < nse < 1:
        nse = int(math.ceil(nse * sparse_size))
    nse = operator.index(nse)
    dtype = jnp.float_ if dtype is None else dtype
    indices_dtype = dtypes.canonicalize_dtype(jnp.int_) if indices_dtype is None else indices_dtype
    if sparse_size > jnp.iinfo(indices_dtype).max:
        raise ValueError(f"indices_dtype={indices_dtype} does not have enough range to generate sparse indices of "
                         f"size {sparse_size}.")
    keys = random.split(key, batch_size + 1)
    data = generator(keys[0], shape=batch + (nse,) + dense, dtype=dtype, **kwds)

    def positions(k: Any) -> Any:
        if not sparse:
            return jnp.zeros((nse, n_sparse), dtype=indices_dtype)
        flat = random.choice(k, sparse_size, shape=(nse,), replace=not unique_indices).astype(indices_dtype)
        return jnp.stack(jnp.unravel_index(flat, sparse), axis=1)

    indices = jnp.reshape(jnp.stack([positions(keys[1 + b]) for b in range(batch_size)]), batch + (nse, n_sparse))
    mat = BCOO((data, indices), shape=shape)
    return mat.sort_indices() if sorted_indices else mat
