"""``srcjax.flatten_util``: a pytree of arrays as one flat vector, and back.

``ravel_pytree(tree)`` concatenates the raveled leaves into one 1-D array of their promoted dtype and
returns it with the function that undoes it. When every leaf already has that dtype the inverse keeps the
dtype of whatever vector it is given (a float64 vector unravels to float64 leaves); when the leaves
differ it casts each piece back to its leaf's dtype and accepts only vectors of the promoted dtype, as
JAX does. Both halves are ordinary ``srcjax.numpy`` code, so they work under ``jit``, ``grad`` and
``vmap`` (the inverse maps a batch of vectors when vmapped).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from srcjax.runtime import dtypes, tree_util

__all__ = ["ravel_pytree"]


def _jnp():
    from srcjax.runtime import numpy as jnp

    return jnp


def ravel_pytree(pytree: Any) -> tuple[Any, Any]:
    """``(flat, unravel)``: the leaves of ``pytree`` raveled and concatenated, and ``unravel(flat)`` giving
    a pytree of the same structure, shapes and (see the module note) dtypes."""
    jnp = _jnp()
    leaves, treedef = tree_util.tree_flatten(pytree)
    if not leaves:
        return jnp.zeros((0,), jnp.float32), functools.partial(_unravel, treedef, (), (), None, None)
    leaf_dtypes = tuple(jnp.result_type(leaf) for leaf in leaves)
    shapes = tuple(np.shape(leaf) for leaf in leaves)
    flat_dtype = dtypes.result_type(*leaf_dtypes)
    ends = tuple(int(end) for end in np.cumsum([int(np.prod(shape, dtype=np.int64)) for shape in shapes]))
    flat = jnp.concatenate([jnp.ravel(jnp.asarray(leaf, flat_dtype)) for leaf in leaves])
    if all(dtype == flat_dtype for dtype in leaf_dtypes):
        return flat, functools.partial(_unravel, treedef, ends, shapes, None, None)
    return flat, functools.partial(_unravel, treedef, ends, shapes, leaf_dtypes, flat_dtype)


def _unravel(treedef: Any, ends: tuple, shapes: tuple, leaf_dtypes: tuple | None, flat_dtype: Any,
             flat: Any) -> Any:
    jnp = _jnp()
    size = ends[-1] if ends else 0
    if np.shape(flat) != (size,):
        raise ValueError(f"unravel expected a vector of shape ({size},) (the size of the raveled pytree), "
                         f"got an array of shape {np.shape(flat)}")
    if leaf_dtypes is not None and jnp.result_type(flat) != flat_dtype:
        raise TypeError(f"unravel was given an array of dtype {jnp.result_type(flat)}, but the pytree was raveled "
                        f"to {flat_dtype} (its leaves have several dtypes, so the pieces are cast back from that)")
    starts = (0, *ends[:-1])
    pieces = [jnp.reshape(flat[start:end], shape) for start, end, shape in zip(starts, ends, shapes)]
    if leaf_dtypes is not None:
        pieces = [jnp.asarray(piece, dtype) for piece, dtype in zip(pieces, leaf_dtypes)]
    return tree_util.tree_unflatten(treedef, pieces)
