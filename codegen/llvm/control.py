"""Control flow (``cond``, ``while``, ``for``, ``scan``): straight-line segments as sub-entries, joined by branches.

A function with control-flow ops is cut into *segments*, maximal runs of straight-line ops in one block,
and the control ops between them. Each segment becomes a ``Function`` of its own (its parameters: the
values it reads from elsewhere; its results: the values it defines that something else reads), planned
and fused as usual and emitted as ``void <name>.segN(i8**)``. The entry allocates one buffer per value that
crosses a segment boundary (once, up front, so loops do not allocate), calls the segments, and turns the
control ops into basic blocks:

- ``for``: the carried values live in one buffer each (also the op's results); the iteration number is
  stored as i32 before each trip; the body's yields are copied back into the carried buffers.
- ``while``: the same buffers serve the condition's and the body's parameters; the condition's bool
  decides between the body and the exit.
- ``for`` and ``while`` also leave the loop when a SIGINT has arrived since the function began (Ctrl-C:
  codegen/llvm/interrupt.py), checked on every trip.
- ``scan``: a counted loop like ``for``; each trip copies row i of every xs into the body's parameter
  and the body's outputs into row i of the stacked results.
- ``cond``: a conditional branch (bool) or a switch on the clamped index; each branch copies its yields
  into the op's result buffers.

Yields that are other carried values (a swap) go through a staging buffer so no copy reads a value
already overwritten.

Also emitted here, between segments: ``dynamic_slice`` / ``dynamic_update_slice`` (row copies at clamped
run-time starts; an update whose operand dies there is made in place, so a loop storing per-iteration
residuals copies one row per trip), and stacks (``stack_new/push/get/size``: a growable array behind a
header {data, count, capacity}; stack values hold the header's address, so carrying one copies 8 bytes).
Cotangent stacks (reverse mode over reverse mode) use the same headers: ``stack_add`` grows one with zeroed
entries and adds into an entry in place; ``stack_get[fill]`` reads zeros past its end.

A ``stack_new`` has one header, allocated at entry and emptied each time the op runs (a loop that makes a
stack per trip reuses its memory). Stacks are used linearly, so that is sound as long as nothing still holds
the last trip's stack; the one thing that does is a stack of stacks (reverse mode of a ``while`` inside
another loop saves the inner loop's stack per outer trip). So pushing a stack onto a stack *moves* it: the
entry is a new header that takes over the data, and the pushed header is left empty for its next use. A
stack owns the stacks pushed onto it: emptying or freeing it frees them. ``_check_stacks`` refuses
(``Unsupported``: the interpreter runs it) the uses this does not cover: a stack made in a loop and carried
to its next trip, a stack read from a stack and carried, a pushed stack used again, stacks as scan outputs.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

import llvmlite.ir as ir
import numpy as np

from srcjax.codegen.llvm import interrupt, replicas
from srcjax.codegen.llvm.aliases import find_aliases
from srcjax.codegen.llvm.entry import EntryEmitter
from srcjax.codegen.llvm.kernels import I64, PTR, for_range
from srcjax.codegen.llvm.layout import Buffer
from srcjax.codegen.llvm.plan import SUPPORTED_DTYPES, Plan, Unsupported
from srcjax.codegen.llvm.table import Kind, kind, lowers, plan_straight_line
from srcjax.transpiler.ir import Block, Function, Literal, Op, Value, walk
from srcjax.transpiler.passes import has_effect
from srcjax.transpiler.types import StackType, TensorType

LOOPS = frozenset({"while", "for"})  # loops whose trips Ctrl-C can cut short


def has_control(fn: Function) -> bool:
    """Whether ``fn`` needs this emitter: control flow, slices at run-time indices, stacks, collectives or host
    calls."""
    return any(op.regions or kind(op.name) in (Kind.BETWEEN, Kind.COLLECTIVE) or not lowers(op)
               for op in fn.body.ops)


def is_replicated(fn: Function) -> bool:
    """Whether ``fn`` has collectives: it runs as one of several replicas (codegen/llvm/replicas.py)."""
    return any(kind(op.name) is Kind.COLLECTIVE for op in walk(fn.body))


def has_loops(fn: Function) -> bool:
    """Whether ``fn``'s code reads the interrupt count (its calls are guarded: ``interrupt.guard``)."""
    return any(op.name in LOOPS for op in walk(fn.body))


def is_host(op: Op) -> bool:
    """Whether ``op`` runs as a call back into the host: no native lowering (yet), or dtypes the nests do not
    handle (complex numbers, float16). Its NumPy implementation computes it between native segments."""
    return not op.regions and kind(op.name) not in (Kind.BETWEEN, Kind.COLLECTIVE) and not lowers(op)


def host_ops(fn: Function) -> list[Op]:
    """The host calls of ``fn`` in a fixed order: the index an entry passes to the host callback."""
    return [op for op in walk(fn.body) if is_host(op)]


def _nbytes(v: Value) -> int:
    if isinstance(v.aval, StackType):  # a stack value is a pointer to its stack's header
        return 8
    return int(v.aval.size) * np.dtype(v.aval.dtype).itemsize


def _supported(aval) -> bool:
    """Buffers are bytes here: any fixed-size dtype (segments check their own, stricter, dtypes)."""
    if isinstance(aval, StackType):
        return _supported(aval.elem)
    return isinstance(aval, TensorType) and aval.dtype.kind in "biufc"


