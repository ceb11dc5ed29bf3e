"""A nest's computation as a DAG of nodes over its iteration axes, and the collapsing of those axes.

Instantiating a value at an index map turns the plan's sources into nodes: a ``View`` becomes a ``Load``
whose address is affine in the iteration indices (one coefficient per axis), an iota an ``Iota`` of one
axis, an elementwise op an ``Apply``. Adjacent iteration axes that every affine access walks as one line
(and that are both reduced or both kept) are then merged, so a [5000, 5000] elementwise nest is one flat
loop of 25M iterations that vectorises and splits across threads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from srcjax.codegen.llvm.plan import Expr, Gathered, IndexMap, Nest, Plan, Windowed
from srcjax.codegen.llvm.layout import Buffer, View, contiguous_strides
from srcjax.transpiler.ir import Literal, Value


@dataclass(eq=False)
class Load:
    buffer: Buffer
    dtype: np.dtype
    coeffs: list[int]
    offset: int


@dataclass(eq=False)
class GatherLoad(Load):
    """A load at an address shifted by run-time index values: per start, (node, stride, largest start). Starts
    are clamped to [0, largest]; with ``fill``, an element any of whose starts is out of range is ``fill``."""

    starts: list[tuple[Any, int, int]] = field(default_factory=list)
    fill: Any = None


@dataclass(eq=False)
class WindowLoad(Load):
    """A convolution's patch element: per spatial axis (u coefficients, u offset, largest u, dilation, input
    stride), the input position u // dilation adds its stride to the address; 0 where u is out of [0,
    largest] or not a multiple of the dilation."""

    spatial: list[tuple[list[int], int, int, int, int]] = field(default_factory=list)


@dataclass(eq=False)
class Iota:
    dtype: np.dtype
    axis: int | None


@dataclass(eq=False)
class Const:
    dtype: np.dtype
    value: Any


@dataclass(eq=False)
class Apply:
    name: str
    params: dict[str, Any]
    operands: list[Any]
    in_dtypes: list[np.dtype]
    dtype: np.dtype


@dataclass(eq=False)
class Store:
    buffer: Buffer
    coeffs: list[int]
    node: Any
    offset: int = 0
    # a scatter's store: per start, (node, stride, largest start); ``combine`` with the element there (None:
    # replace it); starts out of range are clamped (``clip``) or the element is dropped
    starts: list[tuple[Any, int, int]] | None = None
    combine: str | None = None
    clip: bool = False


@dataclass(eq=False)
class Reduction:
    combine: str  # add, mul, max, min, and, or, xor (scans also logaddexp)
    node: Any
    target: Buffer
    coeffs: list[int]  # into the target; 0 on reduced axes (a scan's target has every axis)
    dtype: np.dtype
    scan: bool = False  # every prefix is stored: the one reduced axis is the innermost
    reverse: bool = False  # a scan from the end of its axis


@dataclass
class NestBody:
    shape: list[int]
    reduced: list[bool]
    stores: list[Store] = field(default_factory=list)
    reduction: Reduction | None = None
    loads: list[Load] = field(default_factory=list)
    iotas: list[Iota] = field(default_factory=list)
    # (tile axis, extent): the innermost axis is a tile of a longer one, which the tile axis numbers; the last
    # tile is cut short where the ``extent`` of the long axis ends (see ``tile_target``)
    tile: tuple[int, int] | None = None

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def cost(self, expensive: Callable[[str], bool]) -> int:
        """Rough work per element: 1, plus 1 per op, 10 per ``expensive`` one (transcendental functions)."""
        seen: set[int] = set()
        total = 1
        stack = [s.node for s in self.stores] + ([self.reduction.node] if self.reduction else [])
        while stack:
            node = stack.pop()
            if id(node) in seen or not isinstance(node, Apply):
                continue
            seen.add(id(node))
            total += 10 if expensive(node.name) else 1
            stack.extend(node.operands)
        return total

    def buffers(self) -> list[Buffer]:
        """Distinct buffers the nest touches, in a fixed order (its function's pointer arguments)."""
        seen: dict[int, Buffer] = {}
        for b in (
            [s.buffer for s in self.stores]
            + ([self.reduction.target] if self.reduction else [])
            + [load.buffer for load in self.loads]
        ):
            seen.setdefault(id(b), b)
        return list(seen.values())


class Instantiator:
    def __init__(self, plan: Plan, rank: int):
        self.plan = plan
        self.rank = rank
        self.memo: dict[tuple[int, IndexMap], Any] = {}
        self.loads: list[Load] = []
        self.iotas: list[Iota] = []

    def _coefficients(self, per_axis, index_map: IndexMap) -> list[int]:
        """Coefficients per value axis (strides) as coefficients per iteration axis."""
        coeffs = [0] * self.rank
        for axis, c in zip(index_map, per_axis):
            if axis is not None:
                coeffs[axis] += c
        return coeffs

    def _add(self, load: Load) -> Load:
        self.loads.append(load)
        return load

    def view_load(self, view: View, index_map: IndexMap, dtype: np.dtype) -> Load:
        coeffs = self._coefficients(view.strides, index_map)
        return self._add(Load(self.plan.buffers[id(view.base)], np.dtype(dtype), coeffs, view.offset))

    def gather_load(self, gathered: Gathered, index_map: IndexMap, dtype: np.dtype) -> GatherLoad:
        inner = tuple(index_map[a] for a in gathered.batch_axes)
        starts = [(self.node(c, inner), stride, top) for c, (stride, top) in zip(gathered.operands, gathered.starts)]
        view, coeffs = gathered.view, self._coefficients(gathered.strides, index_map)
        return self._add(
            GatherLoad(self.plan.buffers[id(view.base)], np.dtype(dtype), coeffs, view.offset, starts, gathered.fill)
        )

    def window_load(self, windowed: Windowed, index_map: IndexMap, dtype: np.dtype) -> WindowLoad:
        spatial = [
            (self._coefficients(u, index_map), offset, top, dilation, stride)
            for u, offset, top, dilation, stride in windowed.spatial
        ]
        view, coeffs = windowed.view, self._coefficients(windowed.strides, index_map)
        return self._add(WindowLoad(self.plan.buffers[id(view.base)], np.dtype(dtype), coeffs, view.offset, spatial))

    def node(self, v: Value, index_map: IndexMap) -> Any:
        if isinstance(v, Literal):
            return Const(v.aval.dtype, v.value)
        key = (id(v), index_map)
        if key in self.memo:
            return self.memo[key]
        src = self.plan.source(v)
        if isinstance(src, View):
            out: Any = self.view_load(src, index_map, v.aval.dtype)
        elif isinstance(src, Expr) and isinstance(src.op, Windowed):
            out = self.window_load(src.op, index_map, v.aval.dtype)
        elif isinstance(src, Expr) and isinstance(src.op, Gathered):
            out = self.gather_load(src.op, index_map, v.aval.dtype)
        elif isinstance(src, Expr) and src.op is not None:
            op = src.op
            if op.name == "iota":
                out = Iota(v.aval.dtype, index_map[op.params["dimension"]])
                self.iotas.append(out)
            else:
                operands = [self.node(u, index_map if u.aval.shape == v.aval.shape else ()) for u in op.operands]
                out = Apply(op.name, dict(op.params), operands, [u.aval.dtype for u in op.operands], v.aval.dtype)
        elif isinstance(src, Expr):
            inner = tuple(None if a is None else index_map[a] for a in src.index_map)
            out = self.node(src.operand, inner)
        else:  # a literal reached through a view op
            out = Const(v.aval.dtype, src.value)
        self.memo[key] = out
        return out


def instantiate(plan: Plan, nest: Nest) -> NestBody:
    rank = len(nest.shape)
    identity = tuple(range(rank))
    inst = Instantiator(plan, rank)
    body = NestBody(list(nest.shape), [a in nest.axes for a in range(rank)])
    if nest.scatter is not None:
        sc = nest.scatter
        ((v, buffer),) = nest.stores
        inner = tuple(sc.batch_axes)
        starts = [(inst.node(c, inner), stride, top) for c, (stride, top) in zip(sc.components, sc.starts)]
        body.stores.append(Store(buffer, list(sc.strides), inst.node(v, identity), 0, starts, sc.combine, sc.clip))
    elif nest.scan:
        # the scanned axis innermost: one running value along it per element of the other axes
        (axis,) = nest.axes
        order = [a for a in range(rank) if a != axis] + [axis]
        position = tuple(order.index(a) for a in range(rank))
        body = NestBody([nest.shape[a] for a in order], [a == axis for a in order])
        strides = contiguous_strides(nest.shape)
        node = inst.node(nest.operand, position)
        coeffs = [strides[a] for a in order]
        dtype = np.dtype(nest.operand.aval.dtype)
        body.reduction = Reduction(nest.combine, node, nest.target, coeffs, dtype, scan=True, reverse=nest.reverse)
    elif nest.combine is None:
        strides, offset = nest.placement or (contiguous_strides(nest.shape), 0)
        for v, buffer in nest.stores:
            body.stores.append(Store(buffer, list(strides), inst.node(v, identity), offset))
    else:
        kept = [a for a in range(rank) if a not in nest.axes]
        out_strides = contiguous_strides(tuple(nest.shape[a] for a in kept))
        coeffs = [0] * rank
        for a, s in zip(kept, out_strides):
            coeffs[a] = s
        if nest.product is not None:
            lhs, lmap, rhs, rmap, dtype = nest.product
            operands = [
                _as(inst.node(lhs, lmap), lhs.aval.dtype, dtype),
                _as(inst.node(rhs, rmap), rhs.aval.dtype, dtype),
            ]
            node = Apply("mul", {}, operands, [dtype, dtype], dtype)
        else:
            node = inst.node(nest.operand, identity)
            dtype = nest.operand.aval.dtype
        body.reduction = Reduction(nest.combine, node, nest.target, coeffs, np.dtype(dtype))
    body.loads, body.iotas = inst.loads, inst.iotas
    return body


def _as(node: Any, old: np.dtype, new: np.dtype) -> Any:
    if np.dtype(old) == np.dtype(new):
        return node
    return Apply("convert_element_type", {"new_dtype": new, "weak_type": False}, [node], [old], np.dtype(new))


def collapse(body: NestBody) -> NestBody:
    """Drop axes of size 1 and merge neighbours every access walks as one line (in place; returns body)."""
    if 0 in body.shape:
        return body
    vectors = [load.coeffs for load in body.loads] + [s.coeffs for s in body.stores]
    vectors += [u for load in body.loads if isinstance(load, WindowLoad) for u, *_ in load.spatial]
    if body.reduction is not None:
        vectors.append(body.reduction.coeffs)
    iota_axes = {i.axis for i in body.iotas if i.axis is not None}
    # groups of old axes, outermost first; each group becomes one axis
    groups: list[list[int]] = []
    for axis, size in enumerate(body.shape):
        if size == 1:
            continue
        if groups:
            last = groups[-1][-1]
            mergeable = (
                body.reduced[last] == body.reduced[axis]
                and last not in iota_axes
                and axis not in iota_axes
                and all(c[last] == c[axis] * size for c in vectors)
            )
            if mergeable:
                groups[-1].append(axis)
                continue
        groups.append([axis])
    new_axis = {g[-1]: k for k, g in enumerate(groups)}
    for c in vectors:
        c[:] = [c[g[-1]] for g in groups]
    for iota in body.iotas:
        iota.axis = new_axis.get(iota.axis) if iota.axis is not None else None
    body.reduced = [body.reduced[g[0]] for g in groups]
    body.shape = [int(np.prod([body.shape[a] for a in g], dtype=np.int64)) for g in groups]
    return body


# a reduction's target is added into a tile of this many bytes at a time (within the first level cache)
TILE_BYTES = 8192


def tile_target(body: NestBody) -> NestBody:
    """A reduction that accumulates in memory along a long innermost kept axis (``sum(a, axis=0)`` of a wide
    ``a``) in tiles of that axis (in place; returns body): a tile axis goes in before the first reduced axis,
    so that each tile of the target stays in cache while every reduced step adds into it. Untiled, each step
    streams the whole target through memory and back, and a reduced outermost axis split across threads
    gives each thread a partial target of its own: several times the traffic of reading the operand once."""
    red = body.reduction
    if red is None or red.scan or body.stores or body.tile or not body.shape or body.reduced[-1] \
            or not any(body.reduced):
        return body
    inner, extent = len(body.shape) - 1, body.shape[-1]
    size = TILE_BYTES // red.dtype.itemsize
    if extent < 2 * size or any(isinstance(load, WindowLoad) for load in body.loads) \
            or any(i.axis == inner for i in body.iotas):
        return body
    at = body.reduced.index(True)
    for c in [load.coeffs for load in body.loads] + [red.coeffs]:
        c.insert(at, c[-1] * size)
    for iota in body.iotas:
        if iota.axis is not None and iota.axis >= at:
            iota.axis += 1
    body.shape[-1] = size
    body.shape.insert(at, -(-extent // size))
    body.reduced.insert(at, False)
    body.tile = (at, extent)
    return body
