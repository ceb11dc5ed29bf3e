"""Partition a straight-line IR function into fusion groups: loop nests and matrix products over buffers.

Every value gets a *source*: a ``View`` (a materialised buffer seen through strides: parameters, constants,
results of reductions and products, and whatever reshapes, transposes, broadcasts or slices them), an
``Expr`` (an elementwise op or an index remapping, computed where it is used, never stored) or a literal.
A value is materialised (becomes a *root* with a buffer and a nest that writes it) only when it must be:
a function result, a reduction or product, the operand of a reshape that strides cannot express, or an
expensive expression that several nests (or one nest, many times over through a broadcast) would
otherwise recompute. Each root is one loop nest, one pass over memory.

Nests index values through *index maps*: for each axis of the value, the iteration axis it follows (or
None: index 0). Broadcasts and transposes of expressions compose maps, so they cost nothing.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Union

import numpy as np

from srcjax.codegen.llvm.layout import Buffer, View, contiguous_strides, matrix_layout, reshape_view
from srcjax.transpiler.ir import Function, Literal, Op, Value
from srcjax.transpiler.primitives.convolution import dot_general_p
from srcjax.transpiler.types import TensorType

IndexMap = tuple  # per value axis: an iteration axis (int) or None


class Unsupported(Exception):
    """The function uses something the native backend does not compile (the interpreter runs it)."""


# dtypes the backend handles (no float16, no complex numbers yet)
SUPPORTED_DTYPES = {
    np.dtype(t) for t in "bool int8 int16 int32 int64 uint8 uint16 uint32 uint64 float32 float64".split()
}

# work per element, for deciding what to materialise: transcendental functions, then divisions and roots
EXPENSIVE = frozenset(
    "exp exp2 log log1p expm1 tanh logistic sin cos erf tan asin acos atan atan2 sinh cosh asinh acosh atanh "
    "cbrt erfc erf_inv lgamma digamma pow nextafter".split()
)
MODERATE = frozenset("div rem sqrt rsqrt".split())
MERGE_MAX_COST = 9  # map nests with no more work per element than this are bound by memory: worth merging
IDENTITIES = frozenset({"stop_gradient"})  # the value itself (they only matter to transformations)
VIEW_OPS = frozenset("broadcast_in_dim reshape transpose squeeze expand_dims slice rev".split())
REDUCTIONS = {f"reduce_{name}": combine for name, combine in
              [("sum", "add"), ("prod", "mul"), ("max", "max"), ("min", "min"), ("and", "and"), ("or", "or"),
               ("xor", "xor")]}  # fmt: skip


# window reductions with at most WINDOW_MAX_ELEMENTS elements (no padding, no base dilation) are the combination
# of that many strided views of the operand: one fused nest (max pooling)
WINDOWS = {"reduce_window_max": "max", "reduce_window_min": "min", "reduce_window_sum": "add"}
WINDOW_MAX_ELEMENTS = 16


def small_window(op: Op) -> bool:
    p = op.params
    return (
        op.name in WINDOWS
        and int(np.prod([int(d) for d in p["window_dimensions"]], dtype=np.int64)) <= WINDOW_MAX_ELEMENTS
        and all(int(lo) == 0 and int(hi) == 0 for lo, hi in p["padding"])
        and all(int(b) == 1 for b in p["base_dilation"])
    )


# elementwise primitives with several results: result j is the elementwise rule "<name>.<j>"
MULTI_RESULT_ELEMENTWISE = frozenset({"threefry2x32"})

# scatters: how each update element combines with the operand element it lands on (None: replaces it)
SCATTERS = {"scatter": None, "scatter_add": "add", "scatter_mul": "mul", "scatter_min": "min", "scatter_max": "max"}
# arg-reductions: the extremum they look for
ARG_REDUCTIONS = {"argmax": "max", "argmin": "min"}
# cumulative scans: the running combination
SCANS = {"cumsum": "add", "cumprod": "mul", "cummax": "max", "cummin": "min", "cumlogsumexp": "logaddexp"}


@dataclass(frozen=True)
class ResultOf:
    """Stands for an op in an ``Expr``: result ``j`` of a multi-result elementwise op, named "<op>.<j>", or an
    elementwise op the planner makes itself (the combination of a window's views)."""

    name: str
    operands: list
    params: dict


@dataclass(frozen=True)
class Expr:
    """An unmaterialised value: ``op`` applied elementwise, or (``operand``, ``index_map``) remapping axes."""

    op: "Op | ResultOf | None" = None
    operand: Value | None = None
    index_map: IndexMap = ()


@dataclass(frozen=True)
class Gathered:
    """Stands for a gather in an ``Expr``: each element reads ``view`` at an address that is affine in the
    element's index (``strides``, per result axis) plus, per component of the index vector, the component
    (clamped to [0, largest start]) times an operand stride. ``operands`` are the components: values over
    the indices' batch axes, which follow the result axes ``batch_axes``. With ``fill`` (FILL_OR_DROP), an
    element whose window does not fit is ``fill``."""

    operands: list
    view: View
    strides: tuple[int, ...]
    starts: tuple[tuple[int, int], ...]  # per component: (operand stride, largest start)
    batch_axes: tuple[int, ...]
    fill: object = None
    name: str = "gather"  # (what cost estimates read of an op)


@dataclass(frozen=True)
class Windowed:
    """Stands for a convolution's patches (im2col) in an ``Expr``: each element reads ``view`` at an address
    affine in the element's index (``strides``, per value axis) plus, per spatial axis, the input position
    u // dilation times the input's stride, where u is affine in the index: (coefficient per value axis,
    offset, largest u, dilation, input stride). Where u falls in the padding or in a hole of the dilation the
    element is 0."""

    view: View
    strides: tuple[int, ...]
    spatial: tuple[tuple[tuple[int, ...], int, int, int, int], ...]
    name: str = "patches"
    operands: tuple = ()  # (it reads no value through the expression walk)


@dataclass
class Scattered:
    """What makes a map nest over the updates a scatter: each update element lands at an address affine in
    its index (``strides``) plus, per index component (``components``, over the updates' ``batch_axes``),
    the component times an operand stride. Windows that do not fit are clamped into place (``clip``) or
    dropped; ``combine`` says how an update meets the element it lands on (None: replaces it). The nest
    runs serially, in order, so repeated indices combine (or the last one wins) as in NumPy."""

    combine: str | None
    components: list
    strides: tuple[int, ...]
    starts: tuple[tuple[int, int], ...]
    batch_axes: tuple[int, ...]
    clip: bool


Source = Union[View, Expr, Literal]


@dataclass
class Nest:
    """One loop nest over ``shape``. Map nests store values (at the identity index map) into buffers;
    reduce nests combine ``operand`` over ``axes`` into ``target`` (``combine`` names the operation)."""

    shape: tuple[int, ...]
    stores: list[tuple[Value, Buffer]] = field(default_factory=list)
    combine: str | None = None
    operand: Value | None = None
    axes: tuple[int, ...] = ()
    target: Buffer | None = None
    # a product (``dot`` nest): lhs and rhs values with their index maps into the iteration axes
    product: tuple[Value, IndexMap, Value, IndexMap, np.dtype] | None = None
    order: float = 0  # program position of the root: nests run in this order
    # where map nests store, as (strides, offset) in the buffer; None: contiguous over ``shape``
    placement: tuple[tuple[int, ...], int] | None = None
    scatter: Scattered | None = None  # a map nest over a scatter's updates, storing them at their indices
    reverse: bool = False  # a scan (``combine`` over the one axis in ``axes``, every prefix stored) from the end
    scan: bool = False


@dataclass
class Gemm:
    """A (batched) matrix product through BLAS: out[b] = op(lhs[b]) @ op(rhs[b]), all float32 or float64."""

    lhs: View
    rhs: View
    target: Buffer
    batch: int
    m: int
    n: int
    k: int
    lhs_layout: tuple[int, bool, int]  # (batch stride, transposed, leading dimension) of the (m, k) operand
    rhs_layout: tuple[int, bool, int]  # of the (k, n) operand
    order: float = 0
    symmetric: bool = False  # rhs is lhs transposed (x @ x.T): a rank-k update computes half the product


Step = Union[Nest, Gemm]


@dataclass
class Plan:
    fn: Function
    sources: dict[int, Source]
    buffers: dict[int, Buffer]  # root value id -> buffer
    steps: list[Step]
    inputs: list[Buffer]
    consts: list[tuple[Buffer, np.ndarray]]
    outputs: list[Buffer]
    temps: list[Buffer]
    control: bool = False  # the function has control flow: ``control.ControlEmitter`` emits it
    # ops run by the host (NumPy) from inside the native code, in the order of their index in the call
    host_ops: list[Op] = field(default_factory=list)

    def source(self, v: Value) -> Source:
        return v if isinstance(v, Literal) else self.sources[id(v)]


def _indexed_address(operand_strides, operand_shape, sizes, windows, batching, batch_axes, index_map, rank):
    """Where a gather reads (a scatter writes) an element of its operand, for each element of its result
    (updates) of rank ``rank``: per axis, the operand stride it walks (``windows``: (operand axis, window
    axis) pairs; ``batching``: (operand axis, indices batch axis) pairs, the latter following ``batch_axes``),
    and per index component (operand axes ``index_map``), its operand stride and largest start (the window,
    ``sizes``, must fit)."""
    strides = [0] * rank
    for a, axis in windows:
        strides[axis] += operand_strides[a]
    for a, j in batching:
        strides[batch_axes[j]] += operand_strides[a]
    starts = tuple((operand_strides[a], operand_shape[a] - sizes[a]) for a in index_map)
    return tuple(strides), starts


def _live_ops(fn: Function) -> list[Op]:
    """The ops some result depends on (dead ones are not compiled)."""
    live: set[int] = {id(v) for v in fn.results}
    kept = []
    for op in reversed(fn.body.ops):
        if any(id(r) in live for r in op.results):
            kept.append(op)
            live.update(id(v) for v in op.operands)
    return kept[::-1]


class Planner:
    """Builds a ``Plan`` by walking the function's ops once, then materialising shared expensive values."""

    def __init__(self, fn: Function, available_gemm: set[np.dtype]):
        self.fn = fn
        self.gemm_dtypes = available_gemm
        self.sources: dict[int, Source] = {}
        self.buffers: dict[int, Buffer] = {}
        self.steps: list[Step] = []
        self.position: dict[int, int] = {}  # value id -> index of its defining op
        self.temps: list[Buffer] = []
        self.inputs: list[Buffer] = []
        self.consts: list[tuple[Buffer, np.ndarray]] = []
        self.current = 0  # index of the op being visited
        self.pending_outputs: dict[int, tuple[Nest, Buffer]] = {}  # result id -> the nest storing it
        self.users: dict[int, list[Op]] = {}  # value id -> the live ops that read it

    # -- sources ----------------------------------------------------------------------------------------
    def source(self, v: Value) -> Source:
        return v if isinstance(v, Literal) else self.sources[id(v)]

    def _root(self, v: Value, buffer: Buffer) -> None:
        self.buffers[id(v)] = buffer
        self.sources[id(v)] = View(v, v.aval.shape, contiguous_strides(v.aval.shape))

    def _temp(self, v: Value) -> Buffer:
        buffer = Buffer("temp", len(self.temps), v.aval.dtype, v.aval.size)
        self.temps.append(buffer)
        return buffer

    def _holder(self, v: Value, src: Source, name: str) -> Value:
        """A fresh value of ``v``'s type standing for ``src`` (what a nest stores; ``v`` may become a view)."""
        return self._new(v.aval, src, name)

    def _new(self, aval: TensorType, src: Source, name: str) -> Value:
        holder = Value(aval, name=name)
        self.sources[id(holder)] = src
        return holder

    def materialise(self, v: Value) -> View:
        """``v``'s source as a view, computing it into a buffer first if it is an expression (the output's
        buffer when ``v`` is a result that nothing else has claimed, else a temporary)."""
        src = self.source(v)
        if isinstance(src, View):
            return src
        pending = self.pending_outputs.pop(id(v), None)
        if pending is not None:
            nest, buffer = pending
            self.steps = [s for s in self.steps if s is not nest]  # (by identity: == would compare Values)
        else:
            buffer = self._temp(v)
        holder = self._holder(v, src, v.name or "value")
        self.steps.append(Nest(v.aval.shape, stores=[(holder, buffer)], order=self.position.get(id(v), -1)))
        self._root(v, buffer)
        return self.sources[id(v)]  # type: ignore[return-value]

    # -- the walk ---------------------------------------------------------------------------------------
    def run(self) -> Plan:
        fn = self.fn
        if fn.captured:
            raise Unsupported("functions with captured values are not compiled natively")
        for i, p in enumerate(fn.params):
            self._check_type(p)
            buffer = Buffer("input", i, p.aval.dtype, p.aval.size)
            self.inputs.append(buffer)
            self._root(p, buffer)
        for i, (v, data) in enumerate(fn.consts):
            self._check_type(v)
            buffer = Buffer("const", i, v.aval.dtype, v.aval.size)
            self.consts.append((buffer, np.ascontiguousarray(data, v.aval.dtype)))
            self._root(v, buffer)
        live = _live_ops(fn)
        for op in live:
            for v in op.operands:
                self.users.setdefault(id(v), []).append(op)
        for index, op in enumerate(live):
            self.current = index
            if op.regions:
                raise Unsupported(f"control flow ('{op.name}') is not compiled natively yet")
            for r in op.results:
                self._check_type(r)
                self.position[id(r)] = index
            for v in op.operands:
                self._check_type(v)
            self.visit(op)
        outputs = self._bind_outputs()
        self._share_expensive()
        self.steps.sort(key=lambda s: s.order)
        plan = Plan(fn, self.sources, self.buffers, self.steps, self.inputs, self.consts, outputs, self.temps)
        plan.steps = _merge_maps(plan)
        return plan

    def _check_type(self, v: Value) -> None:
        if not isinstance(v.aval, TensorType) or v.aval.dtype not in SUPPORTED_DTYPES:
            raise Unsupported(f"values of type {v.aval} are not compiled natively yet")

    def visit(self, op: Op) -> None:
        from srcjax.codegen.llvm.rules import ELEMENTWISE

        name = op.name
        if name in MULTI_RESULT_ELEMENTWISE:
            for j, r in enumerate(op.results):
                self.sources[id(r)] = Expr(op=ResultOf(f"{name}.{j}", op.operands, op.params))
            return
        (result,) = op.results if len(op.results) == 1 else (None,)
        if result is None:
            raise Unsupported(f"'{name}' has several results")
        if name in ELEMENTWISE or name == "iota":
            self.sources[id(result)] = Expr(op=op)
        elif name in VIEW_OPS:
            self.sources[id(result)] = self._view_op(op, result)
        elif name in IDENTITIES:
            (x,) = op.operands
            src = self.source(x)
            self.sources[id(result)] = (
                src if isinstance(src, View) else Expr(operand=x, index_map=tuple(range(x.aval.ndim)))
            )
        elif name in REDUCTIONS:
            (x,) = op.operands
            axes = tuple(sorted(int(a) for a in op.params["axes"]))
            buffer = self._temp(result)
            self.steps.append(
                Nest(
                    x.aval.shape,
                    combine=REDUCTIONS[name],
                    operand=x,
                    axes=axes,
                    target=buffer,
                    order=self.position[id(result)],
                )
            )
            self._root(result, buffer)
        elif op.prim is dot_general_p:
            self._dot(op, result)
        elif name in ("concatenate", "pad"):
            self._assemble(op, result)
        elif small_window(op):
            self._window(op, result)
        elif name == "gather":
            self._gather(op, result)
        elif name in SCATTERS:
            self._scatter(op, result)
        elif name in ARG_REDUCTIONS:
            self._arg_reduction(op, result)
        elif name in SCANS:
            self._scan(op, result)
        elif name == "conv_general_dilated" and lowers(op):
            self._conv(op, result)
        else:
            raise Unsupported(f"'{name}' has no native CPU lowering yet")

    def _view_op(self, op: Op, result: Value) -> Source:
        (x,) = op.operands[:1]
        shape = result.aval.shape
        src = self.source(x)
        name, params = op.name, op.params
        if name == "broadcast_in_dim":
            dims = tuple(params["broadcast_dimensions"])
            if isinstance(src, View):
                strides = [0] * len(shape)
                for a, d in enumerate(dims):
                    strides[d] = src.strides[a] if src.shape[a] == shape[d] else 0
                return View(src.base, shape, tuple(strides), src.offset)
            return Expr(
                operand=x, index_map=tuple(d if x.aval.shape[a] == shape[d] else None for a, d in enumerate(dims))
            )
        if name == "transpose" or (name == "reshape" and params.get("dimensions") is not None):
            perm = tuple(params["permutation"] if name == "transpose" else params["dimensions"])
            inverse = tuple(int(i) for i in np.argsort(perm))
            permuted_shape = tuple(x.aval.shape[p] for p in perm)
            if isinstance(src, View):
                moved: Source = View(src.base, permuted_shape, tuple(src.strides[p] for p in perm), src.offset)
            else:
                moved = Expr(operand=x, index_map=inverse)  # operand axis a follows result axis inverse[a]
            if name == "transpose":
                return moved
            if isinstance(moved, View):
                return self._reshape_source(moved, None, shape)
            # an expression transposed and then reshaped: materialise the transpose's operand first
            view = self.materialise(x)
            return self._reshape_source(
                View(view.base, permuted_shape, tuple(view.strides[p] for p in perm), view.offset), None, shape
            )
        if name in ("reshape", "squeeze", "expand_dims"):
            return self._reshape_source(src, x, shape)
        if name == "slice":
            view = src if isinstance(src, View) else self.materialise(x)
            starts = params["start_indices"]
            steps = params.get("strides") or (1,) * len(shape)
            offset = view.offset + sum(int(s) * st for s, st in zip(starts, view.strides))
            return View(view.base, shape, tuple(st * int(k) for st, k in zip(view.strides, steps)), offset)
        if name == "rev":  # a negative stride, starting from the last element
            view = src if isinstance(src, View) else self.materialise(x)
            dims = set(int(d) for d in params["dimensions"])
            offset = view.offset + sum((view.shape[d] - 1) * view.strides[d] for d in dims if view.shape[d])
            return View(view.base, shape, tuple(-st if d in dims else st for d, st in enumerate(view.strides)), offset)
        raise Unsupported(f"'{name}' has no native CPU lowering yet")

    def _reshape_source(self, src: Source, x: Value | None, shape: tuple[int, ...]) -> Source:
        if isinstance(src, Literal):
            return Expr(operand=src, index_map=())
        if isinstance(src, Expr) and x is not None:
            old = [(a, d) for a, d in enumerate(x.aval.shape) if d != 1]
            new = [(b, d) for b, d in enumerate(shape) if d != 1]
            if [d for _, d in old] == [d for _, d in new]:  # only axes of size 1 come or go
                index_map = [None] * x.aval.ndim
                for (a, _), (b, _) in zip(old, new):
                    index_map[a] = b
                return Expr(operand=x, index_map=tuple(index_map))
            src = self.materialise(x)
        assert isinstance(src, View)
        view = reshape_view(src, shape)
        if view is None:  # strides cannot express it: copy the operand first
            copy = self._copy_view(src)
            view = reshape_view(copy, shape)
            assert view is not None
        return view

    def _copy_view(self, view: View) -> View:
        """A contiguous copy of a strided view, as a new root."""
        copy = Value(view.base.aval.update(shape=view.shape), name="copy")
        holder = self._holder(copy, view, "copy")
        buffer = self._temp(copy)
        # after the view's base is computed, before the op that needs the copy
        self.steps.append(Nest(view.shape, stores=[(holder, buffer)], order=self.current - 0.5))
        self._root(copy, buffer)
        return self.sources[id(copy)]  # type: ignore[return-value]

    def _assemble(self, op: Op, result: Value) -> None:
        """``concatenate`` and ``pad`` write their operands (fused expressions included) into slices of the
        result's buffer: one nest per operand, after a fill with the padding value."""
        buffer = self._temp(result)
        strides = contiguous_strides(result.aval.shape)
        order = self.position[id(result)]

        def place(x: Value, at_strides: tuple[int, ...], offset: int) -> None:
            if x.aval.size:
                holder = self._holder(x, Expr(operand=x, index_map=tuple(range(x.aval.ndim))), "part")
                self.steps.append(
                    Nest(x.aval.shape, stores=[(holder, buffer)], order=order, placement=(at_strides, offset))
                )

        if op.name == "concatenate":
            dim, offset = int(op.params["dimension"]), 0
            for x in op.operands:
                place(x, strides, offset)
                offset += x.aval.shape[dim] * strides[dim]
        else:
            x, value = op.operands
            config = [tuple(int(c) for c in dims) for dims in op.params["padding_config"]]
            if any(lo < 0 or hi < 0 or interior < 0 for lo, hi, interior in config):
                raise Unsupported("'pad' with negative padding is not compiled natively yet")
            fill = self._holder(result, Expr(operand=value, index_map=()), "padding")
            self.steps.append(Nest(result.aval.shape, stores=[(fill, buffer)], order=order))
            offset = sum(lo * st for (lo, _, _), st in zip(config, strides))
            place(x, tuple(st * (interior + 1) for (_, _, interior), st in zip(config, strides)), offset)
        self._root(result, buffer)

    def _window(self, op: Op, result: Value) -> None:
        """A small window reduction: its operand seen through one strided view per window offset (the
        window's strides and dilation scale the operand's), combined elementwise."""
        (x,) = op.operands
        view = self.materialise(x)
        p = op.params
        strides = tuple(st * int(s) for st, s in zip(view.strides, p["window_strides"]))
        acc: Value | None = None
        for offset in itertools.product(*(range(int(d)) for d in p["window_dimensions"])):
            start = view.offset + sum(o * int(d) * st for o, d, st in zip(offset, p["window_dilation"], view.strides))
            part = self._holder(result, View(view.base, result.aval.shape, strides, start), "window")
            if acc is not None:
                part = self._holder(result, Expr(op=ResultOf(WINDOWS[op.name], [acc, part], {})), "window")
            acc = part
        assert acc is not None  # (a window has at least one element)
        self.sources[id(result)] = self.sources[id(acc)]

    # -- indexing ---------------------------------------------------------------------------------------
    def _index_components(self, indices: Value) -> list[Value]:
        """The components of the indices' index vector (their last axis): views over the batch axes."""
        view = self.materialise(indices)
        batch = indices.aval.shape[:-1]
        aval = TensorType(indices.aval.dtype, batch)
        return [
            self._new(aval, View(view.base, batch, view.strides[:-1], view.offset + k * view.strides[-1]), "index")
            for k in range(indices.aval.shape[-1])
        ]

    def _gather(self, op: Op, result: Value) -> None:
        """A gather is an expression: each element loads from the operand at an address the indices shift."""
        from srcjax.transpiler.primitives.indexing import GatherScatterMode, default_fill_value

        x, indices = op.operands
        p, view = op.params, self.materialise(x)
        dn, sizes = p["dimension_numbers"], [int(k) for k in p["slice_sizes"]]
        batch_axes = tuple(a for a in range(result.aval.ndim) if a not in dn.offset_dims)
        windowed = [a for a in range(x.aval.ndim) if a not in dn.collapsed_slice_dims + dn.operand_batching_dims]
        strides, starts = _indexed_address(
            view.strides, x.aval.shape, sizes, zip(windowed, dn.offset_dims),
            zip(dn.operand_batching_dims, dn.start_indices_batching_dims), batch_axes, dn.start_index_map,
            result.aval.ndim,
        )
        fill = None
        if p.get("mode") == GatherScatterMode.FILL_OR_DROP:
            fill = default_fill_value(x.aval.dtype) if p.get("fill_value") is None else p["fill_value"]
        gathered = Gathered(self._index_components(indices), view, strides, starts, batch_axes, fill)
        self.sources[id(result)] = Expr(op=gathered)

    def _scatter(self, op: Op, result: Value) -> None:
        """The operand copied into the result's buffer, then a serial nest over the updates that stores (or
        combines) each one where its indices say."""
        from srcjax.transpiler.primitives.indexing import GatherScatterMode

        x, indices, updates = op.operands
        dn, order = op.params["dimension_numbers"], self.position[id(result)]
        components = self._index_components(indices)
        buffer = self._temp(result)
        operand = self._holder(x, Expr(operand=x, index_map=tuple(range(x.aval.ndim))), "operand")
        self.steps.append(Nest(x.aval.shape, stores=[(operand, buffer)], order=order))
        windowed = [a for a in range(x.aval.ndim) if a not in dn.inserted_window_dims + dn.operand_batching_dims]
        batch_axes = tuple(i for i in range(updates.aval.ndim) if i not in dn.update_window_dims)
        sizes = [1] * x.aval.ndim
        for a, u in zip(windowed, dn.update_window_dims):
            sizes[a] = updates.aval.shape[u]
        strides, starts = _indexed_address(
            contiguous_strides(x.aval.shape), x.aval.shape, sizes, zip(windowed, dn.update_window_dims),
            zip(dn.operand_batching_dims, dn.scatter_indices_batching_dims), batch_axes,
            dn.scatter_dims_to_operand_dims, updates.aval.ndim,
        )
        combine = SCATTERS[op.name]
        if x.aval.dtype.kind == "b" and combine in ("add", "mul"):
            combine = "or" if combine == "add" else "and"  # (NumPy's add and multiply on booleans)
        clip = op.params.get("mode") == GatherScatterMode.CLIP
        scattered = Scattered(combine, components, strides, starts, batch_axes, clip)
        self.steps.append(Nest(updates.aval.shape, stores=[(updates, buffer)], order=order, scatter=scattered))
        self._root(result, buffer)

    def _arg_reduction(self, op: Op, result: Value) -> None:
        """argmax (argmin) as two reductions: the extremum along the axis, then the smallest index where the
        operand equals it (or is NaN: a NaN is the extremum, and the first one wins, as in NumPy and XLA)."""
        (x,) = op.operands
        (axis,) = (int(a) for a in op.params["axes"])
        index_dtype, order = np.dtype(op.params["index_dtype"]), self.position[id(result)]
        kept = result.aval.shape
        extremum = Value(TensorType(x.aval.dtype, kept), name="extremum")
        buffer = self._temp(extremum)
        combine = ARG_REDUCTIONS[op.name]
        self.steps.append(Nest(x.aval.shape, combine=combine, operand=x, axes=(axis,), target=buffer, order=order))
        self._root(extremum, buffer)
        shape = x.aval.shape
        flags, indices = TensorType(np.dtype(bool), shape), TensorType(index_dtype, shape)

        def expr(aval, name, *operands, **params):
            return self._new(aval, Expr(op=ResultOf(name, list(operands), params)), "arg")

        spread = self._new(
            x.aval, Expr(operand=extremum, index_map=tuple(a + (a >= axis) for a in range(len(kept)))), "arg"
        )
        hit = expr(flags, "eq", x, spread)
        if x.aval.dtype.kind == "f":
            hit = expr(flags, "or", hit, expr(flags, "ne", x, x))
        position = expr(indices, "iota", dimension=axis)
        last = Literal(shape[axis] - 1, TensorType(index_dtype, ()))
        chosen = expr(indices, "select_n", hit, last, position)
        target = self._temp(result)
        self.steps.append(Nest(shape, combine="min", operand=chosen, axes=(axis,), target=target, order=order))
        self._root(result, target)

    def _scan(self, op: Op, result: Value) -> None:
        (x,) = op.operands
        buffer = self._temp(result)
        self.steps.append(
            Nest(x.aval.shape, combine=SCANS[op.name], operand=x, axes=(int(op.params["axis"]),), target=buffer,
                 order=self.position[id(result)], scan=True, reverse=bool(op.params.get("reverse", False)))
        )
        self._root(result, buffer)

    # -- convolutions -----------------------------------------------------------------------------------
    def _conv(self, op: Op, result: Value) -> None:
        """im2col: the patches (G, N/bg, *out, *kernel, C/fg) of the padded, dilated input as one map nest (0 in
        padding and holes), then one product per group with the kernel (BLAS, or a loop nest). With groups, the
        product is computed transposed, (G, O/G, N/bg, *out), so the result is a view either way."""
        x, w = op.operands
        p = op.params
        lspec, rspec, ospec = p["dimension_numbers"]
        fg, bg = int(p.get("feature_group_count") or 1), int(p.get("batch_group_count") or 1)
        groups, rank = fg * bg, x.aval.ndim - 2
        xs, ws = x.aval.shape, w.aval.shape
        batch, out_features, cin = xs[lspec[0]] // bg, ws[rspec[0]], ws[rspec[1]]
        kernel = [ws[a] for a in rspec[2:]]
        out_sizes = [result.aval.shape[a] for a in ospec[2:]]
        view = self.materialise(x)
        st = view.strides
        # the patches: axes (group, batch, *out, *kernel, channel)
        shape = (groups, batch, *out_sizes, *kernel, cin)
        strides = [0] * len(shape)
        strides[0] = st[lspec[0]] * batch if bg > 1 else st[lspec[1]] * cin
        strides[1], strides[-1] = st[lspec[0]], st[lspec[1]]
        spatial = []
        for a in range(rank):
            coeffs = [0] * len(shape)
            coeffs[2 + a] = int(p["window_strides"][a])
            coeffs[2 + rank + a] = int(p["rhs_dilation"][a])
            low, dilation = int(p["padding"][a][0]), int(p["lhs_dilation"][a])
            top = (xs[lspec[2 + a]] - 1) * dilation
            spatial.append((tuple(coeffs), -low, top, dilation, st[lspec[2 + a]]))
        dtype = result.aval.dtype
        windowed = Windowed(view, tuple(strides), tuple(spatial))
        patches = self._new(TensorType(dtype, shape), Expr(op=windowed), "patches")
        # the kernel as (G, O/G, C/fg, *kernel)
        wview = self.materialise(w)
        permuted = View(wview.base, tuple(ws[a] for a in rspec), tuple(wview.strides[a] for a in rspec), wview.offset)
        kernel_view = reshape_view(permuted, (groups, out_features // groups, cin, *kernel))
        assert kernel_view is not None  # (splitting the leading axis is always a view)
        weights = self._new(TensorType(dtype, kernel_view.shape), kernel_view, "kernel")
        pc = (*range(2 + rank, 2 + 2 * rank), 2 + 2 * rank)  # the patches' (kernel, channel) axes
        wc = (*range(3, 3 + rank), 2)
        positions = int(np.prod(out_sizes, dtype=np.int64))
        # (1, N, *out, O), or with groups (G, O/G, N, *out): canonical (N, O, *out) is a view of either
        held_shape = (1, batch, *out_sizes, out_features) if groups == 1 else (
            groups, out_features // groups, batch, *out_sizes)
        held = self._new(TensorType(dtype, held_shape), None, "conv")
        # (the patches' nest and the product run where the convolution stands in the program)
        self.position[id(patches)] = self.position[id(held)] = self.position[id(result)]
        if groups == 1:
            self._contract(patches, weights, pc, wc, (0,), (0,), held)
            canonical = [positions * out_features, 1] + list(contiguous_strides((*out_sizes, out_features))[:-1])
        else:
            self._contract(weights, patches, wc, pc, (0,), (0,), held)
            canonical = [positions, batch * positions] + list(contiguous_strides(tuple(out_sizes)))
        out_strides = [0] * len(canonical)
        for i, axis in enumerate(ospec):
            out_strides[axis] = canonical[i]
        if tuple(out_strides) == contiguous_strides(result.aval.shape) or not result.aval.size:
            self._root(result, self.buffers[id(held)])  # (a result written by the product itself)
        else:
            self.sources[id(result)] = View(held, result.aval.shape, tuple(out_strides))

    # -- matrix products --------------------------------------------------------------------------------
    def _dot(self, op: Op, result: Value) -> None:
        lhs, rhs = op.operands
        (lc, rc), (lb, rb) = op.params["dimension_numbers"]
        self._contract(lhs, rhs, *(tuple(int(a) for a in axes) for axes in (lc, rc, lb, rb)), result)

    def _contract(self, lhs: Value, rhs: Value, lc, rc, lb, rb, result: Value) -> None:
        """``result`` = the product of ``lhs`` and ``rhs`` contracting lc with rc, batched over lb with rb (XLA's
        dot_general, result axes batch, lhs free, rhs free): BLAS, or a loop nest."""
        lf = tuple(a for a in range(lhs.aval.ndim) if a not in lc + lb)
        rf = tuple(a for a in range(rhs.aval.ndim) if a not in rc + rb)
        out_dtype = result.aval.dtype
        order = self.position[id(result)]
        buffer = self._temp(result)
        same = lhs.aval.dtype == rhs.aval.dtype == out_dtype
        if same and out_dtype in self.gemm_dtypes and lhs.aval.size and rhs.aval.size:
            if self._read_transposed(result, len(lb), len(lf), len(rf)):
                # out^T = rhs^T @ lhs^T: the buffer holds (batch, rhs free, lhs free), which its readers want
                self.steps.append(self._gemm(rhs, lhs, rc, lc, rb, lb, rf, lf, buffer, order))
                shape = result.aval.shape
                nb, nlf = len(lb), len(lf)
                held = tuple(range(nb)) + tuple(range(nb + nlf, len(shape))) + tuple(range(nb, nb + nlf))
                held_strides = contiguous_strides(tuple(shape[a] for a in held))
                strides = tuple(held_strides[position] for position in np.argsort(held))
                self.buffers[id(result)] = buffer
                self.sources[id(result)] = View(result, shape, strides)
                return
            self.steps.append(self._gemm(lhs, rhs, lc, rc, lb, rb, lf, rf, buffer, order))
            self._root(result, buffer)
            return
        if out_dtype.kind == "b":
            raise Unsupported("boolean matrix products are not compiled natively")
        # a loop nest over (batch, lhs free, contracting, rhs free): the innermost axis runs along rows of
        # rhs and out, so it vectorises; the contraction accumulates in out.
        nb, nlf, nc = len(lb), len(lf), len(lc)
        shape = (
            tuple(lhs.aval.shape[a] for a in lb)
            + tuple(lhs.aval.shape[a] for a in lf)
            + tuple(lhs.aval.shape[a] for a in lc)
            + tuple(rhs.aval.shape[a] for a in rf)
        )
        lmap = [None] * lhs.aval.ndim
        rmap = [None] * rhs.aval.ndim
        for i, a in enumerate(lb):
            lmap[a] = i
            rmap[rb[i]] = i
        for i, a in enumerate(lf):
            lmap[a] = nb + i
        for i, a in enumerate(lc):
            lmap[a] = nb + nlf + i
            rmap[rc[i]] = nb + nlf + i
        for i, a in enumerate(rf):
            rmap[a] = nb + nlf + nc + i
        self.materialise(lhs)
        self.materialise(rhs)
        axes = tuple(range(nb + nlf, nb + nlf + nc))
        self.steps.append(
            Nest(
                shape,
                combine="add",
                axes=axes,
                target=buffer,
                order=order,
                product=(lhs, tuple(lmap), rhs, tuple(rmap), out_dtype),
            )
        )
        self._root(result, buffer)

    def _read_transposed(self, result: Value, nb: int, nlf: int, nrf: int) -> bool:
        """Whether every reader of a product's (batch, lhs free, rhs free) result transposes it to (batch, rhs
        free, lhs free), as reverse mode does with weight gradients: then the product is computed transposed."""
        if any(r is result for r in self.fn.results) or not nlf or not nrf:
            return False
        swapped = list(range(nb)) + list(range(nb + nlf, nb + nlf + nrf)) + list(range(nb, nb + nlf))
        readers = self.users.get(id(result), [])
        return bool(readers) and all(
            op.name == "transpose" and [int(p) for p in op.params["permutation"]] == swapped for op in readers
        )

    def _gemm(self, lhs, rhs, lc, rc, lb, rb, lf, rf, buffer, order) -> Gemm:
        """A BLAS call; an operand whose (batch, rows, columns) stack BLAS cannot read in place (no unit
        stride along rows or columns, or axes that do not merge) is copied to a contiguous one first."""

        def matrices(x: Value, batch, rows, cols) -> tuple[View, int, bool, int]:
            view = self.materialise(x)
            layout = matrix_layout(view, batch, rows, cols)
            if layout is None:
                order_ = batch + rows + cols
                view = self._copy_view(
                    View(
                        view.base,
                        tuple(view.shape[a] for a in order_),
                        tuple(view.strides[a] for a in order_),
                        view.offset,
                    )
                )
                nb, nr = len(batch), len(rows)
                layout = matrix_layout(
                    view, tuple(range(nb)), tuple(range(nb, nb + nr)), tuple(range(nb + nr, len(view.shape)))
                )
                assert layout is not None
            return (view, *layout)

        lview, lbatch, ltrans, lld = matrices(lhs, lb, lf, lc)
        rview, rbatch, rtrans, rld = matrices(rhs, rb, rc, rf)
        size = lambda axes, x: int(np.prod([x.aval.shape[a] for a in axes], dtype=np.int64))  # noqa: E731
        symmetric = (
            lview.base is rview.base
            and lview.offset == rview.offset
            and lbatch == rbatch
            and ltrans != rtrans
            and lld == rld
            and size(lf, lhs) == size(rf, rhs)
        )
        return Gemm(
            lview,
            rview,
            buffer,
            size(lb, lhs),
            size(lf, lhs),
            size(rf, rhs),
            size(lc, lhs),
            (lbatch, ltrans, lld),
            (rbatch, rtrans, rld),
            order,
            symmetric,
        )

    # -- sharing ----------------------------------------------------------------------------------------
    def cost(self, v: Value, memo: dict[int, int]) -> int:
        """The work of computing ``v`` once where it is used (0 for materialised values)."""
        if id(v) in memo:
            return memo[id(v)]
        src = self.source(v)
        total = 0
        if isinstance(src, Expr):
            if src.op is not None:
                name = src.op.name
                total = 20 if name in EXPENSIVE else 4 if name in MODERATE else 1
                total += sum(self.cost(u, memo) for u in src.op.operands)
            else:
                total = self.cost(src.operand, memo)
        memo[id(v)] = total
        return total

    def _share_expensive(self) -> None:
        """Materialise expressions worth at least one transcendental function that more than one nest uses,
        or that one nest reads through a broadcast (it would compute each element many times)."""
        while True:
            users: dict[int, set[int]] = {}
            expanded: set[int] = set()
            values: dict[int, Value] = {}
            for n, step in enumerate(self.steps):
                if isinstance(step, Nest):
                    roots = [v for v, _ in step.stores] + ([step.operand] if step.operand is not None else [])
                    seen: set[tuple[int, bool]] = set()
                    for v in roots:
                        self._reach(v, n, False, users, expanded, values, seen)
            memo: dict[int, int] = {}
            shared = [
                values[i]
                for i, nests in users.items()
                if (len(nests) > 1 or i in expanded) and self.cost(values[i], memo) >= 20
            ]
            if not shared:
                return
            for v in shared:
                self.materialise(v)

    def _reach(self, v: Value, nest: int, under_broadcast: bool, users, expanded, values, seen) -> None:
        if isinstance(v, Literal) or (id(v), under_broadcast) in seen:
            return
        seen.add((id(v), under_broadcast))
        src = self.sources[id(v)]
        if not isinstance(src, Expr):
            return
        if src.op is not None:  # index remappings pass through: materialising them would copy twice
            users.setdefault(id(v), set()).add(nest)
            values[id(v)] = v
            if under_broadcast:
                expanded.add(id(v))
        if src.op is not None:
            for u in src.op.operands:
                operand_expands = under_broadcast or (u.aval.size < v.aval.size and u.aval.shape != ())
                self._reach(u, nest, operand_expands, users, expanded, values, seen)
        else:
            grows = src.operand.aval.size < v.aval.size
            self._reach(src.operand, nest, under_broadcast or grows, users, expanded, values, seen)

    # -- outputs ----------------------------------------------------------------------------------------
    def _bind_outputs(self) -> list[Buffer]:
        """One output buffer per result. A result computed into a temporary by a nest of its own is written
        to the output directly; anything else (an expression, a parameter, a view, a literal, a repeated
        result) gets a nest that stores it into the output."""
        outputs: list[Buffer] = []
        claimed: set[int] = set()
        for i, r in enumerate(self.fn.results):
            self._check_type(r)
            buffer = Buffer("output", i, r.aval.dtype, r.aval.size)
            outputs.append(buffer)
            temp = self.buffers.get(id(r))
            if temp is not None and temp.kind == "temp" and id(r) not in claimed:
                claimed.add(id(r))
                self._retarget(temp, buffer)
                self.buffers[id(r)] = buffer
                continue
            index_map = () if isinstance(r, Literal) else tuple(range(r.aval.ndim))
            holder = self._holder(r, Expr(operand=r, index_map=index_map), "result")
            nest = Nest(r.aval.shape, stores=[(holder, buffer)], order=1 << 30)
            self.steps.append(nest)
            if isinstance(self.source(r), Expr) and id(r) not in claimed:
                claimed.add(id(r))
                self.pending_outputs[id(r)] = (nest, buffer)
        return outputs

    def _retarget(self, old: Buffer, new: Buffer) -> None:
        self.temps = [b for b in self.temps if b is not old]
        for step in self.steps:
            if isinstance(step, Nest):
                step.stores = [(v, new if b is old else b) for v, b in step.stores]
                if step.target is old:
                    step.target = new
            elif step.target is old:
                step.target = new


def _merge_maps(plan: Plan) -> list[Step]:
    """Neighbouring map nests over one shape become one nest with several stores when they are cheap (bound
    by memory, not arithmetic), read a buffer in common, and the later one reads nothing the earlier one
    writes: one pass over their common operands (an optimizer's new velocity and new parameters both read
    the gradient and the old velocity; the expression they share is computed once)."""
    from srcjax.codegen.llvm.nodes import instantiate

    def plain_map(step: Step) -> bool:
        return isinstance(step, Nest) and step.combine is None and step.placement is None and step.scatter is None

    merged: list[Step] = []
    for step in plan.steps:
        last = merged[-1] if merged else None
        if plain_map(step) and last is not None and plain_map(last) and last.shape == step.shape:
            first, then = instantiate(plan, last), instantiate(plan, step)
            written = {id(b) for _, b in last.stores}
            read = {id(load.buffer) for load in then.loads}
            shared = read & {id(load.buffer) for load in first.loads}
            if shared and not read & written and first.cost() <= MERGE_MAX_COST >= then.cost():
                merged[-1] = Nest(last.shape, stores=last.stores + step.stores, order=last.order)
                continue
        merged.append(step)
    return merged


def lowers(op: Op) -> bool:
    """Whether the straight-line planner compiles ``op`` into nests or BLAS calls; anything else without
    regions runs as a host call (``control.ControlEmitter.emit_host``)."""
    from srcjax.codegen.llvm.rules import ELEMENTWISE

    values = (*op.operands, *op.results)
    if op.regions or any(isinstance(v.aval, TensorType) and v.aval.dtype not in SUPPORTED_DTYPES for v in values):
        return False
    name = op.name
    if name in MULTI_RESULT_ELEMENTWISE:
        return True
    if len(op.results) != 1:
        return False
    if name == "bitcast_convert_type":
        return op.operands[0].aval.dtype.itemsize == op.results[0].aval.dtype.itemsize
    if name == "pad":
        return all(int(c) >= 0 for dims in op.params["padding_config"] for c in dims)
    if name in WINDOWS:
        return small_window(op)
    if op.prim is dot_general_p:
        return op.results[0].aval.dtype.kind != "b"
    if name == "conv_general_dilated":  # (floats, operands and result of one dtype)
        dtype = op.results[0].aval.dtype
        return dtype.kind == "f" and all(v.aval.dtype == dtype for v in op.operands)
    return (
        name in ELEMENTWISE or name == "iota" or name in VIEW_OPS or name in IDENTITIES or name in REDUCTIONS
        or name in ("concatenate", "gather") or name in SCATTERS or name in ARG_REDUCTIONS or name in SCANS
    )


def plan_function(fn: Function, gemm_dtypes: set[np.dtype] | None = None) -> Plan:
    """The fusion plan of ``fn``; raises ``Unsupported`` for anything the backend does not compile. A function
    with control flow gets a plan of its buffers only (its segments are planned when it is emitted; here
    once on a scratch module, to find what is unsupported)."""
    from srcjax.codegen.llvm.control import ControlEmitter, has_control

    if has_control(fn):
        from srcjax.codegen.llvm import engine

        return ControlEmitter(engine.new_module("probe"), fn, "probe", gemm_dtypes or set()).emit()
    return Planner(fn, set() if gemm_dtypes is None else gemm_dtypes).run()


def describe(plan: Plan) -> str:
    """A short text of the plan's steps (for tests and ``--emit`` debugging)."""
    lines = []
    for step in plan.steps:
        if isinstance(step, Gemm):
            routine = "syrk" if step.symmetric else "gemm"
            lines.append(f"{routine} {step.batch}x[{step.m},{step.k}]@[{step.k},{step.n}] -> {step.target.kind}")
        elif step.scan:
            lines.append(f"scan[{step.combine}] {step.shape} axis={step.axes[0]} -> {step.target.kind}")
        elif step.combine is not None:
            lines.append(f"reduce[{step.combine}] {step.shape} axes={step.axes} -> {step.target.kind}")
        elif step.scatter is not None:
            how = step.scatter.combine or "set"
            lines.append(f"scatter[{how}] {step.shape} -> {', '.join(b.kind for _, b in step.stores)}")
        else:
            lines.append(f"map {step.shape} -> {', '.join(b.kind for _, b in step.stores)}")
    return "\n".join(lines)
