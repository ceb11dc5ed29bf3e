"""lax's collectives over named axes (``psum``, ``pmean``, ``pmax``, ``pmin``, ``all_gather``, ``psum_scatter``,
``axis_index``); they need an enclosing ``vmap`` (or ``pmap``) with that ``axis_name``."""

from __future__ import annotations

from typing import Any

from srcjax.runtime.numpy import _core
from srcjax.runtime.tree_util import tree_map
from srcjax.transpiler.primitives import collectives as c
from srcjax.transpiler.primitives.ad import aval_of

__all__ = ["psum", "pmean", "pmax", "pmin", "all_gather", "psum_scatter", "axis_index"]


def _axes(axis_name: Any) -> tuple:
    names = axis_name if isinstance(axis_name, (tuple, list)) else (axis_name,)
    for name in names:
        c.axis_size(name)  # a clear error for an unbound name
    return tuple(names)


def _collective(prim):
    def fn(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
        if axis_index_groups is not None:
            raise NotImplementedError("axis_index_groups is not supported")
        axes = _axes(axis_name)
        return tree_map(lambda leaf: prim.bind(_core.asarray(leaf) if _core.is_concrete(leaf) else leaf, axes=axes), x)

    return fn


psum = _collective(c.psum_p)
pmean = _collective(c.pmean_p)
pmax = _collective(c.pmax_p)
pmin = _collective(c.pmin_p)


def all_gather(x: Any, axis_name: Any, *, axis_index_groups: Any = None, axis: int = 0, tiled: bool = False) -> Any:
    if axis != 0 or tiled or axis_index_groups is not None:
        raise NotImplementedError("all_gather supports axis=0, tiled=False only")
    axes = _axes(axis_name)
    size = c.axis_size(axes[0])
    return tree_map(lambda leaf: c.all_gather_p.bind(_core.asarray(leaf) if _core.is_concrete(leaf) else leaf,
                                                     axes=axes, axis_size=size), x)


def psum_scatter(x: Any, axis_name: Any, *, scatter_dimension: int = 0, axis_index_groups: Any = None,
                 tiled: bool = False) -> Any:
    """The sum over ``axis_name``, of which each example keeps its own part along ``scatter_dimension``: part ``j``
    (the index ``j`` of that axis, whose size must be the axis size; with ``tiled``, the ``j``-th of as many equal
    blocks, and the axis is kept)."""
    if axis_index_groups is not None:
        raise NotImplementedError("axis_index_groups is not supported")
    axes = _axes(axis_name)
    if len(axes) != 1:
        raise NotImplementedError("psum_scatter over several axes at once is not supported")
    size = c.axis_size(axes[0])

    def scatter(leaf: Any) -> Any:
        leaf = _core.asarray(leaf) if _core.is_concrete(leaf) else leaf
        dimension = scatter_dimension % max(aval_of(leaf).ndim, 1)
        return c.psum_scatter_p.bind(leaf, axes=axes, axis_size=size, scatter_dimension=dimension, tiled=tiled)

    return tree_map(scatter, x)


def axis_index(axis_name: Any) -> Any:
    c.axis_size(axis_name)
    return c.axis_index_p.bind(axis_name=axis_name)
