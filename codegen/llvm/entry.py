"""The entry function of a straight-line plan: ``void <name>(i8** buffers)``, the buffers being the inputs, the
constants and the outputs in that order (outputs allocated by the caller from the result types); temporaries
are ``malloc``ed inside. Nests run in program order, each serially or split across the thread pool; matrix
products are BLAS calls (``gemm.py``).

Calls from Python go through a second entry, ``<name>.py(tuple)``, which reads the buffers' addresses straight
out of a tuple of NumPy arrays, at the offsets of a tuple's items and of an ndarray's data pointer in this
interpreter. The runtime measures them on live objects (``use_object_offsets``); without them only the
pointer-array entry is emitted. That keeps the dispatch of a small call to about one ctypes call, one tuple
and one ``np.empty`` per output.
"""

from __future__ import annotations

import llvmlite.ir as ir

from srcjax.codegen.llvm import gemm, kernels, pool
from srcjax.codegen.llvm.kernels import (
    I64,
    PTR,
    NestEmitter,
    accumulator_dtype,
    combine_values,
    fill,
    for_range,
    identity,
    load_value,
    num_threads,
    store_value,
)
from srcjax.codegen.llvm.layout import Buffer
from srcjax.codegen.llvm.nodes import collapse, instantiate, tile_target
from srcjax.codegen.llvm.plan import Gemm, Nest, Plan

from srcjax.codegen.llvm.rules import Lowering, convert, mtype
from srcjax.codegen.llvm.table import expensive

# (offset of a tuple's first item, offset of an ndarray's data pointer) in this interpreter, or None
_object_offsets: list[tuple[int, int] | None] = [None]


def use_object_offsets(offsets: tuple[int, int] | None) -> None:
    """Emit Python entries that read a tuple's items and an ndarray's data pointer at these offsets."""
    _object_offsets[0] = offsets


def object_offsets() -> tuple[int, int] | None:
    return _object_offsets[0]


