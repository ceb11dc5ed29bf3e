"""LLVM functions for loop nests and reductions, and the thread pool that runs them in chunks.

A nest becomes ``void nest(T0* noalias, ..., i64 lo, i64 hi, i64 slot)``: loops over its (collapsed)
axes, the outermost one only over [lo, hi), so that threads can share it. The body evaluates the node
DAG once per element. Reductions keep a register accumulator over the innermost reduced axes (float32
sums add blocks of 512 float32 partials into float64; products stay float32) and accumulate in memory over the
others; when the outermost axis is reduced and split into chunks, chunk ``slot`` accumulates into its
own partial result. ``srcjax_parallel`` (``PoolEmitter``) runs the chunks on persistent worker threads.
Scalars are kept in allocas and left to SROA, which is simpler than threading phis through loops.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import llvmlite.ir as ir
import numpy as np

from srcjax.codegen.llvm import engine
from srcjax.codegen.llvm.nodes import Apply, Const, GatherLoad, Iota, Load, NestBody, WindowLoad
from srcjax.codegen.llvm.rules import ELEMENTWISE, Lowering, convert, ltype, mtype
from srcjax.codegen.llvm.table import expensive
from srcjax.codegen.settings import environ_int

I8, I32, I64 = ir.IntType(8), ir.IntType(32), ir.IntType(64)
PTR = I8.as_pointer()
NEST_TYPE = ir.FunctionType(ir.VoidType(), [PTR.as_pointer(), I64, I64, I64])  # (buffers, lo, hi, slot)
# a nest is split across threads from this much work (elements x cost per element; 1 << 18 is about 15 us
# serially): handing chunks to running workers costs a few microseconds, waking sleeping ones a system call
PARALLEL_MIN_WORK = environ_int("SRCJAX_PARALLEL_MIN_WORK", 1 << 18)
# ... and below this much (about 60 us), only by workers that are awake: a worker sleeping in the kernel
# takes tens of microseconds to wake, and waking it costs the caller a few
WAKE_MIN_WORK = 1 << 20
# a parallel nest is cut into this many chunks per thread, claimed one at a time: a thread that runs late
# (descheduled on a busy machine, slow to wake) leaves most of its share to the others
CHUNKS_PER_THREAD = 4
MAX_THREADS = 64
REDUCTION_BLOCK = 512  # elements a float32 register accumulator sums before adding into a float64 one


def num_threads() -> int:
    value = os.environ.get("SRCJAX_NUM_THREADS")
    count = (
        int(value)
        if value
        else (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))
    )
    return max(1, min(count, MAX_THREADS))


# -- reductions -------------------------------------------------------------------------------------------
def identity(combine: str, dtype: np.dtype):
    dtype = np.dtype(dtype)
    if combine == "logaddexp":
        return -np.inf
    if combine in ("add", "or", "xor"):
        return 0
    if combine == "mul":
        return 1
    if combine == "and":
        return True if dtype.kind == "b" else -1
    if dtype.kind == "f":
        return -np.inf if combine == "max" else np.inf
    if dtype.kind == "b":
        return combine == "min"
    info = np.iinfo(dtype)
    return info.min if combine == "max" else info.max


def accumulator_dtype(combine: str, dtype: np.dtype, scan: bool = False) -> np.dtype:
    """Float32 sums and running products (cumprod) accumulate in registers in float64 (more accurate, as fast when
    bound by memory: README); a float32 product stays float32, so that a partial product that overflows (or
    underflows) float32 does so as eagerly and in JAX; everything else in its own dtype."""
    wide = combine == "add" or (combine == "mul" and scan)
    return np.dtype(np.float64) if wide and np.dtype(dtype) == np.float32 else np.dtype(dtype)


def combine_values(cx: Lowering, combine: str, dtype: np.dtype, x: ir.Value, y: ir.Value,
                   ordered: bool = False) -> ir.Value:
    """``x`` combined with ``y``; ``ordered``: a float one in the order written (no reassociation)."""
    b = cx.b
    if combine in ("add", "mul"):
        if np.dtype(dtype).kind == "f":  # reassociation lets the vectoriser keep several partial sums
            return (b.fadd if combine == "add" else b.fmul)(x, y, flags=() if ordered else ("reassoc", "contract"))
        return (b.add if combine == "add" else b.mul)(x, y)
    if combine in ("and", "or", "xor"):
        return {"and": b.and_, "or": b.or_, "xor": b.xor}[combine](x, y)
    if combine == "logaddexp":
        return _logaddexp(cx, np.dtype(dtype), x, y)
    return ELEMENTWISE[combine](cx, [np.dtype(dtype)] * 2, np.dtype(dtype), {}, x, y)


def _logaddexp(cx: Lowering, dtype: np.dtype, x: ir.Value, y: ir.Value) -> ir.Value:
    """log(exp(x) + exp(y)) as NumPy computes it: max + log1p(exp(-|x - y|)), or x + y where x - y is NaN
    (a NaN, or infinities of one sign)."""
    one, two = [dtype], [dtype, dtype]
    delta = ELEMENTWISE["sub"](cx, two, dtype, {}, x, y)
    spread = ELEMENTWISE["abs"](cx, one, dtype, {}, delta)
    spread = ELEMENTWISE["exp"](cx, one, dtype, {}, ELEMENTWISE["neg"](cx, one, dtype, {}, spread))
    spread = ELEMENTWISE["log1p"](cx, one, dtype, {}, spread)
    larger = ELEMENTWISE["max"](cx, two, dtype, {}, x, y)
    unordered = cx.b.fcmp_unordered("uno", delta, delta)
    return cx.b.select(unordered, cx.b.fadd(x, y), cx.b.fadd(larger, spread))


# -- loops ------------------------------------------------------------------------------------------------
def for_range(b: ir.IRBuilder, start: ir.Value, stop: ir.Value, body, step: int = 1, unroll: bool = True,
              masked_tail: bool = False) -> None:
    """``for i in range(start, stop, step): body(i)`` with the index as a phi (a loop LLVM vectorises).
    ``unroll=False`` keeps LLVM's unroller off it (the vectoriser still interleaves); ``masked_tail`` asks the
    vectoriser to mask the last vector instead of finishing in narrower and scalar loops."""
    fn = b.function
    pre = b.block
    loop = fn.append_basic_block("loop")
    after = fn.append_basic_block("after")
    b.cbranch(b.icmp_signed("<", start, stop), loop, after)
    b.position_at_end(loop)
    i = b.phi(I64)
    i.add_incoming(start, pre)
    body(i)
    nxt = b.add(i, ir.Constant(I64, step), flags=("nsw",))
    i.add_incoming(nxt, b.block)
    latch = b.cbranch(b.icmp_signed("<", nxt, stop), loop, after)
    if not unroll or masked_tail:
        properties = ["llvm.loop.unroll.disable"] if not unroll else []
        flags = (("llvm.loop.vectorize.predicate.enable", True),) if masked_tail else ()
        latch.set_metadata("llvm.loop", _loop_id(b.module, *properties, flags=flags))
    b.position_at_end(after)


def _loop_id(module: ir.Module, *properties: str, flags: tuple[tuple[str, bool], ...] = ()) -> ir.Value:
    """A new loop ID, ``!N = !{!N, !{!"property"}..., !{!"flag", i1 value}...}``: the self-reference makes it
    unique to its loop."""
    marker = ir.MetaDataString(module, f"srcjax.loop.{len(module.metadata)}")
    node = module.add_metadata([marker] + [module.add_metadata([ir.MetaDataString(module, p)]) for p in properties]
                               + [module.add_metadata([ir.MetaDataString(module, p), ir.Constant(ir.IntType(1), v)])
                                  for p, v in flags])
    node.operands = (node, *node.operands[1:])  # (the marker only kept llvmlite from reusing a node)
    return node


def load_value(b: ir.IRBuilder, ptr: ir.Value, dtype: np.dtype) -> ir.Value:
    value = b.load(ptr)
    return b.trunc(value, ir.IntType(1)) if np.dtype(dtype).kind == "b" else value


def store_value(b: ir.IRBuilder, value: ir.Value, ptr: ir.Value, dtype: np.dtype) -> None:
    b.store(b.zext(value, I8) if np.dtype(dtype).kind == "b" else value, ptr)


def affine(b: ir.IRBuilder, coeffs: list[int], offset: int, index: list[ir.Value]) -> ir.Value:
    total: ir.Value = ir.Constant(I64, offset)
    for c, i in zip(coeffs, index):
        if c:
            total = b.add(total, i if c == 1 else b.mul(i, ir.Constant(I64, c), flags=("nsw",)), flags=("nsw",))
    return total


@dataclass
class NestFunction:
    name: str
    packed: str  # the (buffers, lo, hi, slot) form, for threads
    buffers: list  # the Buffers behind its pointer arguments, in order
    body: NestBody


MASKED_TAIL_MIN_COST = 100  # (``NestBody.cost``: ten transcendental functions)


class NestEmitter:
    """Emits one nest's function into a module."""

    def __init__(self, module: ir.Module, body: NestBody, name: str, partial_slots: bool,
                 shared: frozenset[int] = frozenset()):
        self.module, self.body, self.name = module, body, name
        self.shared = shared  # ids of buffers that may be one memory (one written over another): not noalias
        self.partial_slots = partial_slots  # the outermost axis is reduced and split across threads
        self.buffers = body.buffers()
        self.acc: tuple[ir.Value, np.dtype] | None = None  # the register accumulator while inside its loops

    def emit(self) -> NestFunction:
        arg_types = [mtype(buf.dtype).as_pointer() for buf in self.buffers] + [I64, I64, I64]
        fn = ir.Function(self.module, ir.FunctionType(ir.VoidType(), arg_types), name=self.name)
        fn.linkage = "internal"
        fn.attributes.add("nounwind")
        for buf, arg in zip(self.buffers, fn.args):
            if id(buf) not in self.shared:
                arg.add_attribute("noalias")
        self.fn = fn
        b = self.b = ir.IRBuilder(fn.append_basic_block("entry"))
        self.cx = Lowering(b)
        self.pointers = {id(buf): arg for buf, arg in zip(self.buffers, fn.args)}
        lo, hi, slot = fn.args[-3:]
        body = self.body
        if body.reduction is not None and self.partial_slots:
            target = body.reduction.target
            base = self.pointers[id(target)]
            self.pointers[id(target)] = b.gep(base, [b.mul(slot, ir.Constant(I64, target.size))])
        if body.size > 0:
            self.allocas_block = b.block
            self.loops(0, [], lo, hi)
        b.ret_void()
        self.emit_packed()
        return NestFunction(self.name, self.name + ".packed", self.buffers, body)

    def emit_packed(self) -> None:
        fn = ir.Function(self.module, NEST_TYPE, name=self.name + ".packed")
        fn.linkage = "internal"
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        bufs, lo, hi, slot = fn.args
        pointers = [
            b.bitcast(b.load(b.gep(bufs, [ir.Constant(I64, i)])), mtype(buf.dtype).as_pointer())
            for i, buf in enumerate(self.buffers)
        ]
        b.call(self.fn, [*pointers, lo, hi, slot])
        b.ret_void()

    # -- loops and accumulators ---------------------------------------------------------------------------
    def suffix_start(self) -> int:
        """Where the innermost run of reduced axes starts (the register accumulator's scope)."""
        k = len(self.body.shape)
        while k > 0 and self.body.reduced[k - 1]:
            k -= 1
        return k

    def accumulates_in_memory(self) -> bool:
        """Whether the reduction adds into its target (which must then start at the identity)."""
        if self.body.reduction is not None and self.body.reduction.scan:
            return False
        k = self.suffix_start()
        return k == len(self.body.shape) or any(self.body.reduced[:k])

    def loops(self, depth: int, index: list[ir.Value], lo: ir.Value, hi: ir.Value) -> None:
        body, b = self.body, self.b
        red = body.reduction
        if red is not None and depth == self.suffix_start() and depth < len(body.shape):
            start = identity(red.combine, red.dtype)
            acc_dtype = accumulator_dtype(red.combine, red.dtype, red.scan)
            if red.scan:  # the running value (float32 in float64, each prefix rounded); -0.0 + x is x, even -0.0
                start = -0.0 if red.combine == "add" and red.dtype.kind == "f" else start
            acc = self.alloca(ltype(acc_dtype))
            b.store(self.cx.const(acc_dtype, start), acc)
            self.acc = (acc, acc_dtype)
            self._loop_level(depth, index, lo, hi)
            if red.scan:  # (each element stored its prefix)
                self.acc = None
                return
            total = convert(self.cx, b.load(acc), acc_dtype, red.dtype)
            self.accumulate_memory(total, index, into=any(body.reduced[:depth]))
            self.acc = None
            return
        self._loop_level(depth, index, lo, hi)

    def _loop_level(self, depth: int, index: list[ir.Value], lo: ir.Value, hi: ir.Value) -> None:
        body = self.body
        if depth == len(body.shape):
            self.element(index)
            return
        start = lo if depth == 0 else ir.Constant(I64, 0)
        stop = hi if depth == 0 else ir.Constant(I64, body.shape[depth])
        if body.tile is not None and depth == len(body.shape) - 1:  # the last tile ends where its axis does
            b, (axis, extent) = self.b, body.tile
            left = b.sub(ir.Constant(I64, extent), b.mul(index[axis], ir.Constant(I64, body.shape[depth])))
            stop = b.select(b.icmp_signed("<", left, stop), left, stop)
        red = body.reduction
        if red is not None and red.scan and red.reverse and body.reduced[depth]:  # (the scan's axis, never split)
            last = ir.Constant(I64, body.shape[depth] - 1)
            for_range(self.b, start, stop, lambda i: self.loops(depth + 1, [*index, self.b.sub(last, i)], lo, hi))
            return
        if depth == len(body.shape) - 1 and self.acc is not None and self.acc[1] != red.dtype and not red.scan:
            self._blocked_innermost(index, start, stop)
            return
        # Unrolling pays in reductions (several partial results in flight); a map's vectorised loop is bound by
        # memory, and unrolled it only multiplies code and compile time (a large step function's nests by
        # the hundred: 10 s against 3 s to compile, with the same run time).
        unroll = body.reduction is not None
        masked = depth == len(body.shape) - 1 and self.masked_tail()
        for_range(self.b, start, stop, lambda i: self.loops(depth + 1, [*index, i], lo, hi), unroll=unroll,
                  masked_tail=masked)

    def masked_tail(self) -> bool:
        """Whether the innermost loop's last vector is to be masked (LLVM's tail folding) rather than followed by
        a narrower vector loop and a scalar one: in a map whose elements cost MASKED_TAIL_MIN_COST or more, on
        targets that mask vectors at no cost (AVX-512). Each copy of a long body costs compile time (a chain of
        20 sins compiled in 0.45 s, masked in 0.27 s), and at that cost per element the mask costs nothing (the
        same run time over 1e6 elements, 0.8x over 37 or 1e5)."""
        return (self.body.reduction is None and engine.has_masked_moves()
                and self.body.cost(expensive) >= MASKED_TAIL_MIN_COST)

    def _blocked_innermost(self, index: list[ir.Value], start: ir.Value, stop: ir.Value) -> None:
        """The innermost loop of a float32 sum or product in blocks: each block accumulates in float32 (8 lanes
        wide, several partial sums), and the block's total goes into the float64 accumulator. Accumulating in
        float64 throughout would halve the vector width of the whole loop body."""
        b, red = self.b, self.body.reduction
        wide_acc, wide_dtype = self.acc
        narrow = self.alloca(ltype(red.dtype))

        def block(first):
            last = b.add(first, ir.Constant(I64, REDUCTION_BLOCK))
            last = b.select(b.icmp_signed("<", last, stop), last, stop)
            b.store(self.cx.const(red.dtype, identity(red.combine, red.dtype)), narrow)
            self.acc = (narrow, red.dtype)
            for_range(b, first, last, lambda i: self.element([*index, i]))
            self.acc = (wide_acc, wide_dtype)
            total = convert(self.cx, b.load(narrow), red.dtype, wide_dtype)
            b.store(combine_values(self.cx, red.combine, wide_dtype, b.load(wide_acc), total), wide_acc)

        for_range(b, start, stop, block, step=REDUCTION_BLOCK)

    def alloca(self, typ: ir.Type) -> ir.Value:
        with self.b.goto_block(self.fn.entry_basic_block):
            self.b.position_at_start(self.fn.entry_basic_block)
            return self.b.alloca(typ)

    def accumulate_memory(self, value: ir.Value, index: list[ir.Value], into: bool) -> None:
        red, b = self.body.reduction, self.b
        ptr = b.gep(self.pointers[id(red.target)], [affine(b, red.coeffs, 0, index)])
        if into:
            value = combine_values(self.cx, red.combine, red.dtype, load_value(b, ptr, red.dtype), value)
        store_value(b, value, ptr, red.dtype)

    def element(self, index: list[ir.Value]) -> None:
        b = self.b
        values: dict[int, ir.Value] = {}
        # every value first, then the stores: an output may overwrite (donation) what another store reads
        computed = [self.value(store.node, index, values) for store in self.body.stores]
        for store, value in zip(self.body.stores, computed):
            if store.starts is not None:
                self.scatter(store, value, index, values)
                continue
            address = affine(b, store.coeffs, store.offset, index)
            store_value(b, value, b.gep(self.pointers[id(store.buffer)], [address]), store.buffer.dtype)
        red = self.body.reduction
        if red is None:
            return
        value = self.value(red.node, index, values)
        if red.scan:  # combine into the running value (none when the axis has one element) and store it
            if self.acc is not None:
                acc, acc_dtype = self.acc
                total = combine_values(self.cx, red.combine, acc_dtype, b.load(acc),
                                       convert(self.cx, value, red.dtype, acc_dtype))
                b.store(total, acc)
                value = convert(self.cx, total, acc_dtype, red.dtype)
            ptr = b.gep(self.pointers[id(red.target)], [affine(b, red.coeffs, 0, index)])
            store_value(b, value, ptr, red.dtype)
            return
        if self.acc is not None:
            acc, acc_dtype = self.acc
            wide = convert(self.cx, value, red.dtype, acc_dtype)
            # a product in its own precision multiplies in order, as NumPy's and XLA's loops do: reordered, a
            # partial product that overflows there (1e30 * 1e30 * 1e-30 * 1e-30) could pair off to a finite one
            ordered = red.combine == "mul" and acc_dtype == red.dtype
            b.store(combine_values(self.cx, red.combine, acc_dtype, b.load(acc), wide, ordered), acc)
        else:
            self.accumulate_memory(value, index, into=True)

    def shifted(self, address: ir.Value, starts, clip: bool, check: bool, index, values):
        """``address`` plus each start (clamped into [0, largest] when ``clip``) times its stride, and (when
        ``check``) whether every start was in range before clamping, else None."""
        b, inside = self.b, None
        for node, stride, top in starts:
            start = convert(self.cx, self.value(node, index, values), node.dtype, np.dtype(np.int64))
            clamped, fits = self.clamp(start, top)
            if check:
                inside = fits if inside is None else b.and_(inside, fits)
            address = b.add(address, b.mul(clamped if clip else start, ir.Constant(I64, stride)))
        return address, inside

    def clamp(self, i: ir.Value, top: int) -> tuple[ir.Value, ir.Value]:
        """``i`` (i64) clamped into [0, top], and whether it was in that range."""
        b, cx = self.b, self.cx
        zero, largest = ir.Constant(I64, 0), ir.Constant(I64, top)
        fits = b.and_(b.icmp_signed(">=", i, zero), b.icmp_signed("<=", i, largest))
        return cx.intrinsic("smax", cx.intrinsic("smin", i, largest), zero), fits

    def scatter(self, store, value: ir.Value, index, values) -> None:
        """One update element of a scatter, stored (or combined) where its starts put it, or dropped."""
        b = self.b
        address, inside = self.shifted(affine(b, store.coeffs, store.offset, index), store.starts, store.clip,
                                       not store.clip, index, values)
        dtype = store.buffer.dtype

        def write():
            ptr = b.gep(self.pointers[id(store.buffer)], [address])
            update = value
            if store.combine is not None:
                update = combine_values(self.cx, store.combine, dtype, load_value(b, ptr, dtype), value)
            store_value(b, update, ptr, dtype)

        if inside is None:
            write()
        else:
            with b.if_then(inside):
                write()

    def window_load(self, node: WindowLoad, index: list[ir.Value]) -> ir.Value:
        """A patch element: the input at u // dilation on each spatial axis, or 0 in the padding and holes."""
        b = self.b
        address, inside = affine(b, node.coeffs, node.offset, index), None
        for coeffs, offset, top, dilation, stride in node.spatial:
            u, fits = self.clamp(affine(b, coeffs, offset, index), top)
            if dilation > 1:
                d = ir.Constant(I64, dilation)
                fits = b.and_(fits, b.icmp_unsigned("==", b.urem(u, d), ir.Constant(I64, 0)))
                u = b.udiv(u, d)
            address = b.add(address, b.mul(u, ir.Constant(I64, stride)))
            inside = fits if inside is None else b.and_(inside, fits)
        out = load_value(b, b.gep(self.pointers[id(node.buffer)], [address]), node.dtype)
        return out if inside is None else b.select(inside, out, self.cx.const(node.dtype, 0))

    # -- nodes ----------------------------------------------------------------------------------------------
    def value(self, node, index: list[ir.Value], values: dict[int, ir.Value]) -> ir.Value:
        if id(node) in values:
            return values[id(node)]
        b = self.b
        if isinstance(node, GatherLoad):  # (clamped; a window that does not fit reads as the fill value)
            address, inside = self.shifted(affine(b, node.coeffs, node.offset, index), node.starts, True,
                                           node.fill is not None, index, values)
            out = load_value(b, b.gep(self.pointers[id(node.buffer)], [address]), node.dtype)
            if inside is not None:
                out = b.select(inside, out, self.cx.const(node.dtype, node.fill))
        elif isinstance(node, WindowLoad):
            out = self.window_load(node, index)
        elif isinstance(node, Load):
            ptr = b.gep(self.pointers[id(node.buffer)], [affine(b, node.coeffs, node.offset, index)])
            out = load_value(b, ptr, node.dtype)
        elif isinstance(node, Const):
            out = self.cx.const(node.dtype, node.value)
        elif isinstance(node, Iota):
            position = index[node.axis] if node.axis is not None else ir.Constant(I64, 0)
            out = convert(self.cx, position, np.dtype(np.int64), node.dtype)
        else:
            assert isinstance(node, Apply)
            args = [self.value(u, index, values) for u in node.operands]
            out = ELEMENTWISE[node.name](self.cx, node.in_dtypes, node.dtype, node.params, *args)
        values[id(node)] = out
        return out


def fill(b: ir.IRBuilder, cx: Lowering, ptr: ir.Value, count: int, value: ir.Value, dtype: np.dtype) -> None:
    for_range(b, ir.Constant(I64, 0), ir.Constant(I64, count), lambda i: store_value(b, value, b.gep(ptr, [i]), dtype))
