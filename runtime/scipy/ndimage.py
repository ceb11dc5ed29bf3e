"""``srcjax.scipy.ndimage``: ``map_coordinates``, interpolation of order 0 or 1 at given coordinates.

The value at a point is a sum over the corners of its grid cell (one corner for order 0, 2**ndim for order 1)
of the product of per-axis weights times the input at that corner. Out-of-range corners are mapped back
into the array by the mode's rule, as SciPy documents the modes (JAX's 'constant' and 'wrap' are SciPy's
'grid-constant' and 'grid-wrap').
"""

from __future__ import annotations

import functools
import itertools
import operator
from typing import Any, Callable, Sequence

import numpy as np

import srcjax.runtime.numpy as jnp
from srcjax.runtime import dtypes, lax

__all__ = ["map_coordinates"]


def _mirror(index: Any, size: int) -> Any:
    """Reflection about the edge samples (d c b | a b c d | c b a): |x - round(x)|, a triangular wave of
    period 2 (size - 1), in integers."""
    half = size - 1
    return jnp.abs((index + half) % (2 * half) - half)


def _reflect(index: Any, size: int) -> Any:
    """Reflection about the edges between samples (d c b a | a b c d | d c b a): the mirror rule on the
    half-sample grid 2 i + 1 of 2 size + 1 points, halved back."""
    return jnp.floor_divide(_mirror(2 * index + 1, 2 * size + 1) - 1, 2)


_INDEX_RULES: dict[str, Callable[[Any, int], Any]] = {
    "constant": lambda index, size: jnp.clip(index, 0, size - 1),  # (outside points are masked to cval)
    "nearest": lambda index, size: jnp.clip(index, 0, size - 1),
    "wrap": lambda index, size: index % size,
    "mirror": _mirror,
    "reflect": _reflect,
}


def _round(x: Any) -> Any:
    """Round half away from zero (SciPy's rule for order 0 and for integer outputs); integers stay."""
    return x if dtypes.issubdtype(x.dtype, np.integer) else lax.round(x)


def _nearest_corners(coordinate: Any) -> list[tuple[Any, Any]]:
    return [(_round(coordinate).astype(np.int32), jnp.ones((), coordinate.dtype))]


def _linear_corners(coordinate: Any) -> list[tuple[Any, Any]]:
    """(index, weight) of the two neighbours: floor(x) with weight 1 - t and floor(x) + 1 with t = x - floor(x)."""
    lower = jnp.floor(coordinate)
    upper_weight = coordinate - lower
    index = lower.astype(np.int32)
    return [(index, 1 - upper_weight), (index + 1, upper_weight)]


_CORNERS = {0: _nearest_corners, 1: _linear_corners}


def map_coordinates(input: Any, coordinates: Sequence[Any], order: int, mode: str = "constant",  # noqa: A002
                    cval: Any = 0.0) -> Any:
    """The input interpolated at ``coordinates`` (one array per axis of ``input``, broadcast together), with
    nearest-neighbour (order 0) or linear (order 1) interpolation; the result has ``input``'s dtype."""
    array = jnp.asarray(input)
    coordinate_arrays = [jnp.asarray(c) for c in coordinates]
    cval = jnp.asarray(cval, array.dtype)
    if len(coordinate_arrays) != array.ndim:
        raise ValueError(f"coordinates must be a sequence of length input.ndim, but {len(coordinate_arrays)} != "
                         f"{array.ndim}")
    index_rule = _INDEX_RULES.get(mode)
    if index_rule is None:
        raise NotImplementedError(f"jax.scipy.ndimage.map_coordinates does not yet support mode {mode}. Currently "
                                  f"supported modes are {set(_INDEX_RULES)}.")
    if order not in _CORNERS:
        raise NotImplementedError("jax.scipy.ndimage.map_coordinates currently requires order<=1")
    per_axis = []  # per axis: the (index into the array, inside the array?, weight) of each corner
    for coordinate, size in zip(coordinate_arrays, array.shape):
        per_axis.append([(index_rule(index, size), (index >= 0) & (index < size) if mode == "constant" else None,
                          weight) for index, weight in _CORNERS[order](coordinate)])
    terms = []
    for corner in itertools.product(*per_axis):
        indices, inside, weights = zip(*corner)
        value = array[indices]
        if mode == "constant":
            value = jnp.where(functools.reduce(operator.and_, inside), value, cval)
        terms.append(functools.reduce(operator.mul, weights) * value)
    result = functools.reduce(operator.add, terms)
    if dtypes.issubdtype(array.dtype, np.integer):
        result = _round(result)
    return result.astype(array.dtype)
