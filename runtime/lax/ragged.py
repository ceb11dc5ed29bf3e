"""Grouped matrix products: ``ragged_dot`` and ``ragged_dot_general``.

One axis of ``lhs`` (its ragged axis) is cut into consecutive groups of ``group_sizes`` rows. As in JAX's
definition (and XLA's CPU lowering of it), the ragged operand is spread into a dense stack with a new leading group
axis, each slice keeping only its group's rows (zeros elsewhere), and one ``dot_general`` then contracts or keeps
that axis. So derivatives, ``vmap`` and ``jit`` follow from the operations themselves. Three modes, by where the
ragged axis is:

- non-contracting (``[m, k] x [g, k, n] -> [m, n]``): the rows of group i meet the i-th matrix of ``rhs``;
- contracting (``[m, k] x [k, n] -> [g, m, n]``): product i sums over group i's stretch of k only;
- batch: JAX's definition is the plain ``dot_general`` (``group_sizes`` is not read).
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["RaggedDotDimensionNumbers", "ragged_dot", "ragged_dot_general"]


@dataclasses.dataclass(frozen=True)
class RaggedDotDimensionNumbers:
    """``dot_general``'s dimension numbers, the one ragged axis of lhs, and rhs's group axis (none, or one in the
    non-contracting mode)."""

    dot_dimension_numbers: tuple
    lhs_ragged_dimensions: tuple[int, ...]
    rhs_group_dimensions: tuple[int, ...]

    def __init__(self, dot_dimension_numbers: Any, lhs_ragged_dimensions: Sequence[int],
                 rhs_group_dimensions: Sequence[int]):
        object.__setattr__(self, "dot_dimension_numbers", tuple(tuple(map(tuple, t)) for t in dot_dimension_numbers))
        object.__setattr__(self, "lhs_ragged_dimensions", tuple(lhs_ragged_dimensions))
        object.__setattr__(self, "rhs_group_dimensions", tuple(rhs_group_dimensions))


class _Mode(enum.Enum):
    NONCONTRACTING = 1
    CONTRACTING = 2
    BATCH = 3


_BASIC = RaggedDotDimensionNumbers((([1], [1]), ([], [])), [0], [0])


def ragged_dot(lhs: Any, rhs: Any, group_sizes: Any, precision: Any = None, preferred_element_type: Any = None,
               group_offset: Any = None, out_sharding: Any = None) -> Any:
    """``[m, k] x [g, k, n] -> [m, n]``: rows ``sum(group_sizes[:i])`` up to ``sum(group_sizes[:i+1])`` of lhs
    are multiplied by ``rhs[i]``; rows past the last group give zeros."""
    return ragged_dot_general(lhs, rhs, group_sizes, _BASIC, precision, preferred_element_type, group_offset)


def _remaining(rank: int, *taken: Sequence[int]) -> list[int]:
    used = {d for dims in taken for d in dims}
    return [d for d in range(rank) if d not in used]


def _mode(rank: int, ragged: int, contract: Sequence[int], batch: Sequence[int]) -> _Mode:
    if ragged in _remaining(rank, contract, batch):
        return _Mode.NONCONTRACTING
    if ragged in contract:
        return _Mode.CONTRACTING
    return _Mode.BATCH


def _prefix(mode: _Mode, rank: int, ragged: int, batch: Sequence[int], contract: Sequence[int]) -> list[int]:
    """The axes of the operand that ``group_sizes``'s leading axes stand for (``[b..., x..., g]``)."""
    batch, contract = list(batch), list(contract)
    if mode is _Mode.NONCONTRACTING:
        free = _remaining(rank, contract, batch)
        return batch + free[:free.index(ragged)]
    if mode is _Mode.CONTRACTING:
        return batch + contract[:contract.index(ragged)]
    return batch[:batch.index(ragged)]


def _check(lhs_shape: tuple, rhs_shape: tuple, sizes_shape: tuple, numbers: RaggedDotDimensionNumbers) -> _Mode:
    """JAX's checks of the dimension numbers and of group_sizes's shape; returns the mode."""
    def in_range(dim: int, rank: int, what: str, arg: str) -> None:
        if not 0 <= dim < rank:
            raise TypeError(f"ragged_dot_general requires {what} numbers to be nonnegative and less than the number of "
                            f"axes of the {arg} value, got {dim} for {arg} of rank {rank}.")

    if len(numbers.lhs_ragged_dimensions) != 1:
        raise TypeError("ragged_dot_general expects exactly one lhs ragged dimension.")
    ragged = numbers.lhs_ragged_dimensions[0]
    in_range(ragged, len(lhs_shape), "lhs ragged dimension", "lhs")
    (lc, rc), (lb, rb) = numbers.dot_dimension_numbers
    mode = _mode(len(lhs_shape), ragged, lc, lb)
    if len(sizes_shape) == 0:
        raise TypeError("expected rank of group_sizes to be >=1.")
    if len(sizes_shape) != 1:
        expected = tuple(lhs_shape[i] for i in _prefix(mode, len(lhs_shape), ragged, lb, lc)) + (sizes_shape[-1],)
        if tuple(sizes_shape) != expected:
            raise TypeError(f"expected group_sizes to have shape {expected}, got {tuple(sizes_shape)}.")
    groups = numbers.rhs_group_dimensions
    if mode is not _Mode.NONCONTRACTING and groups:
        raise TypeError("ragged_dot_general requires zero group dimensions in the rhs when lhs ragged dimension is "
                        "contracting or batch.")
    if mode is _Mode.NONCONTRACTING:
        if len(groups) != 1:
            raise TypeError("ragged_dot_general requires exactly one rhs group dimension when lhs ragged dimension "
                            "is noncontracting.")
        in_range(groups[0], len(rhs_shape), "rhs group dimension", "rhs")
        if groups[0] in rb or groups[0] in rc:
            raise TypeError("ragged_dot_general requires rhs group dimension numbers to be distinct from "
                            "contracting and batch dimensions.")
        if rhs_shape[groups[0]] != sizes_shape[-1]:
            raise TypeError(f"expected rhs group dimension size to be {sizes_shape[-1]}, got "
                            f"{rhs_shape[groups[0]]}.")
    return mode