class EntryEmitter:
    """Emits the entry function of a plan: temporaries, then each step, then freeing the temporaries."""

    def __init__(self, module: ir.Module, plan: Plan, name: str, split_blas: bool = True,
                 shared: frozenset[int] = frozenset()):
        self.module, self.plan, self.name = module, plan, name
        self.shared = shared  # ids of buffers the caller may pass as one memory (its nests do not say noalias)
        self.split_blas = split_blas  # products may be split across the pool (ahead-of-time libraries: not)
        self.threads = num_threads()

    def emit(self) -> ir.Function:
        fn = ir.Function(self.module, ir.FunctionType(ir.VoidType(), [PTR.as_pointer()]), name=self.name)
        b = self.b = ir.IRBuilder(fn.append_basic_block("entry"))
        self.cx = Lowering(b)
        self.args = fn.args[0]
        self.malloc = self.cx.declare("malloc", PTR, [I64], pure=False)
        self.free = self.cx.declare("free", ir.VoidType(), [PTR], pure=False)
        # A temporary lives from the step that first uses it to the step that last does: each step runs after a
        # block where the temporaries it is the first to use are allocated, and before one where those it is
        # the last to use are freed (filled in as the steps' code asks for the buffers), so memory a value no
        # longer needs serves the ones after it.
        self.temps, self.allocations, self.last_use = {}, [], {}
        frees = []
        for i, step in enumerate(self.plan.steps):
            allocations = fn.append_basic_block(f"allocate{i}")
            b.branch(allocations)
            b.position_at_end(allocations)
            code = fn.append_basic_block(f"step{i}")
            b.branch(code)
            b.position_at_end(code)
            self.step, self.allocations = i, allocations
            if isinstance(step, Gemm):
                gemm.emit_product(self, step)
            else:
                self.nest(step, f"{self.name}.nest{i}")
            freeing = fn.append_basic_block(f"free{i}")
            b.branch(freeing)
            b.position_at_end(freeing)
            frees.append(freeing)
        b.ret_void()
        for key, last in self.last_use.items():
            at = ir.IRBuilder(frees[last])
            at.position_before(frees[last].terminator)
            at.call(self.free, [self.temps[key]])
        return fn

    def allocate(self, nbytes: int) -> ir.Value:
        return self.b.call(self.malloc, [ir.Constant(I64, max(int(nbytes), 1))])

    def pointer(self, buffer: Buffer) -> ir.Value:
        """The address of ``buffer``, typed by its dtype."""
        b, plan = self.b, self.plan
        if buffer.kind == "temp":
            key = id(buffer)
            if key not in self.temps:  # first used by this step: allocated just before it
                at = ir.IRBuilder(self.allocations)
                at.position_before(self.allocations.terminator)
                self.temps[key] = at.call(self.malloc, [ir.Constant(I64, max(int(buffer.size * buffer.dtype.itemsize),
                                                                             1))])
            self.last_use[key] = self.step
            raw = self.temps[key]
        else:
            slot = {"input": 0, "const": len(plan.inputs), "output": len(plan.inputs) + len(plan.consts)}[buffer.kind]
            raw = b.load(b.gep(self.args, [ir.Constant(I64, slot + buffer.index)]))
        return b.bitcast(raw, mtype(buffer.dtype).as_pointer())

    # -- nests ----------------------------------------------------------------------------------------------
    def nest(self, nest: Nest, name: str) -> None:
        """Run one nest: serially, or in chunks of its outermost axis on the thread pool (a reduction over that
        axis accumulates per chunk into its own partial result, combined afterwards)."""
        b = self.b
        body = tile_target(collapse(instantiate(self.plan, nest)))
        red = body.reduction
        if body.size == 0:  # nothing to iterate: a reduction's result is its identity
            if red is not None and red.target.size:
                self.fill_identity(self.pointer(red.target), red.target.size, red)
            return
        threads = 1  # (the chunks srcjax_parallel runs, each with its slot: their count is fixed here)
        work = body.size * body.cost(expensive)
        # (a scatter runs in order: repeated indices; a scan's running axis cannot be split)
        scanned_outermost = red is not None and red.scan and body.reduced[:1] == [True]
        serial = scanned_outermost or any(s.starts is not None for s in body.stores)
        if self.threads > 1 and body.shape and body.shape[0] > 1 and work >= kernels.PARALLEL_MIN_WORK and not serial:
            threads = min(self.threads * kernels.CHUNKS_PER_THREAD, body.shape[0])
        count = threads + (pool.PARALLEL_SMALL if work < kernels.WAKE_MIN_WORK else 0)
        partial = red is not None and threads > 1 and body.reduced[0]
        emitter = NestEmitter(self.module, body, name, partial_slots=partial, shared=self.shared)
        info = emitter.emit()
        pointers = {id(buf): self.pointer(buf) for buf in info.buffers}
        if red is not None:
            target = pointers[id(red.target)]
            slots = threads if partial else 1
            if partial:
                scratch = self.allocate(slots * red.target.size * red.dtype.itemsize)
                pointers[id(red.target)] = b.bitcast(scratch, target.type)
            if emitter.accumulates_in_memory():
                self.fill_identity(pointers[id(red.target)], slots * red.target.size, red)
        args = [pointers[id(buf)] for buf in info.buffers]
        if threads == 1:
            extent = ir.Constant(I64, body.shape[0] if body.shape else 1)
            b.call(self.module.globals[info.name], [*args, ir.Constant(I64, 0), extent, ir.Constant(I64, 0)])
        else:
            array = b.alloca(PTR, ir.Constant(I64, len(args)))
            for i, arg in enumerate(args):
                b.store(b.bitcast(arg, PTR), b.gep(array, [ir.Constant(I64, i)]))
            b.call(
                pool.parallel_function(self.module),
                [self.module.globals[info.packed], array, ir.Constant(I64, body.shape[0]), ir.Constant(I64, count)],
            )
        if partial:
            self.combine_partials(red, pointers[id(red.target)], target, threads)
            b.call(self.free, [b.bitcast(pointers[id(red.target)], PTR)])

    def fill_identity(self, pointer: ir.Value, count: int, red) -> None:
        fill(self.b, self.cx, pointer, count, self.cx.const(red.dtype, identity(red.combine, red.dtype)), red.dtype)

    def combine_partials(self, red, scratch: ir.Value, target: ir.Value, threads: int) -> None:
        b, cx, size = self.b, self.cx, red.target.size
        acc_dtype = accumulator_dtype(red.combine, red.dtype, red.scan)

        def element(j):
            total = convert(cx, load_value(b, b.gep(scratch, [j]), red.dtype), red.dtype, acc_dtype)
            for t in range(1, threads):
                part = load_value(b, b.gep(scratch, [b.add(j, ir.Constant(I64, t * size))]), red.dtype)
                total = combine_values(cx, red.combine, acc_dtype, total, convert(cx, part, red.dtype, acc_dtype))
            store_value(b, convert(cx, total, acc_dtype, red.dtype), b.gep(target, [j]), red.dtype)

        for_range(b, ir.Constant(I64, 0), ir.Constant(I64, size), element)



def emit_tuple_entry(module: ir.Module, entry: ir.Function, plan: Plan, name: str) -> bool:
    """``<name>.py(PyObject* tuple)``: the data pointers of the tuple's arrays, then ``entry``; False (nothing
    emitted) when the object offsets are not known."""
    if _object_offsets[0] is None:
        return False
    item_offset, data_offset = _object_offsets[0]
    count = len(plan.inputs) + len(plan.consts) + len(plan.outputs)
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR]), name=name + ".py")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    array = b.alloca(PTR, ir.Constant(I64, max(count, 1)))
    for i in range(count):
        item_address = b.gep(fn.args[0], [ir.Constant(I64, item_offset + 8 * i)])
        item = b.load(b.bitcast(item_address, PTR.as_pointer()))
        data = b.load(b.bitcast(b.gep(item, [ir.Constant(I64, data_offset)]), PTR.as_pointer()))
        b.store(data, b.gep(array, [ir.Constant(I64, i)]))
    b.call(entry, [array])
    b.ret_void()
    return True