def _check_stacks(fn: Function) -> None:
    """Raise ``Unsupported`` for uses of stacks that a header per ``stack_new`` (emptied each time it runs) and
    moving pushed stacks (see the module's docstring) would get wrong. Values that may hold the same header
    form a family: a push's result and its stack, a loop's initial, carried and final values, a branch's
    yields and the ``cond``'s results."""
    parent: dict[int, int] = {}

    def find(i: int) -> int:
        while parent.get(i, i) != i:
            parent[i] = i = parent.get(parent[i], parent[i])
        return i

    def join(*values: Value) -> None:
        values = tuple(v for v in values if isinstance(v.aval, StackType))
        for v in values[1:]:
            parent[find(id(v))] = find(id(values[0]))

    made: list[tuple[Value, Block | None]] = []  # stack_new results and the innermost loop body running them
    read: list[Value] = []  # stacks read from stacks (entries of a stack of stacks)
    yielded: list[Value] = list(fn.results)  # every region's yields
    pushed: list[Value] = []  # stacks pushed onto stacks
    users: dict[int, int] = {}

    def visit(block: Block, loop: Block | None) -> None:
        yielded.extend(block.results)
        for op in block.ops:
            for v in op.operands:
                users[id(v)] = users.get(id(v), 0) + 1
            if op.name == "stack_new":
                made.append((op.results[0], loop))
            elif op.name == "stack_get" and isinstance(op.results[0].aval, StackType):
                if op.params.get("fill"):
                    raise Unsupported("cotangent stacks of stacks (reverse mode over reverse mode through a loop in "
                                      "a loop) are not compiled natively")
                if op.params.get("lanes"):
                    raise Unsupported("per-example reads (stack_get[lanes]) of a stack of stacks are not compiled "
                                      "natively")
                read.append(op.results[0])
            elif op.name == "stack_add":
                if isinstance(op.operands[2].aval, StackType):
                    raise Unsupported("cotangent stacks of stacks (reverse mode over reverse mode through a loop in "
                                      "a loop) are not compiled natively")
                join(op.results[0], op.operands[0])
            elif op.name == "stack_push":
                join(op.results[0], op.operands[0])
                if isinstance(op.operands[1].aval, StackType):
                    pushed.append(op.operands[1])
            if op.name == "for":
                (body,) = op.regions
                for group in zip(op.operands[1:], body.params[1:], body.results, op.results):
                    join(*group)
                visit(body, body)
            elif op.name == "while":
                cond_block, body = op.regions
                for group in zip(op.operands, cond_block.params, body.params, body.results, op.results):
                    join(*group)
                visit(cond_block, cond_block)
                visit(body, body)
            elif op.name == "scan":
                (body,) = op.regions
                n = op.params["num_carry"]
                if any(isinstance(v.aval, StackType) for v in body.results[n:]):
                    raise Unsupported("scans that output stacks are not compiled natively")
                for group in zip(op.operands[:n], body.params[:n], body.results[:n], op.results[:n]):
                    join(*group)
                visit(body, body)
            else:  # cond branches and inlined custom-derivative calls: run once each time the op runs
                for region in op.regions:
                    for group in zip(region.params, op.operands):
                        join(*group)
                    for group in zip(op.results, region.results):
                        join(*group)
                    visit(region, loop)

    visit(fn.body, None)
    for v, loop in made:
        if loop is not None and any(find(id(r)) == find(id(v)) for r in loop.results):
            raise Unsupported("a stack made in a loop and carried to its next trip is not compiled natively")
    escapes = {find(id(r)) for r in yielded}
    if any(find(id(v)) in escapes for v in read):
        raise Unsupported("a stack read from a stack of stacks and carried is not compiled natively")
    yielded_ids = {id(r) for r in yielded}
    for v in pushed:
        if users.get(id(v)) != 1 or id(v) in yielded_ids:
            raise Unsupported("a stack pushed onto another stack and used again is not compiled natively")


