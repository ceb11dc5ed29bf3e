"""lax's collectives over named axes (``psum``, ``pmean``, ``pmax``, ``pmin``, ``all_gather``, ``psum_scatter``,
``all_to_all``, ``ppermute``, ``pshuffle``, ``axis_index``, ``axis_size``); they need an enclosing ``vmap``,
``pmap`` or ``shard_map`` with that ``axis_name``."""

from __future__ import annotations

from typing import Any

import numpy as np

from srcjax.runtime.numpy import _core
from srcjax.runtime.tree_util import tree_map
from srcjax.transpiler.primitives import collectives as c
from srcjax.transpiler.primitives import elementwise as ew
from srcjax.transpiler.primitives import shape as shape_p
from srcjax.transpiler.primitives.ad import aval_of
from srcjax.transpiler.primitives.batching import moveaxis

__all__ = ["psum", "pmean", "pmax", "pmin", "all_gather", "psum_scatter", "all_to_all", "ppermute", "pshuffle",
           "axis_index", "axis_size", "pbroadcast", "pswapaxes"]


def _axes(axis_name: Any) -> tuple:
    names = axis_name if isinstance(axis_name, (tuple, list)) else (axis_name,)
    if len(set(names)) != len(names):
        raise ValueError(f"repeated axis name in {tuple(names)}: each named axis can be reduced over once")
    for name in names:
        c.axis_size(name)  # a clear error for an unbound name
    return tuple(names)


