"""Matrix products as BLAS calls from an entry function (``entry.py``): the CBLAS signatures (``?gemm`` per batch
element; ``?syrk`` and a mirror for x @ x.T) and the policy for splitting products across the thread pool.

The builder, lowering context and buffer pointers are those of the entry (``entry`` below is its
``EntryEmitter``): a product is one step of its function.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import llvmlite.ir as ir
import numpy as np

from srcjax.codegen.llvm import blas, kernels
from srcjax.codegen.llvm.kernels import I32, I64, PTR, for_range, load_value, store_value
from srcjax.codegen.llvm.plan import Gemm, Unsupported
from srcjax.codegen.llvm.pool import parallel_function
from srcjax.codegen.llvm.rules import mtype
from srcjax.codegen.settings import environ_int

if TYPE_CHECKING:
    from srcjax.codegen.llvm.entry import EntryEmitter

_ROW_MAJOR, _NO_TRANS, _TRANS, _UPPER = 101, 111, 112, 121

# From GEMM_SPLIT_MIN_WORK multiply-adds (SRCJAX_GEMM_SPLIT_MIN_WORK; 0: never), a matrix product runs as blocks of
# rows or of columns on our pool, each block a single-threaded BLAS call, so that products and fused loops share
# one set of workers. OpenBLAS's own threads split a product statically and wait for each other spinning: where
# another process keeps a core busy, the thread sharing it stalls every product (a 2.4 ms MLP step took 7.5 ms
# with two processes spinning on 2 cores), and after a product they spin on, taking cores from the nests that
# follow. The pool's blocks are claimed as they go, so a worker slow to get a core leaves its share to the others.
# Blocks split the dimension whose operand is the cheaper to pack again in every block (rows: the right-hand
# operand; columns: the left), GEMM_CHUNKS_PER_THREAD of them per thread when there is work enough for each.
GEMM_SPLIT_MIN_WORK = environ_int("SRCJAX_GEMM_SPLIT_MIN_WORK", 1 << 18) or None
GEMM_CHUNK_MIN_WORK = 1 << 17
GEMM_CHUNKS_PER_THREAD = environ_int("SRCJAX_GEMM_CHUNKS", 2, least=1)
# Blocks of OpenBLAS's small-product kernel pack nothing, so more of them cost no more: 4 a thread balance the
# blocks across threads that lose their cores for a while (an MLP step beside one spinning process on 2 cores:
# 3.7-4.5 ms against 4.6-5.5 with 2; the same without load and with two spinning processes)
SMALL_CHUNKS_PER_THREAD = environ_int("SRCJAX_GEMM_CHUNKS", 4, least=1)
GEMM_MIN_BLOCK = 16
# A batch of products, each under BATCH_SPLIT_MAX_EACH multiply-adds (BLAS threads larger ones itself) and
# together at least BATCH_SPLIT_MIN_WORK, is shared out across the pool by batch element.
BATCH_SPLIT_MAX_EACH = 1 << 22
BATCH_SPLIT_MIN_WORK = 1 << 20


def emit_product(entry: EntryEmitter, step: Gemm) -> None:
    """``step.batch`` BLAS calls; for x @ x.T a rank-k update of the upper triangle, then a mirror; for a
    product with one row or column, matrix-vector products."""
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

    # a product with one row or one column is a matrix-vector product: ?gemv (BLAS's ?gemm kernels for a single
    # column run 5-10x slower: an RNN cell's W @ h in a scan). With no contraction (k = 0) ?gemv would leave the
    # result unwritten; ?gemm writes zeros.
    vector = not step.symmetric and step.k >= 1 and (step.m == 1 or step.n == 1)
    if vector:
        gemv_args = [I32, I32, n_int, n_int, real, real.as_pointer(), n_int, real.as_pointer(), n_int, real,
                     real.as_pointer(), n_int]
        gemv = entry.cx.declare(symbol.replace("gemm", "gemv"), ir.VoidType(), gemv_args, pure=False)

    def gemv_call(bld, matrix, a, lda, x, x_step, y):
        """y = op(a) x, ``matrix`` being (transposed, rows, columns) of ``a`` as stored (row-major)."""
        trans, rows, cols = matrix
        bld.call(gemv, [ir.Constant(I32, _ROW_MAJOR), ir.Constant(I32, trans), rows, cols, ir.Constant(real, 1.0),
                        a, integer(lda), x, x_step, ir.Constant(real, 0.0), y, integer(1)])

    def gemm_block(i, lo, count, bld=None, lhs=lhs, rhs=rhs, out=out, by_columns=False, small=False):
        """Rows [lo, lo + count) of batch element ``i``'s product, or ``by_columns`` its columns (``lo``,
        ``count``: i64 values); ``small``: with OpenBLAS's small-product kernel (``blas.small_kernel``)."""
        bld = bld or b
        offset = lambda stride, row_stride: bld.add(  # noqa: E731 - element i's block, from row (column) lo
            bld.mul(i, ir.Constant(I64, stride)), bld.mul(lo, ir.Constant(I64, row_stride))
        )
        if by_columns:  # C[:, lo:] = A @ B[:, lo:]
            a = bld.gep(lhs, [bld.mul(i, ir.Constant(I64, lbs))])
            bb = bld.gep(rhs, [offset(rbs, rld if rt else 1)])
            c = bld.gep(out, [offset(step.m * step.n, 1)])
            m, n = integer(step.m), count
        else:  # C[lo:] = A[lo:] @ B
            a = bld.gep(lhs, [offset(lbs, 1 if lt else lld)])
            bb = bld.gep(rhs, [bld.mul(i, ir.Constant(I64, rbs))])
            c = bld.gep(out, [offset(step.m * step.n, step.n)])
            m, n = count, integer(step.n)
        if small:  # (column-major: the product's transpose, C^T = op(B)^T op(A)^T; its integers are 64-bit)
            m, n = (ir.Constant(I64, v.constant) if isinstance(v, ir.Constant) else v for v in (m, n))
            kernel = entry.cx.declare(blas.small_kernel(dtype, ("t" if rt else "n") + ("t" if lt else "n")), I32,
                                      [I64, I64, I64, real.as_pointer(), I64, real, real.as_pointer(), I64,
                                       real.as_pointer(), I64], pure=False)
            bld.call(kernel, [n, m, ir.Constant(I64, step.k), bb, ir.Constant(I64, rld), ir.Constant(real, 1.0), a,
                              ir.Constant(I64, lld), c, ir.Constant(I64, step.n)])
            return
        m, n = (v if isinstance(v, ir.Constant) or found.int_bits == 64 else bld.trunc(v, n_int) for v in (m, n))
        if vector and step.n == 1:  # y = op(A) x
            x_step = integer(1 if rt else rld)
            matrix = [_TRANS, integer(step.k), m] if lt else [_NO_TRANS, m, integer(step.k)]
            gemv_call(bld, matrix, a, lld, bb, x_step, c)
            return
        if vector:  # y = op(B)^T x: one row of the product
            x_step = integer(lld if lt else 1)
            matrix = [_NO_TRANS, n, integer(step.k)] if rt else [_TRANS, integer(step.k), n]
            gemv_call(bld, matrix, bb, rld, a, x_step, c)
            return
        bld.call(
            routine,
            [
                ir.Constant(I32, _ROW_MAJOR),
                ir.Constant(I32, _TRANS if lt else _NO_TRANS),
                ir.Constant(I32, _TRANS if rt else _NO_TRANS),
                m,
                n,
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
        gemm_block(i, ir.Constant(I64, 0), ir.Constant(I64, step.m))

    if not (step.m and step.n):
        return
    chunks = _batch_chunks(entry, step, found)
    if chunks > 1:
        small = not vector and _small_suits(found, step, step.m, step.n)
        _split(entry, step, chunks, lhs, rhs, out, gemm_block, by_batch=True, small=small)
        return
    by_columns = step.n > step.m  # (see _gemm_chunks)
    panel = (step.m, min(step.n, SMALL_PANEL)) if by_columns else (min(step.m, SMALL_PANEL), step.n)
    small = not vector and _small_suits(found, step, *panel)
    chunks = _gemm_chunks(entry, step, found, SMALL_CHUNKS_PER_THREAD if small else GEMM_CHUNKS_PER_THREAD)
    if chunks <= 1:
        for_range(b, ir.Constant(I64, 0), ir.Constant(I64, step.batch), call)
        return
    _split(entry, step, chunks, lhs, rhs, out, gemm_block, by_columns=by_columns, small=small)


# OpenBLAS's small-product kernels (``blas.small_kernel``) run the blocks of a split product (BLAS on one thread)
# when the product has at least SMALL_MIN rows, columns and contraction (the kernel vectorises along the product's
# columns: with 10 of them it ran at a third of ?gemm's rate) and the operands and result of a block of
# SMALL_PANEL rows (columns) hold at most SMALL_MAX_ELEMENTS (it streams them from cache as they lie: 512x2048 @
# 2048x512 ran 1.3x slower). In between it skips ?gemm's packing and zeroing: blocks of an MLP's products
# (128x784 @ 784x128, 196x128 @ 128x512, 128x512 @ (128x512).T) ran 3-20% faster, float64 ones 7-15%. The
# choice depends on the product's shape only, not on the blocks the thread count makes, so that its values do
# not depend on the machine's core count from two up (the kernel sums each element in the same order however the
# product is cut into blocks; ?gemm's order, which a pool of one thread gets, differs from it).
SMALL_MIN = 32
SMALL_PANEL = 128
SMALL_MAX_ELEMENTS = 1 << 20


def _small_suits(found, step: Gemm, m: int, n: int) -> bool:
    """Whether the blocks of ``step`` run with the small-product kernel, judged by a block of ``m`` x ``n``."""
    k = step.k
    return (found.small and not step.symmetric and min(step.m, step.n, k) >= SMALL_MIN
            and m * k + k * n + m * n <= SMALL_MAX_ELEMENTS)

def _gemm_chunks(entry: EntryEmitter, step: Gemm, found, per_thread: int) -> int:
    """Into how many blocks a product is split across the pool (1: one BLAS call per batch element, threaded by
    BLAS itself), up to ``per_thread`` a thread. Splitting needs BLAS's thread control, so that BLAS runs one
    thread per block. (Each ?gemm block packs the other operand again: the blocks split the dimension whose other
    operand is the smaller, columns where the product is wider than tall.)"""
    work = step.batch * step.m * step.n * step.k
    if step.symmetric or not found.thread_control or not entry.split_blas or entry.threads < 2:
        return 1
    if GEMM_SPLIT_MIN_WORK is None or work < GEMM_SPLIT_MIN_WORK:
        return 1
    extent = max(step.m, step.n)  # (the dimension the blocks split)
    return max(1, min(entry.threads * per_thread, work // GEMM_CHUNK_MIN_WORK, extent // GEMM_MIN_BLOCK))

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

def _split(entry: EntryEmitter, step: Gemm, chunks: int, lhs: ir.Value, rhs: ir.Value, out: ir.Value, block_call,
           by_batch: bool = False, by_columns: bool = False, small: bool = False) -> None:
    """The product's rows (its columns, or its batch elements) in ``chunks`` blocks on the thread pool,
    each block single-threaded BLAS calls; BLAS's own thread count is 1 meanwhile, then the host's
    ``THREADS_WANTED``."""
    index = entry.gemm_count = getattr(entry, "gemm_count", 0) + 1
    fn = ir.Function(entry.module, kernels.NEST_TYPE, name=f"{entry.name}.gemm{index}")
    fn.linkage = "internal"
    buffers, lo, hi, _ = fn.args
    fb = ir.IRBuilder(fn.append_basic_block("entry"))
    kinds = [lhs.type, rhs.type, out.type]
    ptrs = [fb.bitcast(fb.load(fb.gep(buffers, [ir.Constant(I64, j)])), kind) for j, kind in enumerate(kinds)]

    if by_batch:
        for_range(fb, lo, hi, lambda i: block_call(i, ir.Constant(I64, 0), ir.Constant(I64, step.m), fb, *ptrs,
                                                   small=small))
    else:
        for_range(fb, ir.Constant(I64, 0), ir.Constant(I64, step.batch),
                  lambda i: block_call(i, lo, fb.sub(hi, lo), fb, *ptrs, by_columns=by_columns, small=small))
    fb.ret_void()
    b = entry.b
    array = b.alloca(PTR, ir.Constant(I64, 3))
    for j, pointer in enumerate((lhs, rhs, out)):
        b.store(b.bitcast(pointer, PTR), b.gep(array, [ir.Constant(I64, j)]))
    set_ = entry.cx.declare(blas.SET_THREADS, ir.VoidType(), [I32], pure=False)
    b.call(set_, [ir.Constant(I32, 1)])
    extent = ir.Constant(I64, step.batch if by_batch else step.n if by_columns else step.m)
    b.call(parallel_function(entry.module), [fn, array, extent, ir.Constant(I64, chunks)])
    wanted = entry.module.globals.get(blas.THREADS_WANTED) or ir.GlobalVariable(entry.module, I32, blas.THREADS_WANTED)
    b.call(set_, [b.load_atomic(wanted, "monotonic", 4)])

def _mirror_upper(entry: EntryEmitter, c: ir.Value, n: int, dtype: np.dtype) -> None:
    """c[i, j] = c[j, i] below the diagonal of an n x n row-major matrix."""
    b = entry.b

    def row(i):
        def element(j):
            value = load_value(b, b.gep(c, [b.add(b.mul(j, ir.Constant(I64, n)), i)]), dtype)
            store_value(b, value, b.gep(c, [b.add(b.mul(i, ir.Constant(I64, n)), j)]), dtype)

        for_range(b, ir.Constant(I64, 0), i, element)

    for_range(b, ir.Constant(I64, 1), ir.Constant(I64, n), row)
