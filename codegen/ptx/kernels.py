"""GPU kernels for the CPU planner's nests, and the same kernels for a host emulation of a small GPU.

Each nest of a fusion plan (``codegen/llvm/plan.py``, its body instantiated and collapsed by
``codegen/llvm/nodes.py``) becomes one kernel, or two:

- a *map* nest (elementwise and broadcast groups, gathers, scatters): a grid-stride loop over the flat
  element index, each thread computing whole elements through the CPU's node evaluator (``NestEmitter``);
  scatters that combine use atomics (``atomicrmw`` where PTX has one, else a compare-and-swap loop);
- a *serial* reduction (a scan, or few reduced elements per result): a grid-stride loop over the results,
  each thread reducing (or scanning) its result's elements in a register;
- a *block* reduction (many reduced elements per result): one block per result (grid-stride over results
  on the grid's x axis), its threads striding over a share of the reduced elements, then a warp reduction
  with shuffles, the warps' totals through shared memory and a last warp reduction. With several shares per
  result (the grid's y axis), each block writes a partial result in the accumulator's dtype and a second
  kernel (*combine*) adds the partials in order: the result does not depend on scheduling.

Indices are 32-bit where the nest has fewer than 2^31 elements (the GPU's integer division is 32-bit).

The host emulation compiles the same per-element code, thread indexing and reductions for the CPU: a map
or serial kernel is a function of the thread and block indices, called for every thread of every block;
a block reduction runs as phases between its synchronisation points, each phase a loop over the block's
threads, with a warp shuffle done as a read of the neighbour's register out of a per-thread array and the
shared memory as an array of the block. The emulated grid is small (blocks of 64 threads, at most 3 blocks
per axis), so that every grid-stride loop, every warp and block reduction and every partial result is
exercised on small arrays, and checked against NumPy in CI, where there is no GPU.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import llvmlite.ir as ir
import numpy as np

from srcjax.codegen.llvm.kernels import (
    I8, I32, I64, PTR, NestEmitter, accumulator_dtype, affine, combine_values, for_range, identity, load_value,
    store_value,
)
from srcjax.codegen.llvm.layout import Buffer
from srcjax.codegen.llvm.nodes import Load, NestBody
from srcjax.codegen.llvm.rules import Lowering, convert, ltype, mtype
from srcjax.codegen.ptx.target import DeviceLowering

WARP = 32
BLOCK = 256  # threads per block on the GPU
MAX_BLOCKS = 132 * 16  # blocks of a block reduction's grid (an H100 has 132 multiprocessors)
MAP_MAX_BLOCKS = 1 << 20  # blocks of a map's or a serial reduction's grid (beyond: grid-stride)
EMULATED_BLOCK = 64  # threads per block in the host emulation: two warps
EMULATED_GRID = 3  # blocks per grid axis in the host emulation, at most
BLOCK_REDUCE_MIN = 128  # reduced elements per result from which a block shares them
SHARE_MIN = 4096  # reduced elements each block's share has at least, when results are split into shares
_SHUFFLE_OFFSETS = (16, 8, 4, 2, 1)
BUFFER_ALIGNMENT = 16  # every buffer a kernel gets starts at a multiple of this (the allocators' blocks do)
VECTOR_BYTES = 16  # a thread of a contiguous map reads and writes this much of each buffer at once


@dataclass
class Kernel:
    """One kernel of a nest: its symbol, the buffers behind its pointer arguments (plan buffers, or a
    ``scratch`` buffer of partial results), its launch shape and what it is (map, serial, block, combine)."""

    name: str
    buffers: list[Buffer]
    grid: tuple[int, int]
    block: int
    kind: str
    fills: list[tuple[Buffer, object]] = field(default_factory=list)  # set to a value before it runs


def _sreg(b: ir.IRBuilder, name: str) -> ir.Value:
    module = b.module
    symbol = f"llvm.nvvm.read.ptx.sreg.{name}"
    fn = module.globals.get(symbol) or ir.Function(module, ir.FunctionType(I32, []), symbol)
    return b.call(fn, [])


def _loop(b: ir.IRBuilder, start: ir.Value, stop: ir.Value, step: ir.Value, body) -> None:
    """``for i in range(start, stop, step): body(i)`` (all of one integer type; step > 0)."""
    fn, pre = b.function, b.block
    loop, after = fn.append_basic_block("gloop"), fn.append_basic_block("gafter")
    b.cbranch(b.icmp_signed("<", start, stop), loop, after)
    b.position_at_end(loop)
    i = b.phi(start.type)
    i.add_incoming(start, pre)
    body(i)
    nxt = b.add(i, step)
    i.add_incoming(nxt, b.block)
    b.cbranch(b.icmp_signed("<", nxt, stop), loop, after)
    b.position_at_end(after)


def _unflatten(b: ir.IRBuilder, flat: ir.Value, shape: list[int]) -> list[ir.Value]:
    """The per-axis indices (i64) of the row-major flat index ``flat`` over ``shape``."""
    out: list[ir.Value] = []
    for k in range(len(shape) - 1, -1, -1):
        if k == 0:
            out.append(flat)
            break
        extent = ir.Constant(flat.type, shape[k])
        out.append(b.urem(flat, extent))
        flat = b.udiv(flat, extent)
    out.reverse()
    return [b.zext(i, I64) if i.type.width < 64 else i for i in out]


class Grid:
    """The thread's place: thread index and block size, block indices and grid sizes (i32 values)."""

    def __init__(self, tid, ntid, bx, nbx, by, nby):
        self.tid, self.ntid, self.bx, self.nbx, self.by, self.nby = tid, ntid, bx, nbx, by, nby