def _collective(prim):
    def fn(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
        if axis_index_groups is not None:
            members = _group_members(axis_index_groups, axis_name)
            return tree_map(lambda leaf: _within_group(_leaf(leaf), axis_name, members, _GROUP_REDUCE[prim.name]), x)
        axes = _axes(axis_name)
        return tree_map(lambda leaf: prim.bind(_core.asarray(leaf) if _core.is_concrete(leaf) else leaf, axes=axes), x)

    return fn


_GROUP_REDUCE = {"psum": "sum", "pmean": "mean", "pmax": "max", "pmin": "min"}


def _group_members(axis_index_groups: Any, axis_name: Any) -> np.ndarray:
    """``axis_index_groups`` as a table: row ``e`` lists the members of example ``e``'s group (JAX's checks: groups
    of one size that cover the axis once)."""
    (name,) = _one_axis(axis_name, "a collective with axis_index_groups")
    size = c.axis_size(name)
    groups = [[int(i) for i in group] for group in axis_index_groups]
    if not groups or any(len(group) != len(groups[0]) for group in groups):
        raise ValueError(f"axis_index_groups must all be the same size, got {groups}")
    if sorted(i for group in groups for i in group) != list(range(size)):
        raise ValueError(f"axis_index_groups must cover all indices exactly once (of the axis '{name}' of size "
                         f"{size}), got {groups}")
    members = np.empty((size, len(groups[0])), np.int32)
    for group in groups:
        members[group] = group
    return members


def _within_group(leaf: Any, axis_name: Any, members: np.ndarray, reduce: str | None) -> Any:
    """Every example's ``leaf`` gathered, then the rows of this example's group (stacked, or combined by the
    ``jnp`` reduction ``reduce``)."""
    from srcjax.runtime import numpy as jnp

    rows = c.all_gather_p.bind(leaf, axes=_axes(axis_name), axis_size=members.shape[0])[
        _core.asarray(members)[axis_index(axis_name)]]
    return rows if reduce is None else getattr(jnp, reduce)(rows, axis=0)


_psum = _collective(c.psum_p)
_pmean = _collective(c.pmean_p)


def _counted(leaf: Any) -> Any:
    """Booleans are summed as int32, as JAX's psum sums them."""
    leaf = _core.asarray(leaf) if _core.is_concrete(leaf) else leaf
    if aval_of(leaf).dtype == np.bool_:
        return ew.convert_element_type_p.bind(leaf, new_dtype=np.dtype(np.int32), weak_type=False)
    return leaf


def psum(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    """The sum over the named axes (booleans counted as int32)."""
    return _psum(tree_map(_counted, x), axis_name, axis_index_groups=axis_index_groups)


def pmean(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    """The mean over the named axes: for integers and booleans, their sum divided as ``/`` divides (a float), as
    in JAX."""
    def mean(leaf: Any) -> Any:
        leaf = _counted(leaf)
        if np.issubdtype(aval_of(leaf).dtype, np.inexact):
            return _pmean(leaf, axis_name, axis_index_groups=axis_index_groups)
        from srcjax.runtime.numpy import true_divide

        count = 1
        for name in _axes(axis_name):
            count *= c.axis_size(name)
        if axis_index_groups is not None:
            count = _group_members(axis_index_groups, axis_name).shape[1]
        return true_divide(_psum(leaf, axis_name, axis_index_groups=axis_index_groups), count)

    return tree_map(mean, x)
pmax = _collective(c.pmax_p)
pmin = _collective(c.pmin_p)


def all_gather(x: Any, axis_name: Any, *, axis_index_groups: Any = None, axis: int = 0, tiled: bool = False) -> Any:
    """Every example's ``x``, stacked along a new axis ``axis`` in the order of the examples (``tiled``: laid end to
    end along the existing axis ``axis``)."""
    axes = _one_axis(axis_name, "all_gather")
    size = c.axis_size(axes[0])
    members = None if axis_index_groups is None else _group_members(axis_index_groups, axis_name)

    def gather(leaf: Any) -> Any:
        leaf = _leaf(leaf)
        ndim = aval_of(leaf).ndim
        if not (-(ndim + (not tiled)) <= axis < ndim + (not tiled)) or tiled and ndim == 0:
            raise ValueError(f"all_gather: axis {axis} is out of range for an operand of rank {ndim}"
                             + (" (tiled)" if tiled else ""))
        at = axis % (ndim + (not tiled))
        if members is None:
            stacked = c.all_gather_p.bind(leaf, axes=axes, axis_size=size)  # (size, *shape)
        else:  # (the group's rows only)
            stacked = _within_group(leaf, axis_name, members, None)
        if not tiled:
            return moveaxis(stacked, 0, at) if at else stacked
        shape = aval_of(leaf).shape
        moved = moveaxis(stacked, 0, at)  # (..., size, shape[at], ...)
        rows = aval_of(stacked).shape[0]
        return shape_p.reshape_p.bind(moved, new_sizes=(*shape[:at], rows * shape[at], *shape[at + 1:]),
                                       dimensions=None)

    return tree_map(gather, x)


def all_to_all(x: Any, axis_name: Any, split_axis: int, concat_axis: int, *, axis_index_groups: Any = None,
               tiled: bool = False) -> Any:
    """Each example splits ``x`` along ``split_axis`` into one part per example and sends part ``j`` to example
    ``j``; what it receives is stacked along ``concat_axis`` (``tiled``: laid end to end along it) in the order of
    the senders."""
    if axis_index_groups is not None:
        raise NotImplementedError("axis_index_groups is not supported")
    axes = _one_axis(axis_name, "all_to_all")
    size = c.axis_size(axes[0])

    def exchange(leaf: Any) -> Any:
        leaf = _leaf(leaf)
        ndim = aval_of(leaf).ndim
        split = _axis_in(split_axis, ndim, "split_axis")
        concat = _axis_in(concat_axis, ndim, "concat_axis")  # (untiled: of the result, as long)
        return c.all_to_all_p.bind(leaf, axes=axes, axis_size=size, split_axis=split, concat_axis=concat,
                                   tiled=tiled)

    return tree_map(exchange, x)


def ppermute(x: Any, axis_name: Any, perm: Any) -> Any:
    """Example ``d`` receives example ``s``'s ``x`` for each pair ``(s, d)`` of ``perm``; examples nothing is sent
    to receive zeros."""
    axes = _one_axis(axis_name, "ppermute")
    size = c.axis_size(axes[0])
    pairs = tuple((int(s), int(d)) for s, d in perm)
    for s, d in pairs:
        if not (0 <= s < size and 0 <= d < size):
            raise ValueError(f"ppermute: the pair {(s, d)} of perm is outside the axis '{axes[0]}' of size {size}")
    return tree_map(lambda leaf: c.ppermute_p.bind(_leaf(leaf), axes=axes, perm=pairs), x)


def pbroadcast(x: Any, axis_name: Any, source: int) -> Any:
    """Every example receives example ``source``'s ``x``."""
    axes = _one_axis(axis_name, "pbroadcast")
    size = c.axis_size(axes[0])
    source = int(source)
    if not 0 <= source < size:
        raise ValueError(f"pbroadcast: source {source} is outside the axis '{axes[0]}' of size {size}")
    return tree_map(lambda leaf: all_gather(leaf, axis_name)[source], x)


def pswapaxes(x: Any, axis_name: Any, axis: int, *, axis_index_groups: Any = None) -> Any:
    """The named axis swapped with ``x``'s axis ``axis`` (of the named axis's size): ``all_to_all(x, axis_name,
    axis, axis)``."""
    return all_to_all(x, axis_name, axis, axis, axis_index_groups=axis_index_groups)


def pshuffle(x: Any, axis_name: Any, perm: Any) -> Any:
    """Example ``i`` receives example ``perm[i]``'s ``x`` (``perm`` a permutation of the axis)."""
    perm = [int(p) for p in perm]
    if sorted(perm) != list(range(len(perm))):
        raise ValueError(f"pshuffle: perm must be a permutation of range({len(perm)}), got {perm}")
    return ppermute(x, axis_name, [(p, i) for i, p in enumerate(perm)])


def axis_size(axis_name: Any) -> int:
    """The number of examples along ``axis_name`` (a product over several names), a Python int."""
    size = 1
    for name in _axes(axis_name):
        size *= c.axis_size(name)
    return size


def _one_axis(axis_name: Any, what: str) -> tuple:
    axes = _axes(axis_name)
    if len(axes) != 1:
        raise NotImplementedError(f"{what} over several axes at once is not supported")
    return axes


def _leaf(leaf: Any) -> Any:
    return _core.asarray(leaf) if _core.is_concrete(leaf) else leaf


def _axis_in(axis: int, ndim: int, what: str) -> int:
    if not -ndim <= axis < ndim:
        raise ValueError(f"all_to_all: {what} {axis} is out of range for an operand of rank {ndim}")
    return axis % ndim


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
        ndim = aval_of(leaf).ndim
        if not -ndim <= scatter_dimension < ndim:
            raise ValueError(f"psum_scatter: scatter_dimension {scatter_dimension} is out of range for an operand of "
                             f"rank {ndim}")
        dimension = scatter_dimension % ndim
        return c.psum_scatter_p.bind(leaf, axes=axes, axis_size=size, scatter_dimension=dimension, tiled=tiled)

    return tree_map(scatter, x)


def axis_index(axis_name: Any) -> Any:
    """The index along ``axis_name``; along a tuple of names, the index over them together, the last name
    varying fastest (as JAX numbers them)."""
    if isinstance(axis_name, (tuple, list)):
        index = None
        for name in axis_name:
            size = c.axis_size(name)
            one = c.axis_index_p.bind(axis_name=name)
            index = one if index is None else index * size + one
        if index is None:
            raise ValueError("axis_index needs at least one axis name")
        return index
    c.axis_size(axis_name)
    return c.axis_index_p.bind(axis_name=axis_name)