class ControlEmitter:
    """Emits the entry of a function with control flow; ``emit`` returns the plan of its buffers."""

    def __init__(self, module: ir.Module, fn: Function, name: str, gemm_dtypes: set[np.dtype]):
        self.module, self.fn, self.name, self.gemm_dtypes = module, fn, name, gemm_dtypes
        self.ptrs: dict[int, ir.Value] = {}  # value id -> its buffer (i8*)
        # values with a buffer of their own (fresh, or a loop's carried one that nothing reads before the loop
        # runs again): their only user may overwrite it
        self.private: set[int] = set()
        self.window_reads: set[int] = set()  # dynamic_slice ops emitted so far (each copied its window out)
        self.direct: dict[int, ir.Value] = {}  # result id -> its output buffer, until a buffer is asked for it
        # per loop being emitted, innermost last: its carried parameters' and yielded values' ids -> carried buffer
        self.carries: list[tuple[dict[int, ir.Value], dict[int, ir.Value]]] = []
        self.segments = 0
        self.literals = 0
        self.interrupts_at_entry: ir.Value | None = None  # the interrupt count when the function began
        self.collectives_emitter: replicas.Collectives | None = None
        # the ops (at any depth) reading each value, and the values some block yields
        self.users: dict[int, set[int]] = {}
        self.yielded: set[int] = {id(v) for v in fn.body.results}
        for v in [*fn.params, *fn.results]:
            if not _supported(v.aval):
                raise Unsupported(f"values of type {v.aval} are not compiled natively yet")
        self.host_index = {id(op): i for i, op in enumerate(host_ops(fn))}
        for op in walk(fn.body):
            if op.regions and kind(op.name) not in (Kind.CONTROL, Kind.INLINED):
                raise Unsupported(f"control flow ('{op.name}') is not compiled natively yet")
            if id(op) in self.host_index and op.prim.impl is None:
                raise Unsupported(f"'{op.name}' has neither a native lowering nor a host implementation")
            for v in [*op.operands, *op.results]:
                if not _supported(v.aval):
                    raise Unsupported(f"values of type {v.aval} are not compiled natively yet")
            for v in op.operands:
                self.users.setdefault(id(v), set()).add(id(op))
            for region in op.regions:
                self.yielded.update(id(v) for v in region.results)
        self.used = set(self.users) | self.yielded  # (a control op none of whose results is used is dead)
        _check_stacks(fn)

    # -- helpers ------------------------------------------------------------------------------------------
    def declare(self, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
        if name in self.module.globals:
            return self.module.globals[name]
        return ir.Function(self.module, ir.FunctionType(ret, args), name=name)

    def allocate(self, nbytes: int) -> ir.Value:
        pointer = self.head.call(self.malloc, [ir.Constant(I64, max(int(nbytes), 1))])
        self.owned.append(pointer)
        return pointer

    def buffer(self, v: Value) -> ir.Value:
        """A fresh buffer for ``v`` (allocated at entry), or the caller's output buffer where ``v`` is a result."""
        pointer = self.direct.pop(id(v), None)
        if pointer is None:
            pointer = self.allocate(_nbytes(v))
        self.ptrs[id(v)] = pointer
        self.private.add(id(v))
        return pointer

    def pointer(self, v: Value) -> ir.Value:
        if isinstance(v, Literal):  # a constant global holding the literal
            data = bytearray(np.ascontiguousarray(v.value, v.aval.dtype).tobytes()) or bytearray(1)
            kind = ir.ArrayType(ir.IntType(8), len(data))
            g = ir.GlobalVariable(self.module, kind, name=f"{self.name}.lit{self.literals}")
            self.literals += 1
            g.global_constant, g.linkage, g.initializer = True, "internal", ir.Constant(kind, data)
            return g.bitcast(PTR)
        if id(v) not in self.ptrs:
            raise Unsupported(f"value {v} has no buffer")
        return self.ptrs[id(v)]

    def copy(self, dst: ir.Value, src: ir.Value, nbytes: int) -> None:
        if nbytes and dst is not src:
            self.b.call(self.memmove, [dst, src, ir.Constant(I64, nbytes)])

    def load_int(self, v: Value) -> ir.Value:
        """A scalar integer or bool as i64 (bools 0 or 1, unsigned values zero-extended)."""
        dtype = np.dtype(v.aval.dtype)
        bits = 8 if dtype.kind == "b" else dtype.itemsize * 8
        raw = self.b.load(self.b.bitcast(self.pointer(v), ir.IntType(bits).as_pointer()))
        if bits == 64:
            return raw
        return self.b.sext(raw, I64) if dtype.kind == "i" else self.b.zext(raw, I64)

    def entry_interrupts(self) -> ir.Value:
        """The interrupt count when the function began (codegen/llvm/interrupt.py)."""
        if self.interrupts_at_entry is None:
            interrupt.bind()
            self.interrupts_at_entry = interrupt.read(self.head, self.module)
        return self.interrupts_at_entry

    def not_interrupted(self) -> ir.Value:
        """True while no SIGINT has arrived since the function began (read on a loop's every trip)."""
        return self.b.icmp_unsigned("==", interrupt.read(self.b, self.module), self.entry_interrupts())

    # -- the entry ----------------------------------------------------------------------------------------
    def emit(self) -> Plan:
        fn = self.fn
        if fn.captured:
            raise Unsupported("functions with captured values are not compiled natively")
        entry = ir.Function(self.module, ir.FunctionType(ir.VoidType(), [PTR.as_pointer()]), name=self.name)
        self.head = ir.IRBuilder(entry.append_basic_block("entry"))
        start = entry.append_basic_block("start")
        self.b = ir.IRBuilder(start)
        self.malloc = self.declare("malloc", PTR, [I64])
        self.free = self.declare("free", ir.VoidType(), [PTR])
        self.memmove = self.declare("memmove", PTR, [PTR, PTR, I64])
        self.owned: list[ir.Value] = []
        # stack headers {data, count, capacity} (i64**: its data is read as a pointer), one per stack_new, with
        # the stack's type
        self.stacks: list[tuple[ir.Value, StackType]] = []
        self.realloc = self.declare("realloc", PTR, [PTR, I64])
        self.memset = self.declare("memset", PTR, [PTR, ir.IntType(32), I64])
        args = entry.args[0]
        slots = [*fn.params, *(v for v, _ in fn.consts)]
        for i, v in enumerate(slots):
            self.ptrs[id(v)] = self.head.load(self.head.gep(args, [ir.Constant(I64, i)]))
        self.collectives = None
        if is_replicated(fn):  # (its context and index: the buffer after the outputs)
            extra = self.head.load(self.head.gep(args, [ir.Constant(I64, len(slots) + len(fn.results))]))
            words = self.head.bitcast(extra, I64.as_pointer())
            context = self.head.inttoptr(self.head.load(words), I64.as_pointer())
            replica = self.head.load(self.head.gep(words, [ir.Constant(I64, 1)]))
            count = self.head.load(self.head.gep(context, [ir.Constant(I64, replicas.COUNT)]))
            self.collectives = (context, replica, count)
        inputs = [Buffer("input", i, p.aval.dtype, p.aval.size) for i, p in enumerate(fn.params)]
        consts = [
            (Buffer("const", i, v.aval.dtype, v.aval.size), np.ascontiguousarray(data, v.aval.dtype))
            for i, (v, data) in enumerate(fn.consts)
        ]
        outputs = [Buffer("output", i, r.aval.dtype, r.aval.size) for i, r in enumerate(fn.results)]
        # A result computed by an op of the body itself (not a parameter, not given twice) is computed into its
        # output buffer, which is the caller's alone: a host call's or a collective's result is not copied again
        results = [self.head.load(self.head.gep(args, [ir.Constant(I64, len(slots) + i)]))
                   for i in range(len(fn.results))]
        made_here = {id(r) for op in fn.body.ops for r in op.results}
        self.direct = {id(r): out for r, out in zip(fn.results, results)
                       if id(r) in made_here and sum(x is r for x in fn.results) == 1}
        self.block(fn.body)
        for r, out in zip(fn.results, results):
            self.copy(out, self.pointer(r), _nbytes(r))
        for header, aval in self.stacks:
            self.free_entries(self.b.bitcast(header, I64.as_pointer()), aval)
            self.b.call(self.free, [self.b.load(header)])
        for pointer in self.owned:
            self.b.call(self.free, [pointer])
        self.b.ret_void()
        self.head.branch(start)
        return Plan(fn, {}, {}, [], inputs, consts, outputs, [], control=True, host_ops=host_ops(fn),
                    replicated=self.collectives is not None)

    def block(self, block: Block) -> None:
        run: list[Op] = []
        for op in block.ops:
            host = id(op) in self.host_index
            if not op.regions and kind(op.name) not in (Kind.BETWEEN, Kind.COLLECTIVE) and not host:
                run.append(op)
                continue
            self.segment(run)
            run = []
            if not any(id(r) in self.used for r in op.results) and not has_effect(op):
                continue  # an op whose results nothing reads is dead, unless it calls back (a debug print)
            if host:
                self.emit_host(op)
            elif kind(op.name) is Kind.INLINED:
                self.emit_custom(op)
            elif kind(op.name) is Kind.COLLECTIVE:
                self.emit_collective(op)
            else:
                getattr(self, "emit_" + op.name)(op)
        self.segment(run)

    def segment(self, ops: list[Op]) -> None:
        """Compile a run of straight-line ops into a sub-entry and call it."""
        if not ops:
            return
        inside = {id(op) for op in ops}
        defined: set[int] = set()
        params: dict[int, Value] = {}
        results: list[Value] = []
        for op in ops:
            for v in op.operands:
                if id(v) not in defined and not isinstance(v, Literal):
                    params.setdefault(id(v), v)
            defined.update(id(r) for r in op.results)
            for r in op.results:
                if id(r) in self.yielded or self.users.get(id(r), set()) - inside:
                    results.append(r)
        if not results:
            return
        sub = Function(f"{self.fn.name}_seg{self.segments}", list(params.values()), Block([], list(ops), results))
        plan = plan_straight_line(sub, self.gemm_dtypes)
        name = f"{self.name}.seg{self.segments}"
        self.segments += 1
        chosen = self.in_place(sub, plan, results, inside)
        shared = frozenset(id(b) for i, j in chosen.items() for b in (plan.inputs[i], plan.outputs[j]))
        EntryEmitter(self.module, plan, name, shared=shared).emit()
        pointers = [self.pointer(v) for v in sub.params] + self.outputs(results, chosen, sub)
        array = self.head.alloca(PTR, ir.Constant(I64, max(len(pointers), 1)))
        for i, p in enumerate(pointers):
            self.head.store(p, self.head.gep(array, [ir.Constant(I64, i)]))
        self.b.call(self.module.globals[name], [array])

    def in_place(self, sub: Function, plan: Plan, results: list[Value], inside: set[int]) -> dict[int, int]:
        """Parameter index -> result index of the segment: a value the loop carries into the next trip, written over
        the carried value it replaces, where that dies here and the segment may write over it
        (``aliases.find_aliases``: the map writing it reads the old value only where it writes). The trip's end
        then copies nothing (``dW = dW + outer(g, h)`` in reverse mode's loop). The segment's nests do not tell
        LLVM those two buffers are apart: inlined into the loop, a load of the carried value would otherwise be
        hoisted out of it."""
        chosen: dict[int, int] = {}
        if self.carries:
            params, yields = self.carries[-1]
            for i, j in find_aliases(plan, sub).items():
                v, r = sub.params[i], results[j]
                slot = params.get(id(v))
                if (slot is not None and yields.get(id(r)) is slot and id(v) not in self.yielded
                        and self.users.get(id(v), set()) <= inside and id(r) not in self.direct):
                    chosen[i] = j
        return chosen

    def outputs(self, results: list[Value], chosen: dict[int, int], sub: Function) -> list[ir.Value]:
        """The segment's output buffers: the carried buffer ``in_place`` chose, or one of its own."""
        over = {j: self.pointer(sub.params[i]) for i, j in chosen.items()}
        out = []
        for j, r in enumerate(results):
            if j in over:
                self.ptrs[id(r)] = over[j]
                self.private.add(id(r))
                out.append(over[j])
            else:
                out.append(self.buffer(r))
        return out

    @contextlib.contextmanager
    def carrying(self, params: list[Value], results: list[Value], carried: list[ir.Value]) -> Iterator[None]:
        """While a loop's body is emitted: which values it carries in which buffers (see ``in_place``)."""
        self.carries.append(({id(p): c for p, c in zip(params, carried)}, {id(r): c for r, c in zip(results, carried)}))
        try:
            yield
        finally:
            self.carries.pop()

    def yield_into(self, values: list[Value], targets: list[ir.Value], carried: list[ir.Value]) -> None:
        """Copy ``values`` into ``targets``; sources that are themselves carried buffers are staged first."""
        staged = []
        for v, dst in zip(values, targets):
            src = self.pointer(v)
            if src is dst:
                continue
            if any(src is c for c in carried):
                stage = self.allocate(_nbytes(v))
                self.copy(stage, src, _nbytes(v))
                staged.append((dst, stage, _nbytes(v)))
            else:
                staged.append((dst, src, _nbytes(v)))
        for dst, src, n in staged:
            self.copy(dst, src, n)

    # -- the ops ------------------------------------------------------------------------------------------
    def emit_for(self, op: Op) -> None:
        (body,) = op.regions
        trip, *init = op.operands
        b = self.b
        counter = self.buffer(body.params[0])
        carried = [self.buffer(p) for p in body.params[1:]]
        for v, c in zip(init, carried):
            self.copy(c, self.pointer(v), _nbytes(v))
        n = self.load_int(trip)
        pre = b.block
        header = b.append_basic_block("for.header")
        loop = b.append_basic_block("for.body")
        exit_ = b.append_basic_block("for.exit")
        b.branch(header)
        b.position_at_end(header)
        k = b.phi(I64)
        k.add_incoming(ir.Constant(I64, 0), pre)
        b.cbranch(b.and_(b.icmp_signed("<", k, n), self.not_interrupted()), loop, exit_)
        b.position_at_end(loop)
        b.store(b.trunc(k, ir.IntType(32)), b.bitcast(counter, ir.IntType(32).as_pointer()))
        with self.carrying(body.params[1:], body.results, carried):
            self.block(body)
        self.yield_into(body.results, carried, carried)
        b = self.b
        k.add_incoming(b.add(k, ir.Constant(I64, 1)), b.block)
        b.branch(header)
        b.position_at_end(exit_)
        for r, c in zip(op.results, carried):
            self.ptrs[id(r)] = c
            self.private.add(id(r))

    def emit_while(self, op: Op) -> None:
        cond_block, body = op.regions
        b = self.b
        carried = [self.buffer(p) for p in body.params]
        for p, c in zip(cond_block.params, carried):
            self.ptrs[id(p)] = c
        for v, c in zip(op.operands, carried):
            self.copy(c, self.pointer(v), _nbytes(v))
        header = b.append_basic_block("while.header")
        loop = b.append_basic_block("while.body")
        exit_ = b.append_basic_block("while.exit")
        b.branch(header)
        b.position_at_end(header)
        self.block(cond_block)
        go = b.icmp_unsigned("!=", self.load_int(cond_block.results[0]), ir.Constant(I64, 0))
        b.cbranch(b.and_(go, self.not_interrupted()), loop, exit_)
        b.position_at_end(loop)
        with self.carrying(body.params, body.results, carried):
            self.block(body)
        self.yield_into(body.results, carried, carried)
        b.branch(header)
        b.position_at_end(exit_)
        for r, c in zip(op.results, carried):
            self.ptrs[id(r)] = c
            self.private.add(id(r))

    def emit_cond(self, op: Op) -> None:
        (pred,) = op.operands
        b = self.b
        targets = [self.buffer(r) for r in op.results]
        branches = [b.append_basic_block(f"cond.branch{i}") for i in range(len(op.regions))]
        merge = b.append_basic_block("cond.merge")
        index = self.load_int(pred)
        last = len(op.regions) - 1
        if np.dtype(pred.aval.dtype).kind == "b":
            b.cbranch(b.icmp_unsigned("!=", index, ir.Constant(I64, 0)), branches[0], branches[1])
        else:  # clamp(index, 0, n - 1): below 0 picks the first branch, past the end the last
            if np.dtype(pred.aval.dtype).kind == "i":
                index = b.select(b.icmp_signed("<", index, ir.Constant(I64, 0)), ir.Constant(I64, 0), index)
            switch = b.switch(index, branches[last])
            for i in range(last):
                switch.add_case(ir.Constant(I64, i), branches[i])
        for region, block in zip(op.regions, branches):
            b.position_at_end(block)
            self.block(region)
            self.yield_into(region.results, targets, [])
            b.branch(merge)
        b.position_at_end(merge)

    def emit_scan(self, op: Op) -> None:
        (body,) = op.regions
        n, length, reverse = op.params["num_carry"], int(op.params["length"]), op.params["reverse"]
        b = self.b
        carried = [self.buffer(p) for p in body.params[:n]]
        slices = [self.buffer(p) for p in body.params[n:]]
        stacked = [self.buffer(r) for r in op.results[n:]]
        for v, c in zip(op.operands[:n], carried):
            self.copy(c, self.pointer(v), _nbytes(v))

        def step(k):
            i = b.sub(ir.Constant(I64, length - 1), k) if reverse else k
            for x, p, dst in zip(op.operands[n:], body.params[n:], slices):  # xs[i] -> the body's parameter
                self.copy(dst, self.b.gep(self.pointer(x), [b.mul(i, ir.Constant(I64, _nbytes(p)))]), _nbytes(p))
            with self.carrying(body.params[:n], body.results[:n], carried):
                self.block(body)
            for y, out in zip(body.results[n:], stacked):  # ys[i] = y, before the carry moves on
                self.copy(self.b.gep(out, [b.mul(i, ir.Constant(I64, _nbytes(y)))]), self.pointer(y), _nbytes(y))
            self.yield_into(body.results[:n], carried, carried)

        for_range(b, ir.Constant(I64, 0), ir.Constant(I64, length), step)
        for r, c in zip(op.results[:n], carried):
            self.ptrs[id(r)] = c
            self.private.add(id(r))

    def emit_custom(self, op: Op) -> None:
        """A custom_jvp/custom_vjp call computes its function: the region, inlined (its rules only matter to
        transformations, which have run)."""
        (region,) = op.regions
        for p, v in zip(region.params, op.operands):
            self.ptrs[id(p)] = self.pointer(v)
        self.block(region)
        for r, y in zip(op.results, region.results):
            self.ptrs[id(r)] = self.pointer(y)

    # -- host calls ---------------------------------------------------------------------------------------
    def host_callback(self) -> ir.Value:
        """The host callback ``void (i64 index, i8** buffers)``, read from the module's global ``<name>.host``
        (the loader stores a pointer to it there; see ``compile.Executable``)."""
        kind = ir.FunctionType(ir.VoidType(), [I64, PTR.as_pointer()]).as_pointer()
        name = self.name + ".host"
        slot = self.module.globals.get(name)
        if slot is None:
            slot = ir.GlobalVariable(self.module, kind, name=name)
            slot.initializer = ir.Constant(kind, None)
        return self.b.load(slot)

    def emit_collective(self, op: Op) -> None:
        """A collective among the replicas (codegen/llvm/replicas.py)."""
        axes = op.params.get("axes", (op.params.get("axis_name"),))
        if len(axes) != 1:
            raise Unsupported(f"'{op.name}' over several named axes is not compiled natively")
        if op.operands and np.dtype(op.operands[0].aval.dtype) not in SUPPORTED_DTYPES:
            raise Unsupported(f"'{op.name}' of {op.operands[0].aval.dtype} is not compiled natively for replicas")
        if self.collectives_emitter is None:
            self.collectives_emitter = replicas.Collectives(self.b, *self.collectives, self.entry_interrupts())
        emitter = self.collectives_emitter
        (result,) = op.results
        source = self.pointer(op.operands[0]) if op.operands else self.allocate(1)
        emitter.emit(op.name, op.params, source, self.buffer(result), int(op.operands[0].aval.size) if op.operands
                     else 0, np.dtype(op.operands[0].aval.dtype) if op.operands else np.dtype(np.int32))

    def emit_host(self, op: Op) -> None:
        """``op`` computed by its NumPy implementation: the callback gets the op's index and the buffers of its
        array operands, then of its results."""
        pointers = [self.pointer(v) for v in op.operands if not isinstance(v, Literal)]
        pointers += [self.buffer(r) for r in op.results]
        array = self.head.alloca(PTR, ir.Constant(I64, max(len(pointers), 1)))
        for i, p in enumerate(pointers):
            self.b.store(p, self.b.gep(array, [ir.Constant(I64, i)]))
        self.b.call(self.host_callback(), [ir.Constant(I64, self.host_index[id(op)]), array])

    # -- slices at run-time indices -------------------------------------------------------------------------
    def starts(self, indices: list[Value], shape: tuple[int, ...], sizes: tuple[int, ...]) -> list[ir.Value]:
        """Start indices clamped to [0, dim - size] (as dynamic_slice defines them)."""
        b, out = self.b, []
        for index, dim, size in zip(indices, shape, sizes):
            i = self.load_int(index)
            i = b.select(b.icmp_signed("<", i, ir.Constant(I64, 0)), ir.Constant(I64, 0), i)
            top = ir.Constant(I64, max(dim - size, 0))
            out.append(b.select(b.icmp_signed(">", i, top), top, i))
        return out

    def copy_rows(self, big: ir.Value, small: ir.Value, shape, sizes, starts, itemsize: int, into_big: bool) -> None:
        """Copy the window ``sizes`` at ``starts`` of the contiguous array ``big`` (of ``shape``) from or to
        the contiguous ``small``, one row (the last axis) per copy."""
        b = self.b
        if not sizes:
            self.copy(big, small, itemsize) if into_big else self.copy(small, big, itemsize)
            return
        if int(np.prod(sizes)) == 0:
            return
        strides = [int(np.prod(shape[d + 1 :], dtype=np.int64)) for d in range(len(shape))]
        rows = int(np.prod(sizes[:-1], dtype=np.int64))
        row_bytes = ir.Constant(I64, sizes[-1] * itemsize)

        def row(r):
            offset, rest = starts[-1], r
            for d in range(len(sizes) - 2, -1, -1):  # r -> (i_0, ..., i_{n-2}) over sizes[:-1]
                i = b.urem(rest, ir.Constant(I64, sizes[d])) if d else rest
                rest = b.udiv(rest, ir.Constant(I64, sizes[d])) if d else rest
                offset = b.add(offset, b.mul(b.add(starts[d], i), ir.Constant(I64, strides[d])))
            at = b.gep(big, [b.mul(offset, ir.Constant(I64, itemsize))])
            there = b.gep(small, [b.mul(r, row_bytes)])
            dst, src = (at, there) if into_big else (there, at)
            b.call(self.memmove, [dst, src, row_bytes])

        for_range(b, ir.Constant(I64, 0), ir.Constant(I64, rows), row)

    def emit_dynamic_slice(self, op: Op) -> None:
        x, *indices = op.operands
        (result,) = op.results
        sizes = tuple(int(s) for s in op.params["slice_sizes"])
        starts = self.starts(indices, x.aval.shape, sizes)
        itemsize = np.dtype(x.aval.dtype).itemsize
        self.copy_rows(self.pointer(x), self.buffer(result), x.aval.shape, sizes, starts, itemsize, False)
        self.window_reads.add(id(op))

    def emit_dynamic_update_slice(self, op: Op) -> None:
        x, update, *indices = op.operands
        (result,) = op.results
        others = self.users.get(id(x), set()) - {id(op)}
        if id(x) in self.private and others <= self.window_reads and id(x) not in self.yielded:
            # x's buffer dies here (what else reads it, windows copied out, has run): update it in place (a loop
            # storing per-iteration residuals copies nothing, nor one reading and zeroing a row of a cotangent)
            out = self.ptrs[id(result)] = self.pointer(x)
            self.private.add(id(result))
        else:
            out = self.buffer(result)
            self.copy(out, self.pointer(x), _nbytes(x))
        sizes = update.aval.shape
        starts = self.starts(indices, x.aval.shape, sizes)
        itemsize = np.dtype(x.aval.dtype).itemsize
        self.copy_rows(out, self.pointer(update), x.aval.shape, sizes, starts, itemsize, True)

    # -- stacks: a header {data, count, capacity} per stack_new; every stack value holds its address --------
    def header(self, stack: Value) -> ir.Value:
        b = self.b
        return b.load(b.bitcast(self.pointer(stack), I64.as_pointer().as_pointer()))

    def emit_stack_new(self, op: Op) -> None:
        header = self.head.bitcast(self.allocate(24), I64.as_pointer())
        for i in range(3):  # no data, empty, no capacity
            self.head.store(ir.Constant(I64, 0), self.head.gep(header, [ir.Constant(I64, i)]))
        self.stacks.append((self.head.bitcast(header, PTR.as_pointer()), op.results[0].aval))
        b = self.b
        self.free_entries(header, op.results[0].aval)  # (the stacks pushed onto it when it last ran)
        b.store(ir.Constant(I64, 0), b.gep(header, [ir.Constant(I64, 1)]))  # (re)starts empty, keeps its memory
        out = self.buffer(op.results[0])
        b.store(header, b.bitcast(out, I64.as_pointer().as_pointer()))

    def free_entries(self, header: ir.Value, aval: StackType) -> None:
        """Free the stacks held by the stack at ``header`` (i64*), when its entries are stacks (it owns them:
        each was moved onto it by a push), and theirs in turn."""
        if not isinstance(aval.elem, StackType):
            return
        b = self.b
        entries = b.bitcast(b.load(b.bitcast(header, PTR.as_pointer())), I64.as_pointer().as_pointer())
        count = b.load(b.gep(header, [ir.Constant(I64, 1)]))

        def free_entry(i):
            inner = b.load(b.gep(entries, [i]))
            self.free_entries(inner, aval.elem)
            b.call(self.free, [b.load(b.bitcast(inner, PTR.as_pointer()))])
            b.call(self.free, [b.bitcast(inner, PTR)])

        for_range(b, ir.Constant(I64, 0), count, free_entry)

    def emit_stack_push(self, op: Op) -> None:
        stack, x = op.operands
        b = self.b
        header = self.header(stack)
        data_at = b.bitcast(header, PTR.as_pointer())
        count_at, capacity_at = b.gep(header, [ir.Constant(I64, 1)]), b.gep(header, [ir.Constant(I64, 2)])
        count, capacity = b.load(count_at), b.load(capacity_at)
        size = ir.Constant(I64, max(_nbytes(x), 1))
        with b.if_then(b.icmp_signed(">=", count, capacity)):  # full: double the capacity
            grown = b.select(
                b.icmp_signed("<", capacity, ir.Constant(I64, 4)),
                ir.Constant(I64, 8),
                b.shl(capacity, ir.Constant(I64, 1)),
            )
            b.store(b.call(self.realloc, [b.load(data_at), b.mul(grown, size)]), data_at)
            b.store(grown, capacity_at)
        at = b.gep(b.load(data_at), [b.mul(count, size)])
        if isinstance(x.aval, StackType):  # a stack onto a stack: moved (see the module's docstring)
            source = self.header(x)
            moved = b.bitcast(b.call(self.malloc, [ir.Constant(I64, 24)]), I64.as_pointer())
            for i in range(3):  # the entry takes the data; the pushed header is left empty
                word = b.gep(source, [ir.Constant(I64, i)])
                b.store(b.load(word), b.gep(moved, [ir.Constant(I64, i)]))
                b.store(ir.Constant(I64, 0), word)
            b.store(moved, b.bitcast(at, I64.as_pointer().as_pointer()))
        else:
            self.copy(at, self.pointer(x), _nbytes(x))
        b.store(b.add(count, ir.Constant(I64, 1)), count_at)
        self.ptrs[id(op.results[0])] = self.pointer(stack)  # the same stack, one entry longer

    def emit_stack_get(self, op: Op) -> None:
        """Entry k of the stack; with ``lanes`` (batched stacks, entries of shape (B, ...), k of shape (B,); or
        (B2, B1, ...), k of shape (B2, B1)), row b of entry k[b] for each b. Indices are clamped into the stack
        (the interpreter's reads are always in range); with ``fill`` (a cotangent stack) an entry the stack
        does not hold reads as zeros."""
        stack, k = op.operands
        (result,) = op.results
        b = self.b
        header = self.header(stack)
        count = b.load(b.gep(header, [ir.Constant(I64, 1)]))
        data = b.load(b.bitcast(header, PTR.as_pointer()))
        out, entry = self.buffer(result), _nbytes(result)
        fill = bool(op.params.get("fill"))

        def clamp(i):
            i = b.select(b.icmp_signed(">=", i, count), b.sub(count, ir.Constant(I64, 1)), i)
            return b.select(b.icmp_signed("<", i, ir.Constant(I64, 0)), ir.Constant(I64, 0), i)

        def read(i, dst, offset, nbytes):
            """Copy ``nbytes`` at ``offset`` into entry i to ``dst``; zeros where a filling read has no entry."""
            if not fill:
                self.copy(dst, b.gep(data, [b.add(b.mul(clamp(i), ir.Constant(I64, entry)), offset)]), nbytes)
                return
            held = b.and_(b.icmp_signed(">=", i, ir.Constant(I64, 0)), b.icmp_signed("<", i, count))
            with b.if_else(held) as (then, otherwise):
                with then:
                    self.copy(dst, b.gep(data, [b.add(b.mul(i, ir.Constant(I64, entry)), offset)]), nbytes)
                with otherwise:
                    b.call(self.memset, [dst, ir.Constant(ir.IntType(32), 0), ir.Constant(I64, nbytes)])

        if not op.params.get("lanes"):
            if entry:
                read(self.load_int(k), out, ir.Constant(I64, 0), entry)
            return
        lanes = int(np.prod(k.aval.shape))  # (the index's shape: the leading axes of the entries)
        row = entry // max(lanes, 1)

        def lane(j):
            at = b.mul(j, ir.Constant(I64, row))
            read(self.lane_index(k, j), b.gep(out, [at]), at, row)

        if row:
            for_range(b, ir.Constant(I64, 0), ir.Constant(I64, lanes), lane)

    def lane_index(self, k: Value, j: ir.Value) -> ir.Value:
        """Example j's entry of the indices ``k`` (any integer dtype) as i64."""
        b = self.b
        dtype = np.dtype(k.aval.dtype)
        raw = b.load(b.gep(b.bitcast(self.pointer(k), ir.IntType(dtype.itemsize * 8).as_pointer()), [j]))
        return raw if dtype.itemsize == 8 else b.sext(raw, I64) if dtype.kind == "i" else b.zext(raw, I64)

    def emit_stack_add(self, op: Op) -> None:
        """A cotangent stack's entry k (with ``lanes``: row b of entry k[b]) gets x added, the stack first growing
        with zero entries to hold it; a negative index adds nothing (an example whose loop has stopped)."""
        stack, k, x = op.operands
        dtype = np.dtype(x.aval.dtype)
        component = dtype.itemsize // (2 if dtype.kind == "c" else 1)  # (complex numbers: added as two floats)
        scalar = {4: ir.FloatType(), 8: ir.DoubleType()}.get(component)
        if dtype.kind not in "fc" or scalar is None:
            raise Unsupported(f"stack_add of {x.aval} is not compiled natively")
        b = self.b
        header = self.header(stack)
        data_at = b.bitcast(header, PTR.as_pointer())
        count_at, capacity_at = b.gep(header, [ir.Constant(I64, 1)]), b.gep(header, [ir.Constant(I64, 2)])
        entry = _nbytes(x)
        lanes = int(np.prod(k.aval.shape)) if op.params.get("lanes") else 1
        row = entry // max(lanes, 1)
        width = ir.Constant(I64, max(entry, 1))
        self.ptrs[id(op.results[0])] = self.pointer(stack)  # the same stack, added to in place
        if not row:
            return

        def add(i, j):
            with b.if_then(b.icmp_signed(">=", i, ir.Constant(I64, 0))):
                count = b.load(count_at)
                with b.if_then(b.icmp_signed(">=", i, count)):  # grow to hold entry i, zero-filled
                    capacity = b.load(capacity_at)
                    with b.if_then(b.icmp_signed(">=", i, capacity)):
                        grown = b.shl(capacity, ir.Constant(I64, 1))
                        need = b.add(i, ir.Constant(I64, 1))
                        grown = b.select(b.icmp_signed("<", grown, need), need, grown)
                        grown = b.select(b.icmp_signed("<", grown, ir.Constant(I64, 8)), ir.Constant(I64, 8), grown)
                        b.store(b.call(self.realloc, [b.load(data_at), b.mul(grown, width)]), data_at)
                        b.store(grown, capacity_at)
                    start = b.gep(b.load(data_at), [b.mul(count, width)])
                    b.call(self.memset, [start, ir.Constant(ir.IntType(32), 0),
                                         b.mul(b.sub(b.add(i, ir.Constant(I64, 1)), count), width)])
                    b.store(b.add(i, ir.Constant(I64, 1)), count_at)
                at = b.mul(j, ir.Constant(I64, row))
                dst = b.bitcast(b.gep(b.load(data_at), [b.add(b.mul(i, width), at)]), scalar.as_pointer())
                src = b.bitcast(b.gep(self.pointer(x), [at]), scalar.as_pointer())

                def element(e):
                    where = b.gep(dst, [e])
                    b.store(b.fadd(b.load(where), b.load(b.gep(src, [e]))), where)

                for_range(b, ir.Constant(I64, 0), ir.Constant(I64, row // component), element)

        if not op.params.get("lanes"):
            add(self.load_int(k), ir.Constant(I64, 0))
            return
        for_range(b, ir.Constant(I64, 0), ir.Constant(I64, lanes), lambda j: add(self.lane_index(k, j), j))

    def emit_stack_size(self, op: Op) -> None:
        b = self.b
        count = b.load(b.gep(self.header(op.operands[0]), [ir.Constant(I64, 1)]))
        b.store(b.trunc(count, ir.IntType(32)), b.bitcast(self.buffer(op.results[0]), ir.IntType(32).as_pointer()))