class KernelEmitter(NestEmitter):
    """Emits the kernels of one nest, for the GPU (``device``) or the host emulation."""

    def __init__(self, module: ir.Module, body: NestBody, name: str, device: bool, scratch_index: int = 0):
        super().__init__(module, body, name, partial_slots=False)
        self.device, self.scratch_index = device, scratch_index
        self.block = BLOCK if device else EMULATED_BLOCK
        self.grid_limit = MAX_BLOCKS if device else EMULATED_GRID
        self.kernels: list[Kernel] = []
        self.scratch: Buffer | None = None

    # -- the plan of kernels --------------------------------------------------------------------------------
    def emit(self) -> list[Kernel]:  # type: ignore[override]
        body, red = self.body, self.body.reduction
        if body.size == 0:  # nothing to compute; a reduction's result is its identity
            if red is not None and red.target.size:
                self.kernels.append(Kernel("", [], (0, 0), 0, "fill", [(red.target, identity(red.combine, red.dtype))]))
            return self.kernels
        if red is None:
            self._emit_flat("map")
        elif red.scan or not self._block_reduction():
            self._emit_flat("serial")
        else:
            self._emit_block_reduction()
        return self.kernels

    def kept_shape(self) -> list[int]:
        return [n for n, r in zip(self.body.shape, self.body.reduced) if not r]

    def reduced_shape(self) -> list[int]:
        return [n for n, r in zip(self.body.shape, self.body.reduced) if r]

    def _block_reduction(self) -> bool:
        reduced = math.prod(self.reduced_shape())
        kept = math.prod(self.kept_shape())
        last_reduced = bool(self.body.reduced) and self.body.reduced[-1]
        return reduced >= BLOCK_REDUCE_MIN and (kept < 2048 or last_reduced)

    def _grid(self, work: int) -> int:
        return max(1, min(self.grid_limit, -(-work // self.block)))

    # -- functions ------------------------------------------------------------------------------------------
    def _function(self, name: str, buffers: list[Buffer]) -> tuple[ir.Function, Grid]:
        """A kernel function over ``buffers`` (GPU: a ``ptx_kernel``; host: the body of one thread, the thread and
        block indices its trailing i32 arguments), its builder in ``self.b``."""
        types = [mtype(buf.dtype).as_pointer() for buf in buffers]
        extra = [] if self.device else [I32] * 6
        fn = ir.Function(self.module, ir.FunctionType(ir.VoidType(), types + extra), name=name)
        if self.device:
            fn.calling_convention = "ptx_kernel"
        else:
            fn.linkage = "internal"
        fn.attributes.add("nounwind")
        for arg in fn.args[: len(buffers)]:
            arg.add_attribute("noalias")
            arg.attributes.align = BUFFER_ALIGNMENT
        self._start(fn, buffers)
        if self.device:
            b = self.b
            grid = Grid(*[_sreg(b, r) for r in ("tid.x", "ntid.x", "ctaid.x", "nctaid.x", "ctaid.y", "nctaid.y")])
        else:
            grid = Grid(*fn.args[len(buffers):])
        return fn, grid

    def _start(self, fn: ir.Function, buffers: list[Buffer]) -> None:
        self.fn = fn
        self.b = ir.IRBuilder(fn.append_basic_block("entry"))
        self.cx = (DeviceLowering if self.device else Lowering)(self.b)
        self.pointers = {id(buf): arg for buf, arg in zip(buffers, fn.args)}

    def _emulation_driver(self, kernel: Kernel, thread_fn: ir.Function) -> None:
        """``<name>(i8** buffers)`` on the host: every thread of every block of the kernel's grid, in order."""
        fn = ir.Function(self.module, ir.FunctionType(ir.VoidType(), [PTR.as_pointer()]), name=kernel.name)
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        pointers = [b.bitcast(b.load(b.gep(fn.args[0], [ir.Constant(I64, i)])), mtype(buf.dtype).as_pointer())
                    for i, buf in enumerate(kernel.buffers)]
        c = lambda v: ir.Constant(I32, v)  # noqa: E731
        nbx, nby = kernel.grid
        zero = ir.Constant(I32, 0)

        def per_block(by):
            def per_x(bx):
                _loop(b, zero, c(kernel.block), c(1),
                      lambda tid: b.call(thread_fn, [*pointers, tid, c(kernel.block), bx, c(nbx), by, c(nby)]))
            _loop(b, zero, c(nbx), c(1), per_x)

        _loop(b, zero, c(nby), c(1), per_block)
        b.ret_void()

    def _finish(self, kernel: Kernel, fn: ir.Function) -> None:
        self.b.ret_void()
        if self.device:
            kernel.name = fn.name
        else:
            self._emulation_driver(kernel, fn)
        self.kernels.append(kernel)

    # -- map and serial kernels -----------------------------------------------------------------------------
    def _emit_flat(self, kind: str) -> None:
        """A grid-stride loop over elements (map) or over results, each reduced or scanned by its thread
        (serial)."""
        body = self.body
        buffers = body.buffers()
        outer = body.shape if kind == "map" else self.kept_shape()
        count = math.prod(outer)
        width = self._vector_width() if kind == "map" else 1
        # a thread per element (or per two vector runs): on an H100, x*x + x*2 over 8192^2 float32 moved 2.96 TB/s
        # so, against 2.80 with a grid-stride loop over 2112 blocks (a device-to-device copy: 2.98)
        threads = -(-count // (2 * width)) if width > 1 else count
        blocks = max(1, min(MAP_MAX_BLOCKS if self.device else EMULATED_GRID, -(-threads // self.block)))
        kernel = Kernel(self.name, buffers, (blocks, 1), self.block, kind)
        fn, grid = self._function(self.name + ("_thread" if not self.device else ""), buffers)
        b = self.b
        itype = I32 if count + 2 * blocks * self.block < 2**31 else I64
        wide = (lambda v: v) if itype is I32 else (lambda v: b.zext(v, I64))
        start = b.add(b.mul(wide(grid.bx), wide(grid.ntid)), wide(grid.tid))
        stride = b.mul(wide(grid.nbx), wide(grid.ntid))
        if width > 1:  # runs of ``width`` elements, which LLVM loads and stores as vectors, then the rest
            runs = count // width
            wide64 = (lambda v: b.zext(v, I64)) if itype is I32 else (lambda v: v)

            def two_runs(j):  # (and the run a stride on, when there is one: two vector loads in flight)
                second = b.add(j, stride)
                there = b.icmp_signed("<", second, ir.Constant(itype, runs))
                firsts = [b.mul(wide64(r), ir.Constant(I64, width)) for r in (j, b.select(there, second, j))]
                indices = [[b.add(first, ir.Constant(I64, k))] for first in firsts for k in range(width)]
                self._elements(indices, [None] * width + [there] * width)

            _loop(b, start, ir.Constant(itype, runs), b.add(stride, stride), two_runs)
            _loop(b, b.add(start, ir.Constant(itype, runs * width)), ir.Constant(itype, count), stride,
                  lambda i: self.element(_unflatten(b, i, outer)))
        elif kind == "map":
            _loop(b, start, ir.Constant(itype, count), stride, lambda i: self.element(_unflatten(b, i, outer)))
        else:
            _loop(b, start, ir.Constant(itype, count), stride, lambda i: self._serial_result(_unflatten(b, i, outer)))
        self._finish(kernel, fn)

    def _elements(self, indices: list[list[ir.Value]], guards: list[ir.Value | None]) -> None:
        """A map's elements at several indices: every value first, then the stores (each under its guard)."""
        b = self.b
        computed = []
        for index in indices:
            values: dict[int, ir.Value] = {}
            computed.append([self.value(store.node, index, values) for store in self.body.stores])
        for index, guard, results in zip(indices, guards, computed):
            def store_all(index=index, results=results):
                for store, value in zip(self.body.stores, results):
                    address = affine(b, store.coeffs, store.offset, index)
                    store_value(b, value, b.gep(self.pointers[id(store.buffer)], [address]), store.buffer.dtype)

            if guard is None:
                store_all()
            else:
                with b.if_then(guard):
                    store_all()

    def _vector_width(self) -> int:
        """Elements per run of a one-axis map whose every access walks its buffer contiguously from an aligned
        place (a vector of ``VECTOR_BYTES`` per access), else 1."""
        body = self.body
        if len(body.shape) != 1 or any(s.starts is not None for s in body.stores):
            return 1
        accesses = [(type(load) is Load, load.coeffs, load.offset, load.dtype) for load in body.loads]
        accesses += [(True, s.coeffs, s.offset, s.buffer.dtype) for s in body.stores]
        if not accesses:
            return 1
        width = VECTOR_BYTES // max(np.dtype(dtype).itemsize for *_, dtype in accesses)
        plain = all(simple and coeffs == [1] and offset % width == 0 for simple, coeffs, offset, _ in accesses)
        return width if plain and width > 1 and body.shape[0] >= 4 * width else 1

    def _merge_index(self, kept: list[ir.Value], reduced: list[ir.Value]) -> list[ir.Value]:
        kept, reduced = list(kept), list(reduced)
        return [reduced.pop(0) if r else kept.pop(0) for r in self.body.reduced]

    def _serial_result(self, kept: list[ir.Value]) -> None:
        """One result: its reduced axes looped over in order, accumulating in a register (a scan stores every
        prefix)."""
        b, red = self.b, self.body.reduction
        acc_dtype, start = accumulator_dtype(red.combine, red.dtype, red.scan), identity(red.combine, red.dtype)
        if red.scan and red.combine == "add" and red.dtype.kind == "f":  # (float32 runs in float64, as the CPU's)
            start = -0.0
        acc = self.alloca(ltype(acc_dtype))
        b.store(self.cx.const(acc_dtype, start), acc)
        self.acc = (acc, acc_dtype)
        shape = self.reduced_shape()

        def level(depth: int, reduced: list[ir.Value]) -> None:
            if depth == len(shape):
                self.element(self._merge_index(kept, reduced))
                return
            if red.scan and red.reverse:
                last = ir.Constant(I64, shape[depth] - 1)
                for_range(b, ir.Constant(I64, 0), ir.Constant(I64, shape[depth]),
                          lambda i: level(depth + 1, [*reduced, b.sub(last, i)]))
            else:
                for_range(b, ir.Constant(I64, 0), ir.Constant(I64, shape[depth]),
                          lambda i: level(depth + 1, [*reduced, i]))

        level(0, [])
        self.acc = None
        if not red.scan:
            self._store_result(convert(self.cx, b.load(acc), acc_dtype, red.dtype), kept)

    def _store_result(self, value: ir.Value, kept: list[ir.Value]) -> None:
        b, red = self.b, self.body.reduction
        index = self._merge_index(kept, [ir.Constant(I64, 0)] * len(self.reduced_shape()))
        ptr = b.gep(self.pointers[id(red.target)], [affine(b, red.coeffs, 0, index)])
        store_value(b, value, ptr, red.dtype)

    # -- block reductions -----------------------------------------------------------------------------------
    def _emit_block_reduction(self) -> None:
        body, red = self.body, self.body.reduction
        kept_count, reduced_count = math.prod(self.kept_shape()), math.prod(self.reduced_shape())
        acc_dtype = accumulator_dtype(red.combine, red.dtype, red.scan)
        blocks = min(self.grid_limit, kept_count)
        shares = 1
        if self.device and kept_count < self.grid_limit:  # few results: each one's elements in several shares
            shares = max(1, min(self.grid_limit // kept_count, reduced_count // SHARE_MIN))
        elif not self.device and kept_count < 16:  # (the emulation's small grid: shares of a few results too)
            shares = max(1, min(EMULATED_GRID, reduced_count // 256))
        chunk = -(-reduced_count // shares)
        buffers = body.buffers()
        partials = None
        if shares > 1:
            partials = Buffer("scratch", self.scratch_index, acc_dtype, shares * kept_count)
            buffers = [*buffers, partials]
            self.scratch = partials
        kernel = Kernel(self.name, buffers, (blocks, shares), self.block, "block")
        context = _ReduceContext(kept_count, reduced_count, chunk, acc_dtype, partials)
        if self.device:
            fn, grid = self._function(self.name, buffers)
            self._block_reduce_device(grid, context)
            self.b.ret_void()
            kernel.name = fn.name
        else:
            self._block_reduce_host(kernel, context)
        self.kernels.append(kernel)
        if partials is not None:
            self._emit_combine(partials, shares, kept_count, acc_dtype)

    def _share(self, grid: Grid, tid: ir.Value, k: ir.Value, ctx: "_ReduceContext") -> None:
        """Thread ``tid``'s elements of result ``k`` (i32 values) within the block's share, into ``self.acc``."""
        b = self.b
        kept = _unflatten(b, b.zext(k, I64), self.kept_shape())
        lo = b.mul(b.zext(grid.by, I64), ir.Constant(I64, ctx.chunk))
        hi = b.add(lo, ir.Constant(I64, ctx.chunk))
        hi = b.select(b.icmp_signed("<", hi, ir.Constant(I64, ctx.reduced)), hi, ir.Constant(I64, ctx.reduced))
        reduced_shape = self.reduced_shape()
        _loop(b, b.add(lo, b.zext(tid, I64)), hi, b.zext(grid.ntid, I64),
              lambda r: self.element(self._merge_index(kept, _unflatten(b, r, reduced_shape))))

    def _write(self, grid: Grid, k: ir.Value, value: ir.Value, ctx: "_ReduceContext") -> None:
        """A block's total of result ``k``: into the target, or its share's partial result."""
        b, red = self.b, self.body.reduction
        if ctx.partials is None:
            kept = _unflatten(b, b.zext(k, I64), self.kept_shape())
            self._store_result(convert(self.cx, value, ctx.acc_dtype, red.dtype), kept)
            return
        slot = b.add(b.mul(b.zext(grid.by, I64), ir.Constant(I64, ctx.kept)), b.zext(k, I64))
        store_value(b, value, b.gep(self.pointers[id(ctx.partials)], [slot]), ctx.acc_dtype)

    def _combine(self, x: ir.Value, y: ir.Value, dtype: np.dtype) -> ir.Value:
        return combine_values(self.cx, self.body.reduction.combine, dtype, x, y)

    def _block_reduce_device(self, grid: Grid, ctx: "_ReduceContext") -> None:
        b, cx = self.b, self.cx
        warps = self.block // WARP
        shared_type = ir.ArrayType(ltype(ctx.acc_dtype) if ctx.acc_dtype.kind != "b" else I8, warps)
        shared = ir.GlobalVariable(self.module, shared_type, f"{self.fn.name}_shared", addrspace=3)
        shared.linkage = "internal"
        shared.initializer = ir.Constant(shared_type, ir.Undefined)
        lane = b.and_(grid.tid, ir.Constant(I32, WARP - 1))
        warp = b.lshr(grid.tid, ir.Constant(I32, 5))
        ident = cx.const(ctx.acc_dtype, identity(self.body.reduction.combine, self.body.reduction.dtype))
        acc = self.alloca(ltype(ctx.acc_dtype))

        def per_result(k):
            b.store(ident, acc)
            self.acc = (acc, ctx.acc_dtype)
            self._share(grid, grid.tid, k, ctx)
            self.acc = None
            value = self._warp_reduce(b.load(acc), ctx.acc_dtype)
            slot = lambda i: b.gep(shared, [ir.Constant(I32, 0), i])  # noqa: E731
            with b.if_then(b.icmp_unsigned("==", lane, ir.Constant(I32, 0))):
                _store_register(b, value, slot(warp), ctx.acc_dtype)
            self._barrier()
            with b.if_then(b.icmp_unsigned("==", warp, ir.Constant(I32, 0))):
                inside = b.icmp_unsigned("<", lane, ir.Constant(I32, warps))
                safe = b.select(inside, lane, ir.Constant(I32, 0))
                total = b.select(inside, _load_register(b, slot(safe), ctx.acc_dtype), ident)
                total = self._warp_reduce(total, ctx.acc_dtype)
                with b.if_then(b.icmp_unsigned("==", lane, ir.Constant(I32, 0))):
                    self._write(grid, k, total, ctx)
            self._barrier()  # (the shared totals are read before the next result's overwrite them)

        _loop(b, grid.bx, ir.Constant(I32, ctx.kept), grid.nbx, per_result)

    def _barrier(self) -> None:
        module = self.module
        fn = module.globals.get("llvm.nvvm.barrier0") or ir.Function(
            module, ir.FunctionType(ir.VoidType(), []), "llvm.nvvm.barrier0")
        self.b.call(fn, [])

    def _warp_reduce(self, value: ir.Value, dtype: np.dtype) -> ir.Value:
        """Lane 0 ends with the warp's total: each step combines a lane's value with the one ``offset`` lanes up."""
        for offset in _SHUFFLE_OFFSETS:
            value = self._combine(value, _shuffle_down(self.b, value, offset), dtype)
        return value

    def _block_reduce_host(self, kernel: Kernel, ctx: "_ReduceContext") -> None:
        """The block reduction as phases, each a loop over the block's threads: per-thread registers that live
        across a synchronisation point are arrays indexed by the thread."""
        fn = ir.Function(self.module, ir.FunctionType(ir.VoidType(), [PTR.as_pointer()]), name=kernel.name)
        self._start(fn, [])
        b, cx = self.b, self.cx
        self.pointers = {
            id(buf): b.bitcast(b.load(b.gep(fn.args[0], [ir.Constant(I64, i)])), mtype(buf.dtype).as_pointer())
            for i, buf in enumerate(kernel.buffers)
        }
        c = lambda v: ir.Constant(I32, v)  # noqa: E731
        threads, warps = kernel.block, kernel.block // WARP
        reg = ltype(ctx.acc_dtype)
        registers = b.alloca(reg, c(threads))
        neighbours = b.alloca(reg, c(threads))
        shared = b.alloca(reg, c(warps))
        acc = self.alloca(reg)
        ident = cx.const(ctx.acc_dtype, identity(self.body.reduction.combine, self.body.reduction.dtype))
        nbx, nby = kernel.grid
        at = lambda array, i: b.gep(array, [i])  # noqa: E731

        def threads_loop(body):
            _loop(b, c(0), c(threads), c(1), body)

        def warp_reduce():
            for offset in _SHUFFLE_OFFSETS:
                def read(tid, offset=offset):  # shfl.down: a lane past the warp's end reads its own value
                    lane = b.and_(tid, c(WARP - 1))
                    source = b.select(b.icmp_unsigned("<", b.add(lane, c(offset)), c(WARP)), b.add(tid, c(offset)), tid)
                    b.store(b.load(at(registers, source)), at(neighbours, tid))
                threads_loop(read)
                threads_loop(lambda tid: b.store(
                    self._combine(b.load(at(registers, tid)), b.load(at(neighbours, tid)), ctx.acc_dtype),
                    at(registers, tid)))

        def per_block(by):
            def per_x(bx):
                def per_result(k):
                    grid = Grid(None, c(threads), bx, c(nbx), by, c(nby))

                    def share(tid):
                        b.store(ident, acc)
                        self.acc = (acc, ctx.acc_dtype)
                        self._share(grid, tid, k, ctx)
                        self.acc = None
                        b.store(b.load(acc), at(registers, tid))

                    threads_loop(share)
                    warp_reduce()

                    def to_shared(tid):
                        with b.if_then(b.icmp_unsigned("==", b.and_(tid, c(WARP - 1)), c(0))):
                            b.store(b.load(at(registers, tid)), at(shared, b.lshr(tid, c(5))))

                    threads_loop(to_shared)  # (the barrier: every warp's total is in shared memory)

                    def from_shared(tid):
                        lane = b.and_(tid, c(WARP - 1))
                        with b.if_then(b.icmp_unsigned("<", tid, c(WARP))):
                            inside = b.icmp_unsigned("<", lane, c(warps))
                            safe = b.select(inside, lane, c(0))
                            b.store(b.select(inside, b.load(at(shared, safe)), ident), at(registers, tid))

                    threads_loop(from_shared)
                    warp_reduce()
                    self._write(grid, k, b.load(at(registers, c(0))), ctx)

                _loop(b, bx, c(ctx.kept), c(nbx), per_result)

            _loop(b, c(0), c(nbx), c(1), per_x)

        _loop(b, c(0), c(nby), c(1), per_block)
        b.ret_void()

    def _emit_combine(self, partials: Buffer, shares: int, kept_count: int, acc_dtype: np.dtype) -> None:
        """The second pass: each result's partials combined in share order, into the target."""
        red = self.body.reduction
        buffers = [red.target, partials]
        name = self.name + "_combine"
        kernel = Kernel(name, buffers, (self._grid(kept_count), 1), self.block, "combine")
        fn, grid = self._function(name + ("_thread" if not self.device else ""), buffers)
        b = self.b
        start = b.add(b.mul(grid.bx, grid.ntid), grid.tid)

        def result(k):
            k64 = b.zext(k, I64)
            source = self.pointers[id(partials)]
            total = load_value(b, b.gep(source, [k64]), acc_dtype)
            for s in range(1, shares):
                part = load_value(b, b.gep(source, [b.add(k64, ir.Constant(I64, s * kept_count))]), acc_dtype)
                total = self._combine(total, part, acc_dtype)
            self._store_result(convert(self.cx, total, acc_dtype, red.dtype), _unflatten(b, k64, self.kept_shape()))

        _loop(b, start, ir.Constant(I32, kept_count), b.mul(grid.nbx, grid.ntid), result)
        self._finish(kernel, fn)

    # -- scatters: atomics ----------------------------------------------------------------------------------
    def scatter(self, store, value, index, values) -> None:
        if store.combine is None:  # (repeated indices: one of the writes wins, as on JAX's GPUs)
            super().scatter(store, value, index, values)
            return
        b = self.b
        address, inside = self.shifted(affine(b, store.coeffs, store.offset, index), store.starts, store.clip,
                                       not store.clip, index, values)

        def write():
            ptr = b.gep(self.pointers[id(store.buffer)], [address])
            _atomic_combine(self.cx, store.combine, store.buffer.dtype, ptr, value)

        if inside is None:
            write()
        else:
            with b.if_then(inside):
                write()


@dataclass
class _ReduceContext:
    kept: int  # results
    reduced: int  # elements per result
    chunk: int  # elements per share
    acc_dtype: np.dtype
    partials: Buffer | None


def _store_register(b: ir.IRBuilder, value: ir.Value, ptr: ir.Value, dtype: np.dtype) -> None:
    b.store(b.zext(value, I8) if dtype.kind == "b" else value, ptr)


def _load_register(b: ir.IRBuilder, ptr: ir.Value, dtype: np.dtype) -> ir.Value:
    value = b.load(ptr)
    return b.trunc(value, ir.IntType(1)) if dtype.kind == "b" else value


def _shuffle_down(b: ir.IRBuilder, value: ir.Value, offset: int) -> ir.Value:
    """``shfl.sync.down`` of any register type: 32-bit words, a 64-bit value as two."""
    module = b.module
    symbol = "llvm.nvvm.shfl.sync.down.i32"
    fn = module.globals.get(symbol) or ir.Function(module, ir.FunctionType(I32, [I32] * 4), symbol)

    def word(v):
        return b.call(fn, [ir.Constant(I32, -1), v, ir.Constant(I32, offset), ir.Constant(I32, WARP - 1)])

    typ = value.type
    if isinstance(typ, ir.FloatType):
        return b.bitcast(word(b.bitcast(value, I32)), typ)
    if isinstance(typ, ir.DoubleType) or (isinstance(typ, ir.IntType) and typ.width == 64):
        bits = value if isinstance(typ, ir.IntType) else b.bitcast(value, I64)
        low = word(b.trunc(bits, I32))
        high = word(b.trunc(b.lshr(bits, ir.Constant(I64, 32)), I32))
        joined = b.or_(b.zext(low, I64), b.shl(b.zext(high, I64), ir.Constant(I64, 32)))
        return joined if isinstance(typ, ir.IntType) else b.bitcast(joined, typ)
    if typ.width == 32:
        return word(value)
    return b.trunc(word(b.zext(value, I32)), typ)


def _atomic_combine(cx: Lowering, combine: str, dtype: np.dtype, ptr: ir.Value, value: ir.Value) -> None:
    """``*ptr = combine(*ptr, value)`` atomically: ``atomicrmw`` for float and integer adds and integer extrema,
    else a compare-and-swap loop on the element's bits."""
    b, dtype = cx.b, np.dtype(dtype)
    if dtype.kind in "iu" and combine in ("add", "max", "min"):
        op = combine if combine == "add" or dtype.kind == "i" else "u" + combine
        b.atomic_rmw(op, ptr, value, "monotonic")
        return
    if dtype.kind == "f" and combine == "add":
        b.atomic_rmw("fadd", ptr, value, "monotonic")
        return
    bits = ir.IntType(dtype.itemsize * 8)
    word_ptr = b.bitcast(ptr, bits.as_pointer())
    first = b.load(word_ptr)
    pre = b.block
    loop, done = b.function.append_basic_block("cas"), b.function.append_basic_block("cas.done")
    b.branch(loop)
    b.position_at_end(loop)
    seen = b.phi(bits)
    seen.add_incoming(first, pre)
    if dtype.kind == "b":
        old = b.trunc(seen, ir.IntType(1))
        new = b.zext(combine_values(cx, combine, dtype, old, value), bits)
    elif dtype.kind == "f":
        new = b.bitcast(combine_values(cx, combine, dtype, b.bitcast(seen, ltype(dtype)), value), bits)
    else:
        new = combine_values(cx, combine, dtype, seen, value)
    pair = b.cmpxchg(word_ptr, seen, new, "monotonic", "monotonic")
    found = b.extract_value(pair, 0)
    seen.add_incoming(found, b.block)
    b.cbranch(b.extract_value(pair, 1), done, loop)
    b.position_at_end(done)