def _spread(x: Any, dim: int, sizes: Any, axes: Sequence[int]) -> Any:
    """``[g, *x.shape]``: slice i keeps the entries of x whose index along ``dim`` lies in group i (zeros
    elsewhere). ``sizes`` is ``[*x.shape[axes], g]``: each leading index along ``axes`` has its own groups."""
    from srcjax.runtime import lax
    from srcjax.runtime import numpy as jnp

    shape = (sizes.shape[-1], *x.shape)
    ends = jnp.moveaxis(jnp.cumsum(sizes, axis=-1), -1, 0)
    starts = ends - jnp.moveaxis(sizes, -1, 0)
    where = (0, *(a + 1 for a in axes))
    ends, starts = (lax.broadcast_in_dim(v, shape, where) for v in (ends, starts))
    index = lax.broadcasted_iota(sizes.dtype, shape, dim + 1)
    inside = (starts <= index) & (index < ends)
    return jnp.where(inside, lax.broadcast_in_dim(x, shape, tuple(range(1, len(shape)))), jnp.zeros((), x.dtype))


def ragged_dot_general(lhs: Any, rhs: Any, group_sizes: Any, ragged_dot_dimension_numbers: RaggedDotDimensionNumbers,
                       precision: Any = None, preferred_element_type: Any = None, group_offset: Any = None,
                       out_sharding: Any = None) -> Any:
    """``dot_general`` with lhs's ragged axis cut into groups (see the module docstring for the three modes);
    the contracting mode's result has a leading group axis."""
    from srcjax.runtime import numpy as jnp
    from srcjax.runtime.lax.convolution import dot_general

    if group_offset is not None:
        raise NotImplementedError("Unimplemented group_offset support.")
    numbers = ragged_dot_dimension_numbers
    if not isinstance(numbers, RaggedDotDimensionNumbers):
        raise TypeError(f"ragged_dot_general: ragged_dot_dimension_numbers must be a RaggedDotDimensionNumbers, "
                        f"got {numbers!r}")
    lhs, rhs, group_sizes = jnp.asarray(lhs), jnp.asarray(rhs), jnp.asarray(group_sizes)
    if not jnp.issubdtype(group_sizes.dtype, np.integer):
        raise TypeError("ragged_dot_general requires that group_sizes.dtype is subtype of np.integer.")
    mode = _check(lhs.shape, rhs.shape, group_sizes.shape, numbers)
    (lc, rc), (lb, rb) = numbers.dot_dimension_numbers
    ragged = numbers.lhs_ragged_dimensions[0]
    product = lambda x, y, dims: dot_general(x, y, dims, precision, preferred_element_type)  # noqa: E731
    if mode is _Mode.BATCH:
        return product(lhs, rhs, numbers.dot_dimension_numbers)
    lhs_prefix = _prefix(mode, lhs.ndim, ragged, lb, lc)
    if group_sizes.ndim == 1:
        group_sizes = jnp.broadcast_to(group_sizes, (*(lhs.shape[i] for i in lhs_prefix), group_sizes.shape[0]))
    up = lambda dims: [d + 1 for d in dims]  # noqa: E731 - the axes after the new group axis
    lhs_spread = _spread(lhs, ragged, group_sizes, lhs_prefix)
    if mode is _Mode.NONCONTRACTING:
        group = numbers.rhs_group_dimensions[0]
        return product(lhs_spread, rhs, ((up(lc) + [0], list(rc) + [group]), (up(lb), list(rb))))
    rhs_ragged = rc[list(lc).index(ragged)]
    rhs_spread = _spread(rhs, rhs_ragged, group_sizes, _prefix(mode, rhs.ndim, rhs_ragged, rb, rc))
    return product(lhs_spread, rhs_spread, ((up(lc), up(rc)), ([0] + up(lb), [0] + up(rb))))
