"""``srcjax.scipy.interpolate``: ``RegularGridInterpolator``, linear or nearest interpolation on a rectilinear
grid (each axis strictly increasing, as in JAX), a pytree whose leaves are the grid, values and fill value.

A query point finds its cell along each axis by ``searchsorted`` (points outside use the edge cell, so linear
interpolation extrapolates where no ``fill_value`` masks them); linear interpolation sums the 2**n corners of
the cell, each weighted by the product over axes of (1 - t) or t, t the point's place in the cell.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

import srcjax.runtime.numpy as jnp

from srcjax.runtime.numpy._core import can_cast, check_arraylike, promote_dtypes_inexact
from srcjax.runtime.tree_util import register_pytree_node

__all__ = ["RegularGridInterpolator"]

_METHODS = ("linear", "nearest")


def _check_method(method: str) -> None:
    if method not in _METHODS:
        raise ValueError(f"method {method!r} is not defined")


def _points_array(points: Any, ndim: int) -> Any:
    """Query points as an array (..., ndim): a tuple of coordinate arrays (one per axis, broadcast together)
    is stacked in the default float type; a 1-d array is a list of points."""
    if isinstance(points, tuple) and len(points) == 1:
        points = points[0]
    if isinstance(points, tuple):
        coordinates = jnp.broadcast_arrays(*points)
        stacked = jnp.empty(coordinates[0].shape + (len(coordinates),), dtype=float)
        for j, coordinate in enumerate(coordinates):
            stacked = stacked.at[..., j].set(coordinate)
        return stacked
    check_arraylike("_ndim_coords_from_arrays", points)
    points = jnp.asarray(points)
    return points.reshape(-1, ndim) if points.ndim == 1 else points


class RegularGridInterpolator:
    """Interpolation of ``values`` given on the grid ``points`` (one strictly increasing 1-d array per leading
    axis of ``values``; trailing axes are carried along). Points outside the grid get ``fill_value`` (NaN by
    default), or are extrapolated when it is None; ``bounds_error=True`` is refused, as JAX refuses it."""

    def __init__(self, points: Any, values: Any, method: str = "linear", bounds_error: bool = False,
                 fill_value: Any = np.nan):
        _check_method(method)
        self.method = method
        self.bounds_error = bounds_error
        if bounds_error:
            raise NotImplementedError("`bounds_error` takes no effect under JIT")
        check_arraylike("RegularGridInterpolator", values)
        if len(points) > np.ndim(values):
            raise ValueError(f"there are {len(points)} point arrays, but values has {np.ndim(values)} dimensions")
        (values,) = promote_dtypes_inexact(values)
        if fill_value is not None:
            check_arraylike("RegularGridInterpolator", fill_value)
            fill_value = jnp.asarray(fill_value)
            if not can_cast(fill_value.dtype, values.dtype, casting="same_kind"):
                raise ValueError("fill_value must be either 'None' or of a type compatible with values")
        self.fill_value = fill_value
        check_arraylike("RegularGridInterpolator", *points)
        self.grid = tuple(jnp.asarray(p) for p in points)
        self.values = values

    def __call__(self, xi: Any, method: str | None = None) -> Any:
        method = self.method if method is None else method
        _check_method(method)
        ndim = len(self.grid)
        xi = _points_array(xi, ndim)
        if xi.shape[-1] != ndim:
            raise ValueError(f"the requested sample points xi have dimension {xi.shape[-1]}, but this "
                             f"RegularGridInterpolator has dimension {ndim}")
        batch_shape = xi.shape[:-1]
        indices, fractions, outside = self._find_cells(xi.reshape(-1, ndim).T)
        if method == "linear":
            result = self._linear(indices, fractions)
        else:
            result = self.values[tuple(jnp.where(t <= 0.5, i, i + 1) for i, t in zip(indices, fractions))]
        if self.fill_value is not None:
            result = jnp.where(outside.reshape(result.shape[:1] + (1,) * (result.ndim - 1)), self.fill_value,
                               result)
        return result.reshape(batch_shape + self.values.shape[ndim:])

    def _find_cells(self, xi: Any) -> tuple[list[Any], list[Any], Any]:
        """Per axis, the index i of each point's cell [g[i], g[i+1]] (the edge cells for points outside) and
        its place t = (x - g[i]) / (g[i+1] - g[i]) in it; and whether each point is outside the grid."""
        indices, fractions = [], []
        outside = jnp.zeros((xi.shape[1],), dtype=bool)
        for x, g in zip(xi, self.grid):
            i = jnp.clip(jnp.searchsorted(g, x) - 1, 0, g.size - 2)
            indices.append(i)
            fractions.append((x - g[i]) / (g[i + 1] - g[i]))
            outside = outside | (x < g[0]) | (x > g[-1])
        return indices, fractions, outside

    def _linear(self, indices: list[Any], fractions: list[Any]) -> Any:
        trailing = (slice(None),) + (None,) * (self.values.ndim - len(indices))
        result = jnp.asarray(0.0)
        for upper in itertools.product((False, True), repeat=len(indices)):
            weight = jnp.asarray(1.0)
            for is_upper, t in zip(upper, fractions):
                weight = weight * (t if is_upper else 1 - t)
            corner = tuple(i + 1 if is_upper else i for is_upper, i in zip(upper, indices))
            result = result + self.values[corner] * weight[trailing]
        return result


def _unflatten(aux: tuple[str, bool], children: tuple[Any, Any, Any]) -> RegularGridInterpolator:
    """Rebuilt from its leaves without ``__init__``'s checks and conversions (they held when it was built;
    transformations rebuild it from symbolic values)."""
    interpolator = object.__new__(RegularGridInterpolator)
    interpolator.method, interpolator.bounds_error = aux
    interpolator.grid, interpolator.values, interpolator.fill_value = children
    return interpolator


register_pytree_node(RegularGridInterpolator,
                     lambda it: ((it.grid, it.values, it.fill_value), (it.method, it.bounds_error)), _unflatten)
