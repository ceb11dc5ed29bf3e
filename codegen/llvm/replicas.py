"""Collectives in native code: replicas of one compiled function, one per virtual CPU device, each on a thread of
its own, meeting at barriers in shared memory.

A replicated function takes one more buffer after its outputs: two i64s, the address of the replicas' context
and the replica's index. The context (``new_context``) is an i64 array: the replica count, the barrier's arrival
count and generation, then two pointer slots per replica (the input and the output of the collective in
progress). A collective (``emit``) publishes its replica's pointers, meets the others at the barrier, computes
from everyone's buffers, and meets them again before anyone goes on (so no buffer is reused while another
replica reads it). Reductions (``psum``, ``pmax``, ...) are shared out: each replica reduces its own slice of the
elements into its output, then copies the other slices from the others' outputs; small ones are reduced by every
replica whole, which saves a barrier. Every replica ends with the same bits.

The barrier (``srcjax_barrier``, compiled once per process like the thread pool) spins briefly, then sleeps on a
futex; it returns early once a SIGINT has arrived (``interrupt.py``), so that replicas whose loops stopped at
different trips do not wait for each other for ever (their results are never returned).
"""

from __future__ import annotations

from typing import Any, Callable

import llvmlite.ir as ir
import numpy as np

from srcjax.codegen.llvm import engine, interrupt
from srcjax.codegen.llvm.kernels import I32, I64, combine_values, for_range, load_value, store_value
from srcjax.codegen.llvm.plan import Unsupported
from srcjax.codegen.llvm.pool import _FUTEX_WAIT_PRIVATE, _FUTEX_WAKE_PRIVATE, futex, has_futex, spin_hint
from srcjax.codegen.llvm.rules import Lowering, mtype

BARRIER = "srcjax_barrier"
BARRIER_TYPE = ir.FunctionType(ir.VoidType(), [I64.as_pointer(), I64])  # (context, interrupt count at entry)
COUNT, ARRIVED, GENERATION, SLOTS = 0, 1, 2, 8  # i64 words of the context
SPIN = 4000  # polls of the generation before sleeping on it
SMALL = 1 << 14  # elements up to which every replica reduces the whole collective itself
COLLECTIVES = frozenset({"psum", "pmean", "pmax", "pmin", "all_gather", "psum_scatter", "axis_index", "ppermute",
                         "all_to_all"})
_COMBINE = {"psum": "add", "pmean": "add", "pmax": "max", "pmin": "min"}



def new_context(replicas: int) -> np.ndarray:
    """A context for ``replicas`` replicas meeting at barriers (kept alive by the caller while they run)."""
    context = np.zeros(SLOTS + 2 * replicas, np.int64)
    context[COUNT] = replicas
    return context


# -- the barrier ---------------------------------------------------------------------------------------------------
def barrier_function(module: ir.Module) -> ir.Function:
    """``srcjax_barrier`` declared in ``module`` (compiled and bound first if needed)."""
    bind_runtime()
    if BARRIER in module.globals:
        return module.globals[BARRIER]
    return ir.Function(module, BARRIER_TYPE, name=BARRIER)


def bind_runtime(load: Callable[[Callable[[], tuple[ir.Module, list[str], int]]], engine.Code] | None = None) -> None:
    """Compile ``srcjax_barrier`` (or have ``load(build)`` load it: the disk cache) and bind its symbol for the life
    of the process, unless that is done already."""
    interrupt.bind()
    engine.bind_once(BARRIER, emit_runtime, load)


def emit_runtime(module: ir.Module) -> None:
    """``srcjax_barrier(context, interrupts)``: the last replica to arrive resets the count and starts the next
    generation; the others poll it, then sleep on it. Returns early once the interrupt count moves."""
    fn = ir.Function(module, BARRIER_TYPE, name=BARRIER)
    fn.attributes.add("nounwind")
    context, at_entry = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    word = lambda i: b.gep(context, [ir.Constant(I64, i)])  # noqa: E731
    generation = b.bitcast(word(GENERATION), I32.as_pointer())  # (the futex is the word's low half)
    seen = b.load_atomic(generation, "acquire", 4)
    arrived = b.atomic_rmw("add", word(ARRIVED), ir.Constant(I64, 1), "acq_rel")
    count = b.load(word(COUNT))
    last, wait, poll, sleep, done = (fn.append_basic_block(s) for s in ("last", "wait", "poll", "sleep", "done"))
    b.cbranch(b.icmp_unsigned("==", b.add(arrived, ir.Constant(I64, 1)), count), last, wait)
    b.position_at_end(last)
    b.store_atomic(ir.Constant(I64, 0), word(ARRIVED), "monotonic", 8)
    b.atomic_rmw("add", generation, ir.Constant(I32, 1), "release")
    if has_futex(module):
        futex(b, generation, _FUTEX_WAKE_PRIVATE, ir.Constant(I64, 0x7FFFFFFF))
    b.branch(done)
    b.position_at_end(wait)
    spins = b.phi(I64)
    spins.add_incoming(ir.Constant(I64, 0), b.function.blocks[0])
    moved = b.icmp_unsigned("!=", b.load_atomic(generation, "acquire", 4), seen)
    stopped = b.icmp_unsigned("!=", interrupt.read(b, module), at_entry)
    b.cbranch(b.or_(moved, stopped), done, poll)
    b.position_at_end(poll)
    spin_hint(b)
    more = b.add(spins, ir.Constant(I64, 1))
    spins.add_incoming(more, poll)
    b.cbranch(b.icmp_unsigned("<", more, ir.Constant(I64, SPIN)), wait, sleep)
    b.position_at_end(sleep)
    spins.add_incoming(ir.Constant(I64, 0), sleep)
    if has_futex(module):  # (returns at once if the generation moved; a SIGINT interrupts the sleep too)
        futex(b, generation, _FUTEX_WAIT_PRIVATE, b.zext(seen, I64))
    else:
        b.call(_extern(module, "sched_yield", I32, []), [])
    b.branch(wait)
    b.position_at_end(done)
    b.ret_void()


