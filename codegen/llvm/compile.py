"""``compile_function``: a straight-line IR function -> one LLVM module -> a native ``Executable``.

The module's C entry is ``void <name>(i8** buffers)``, the buffers being the inputs, the constants and
the outputs in that order (outputs allocated by the caller from the result types); temporaries are
``malloc``ed inside. Nests run in program order, each serially or split across threads; matrix products
call BLAS (``?gemm`` per batch element; ``?syrk`` and a mirror for x @ x.T).

Calls from Python go through a second entry, ``<name>.py(tuple)``, which reads the buffers' addresses
straight out of a tuple of NumPy arrays (the offsets of a tuple's items and of an ndarray's data pointer
are measured once, at import, on live objects; where that fails, the pointer-array entry is used). That
keeps the dispatch of a small call to about one ctypes call, one tuple and one ``np.empty`` per output.
"""

from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass
from typing import Any, Callable

import llvmlite.ir as ir
import numpy as np

from srcjax.codegen.llvm import blas, engine, interrupt, kernels
from srcjax.codegen.llvm.control import has_loops
from srcjax.codegen.llvm.fusion import Gemm, Nest, Plan, Unsupported, plan_function
from srcjax.codegen.llvm.host import HostCalls
from srcjax.codegen.llvm.layout import Buffer
from srcjax.codegen.llvm.kernels import (
    I32,
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
    parallel_function,
    store_value,
)
from srcjax.codegen.llvm.nodes import GatherLoad, collapse, instantiate
from srcjax.codegen.llvm.rules import Lowering, convert, mtype
from srcjax.transpiler.ir import Function

_ROW_MAJOR, _NO_TRANS, _TRANS, _UPPER = 101, 111, 112, 121
_contiguous, _empty = np.ascontiguousarray, np.empty


def _object_offsets() -> tuple[int, int] | None:
    """(offset of a tuple's first item, offset of an ndarray's data pointer) in this interpreter, or None."""
    try:
        probe = np.zeros(3)
        items = (probe,)
        data = probe.ctypes.data

        def find(obj: Any, wanted: int) -> int | None:
            for offset in range(8, 129, 8):
                if ctypes.c_void_p.from_address(id(obj) + offset).value == wanted:
                    return offset
            return None

        other = np.ones(2, np.int8)
        item, pointer = find(items, id(probe)), find(probe, data)
        if item is None or pointer is None or find(other, other.ctypes.data) != pointer:
            return None
        return item, pointer
    except Exception:  # noqa: BLE001 - any surprise means: use the portable entry
        return None


OFFSETS = _object_offsets()


def _keep_freed_memory() -> None:
    """Results are fresh ``np.empty`` arrays. glibc serves large ones with mmap and unmaps them when freed, so
    every call of a step function faults its result pages in again (measured: a momentum update over two
    512x512 leaves 4.5 ms -> 0.36 ms with this). Raise the mmap and trim thresholds so freed buffers are
    reused from the heap. ``SRCJAX_MALLOPT=0`` leaves the allocator alone."""
    if os.environ.get("SRCJAX_MALLOPT", "1") == "0":
        return
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc
        return
    m_trim_threshold, m_mmap_threshold = -1, -3
    mallopt(m_mmap_threshold, 256 << 20)  # (jit(x*x + x*2.0) on 5000x5000: 19 ms -> 10 ms, NumPy's 48 -> 30)
    mallopt(m_trim_threshold, 512 << 20)


_keep_freed_memory()


# From this many multiply-adds (SRCJAX_GEMM_SPLIT_MIN_WORK; off by default), a matrix product is split across
# the pool in blocks of at least GEMM_MIN_ROWS rows, each a single-threaded BLAS call. On a quiet machine
# OpenBLAS's own threads are faster (they share packed panels): measured 0.7-1.0x JAX's MLP step against
# 1.3-1.7x split. But when the cores are shared, OpenBLAS's spinning threads stall (a 6 ms step took 150 ms
# under a load of 2.5 on 2 cores) and the split, whose chunks the caller can take over, does not.
GEMM_SPLIT_MIN_WORK = int(os.environ.get("SRCJAX_GEMM_SPLIT_MIN_WORK") or 0) or None
GEMM_MIN_ROWS = 16
# A batch of products, each under BATCH_SPLIT_MAX_EACH multiply-adds (BLAS threads larger ones itself) and
# together at least BATCH_SPLIT_MIN_WORK, is shared out across the pool by batch element.
BATCH_SPLIT_MAX_EACH = 1 << 22
BATCH_SPLIT_MIN_WORK = 1 << 20


