"""Matrix products as BLAS calls from an entry function (``entry.py``): the CBLAS signatures (``?gemm`` per batch
element; ``?syrk`` and a mirror for x @ x.T) and the policy for splitting products across the thread pool.

The builder, lowering context and buffer pointers are those of the entry (``entry`` below is its
``EntryEmitter``): a product is one step of its function.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import llvmlite.ir as ir
import numpy as np

from srcjax.codegen.llvm import blas, kernels
from srcjax.codegen.llvm.kernels import I32, I64, PTR, for_range, load_value, store_value
from srcjax.codegen.llvm.plan import Gemm, Unsupported
from srcjax.codegen.llvm.pool import parallel_function
from srcjax.codegen.llvm.rules import mtype

if TYPE_CHECKING:
    from srcjax.codegen.llvm.entry import EntryEmitter

_ROW_MAJOR, _NO_TRANS, _TRANS, _UPPER = 101, 111, 112, 121

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


def emit_product(entry: EntryEmitter, step: Gemm) -> None:
    """``step.batch`` BLAS calls; for x @ x.T a rank-k update of the upper triangle, then a mirror."""
    b = entry.b
    found = blas.find_gemm()
    if found is None:
        raise Unsupported("no BLAS")
    dtype = step.target.dtype
    real = mtype(dtype)
    n_int = ir.IntType(found.int_bits)
    integer = lambda v: ir.Constant(n_int, v)  # noqa: E731
    lhs = b.gep(entry.pointer(entry.plan.buffers[id(step.lhs.base)]), [ir.Constant(I64, step.lhs.offset)])
    rhs = b.gep(entry.pointer(entry.plan.buffers[id(step.rhs.base)]), [ir.Constant(I64, step.rhs.offset)])
    out = entry.pointer(step.target)
    (lbs, lt, lld), (rbs, rt, rld) = step.lhs_layout, step.rhs_layout
    symbol = found.symbols[dtype]
    if step.symmetric:
        args = [I32, I32, I32, n_int, n_int, real, real.as_pointer(), n_int, real, real.as_pointer(), n_int]
        routine = entry.cx.declare(symbol.replace("gemm", "syrk"), ir.VoidType(), args, pure=False)
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
        routine = entry.cx.declare(symbol, ir.VoidType(), args, pure=False)

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
            _mirror_upper(entry, c, step.n, dtype)
            return
        gemm_rows(i, ir.Constant(I64, 0), ir.Constant(I64, step.m))

    if not (step.m and step.n):
        return
    chunks = _batch_chunks(entry, step, found)
    if chunks > 1:
        _split(entry, step, chunks, lhs, rhs, out, gemm_rows, by_batch=True)
        return
    chunks = _gemm_chunks(entry, step, found)
    if chunks <= 1:
        for_range(b, ir.Constant(I64, 0), ir.Constant(I64, step.batch), call)
        return
    _split(entry, step, chunks, lhs, rhs, out, gemm_rows)

def _gemm_chunks(entry: EntryEmitter, step: Gemm, found) -> int:
    """Into how many row blocks a product is split across the pool (1: one BLAS call per batch element,
    threaded by BLAS itself). Splitting needs BLAS's thread control, so BLAS runs one thread per block."""
    work = step.batch * step.m * step.n * step.k
    if step.symmetric or not found.thread_control or not entry.split_blas or entry.threads < 2:
        return 1
    if GEMM_SPLIT_MIN_WORK is None or work < GEMM_SPLIT_MIN_WORK or step.m < 2 * GEMM_MIN_ROWS:
        return 1
    return min(entry.threads, step.m // GEMM_MIN_ROWS)

def _batch_chunks(entry: EntryEmitter, step: Gemm, found) -> int:
    """Into how many runs of batch elements a batch of small products is split across the pool (1: not
    split). BLAS runs a small product on one thread anyway (a convolution's per-group products, 256 of
    about 200k multiply-adds each in DP-SGD's per-example gradients), so the pool's threads share them."""
    if step.symmetric or step.batch < 2 or not found.thread_control or not entry.split_blas or entry.threads < 2:
        return 1
    each = step.m * step.n * step.k
    if each >= BATCH_SPLIT_MAX_EACH or step.batch * each < BATCH_SPLIT_MIN_WORK:
        return 1
    return min(entry.threads * kernels.CHUNKS_PER_THREAD, step.batch)

def _split(entry: EntryEmitter, step: Gemm, chunks: int, lhs: ir.Value, rhs: ir.Value, out: ir.Value, rows_call,
               by_batch: bool = False) -> None:
    """The product's rows (or, ``by_batch``, its batch elements) in ``chunks`` blocks on the thread pool,
    each block single-threaded BLAS calls; BLAS's own thread count is 1 meanwhile and restored after."""
    index = entry.gemm_count = getattr(entry, "gemm_count", 0) + 1
    fn = ir.Function(entry.module, kernels.NEST_TYPE, name=f"{entry.name}.gemm{index}")
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
    b = entry.b
    array = b.alloca(PTR, ir.Constant(I64, 3))
    for j, pointer in enumerate((lhs, rhs, out)):
        b.store(b.bitcast(pointer, PTR), b.gep(array, [ir.Constant(I64, j)]))
    get = entry.cx.declare(blas.GET_THREADS, I32, [], pure=False)
    set_ = entry.cx.declare(blas.SET_THREADS, ir.VoidType(), [I32], pure=False)
    saved = b.call(get, [])
    b.call(set_, [ir.Constant(I32, 1)])
    extent = ir.Constant(I64, step.batch if by_batch else step.m)
    b.call(parallel_function(entry.module), [fn, array, extent, ir.Constant(I64, chunks)])
    b.call(set_, [saved])

def _mirror_upper(entry: EntryEmitter, c: ir.Value, n: int, dtype: np.dtype) -> None:
    """c[i, j] = c[j, i] below the diagonal of an n x n row-major matrix."""
    b = entry.b

    def row(i):
        def element(j):
            value = load_value(b, b.gep(c, [b.add(b.mul(j, ir.Constant(I64, n)), i)]), dtype)
            store_value(b, value, b.gep(c, [b.add(b.mul(i, ir.Constant(I64, n)), j)]), dtype)

        for_range(b, ir.Constant(I64, 0), i, element)

    for_range(b, ir.Constant(I64, 1), ir.Constant(I64, n), row)