def _extern(module: ir.Module, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
    if name in module.globals:
        return module.globals[name]
    return ir.Function(module, ir.FunctionType(ret, args), name=name)


# -- the collectives -----------------------------------------------------------------------------------------------
class Collectives:
    """Emits collectives into a replicated entry (``control.ControlEmitter``): ``context`` and ``replica`` come from
    its extra buffer, ``count`` (the number of replicas) from the context, ``interrupts`` is the interrupt count at
    its entry; all read in its entry block."""

    def __init__(self, b: ir.IRBuilder, context: ir.Value, replica: ir.Value, count: ir.Value,
                 interrupts: ir.Value):
        self.b, self.context, self.replica, self.count, self.interrupts = b, context, replica, count, interrupts
        self.cx = Lowering(b)

    def barrier(self) -> None:
        self.b.call(barrier_function(self.b.module), [self.context, self.interrupts])

    def slot(self, replica: ir.Value, which: int) -> ir.Value:
        """The address of replica ``replica``'s slot ``which`` (0: input, 1: output)."""
        b = self.b
        index = b.add(ir.Constant(I64, SLOTS + which), b.mul(replica, ir.Constant(I64, 2)))
        return b.gep(self.context, [index])

    def publish(self, source: ir.Value, target: ir.Value) -> None:
        b = self.b
        b.store(b.ptrtoint(source, I64), self.slot(self.replica, 0))
        b.store(b.ptrtoint(target, I64), self.slot(self.replica, 1))
        self.barrier()

    def peer(self, replica: ir.Value, which: int, typ: ir.Type) -> ir.Value:
        b = self.b
        return b.inttoptr(b.load(self.slot(replica, which)), typ)

    def emit(self, name: str, params: dict[str, Any], source: ir.Value, target: ir.Value, size: int,
             dtype: np.dtype) -> None:
        """``target`` = the collective ``name`` of ``source`` (``size`` elements of ``dtype`` each replica)."""
        b = self.b
        typ = mtype(dtype).as_pointer()
        source, target = b.bitcast(source, typ), b.bitcast(target, typ)
        if name == "axis_index":
            store_value(b, b.trunc(self.replica, I32), b.bitcast(target, I32.as_pointer()), np.dtype(np.int32))
            return
        if name == "all_to_all":
            raise Unsupported("'all_to_all' is not compiled natively for replicas (the batched pmap runs it)")
        self.publish(source, target)
        if name == "ppermute":
            self.permute(params["perm"], target, size, dtype, typ)
        elif name == "all_gather":
            def gather(j):
                for_range(b, ir.Constant(I64, 0), ir.Constant(I64, size), lambda i: store_value(
                    b, load_value(b, b.gep(self.peer(j, 0, typ), [i]), dtype),
                    b.gep(target, [b.add(b.mul(j, ir.Constant(I64, size)), i)]), dtype))

            for_range(b, ir.Constant(I64, 0), self.count, gather)
        elif name == "psum_scatter":
            self.scatter(params, source, target, size, dtype, typ)
        else:
            self.reduce(_COMBINE[name], source, target, size, dtype, typ, mean=name == "pmean")
        self.barrier()

    def permute(self, perm: Any, target: ir.Value, size: int, dtype: np.dtype, typ: ir.Type) -> None:
        """``ppermute``: replica ``d`` copies replica ``s``'s buffer for each ``(s, d)`` of ``perm`` (a constant table
        of sources, -1 for none: zeros)."""
        b = self.b
        count = 1 + max(max(pair) for pair in perm) if perm else 1
        sources = [-1] * count
        for s, d in perm:
            sources[d] = s
        table = ir.GlobalVariable(b.module, ir.ArrayType(I64, count), name=b.module.get_unique_name("ppermute"))
        table.initializer = ir.Constant(ir.ArrayType(I64, count), sources)
        table.global_constant, table.linkage = True, "internal"
        inside = b.icmp_unsigned("<", self.replica, ir.Constant(I64, count))
        index = b.select(inside, self.replica, ir.Constant(I64, 0))
        chosen = b.load(b.gep(table, [ir.Constant(I64, 0), index]))
        source_of = b.select(inside, chosen, ir.Constant(I64, -1))
        with b.if_else(b.icmp_signed(">=", source_of, ir.Constant(I64, 0))) as (copy, zero):
            with copy:
                peer = self.peer(source_of, 0, typ)
                for_range(b, ir.Constant(I64, 0), ir.Constant(I64, size), lambda i: store_value(
                    b, load_value(b, b.gep(peer, [i]), dtype), b.gep(target, [i]), dtype))
            with zero:
                for_range(b, ir.Constant(I64, 0), ir.Constant(I64, size), lambda i: store_value(
                    b, ir.Constant(mtype(dtype), None), b.gep(target, [i]), dtype))

    def scatter(self, params: dict[str, Any], source: ir.Value, target: ir.Value, size: int, dtype: np.dtype,
                typ: ir.Type) -> None:
        """``psum_scatter``: target[i] = the sum over replicas j of source_j[r * part + i], replica r's part of the
        sum (its block along axis 0, the one contiguous in memory), added in the order of j."""
        if params["scatter_dimension"] != 0:
            raise Unsupported("'psum_scatter' along an axis other than the first is not compiled natively")
        b = self.b
        part = size // params["axis_size"]
        offset = b.mul(self.replica, ir.Constant(I64, part))
        first = self.peer(ir.Constant(I64, 0), 0, typ)
        for_range(b, ir.Constant(I64, 0), ir.Constant(I64, part), lambda i: store_value(
            b, load_value(b, b.gep(first, [b.add(offset, i)]), dtype), b.gep(target, [i]), dtype))

        def add_replica(j):
            other = self.peer(j, 0, typ)

            def element(i):
                x = load_value(b, b.gep(target, [i]), dtype)
                y = load_value(b, b.gep(other, [b.add(offset, i)]), dtype)
                store_value(b, self._combine("add", dtype, x, y), b.gep(target, [i]), dtype)

            for_range(b, ir.Constant(I64, 0), ir.Constant(I64, part), element)

        for_range(b, ir.Constant(I64, 1), self.count, add_replica)

    def reduce(self, combine: str, source: ir.Value, target: ir.Value, size: int, dtype: np.dtype, typ: ir.Type,
               mean: bool) -> None:
        """target[i] = combine over replicas j of source_j[i], in the order of j (the same bits everywhere)."""
        b = self.b
        if size <= SMALL:
            lo, hi = ir.Constant(I64, 0), ir.Constant(I64, size)
        else:  # this replica's slice; the others' come from their outputs after the next barrier
            lo = b.udiv(b.mul(self.replica, ir.Constant(I64, size)), self.count)
            hi = b.udiv(b.mul(b.add(self.replica, ir.Constant(I64, 1)), ir.Constant(I64, size)), self.count)
        first = self.peer(ir.Constant(I64, 0), 0, typ)
        for_range(b, lo, hi, lambda i: store_value(b, load_value(b, b.gep(first, [i]), dtype), b.gep(target, [i]),
                                                   dtype))

        def add_replica(j):
            other = self.peer(j, 0, typ)

            def element(i):
                x = load_value(b, b.gep(target, [i]), dtype)
                y = load_value(b, b.gep(other, [i]), dtype)
                store_value(b, self._combine(combine, dtype, x, y), b.gep(target, [i]), dtype)

            for_range(b, lo, hi, element)

        for_range(b, ir.Constant(I64, 1), self.count, add_replica)
        if mean:  # the sum over the count (an integer quotient truncates, as XLA's division)
            n = b.uitofp(self.count, mtype(dtype)) if dtype.kind == "f" else b.trunc(self.count, mtype(dtype))
            divide = b.fdiv if dtype.kind == "f" else b.sdiv if dtype.kind == "i" else b.udiv
            for_range(b, lo, hi, lambda i: store_value(b, divide(load_value(b, b.gep(target, [i]), dtype), n),
                                                       b.gep(target, [i]), dtype))
        if size > SMALL:
            self.barrier()

            def copy_slice(j):
                with b.if_then(b.icmp_unsigned("!=", j, self.replica)):
                    other = self.peer(j, 1, typ)
                    start = b.udiv(b.mul(j, ir.Constant(I64, size)), self.count)
                    stop = b.udiv(b.mul(b.add(j, ir.Constant(I64, 1)), ir.Constant(I64, size)), self.count)
                    for_range(b, start, stop, lambda i: store_value(
                        b, load_value(b, b.gep(other, [i]), dtype), b.gep(target, [i]), dtype))

            for_range(b, ir.Constant(I64, 0), self.count, copy_slice)

    def _combine(self, combine: str, dtype: np.dtype, x: ir.Value, y: ir.Value) -> ir.Value:
        if combine == "add" and dtype.kind == "f":  # (in order, no reassociation: every replica the same bits)
            return self.b.fadd(x, y)
        return combine_values(self.cx, combine, dtype, x, y)