class EntryEmitter:
    """Emits the entry function of a plan: temporaries, then each step, then freeing the temporaries."""

    split_blas = True  # products may be split across the pool (ahead-of-time libraries turn this off)

    def __init__(self, module: ir.Module, plan: Plan, name: str, python_entry: bool = True):
        self.module, self.plan, self.name, self.python_entry = module, plan, name, python_entry
        self.threads = num_threads()
        self.asm_notes: list[str] = []

    def emit(self) -> list[str]:
        if self.plan.control:  # segments joined by branches (codegen/llvm/control.py)
            from srcjax.codegen.llvm.control import ControlEmitter

            ControlEmitter(self.module, self.plan.fn, self.name, blas.gemm_dtypes()).emit()
            if OFFSETS is None or not self.python_entry:
                return [self.name]
            self.emit_tuple_entry(self.module.globals[self.name])
            return [self.name, self.name + ".py"]
        fn = ir.Function(self.module, ir.FunctionType(ir.VoidType(), [PTR.as_pointer()]), name=self.name)
        b = self.b = ir.IRBuilder(fn.append_basic_block("entry"))
        self.cx = Lowering(b)
        self.args = fn.args[0]
        self.malloc = self.cx.declare("malloc", PTR, [I64], pure=False)
        self.free = self.cx.declare("free", ir.VoidType(), [PTR], pure=False)
        temps = {id(t): self.allocate(t.size * t.dtype.itemsize) for t in self.plan.temps}
        self.temps = temps
        for i, step in enumerate(self.plan.steps):
            if isinstance(step, Gemm):
                self.gemm(step)
            else:
                self.nest(step, f"{self.name}.nest{i}")
        for pointer in temps.values():
            b.call(self.free, [pointer])
        b.ret_void()
        names = [self.name]
        if OFFSETS is not None and self.python_entry:
            self.emit_tuple_entry(fn)
            names.append(self.name + ".py")
        return names

    def allocate(self, nbytes: int) -> ir.Value:
        return self.b.call(self.malloc, [ir.Constant(I64, max(int(nbytes), 1))])

    def pointer(self, buffer: Buffer) -> ir.Value:
        """The address of ``buffer``, typed by its dtype."""
        b, plan = self.b, self.plan
        if buffer.kind == "temp":
            raw = self.temps[id(buffer)]
        else:
            slot = {"input": 0, "const": len(plan.inputs), "output": len(plan.inputs) + len(plan.consts)}[buffer.kind]
            raw = b.load(b.gep(self.args, [ir.Constant(I64, slot + buffer.index)]))
        return b.bitcast(raw, mtype(buffer.dtype).as_pointer())

    # -- nests ----------------------------------------------------------------------------------------------
    def nest(self, nest: Nest, name: str) -> None:
        """Run one nest: serially, or in chunks of its outermost axis on the thread pool (a reduction over that
        axis accumulates per chunk into its own partial result, combined afterwards)."""
        b = self.b
        body = collapse(instantiate(self.plan, nest))
        red = body.reduction
        if body.size == 0:  # nothing to iterate: a reduction's result is its identity
            if red is not None and red.target.size:
                self.fill_identity(self.pointer(red.target), red.target.size, red)
            return
        threads = 1  # (the chunks srcjax_parallel runs, each with its slot: their count is fixed here)
        work = body.size * body.cost()
        # (a scatter runs in order: repeated indices; a scan's running axis cannot be split)
        scanned_outermost = red is not None and red.scan and body.reduced[:1] == [True]
        serial = scanned_outermost or any(s.starts is not None for s in body.stores)
        if self.threads > 1 and body.shape and body.shape[0] > 1 and work >= kernels.PARALLEL_MIN_WORK and not serial:
            threads = min(self.threads * kernels.CHUNKS_PER_THREAD, body.shape[0])
        count = threads + (kernels.PARALLEL_SMALL if work < kernels.WAKE_MIN_WORK else 0)
        partial = red is not None and threads > 1 and body.reduced[0]
        emitter = NestEmitter(self.module, body, name, partial_slots=partial)
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
                parallel_function(self.module),
                [self.module.globals[info.packed], array, ir.Constant(I64, body.shape[0]), ir.Constant(I64, count)],
            )
        if partial:
            self.combine_partials(red, pointers[id(red.target)], target, threads)
            b.call(self.free, [b.bitcast(pointers[id(red.target)], PTR)])

    def fill_identity(self, pointer: ir.Value, count: int, red) -> None:
        fill(self.b, self.cx, pointer, count, self.cx.const(red.dtype, identity(red.combine, red.dtype)), red.dtype)

    def combine_partials(self, red, scratch: ir.Value, target: ir.Value, threads: int) -> None:
        b, cx, size = self.b, self.cx, red.target.size
        acc_dtype = accumulator_dtype(red.combine, red.dtype)

        def element(j):
            total = convert(cx, load_value(b, b.gep(scratch, [j]), red.dtype), red.dtype, acc_dtype)
            for t in range(1, threads):
                part = load_value(b, b.gep(scratch, [b.add(j, ir.Constant(I64, t * size))]), red.dtype)
                total = combine_values(cx, red.combine, acc_dtype, total, convert(cx, part, red.dtype, acc_dtype))
            store_value(b, convert(cx, total, acc_dtype, red.dtype), b.gep(target, [j]), red.dtype)

        for_range(b, ir.Constant(I64, 0), ir.Constant(I64, size), element)

    # -- matrix products ----------------------------------------------------------------------------------
    def gemm(self, step: Gemm) -> None:
        """``step.batch`` BLAS calls; for x @ x.T a rank-k update of the upper triangle, then a mirror."""
        b = self.b
        found = blas.find_gemm()
        if found is None:
            raise Unsupported("no BLAS")
        dtype = step.target.dtype
        real = mtype(dtype)
        n_int = ir.IntType(found.int_bits)
        integer = lambda v: ir.Constant(n_int, v)  # noqa: E731
        lhs = b.gep(self.pointer(self.plan.buffers[id(step.lhs.base)]), [ir.Constant(I64, step.lhs.offset)])
        rhs = b.gep(self.pointer(self.plan.buffers[id(step.rhs.base)]), [ir.Constant(I64, step.rhs.offset)])
        out = self.pointer(step.target)
        (lbs, lt, lld), (rbs, rt, rld) = step.lhs_layout, step.rhs_layout
        symbol = found.symbols[dtype]
        if step.symmetric:
            args = [I32, I32, I32, n_int, n_int, real, real.as_pointer(), n_int, real, real.as_pointer(), n_int]
            routine = self.cx.declare(symbol.replace("gemm", "syrk"), ir.VoidType(), args, pure=False)
        else:
            args = [
                I32,
                I32,
                I32,
                n_int,
                n_int,
                n_int,
                real,
                real.as_pointer(),
                n_int,
                real.as_pointer(),
                n_int,
                real,
                real.as_pointer(),
                n_int,
            ]
            routine = self.cx.declare(symbol, ir.VoidType(), args, pure=False)

        def gemm_rows(i, lo, rows, bld=None, lhs=lhs, rhs=rhs, out=out):
            """Rows [lo, lo + rows) of batch element ``i``'s product (``lo``, ``rows``: i64 values)."""
            bld = bld or b
            at = lambda stride, row_stride: bld.add(  # noqa: E731 - element i's block, from row lo
                bld.mul(i, ir.Constant(I64, stride)), bld.mul(lo, ir.Constant(I64, row_stride))
            )
            a = bld.gep(lhs, [at(lbs, 1 if lt else lld)])
            c = bld.gep(out, [at(step.m * step.n, step.n)])
            bb = bld.gep(rhs, [bld.mul(i, ir.Constant(I64, rbs))])
            count = rows if found.int_bits == 64 else bld.trunc(rows, n_int)
            bld.call(
                routine,
                [
                    ir.Constant(I32, _ROW_MAJOR),
                    ir.Constant(I32, _TRANS if lt else _NO_TRANS),
                    ir.Constant(I32, _TRANS if rt else _NO_TRANS),
                    count,
                    integer(step.n),
                    integer(step.k),
                    ir.Constant(real, 1.0),
                    a,
                    integer(lld),
                    bb,
                    integer(rld),
                    ir.Constant(real, 0.0),
                    c,
                    integer(step.n),
                ],
            )

        def call(i):
            if step.symmetric:
                a = b.gep(lhs, [b.mul(i, ir.Constant(I64, lbs))])
                c = b.gep(out, [b.mul(i, ir.Constant(I64, step.m * step.n))])
                b.call(
                    routine,
                    [
                        ir.Constant(I32, _ROW_MAJOR),
                        ir.Constant(I32, _UPPER),
                        ir.Constant(I32, _TRANS if lt else _NO_TRANS),
                        integer(step.m),
                        integer(step.k),
                        ir.Constant(real, 1.0),
                        a,
                        integer(lld),
                        ir.Constant(real, 0.0),
                        c,
                        integer(step.n),
                    ],
                )
                self.mirror_upper(c, step.n, dtype)
                return
            gemm_rows(i, ir.Constant(I64, 0), ir.Constant(I64, step.m))

        if not (step.m and step.n):
            return
        chunks = self.batch_chunks(step, found)
        if chunks > 1:
            self.split_gemm(step, chunks, lhs, rhs, out, gemm_rows, by_batch=True)
            return
        chunks = self.gemm_chunks(step, found)
        if chunks <= 1:
            for_range(b, ir.Constant(I64, 0), ir.Constant(I64, step.batch), call)
            return
        self.split_gemm(step, chunks, lhs, rhs, out, gemm_rows)

    def gemm_chunks(self, step: Gemm, found) -> int:
        """Into how many row blocks a product is split across the pool (1: one BLAS call per batch element,
        threaded by BLAS itself). Splitting needs BLAS's thread control, so BLAS runs one thread per block."""
        work = step.batch * step.m * step.n * step.k
        if step.symmetric or not found.thread_control or not self.split_blas or self.threads < 2:
            return 1
        if GEMM_SPLIT_MIN_WORK is None or work < GEMM_SPLIT_MIN_WORK or step.m < 2 * GEMM_MIN_ROWS:
            return 1
        return min(self.threads, step.m // GEMM_MIN_ROWS)

    def batch_chunks(self, step: Gemm, found) -> int:
        """Into how many runs of batch elements a batch of small products is split across the pool (1: not
        split). BLAS runs a small product on one thread anyway (a convolution's per-group products, 256 of
        about 200k multiply-adds each in DP-SGD's per-example gradients), so the pool's threads share them."""
        if step.symmetric or step.batch < 2 or not found.thread_control or not self.split_blas or self.threads < 2:
            return 1
        each = step.m * step.n * step.k
        if each >= BATCH_SPLIT_MAX_EACH or step.batch * each < BATCH_SPLIT_MIN_WORK:
            return 1
        return min(self.threads * kernels.CHUNKS_PER_THREAD, step.batch)

    def split_gemm(self, step: Gemm, chunks: int, lhs: ir.Value, rhs: ir.Value, out: ir.Value, rows_call,
                   by_batch: bool = False) -> None:
        """The product's rows (or, ``by_batch``, its batch elements) in ``chunks`` blocks on the thread pool,
        each block single-threaded BLAS calls; BLAS's own thread count is 1 meanwhile and restored after."""
        index = self.gemm_count = getattr(self, "gemm_count", 0) + 1
        fn = ir.Function(self.module, kernels.NEST_TYPE, name=f"{self.name}.gemm{index}")
        fn.linkage = "internal"
        buffers, lo, hi, _ = fn.args
        fb = ir.IRBuilder(fn.append_basic_block("entry"))
        kinds = [lhs.type, rhs.type, out.type]
        ptrs = [fb.bitcast(fb.load(fb.gep(buffers, [ir.Constant(I64, j)])), kind) for j, kind in enumerate(kinds)]

        if by_batch:
            for_range(fb, lo, hi, lambda i: rows_call(i, ir.Constant(I64, 0), ir.Constant(I64, step.m), fb, *ptrs))
        else:
            for_range(fb, ir.Constant(I64, 0), ir.Constant(I64, step.batch),
                      lambda i: rows_call(i, lo, fb.sub(hi, lo), fb, *ptrs))
        fb.ret_void()
        b = self.b
        array = b.alloca(PTR, ir.Constant(I64, 3))
        for j, pointer in enumerate((lhs, rhs, out)):
            b.store(b.bitcast(pointer, PTR), b.gep(array, [ir.Constant(I64, j)]))
        get = self.cx.declare(blas.GET_THREADS, I32, [], pure=False)
        set_ = self.cx.declare(blas.SET_THREADS, ir.VoidType(), [I32], pure=False)
        saved = b.call(get, [])
        b.call(set_, [ir.Constant(I32, 1)])
        extent = ir.Constant(I64, step.batch if by_batch else step.m)
        b.call(parallel_function(self.module), [fn, array, extent, ir.Constant(I64, chunks)])
        b.call(set_, [saved])

    def mirror_upper(self, c: ir.Value, n: int, dtype: np.dtype) -> None:
        """c[i, j] = c[j, i] below the diagonal of an n x n row-major matrix."""
        b = self.b

        def row(i):
            def element(j):
                value = load_value(b, b.gep(c, [b.add(b.mul(j, ir.Constant(I64, n)), i)]), dtype)
                store_value(b, value, b.gep(c, [b.add(b.mul(i, ir.Constant(I64, n)), j)]), dtype)

            for_range(b, ir.Constant(I64, 0), i, element)

        for_range(b, ir.Constant(I64, 1), ir.Constant(I64, n), row)

    # -- the Python entry -----------------------------------------------------------------------------------
    def emit_tuple_entry(self, entry: ir.Function) -> None:
        """``<name>.py(PyObject* tuple)``: the data pointers of the tuple's arrays, then the entry."""
        item_offset, data_offset = OFFSETS
        count = len(self.plan.inputs) + len(self.plan.consts) + len(self.plan.outputs)
        fn = ir.Function(self.module, ir.FunctionType(ir.VoidType(), [PTR]), name=self.name + ".py")
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        array = b.alloca(PTR, ir.Constant(I64, max(count, 1)))
        for i in range(count):
            item_address = b.gep(fn.args[0], [ir.Constant(I64, item_offset + 8 * i)])
            item = b.load(b.bitcast(item_address, PTR.as_pointer()))
            data = b.load(b.bitcast(b.gep(item, [ir.Constant(I64, data_offset)]), PTR.as_pointer()))
            b.store(data, b.gep(array, [ir.Constant(I64, i)]))
        b.call(entry, [array])
        b.ret_void()


@dataclass
class Executable:
    """A compiled function: call it with NumPy arrays or scalars (converted to the parameters' dtypes and
    made contiguous where they are not); it returns a tuple of fresh arrays, one per result."""

    fn: Function
    plan: Plan
    llvm_ir: str
    name: str
    address: int
    py_address: int | None
    code: engine.Code  # holds the machine code at those addresses, as long as this Executable lives

    def __post_init__(self) -> None:
        self.param_dtypes = tuple(p.aval.dtype for p in self.fn.params)
        self.result_shapes = tuple(r.aval.shape for r in self.fn.results)
        self.result_dtypes = tuple(r.aval.dtype for r in self.fn.results)
        self.consts = tuple(data for _, data in self.plan.consts)
        work = sum(p.aval.size for p in self.fn.params) + sum(r.aval.size for r in self.fn.results)
        self.work = work  # elements read and written: what the runtime weighs against the cost of dispatch
        self._aliases: dict[int, int] | None = None
        if self.py_address is not None:
            # small calls keep the GIL (cheaper to enter); large ones release it like any ctypes call
            factory = ctypes.PYFUNCTYPE if work < 1 << 15 else ctypes.CFUNCTYPE
            self._call = factory(None, ctypes.py_object)(self.py_address)
        else:
            self._entry = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(self.address)
            self._call = self._call_with_pointers
        if self.plan.host_ops:  # ops computed by NumPy from inside the native code (codegen/llvm/host.py)
            self._host = HostCalls(self.plan.host_ops)
            slot = self.code.global_address(self.name + ".host")
            if not slot:
                raise RuntimeError(f"the JIT has no host-call slot for {self.name}")
            ctypes.c_void_p.from_address(slot).value = self._host.address
            self._call = self._host.checked(self._call)
        if self.plan.control and has_loops(self.fn):  # its loops stop early on Ctrl-C: never return that
            self._call = interrupt.guard(self._call)

    def _call_with_pointers(self, arrays: tuple) -> None:
        pointers = (ctypes.c_void_p * max(len(arrays), 1))(*[a.ctypes.data for a in arrays])
        self._entry(pointers)

    def __call__(self, *args: Any) -> tuple[np.ndarray, ...]:
        # (``map`` of builtins over prebuilt tuples: this is the whole Python-side cost of a call)
        outs = tuple(map(_empty, self.result_shapes, self.result_dtypes))
        self.run(args, outs)
        return outs

    def run(self, args: list, outs: tuple[np.ndarray, ...]) -> None:
        """Compute into ``outs`` (C-contiguous arrays of the result types, allocated by the caller; one may be
        an input's buffer, where ``aliases`` allows it)."""
        self._call(tuple(map(_contiguous, args, self.param_dtypes)) + self.consts + outs)

    def aliases(self) -> dict[int, int]:
        """Input index -> output index: where the entry may write that output over that input's buffer (the
        donated buffer of an argument). Only where it is plainly safe: a straight-line plan whose one map nest
        writing the output reads the input only at the element it writes (each iteration computes all its
        values before it stores any), and no later step reads the input."""
        if self._aliases is None:
            self._aliases = self._find_aliases()
        return self._aliases

    def _find_aliases(self) -> dict[int, int]:
        plan = self.plan
        if plan.control or plan.host_ops:
            return {}
        bodies: dict[int, Any] = {}

        def body(k: int):
            if k not in bodies:
                bodies[k] = instantiate(plan, plan.steps[k])
            return bodies[k]

        def reads(k: int, buffer: Buffer) -> bool:
            step = plan.steps[k]
            if isinstance(step, Gemm):
                return buffer in (plan.buffers[id(step.lhs.base)], plan.buffers[id(step.rhs.base)])
            return any(load.buffer is buffer for load in body(k).loads)

        def writes(step, buffer: Buffer) -> bool:
            if isinstance(step, Gemm):
                return step.target is buffer
            return step.target is buffer or any(b is buffer for _, b in step.stores)

        found: dict[int, int] = {}
        for j, out in enumerate(plan.outputs):
            writers = [k for k, step in enumerate(plan.steps) if writes(step, out)]
            if len(writers) != 1:
                continue
            (k,) = writers
            nest = plan.steps[k]
            if not isinstance(nest, Nest) or nest.combine or nest.product or nest.placement:
                continue
            # (a nest computes all its values before it stores any: only the store into ``out`` matters)
            (store,) = [s for s in body(k).stores if s.buffer is out]
            shape = nest.shape

            def where(coeffs: list[int], offset: int, shape=shape) -> tuple[list[int], int]:
                return [c for c, d in zip(coeffs, shape) if d != 1], offset  # (axes of size 1 do not move)

            written = where(store.coeffs, store.offset)
            result = self.fn.results[j].aval
            for i, inp in enumerate(plan.inputs):
                param = self.fn.params[i].aval
                if i in found or (param.shape, param.dtype) != (result.shape, result.dtype):
                    continue
                loads = [load for load in body(k).loads if load.buffer is inp]
                # (a gather's load moves with its indices: never in place)
                if any(where(load.coeffs, load.offset) != written or isinstance(load, GatherLoad) for load in loads):
                    continue
                if any(reads(later, inp) for later in range(k + 1, len(plan.steps))):
                    continue
                found[i] = j
                break
        return found

    def __repr__(self) -> str:
        types = lambda values: ", ".join(str(v.aval) for v in values)  # noqa: E731
        host = f", {len(self.plan.host_ops)} host calls" if self.plan.host_ops else ""
        return f"Executable({self.name}: ({types(self.fn.params)}) -> ({types(self.fn.results)}){host})"

    def assembly(self) -> str:
        return engine.emit_assembly(self.llvm_ir)

    @property
    def steps(self) -> str:
        from srcjax.codegen.llvm.fusion import describe

        return describe(self.plan)


def compile_function(fn: Function, plan: Plan | None = None, name: str | None = None,
                     load: Callable[[Callable[[], tuple[ir.Module, list[str]]]], engine.CompiledModule] | None = None
                     ) -> Executable | None:
    """Compile ``fn`` natively, or None when it uses something the backend does not lower yet. The disk cache
    passes the ``plan`` it keyed, the entry's symbol ``name`` and ``load(build)``, which returns the machine
    code of its entry and calls ``build() -> (module, entry names)`` only when there is none."""
    if plan is None:
        try:
            plan = plan_function(fn, blas.gemm_dtypes())
        except Unsupported:
            return None
    name = name or engine.unique_name(f"srcjax_{_safe(fn.name)}")

    def build() -> tuple[ir.Module, list[str]]:
        module = engine.new_module(name)
        return module, EntryEmitter(module, plan, name).emit()

    compiled = load(build) if load is not None else engine.compile_module(*build())
    return Executable(fn, plan, compiled.llvm_ir, name, compiled.addresses[name], compiled.addresses.get(name + ".py"),
                      compiled.code)


def unsupported_reason(fn: Function) -> str | None:
    """Why ``fn`` is not compiled natively (None if it is)."""
    try:
        plan_function(fn, blas.gemm_dtypes())
    except Unsupported as e:
        return str(e)
    return None


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c == "_" else "_" for c in name) or "fn"
