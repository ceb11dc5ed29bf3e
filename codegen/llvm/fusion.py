"""Partition a straight-line IR function into fusion groups: loop nests and matrix products over buffers.

A value is materialised (becomes a *root* with a buffer and a nest that writes it) only when it must be:
a function result, a reduction or product, the operand of a reshape that strides cannot express, or an
expensive expression that several nests (or one nest, many times over through a broadcast) would
otherwise recompute. Each root is one loop nest, one pass over memory. What a plan is made of is in
``plan.py``; how each primitive is planned is its row of the lowering table (``table.py``): the simple kinds
are planned here, indexed ops in ``indexed.py``, products and convolutions in ``products.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from srcjax.codegen.llvm.layout import Buffer, View, contiguous_strides, reshape_view
from srcjax.codegen.llvm.nodes import instantiate
from srcjax.codegen.llvm.plan import (
    SUPPORTED_DTYPES, Expr, Nest, Plan, ResultOf, Source, Step, Unsupported,
)
from srcjax.transpiler.ir import Function, Literal, Op, Value
from srcjax.transpiler.types import TensorType

if TYPE_CHECKING:
    from srcjax.codegen.llvm.table import Row

EXPENSIVE = 20  # the cost of a transcendental function: a value costing this much is not computed twice
MAX_DEPTH = 48  # an expression nested deeper is materialised: planning and emitting walk expressions recursively


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

    def __init__(self, fn: Function, available_gemm: set[np.dtype], rows: dict[str, Row]):
        self.fn = fn
        self.gemm_dtypes = available_gemm
        self.rows = rows  # the lowering table: how each primitive is planned
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
        self.depths: dict[int, int] = {}  # value id -> how deeply its expression nests (0: materialised)

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
        """Plan ``op`` by its row of the lowering table (codegen/llvm/table.py)."""
        row = self.rows.get(op.name)
        if row is None or row.plan is None:
            raise Unsupported(f"'{op.name}' has no native CPU lowering yet")
        if len(op.results) != 1 and not row.many_results:
            raise Unsupported(f"'{op.name}' has several results")
        if row.accepts is not None and not row.accepts(op):
            raise Unsupported(f"'{op.name}': {row.reason}")
        row.plan(self, op, row)
        for r in op.results:  # (a long chain of elementwise ops, a Python loop unrolled, is cut into nests)
            if self._depth(r) > MAX_DEPTH:
                self.materialise(r)
                self.depths[id(r)] = 0

    def _depth(self, v: Value) -> int:
        """How many expressions deep ``v`` is (each op's result is measured when it is planned, so only the few
        values the planner made itself are walked here)."""
        if id(v) in self.depths:
            return self.depths[id(v)]
        src = self.sources.get(id(v))
        if not isinstance(src, Expr):
            return 0
        operands = getattr(src.op, "operands", []) if src.op is not None else [src.operand]
        depth = 1 + max((self._depth(u) for u in operands if isinstance(u, Value)), default=0)
        self.depths[id(v)] = depth
        return depth

    def view_op(self, op: Op, result: Value) -> Source:
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

    def expensive(self, name: str) -> bool:
        row = self.rows.get(name)
        return row is not None and row.cost >= EXPENSIVE

    # -- sharing ----------------------------------------------------------------------------------------
    def cost(self, v: Value, memo: dict[int, int]) -> int:
        """The work of computing ``v`` once where it is used (0 for materialised values)."""
        if id(v) in memo:
            return memo[id(v)]
        src = self.source(v)
        total = 0
        if isinstance(src, Expr):
            if src.op is not None:
                row = self.rows.get(src.op.name)
                total = 1 if row is None else row.cost
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
                if (len(nests) > 1 or i in expanded) and self.cost(values[i], memo) >= EXPENSIVE
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
    """Neighbouring map nests over one shape become one nest with several stores when they read a buffer in
    common and the later one reads nothing the earlier one writes: one pass over their common operands (an
    optimizer's new velocity and new parameters both read the gradient and the old velocity; the expression
    they share is computed once). Adam's update is not cheap (two divisions and a root an element) but still
    bound by memory: merged, its step reads each of four arrays once rather than twice (one VAE step on 2
    cores: 4.2-4.3 ms before, 3.7-3.8 after)."""
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
            if shared and not read & written:
                merged[-1] = Nest(last.shape, stores=last.stores + step.stores, order=last.order)
                continue
        merged.append(step)
    return merged



# -- the simple kinds ---------------------------------------------------------------------------------------------
def plan_elementwise(planner: Planner, op: Op, row: Row) -> None:
    """An expression, computed where it is used (``iota`` too: a function of the index)."""
    (result,) = op.results
    planner.sources[id(result)] = Expr(op=op)


def plan_multi_result(planner: Planner, op: Op, row: Row) -> None:
    """Result j of an elementwise op with several results is the expression of the rule "<name>.<j>"."""
    for j, r in enumerate(op.results):
        planner.sources[id(r)] = Expr(op=ResultOf(f"{op.name}.{j}", op.operands, op.params))


def plan_view(planner: Planner, op: Op, row: Row) -> None:
    """Broadcasts, transposes, reshapes, slices and reversals: new strides over a buffer, or a new index map
    of an expression."""
    (result,) = op.results
    planner.sources[id(result)] = planner.view_op(op, result)


def plan_identity(planner: Planner, op: Op, row: Row) -> None:
    """The value itself (ops that only matter to transformations)."""
    (result,) = op.results
    (x,) = op.operands
    src = planner.source(x)
    planner.sources[id(result)] = src if isinstance(src, View) else Expr(operand=x, index_map=tuple(range(x.aval.ndim)))


def plan_reduction(planner: Planner, op: Op, row: Row) -> None:
    """A reduce nest combining the operand over the reduced axes into the result's buffer."""
    (result,) = op.results
    (x,) = op.operands
    axes = tuple(sorted(int(a) for a in op.params["axes"]))
    buffer = planner._temp(result)
    planner.steps.append(
        Nest(x.aval.shape, combine=row.combine, operand=x, axes=axes, target=buffer, order=planner.position[id(result)])
    )
    planner._root(result, buffer)
