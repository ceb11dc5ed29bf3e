"""The thread pool behind ``srcjax_parallel``, emitted in LLVM IR: persistent workers that run the chunks of
a nest (codegen/llvm/kernels.py) beside the calling thread.

Everything is LLVM IR calling the C library (pthreads; on Linux the futex system call; clock_gettime), so
it needs no compiler and is cached and linked ahead of time like any other compiled code. The pool's
state lives in the module's globals: one pool per process (per shared library, ahead of time).
"""

from __future__ import annotations

import ctypes
from typing import Callable

import llvmlite.ir as ir

from srcjax.codegen.llvm import engine
from srcjax.codegen.llvm.kernels import I32, I64, NEST_TYPE, PTR, for_range, num_threads

PARALLEL = "srcjax_parallel"
PARALLEL_TYPE = ir.FunctionType(ir.VoidType(), [NEST_TYPE.as_pointer(), PTR.as_pointer(), I64, I64])
# added to the chunk count: the task is small, not worth waking sleeping workers for (only awake ones help)
PARALLEL_SMALL = 1 << 32


def parallel_function(module: ir.Module) -> ir.Function:
    """``srcjax_parallel(nest, buffers, n, chunks)`` declared in ``module``; it is compiled once per process and
    bound by symbol, so modules do not each carry a copy."""
    bind_runtime()
    if PARALLEL in module.globals:
        return module.globals[PARALLEL]
    return ir.Function(module, PARALLEL_TYPE, name=PARALLEL)


# an i32 of the host's that says the machine is crowded: at most one core is free of other processes' threads
# (``blas.fit_threads_to_load`` sets it). A parallel call that is slow there is slow because other processes
# took a core for a while, not because sharing does not pay: ``srcjax_parallel`` then does not back off to
# running chunks serially. (The scheduler shares the cores per thread, so one thread of ours beside two
# spinning processes on 2 cores gets half a core and two get one: an MLP step took 7.2-8.0 ms on average
# serially and 6.6 in the pool, JAX 6.5-7.0.)
CROWDED = "srcjax_pool_crowded"
_crowded = ctypes.c_int32(0)


def set_crowded(crowded: bool) -> None:
    _crowded.value = int(crowded)


# an i64 of the host's: how many calls ran their chunks serially because the pool was backing off after calls
# it judged not to have paid (``PoolEmitter.judge``)
BACKED_OFF = "srcjax_pool_backed_off"
_backed_off = ctypes.c_int64(0)


def backed_off_calls() -> int:
    """How many parallel calls of this process ran serially so far because the pool was backing off."""
    return _backed_off.value


def bind_runtime(load: Callable[[Callable[[], tuple[ir.Module, list[str], int]]], engine.Code] | None = None) -> None:
    """Compile ``srcjax_parallel`` (or have ``load(build)`` load it: the disk cache) and bind its symbol for the
    life of the process, unless that is done already."""
    engine.add_symbol(CROWDED, ctypes.addressof(_crowded))
    engine.add_symbol(BACKED_OFF, ctypes.addressof(_backed_off))
    engine.bind_once(PARALLEL, emit_runtime, load)


def emit_runtime(module: ir.Module, host_flag: bool = True) -> None:
    """Emit ``srcjax_parallel`` and its thread pool into ``module``; ``host_flag``: it reads this process's
    ``CROWDED`` flag (an ahead-of-time library, which has no such host, does not)."""
    PoolEmitter(module, host_flag).emit()

TASK = ir.LiteralStructType([NEST_TYPE.as_pointer(), PTR.as_pointer(), I64])  # (nest, buffers, n)
IDLE_SPIN_NS = 50_000  # an idle worker polls this long for the next task before it sleeps in the kernel
# and this long while the machine is crowded (``CROWDED``): the scheduler shares the cores per thread, so a worker
# polling for the next task burns this process's share of them (an MLP step beside one spinning process on 2
# cores: 5.4-5.8 ms with a 50 us poll, 4.4-5.3 ms with 5 us, its CPU time 0.3-0.5 ms less)
CROWDED_IDLE_SPIN_NS = 5_000
WAIT_SPIN_NS = 20_000  # the caller polls this long for its workers' chunks before it sleeps
MAX_STRIKES = 8  # a pool that did not pay is left alone for up to 2**MAX_STRIKES - 1 calls (0: never)
# how much longer than its chunks one after the other a call must take to count as not paying: a worker or the
# caller that lost its core for a time slice (a millisecond or so), not a worker slow to wake or two chunks
# sharing the memory bus (a 1.6 MB update after a product, 8 chunks of ~3 us, took ~15 us more in the pool than 8
# times its fastest chunk: without this margin it struck on every call, and as the back-off is the pool's, not
# the task's, the 0.6 ms product before it then ran on one core nearly always, 1.15 ms a call instead of 0.65)
BACKOFF_MIN_LOSS_NS = 100_000
_FUTEX = {"x86_64": 202, "aarch64": 98}  # Linux system call numbers of futex
_FUTEX_WAIT_PRIVATE, _FUTEX_WAKE_PRIVATE, _SIG_SETMASK, _CLOCK_MONOTONIC = 128, 129, 2, 1
_SPIN_HINT = {"x86_64": ("llvm.x86.sse2.pause", []), "aarch64": ("llvm.aarch64.hint", [1])}  # pause; yield


def _extern(module: ir.Module, name: str, ret: ir.Type, args: list[ir.Type], var_arg: bool = False) -> ir.Function:
    if name in module.globals:
        return module.globals[name]
    return ir.Function(module, ir.FunctionType(ret, args, var_arg=var_arg), name=name)


def has_futex(module: ir.Module) -> bool:
    return "linux" in module.triple and module.triple.split("-")[0] in _FUTEX


def futex(b: ir.IRBuilder, word: ir.Value, op: int, value: ir.Value) -> None:
    """The futex system call on the i32 at ``word`` (Linux: ``has_futex``)."""
    module = b.module
    syscall = _extern(module, "syscall", I64, [I64], var_arg=True)
    null = ir.Constant(PTR, None)
    number = _FUTEX[module.triple.split("-")[0]]
    b.call(syscall, [ir.Constant(I64, number), word, ir.Constant(I64, op), value, null, null, null])


def spin_hint(b: ir.IRBuilder) -> None:
    """Tell the core this is a polling loop (it yields to its sibling hyperthread)."""
    hint = _SPIN_HINT.get(b.module.triple.split("-")[0])
    if hint is not None:
        name, args = hint
        b.call(_extern(b.module, name, ir.VoidType(), [I32] * len(args)), [ir.Constant(I32, a) for a in args])


class PoolEmitter:
    """``srcjax_parallel(nest, buffers, n, chunks)`` runs ``nest`` over [0, n) as ``chunks`` chunks, chunk t
    being about [t n / chunks, (t + 1) n / chunks) (long ones aligned to 16) with slot t, on a pool of
    persistent worker threads: the caller and up to num_threads() - 1 workers, started on first use.
    ``chunks`` plus PARALLEL_SMALL marks a small task: it runs in the caller if every worker sleeps.

    The pool's state is a handful of globals. The caller takes the pool with a compare-and-swap of ``lock``
    from 0 to its process id; starts the missing workers (after a fork the child has none: the pool
    remembers the pid it started them in); writes the task; publishes ``ticket = chunks << 32`` (release);
    bumps the generation ``wake``, and wakes workers that sleep on it (a futex). Then it claims chunks like
    any worker, polls ``done`` for WAIT_SPIN_NS and then sleeps on it until every chunk is finished. Chunks
    are claimed with a fetch-and-add on ``ticket`` (its low half is the next chunk), so a worker that is slow
    to wake, or could not be started, leaves its share to the others. After each task a worker polls
    ``wake`` for IDLE_SPIN_NS (the next nest often follows at once), then sleeps.

    A caller that finds the pool busy (another thread of its process is in it) runs the chunks itself, one
    after the other: the same chunks and slots, so results do not depend on the path. A lock holding
    another pid was inherited through fork from a thread that does not exist in this process: it is taken.
    When the pool made a call slower than running it alone (no idle core: see ``judge``), the next calls
    run serially for a while, unless the host says the machine is crowded (``CROWDED``): other processes
    then keep the cores busy, and serial calls would only get this process a smaller share of them.
    """

    def __init__(self, module: ir.Module, host_flag: bool = True):
        self.module = module
        if host_flag:  # (the host's flag and counter, bound by symbol)
            self.crowded = ir.GlobalVariable(module, I32, name=CROWDED)
            self.backed_off = ir.GlobalVariable(module, I64, name=BACKED_OFF)
        else:
            self.crowded = self.state("crowded", I32)
            self.backed_off = self.state("backed_off", I64)
        arch = module.triple.split("-")[0]
        self.futex = _FUTEX.get(arch) if "linux" in module.triple else None
        self.size = num_threads()  # the calling thread and size - 1 workers (the count is in every cache key)
        self.lock = self.state("lock", I32)  # the pid of the process whose thread holds the pool, or 0
        self.pid = self.state("pid", I32)  # the process the workers were started in
        self.workers = self.state("workers", I64)  # how many were started there
        self.wake = self.state("wake", I32)  # the generation of the latest task; the futex idle workers sleep on
        self.sleepers = self.state("sleepers", I32)  # workers asleep (or about to be) on ``wake``
        self.ticket = self.state("ticket", I64)  # chunks << 32 | next unclaimed chunk
        self.done = self.state("done", I32)  # chunks finished; the futex a caller waits on
        self.waiting = self.state("waiting", I32)  # whether the caller sleeps (or is about to) on ``done``
        self.task = self.state("task", TASK)
        self.fastest = self.state("fastest", I64)  # the shortest time a chunk of the task took (ns)
        self.strikes = self.state("strikes", I32)  # calls in a row on which sharing did not pay
        self.skip = self.state("skip", I32)  # calls left to run serially before trying the pool again

    def state(self, name: str, typ: ir.Type) -> ir.GlobalVariable:
        var = ir.GlobalVariable(self.module, typ, name=f"srcjax.pool.{name}")
        var.linkage = "internal"
        var.initializer = ir.Constant(typ, None)
        var.align = 64  # one cache line each: workers poll some while others write the rest
        return var

    def function(self, name: str, ret: ir.Type, args: list[ir.Type]) -> tuple[ir.Function, ir.IRBuilder]:
        fn = ir.Function(self.module, ir.FunctionType(ret, args), name=name)
        fn.linkage = "internal"
        fn.attributes.add("nounwind")
        return fn, ir.IRBuilder(fn.append_basic_block("entry"))

    def extern(self, name: str, ret: ir.Type, args: list[ir.Type], var_arg: bool = False) -> ir.Function:
        if name in self.module.globals:
            return self.module.globals[name]
        return ir.Function(self.module, ir.FunctionType(ret, args, var_arg=var_arg), name=name)

    def emit(self) -> None:
        self.chunk = self.emit_chunk()
        self.now = self.emit_now()
        self.drain = self.emit_drain()
        self.wait_for_task = self.emit_wait_for_task()
        self.worker = self.emit_worker()
        self.emit_parallel()

    # -- small pieces -------------------------------------------------------------------------------------
    def emit_chunk(self) -> ir.Function:
        """``chunk(nest, buffers, n, chunks, t)``: run chunk t."""
        args = [NEST_TYPE.as_pointer(), PTR.as_pointer(), I64, I64, I64]
        fn, b = self.function("srcjax.pool.chunk", ir.VoidType(), args)
        fn.attributes.add("alwaysinline")
        nest, bufs, n, chunks, t = fn.args
        nxt = b.add(t, ir.Constant(I64, 1))
        lo, hi = b.udiv(b.mul(t, n), chunks), b.udiv(b.mul(nxt, n), chunks)
        # long chunks start at multiples of 16, so that vector loops have no remainder but the last one's
        aligned = b.icmp_unsigned(">=", b.udiv(n, chunks), ir.Constant(I64, 256))
        mask = ir.Constant(I64, -16)
        lo = b.select(aligned, b.and_(lo, mask), lo)
        hi = b.select(b.and_(aligned, b.icmp_unsigned("<", nxt, chunks)), b.and_(hi, mask), hi)
        b.call(nest, [bufs, lo, hi, t])
        b.ret_void()
        return fn

    def emit_now(self) -> ir.Function:
        """``now()``: nanoseconds of the monotonic clock."""
        fn, b = self.function("srcjax.pool.now", I64, [])
        timespec = ir.LiteralStructType([I64, I64])
        clock = self.extern("clock_gettime", I32, [I32, timespec.as_pointer()])
        ts = b.alloca(timespec)
        b.call(clock, [ir.Constant(I32, _CLOCK_MONOTONIC), ts])
        seconds = b.load(b.gep(ts, [ir.Constant(I32, 0), ir.Constant(I32, 0)]))
        nanoseconds = b.load(b.gep(ts, [ir.Constant(I32, 0), ir.Constant(I32, 1)]))
        b.ret(b.add(b.mul(seconds, ir.Constant(I64, 1_000_000_000)), nanoseconds))
        return fn

    def spin_hint(self, b: ir.IRBuilder) -> None:
        spin_hint(b)

    def futex_call(self, b: ir.IRBuilder, word: ir.GlobalVariable, op: int, value: ir.Value) -> None:
        futex(b, word, op, value)

    def emit_drain(self) -> ir.Function:
        """``drain()``: claim and run chunks of the published task until none is left; returns how many it ran. A
        chunk claimed is not finished, so the task (read after the claim, whose acquire pairs with the publishing
        release) stays."""
        fn, b = self.function("srcjax.pool.drain", I64, [])
        entry = b.block
        loop, run, out = (fn.append_basic_block(s) for s in ("loop", "run", "out"))
        b.branch(loop)
        b.position_at_end(loop)
        count = b.phi(I64)
        count.add_incoming(ir.Constant(I64, 0), entry)
        ticket = b.atomic_rmw("add", self.ticket, ir.Constant(I64, 1), "acq_rel")
        chunks = b.lshr(ticket, ir.Constant(I64, 32))
        t = b.and_(ticket, ir.Constant(I64, 0xFFFFFFFF))
        b.cbranch(b.icmp_unsigned("<", t, chunks), run, out)
        b.position_at_end(run)
        fields = [b.load(b.gep(self.task, [ir.Constant(I32, 0), ir.Constant(I32, i)])) for i in range(3)]
        began = b.call(self.now, [])
        b.call(self.chunk, [*fields, chunks, t])
        b.atomic_rmw("umin", self.fastest, b.sub(b.call(self.now, []), began), "monotonic")
        # the count and the read of ``waiting`` against the caller's: either it sees the last chunk done or
        # this sees it waiting (both sequentially consistent)
        finished = b.add(b.atomic_rmw("add", self.done, ir.Constant(I32, 1), "seq_cst"), ir.Constant(I32, 1))
        last = b.icmp_unsigned("==", b.zext(finished, I64), chunks)
        if self.futex is not None:
            with b.if_then(b.and_(last, b.trunc(b.load_atomic(self.waiting, "seq_cst", 4), ir.IntType(1)))):
                self.futex_call(b, self.done, _FUTEX_WAKE_PRIVATE, ir.Constant(I64, 1))
        count.add_incoming(b.add(count, ir.Constant(I64, 1)), b.block)
        b.branch(loop)
        b.position_at_end(out)
        b.ret(count)
        return fn

    def emit_wait_for_task(self) -> ir.Function:
        """``wait_for_task(seen)``: the generation after ``seen``, once published; polls IDLE_SPIN_NS (while the
        machine is crowded, CROWDED_IDLE_SPIN_NS), then sleeps on the futex (counted in ``sleepers``, so that a
        caller wakes only when someone sleeps)."""
        fn, b = self.function("srcjax.pool.wait_for_task", I32, [I32])
        (seen,) = fn.args
        restart, spin, check, clock, sleep, got = (
            fn.append_basic_block(s) for s in ("restart", "spin", "check", "clock", "sleep", "got")
        )
        b.branch(restart)
        b.position_at_end(restart)
        start = b.call(self.now, [])
        b.branch(spin)
        b.position_at_end(spin)
        i = b.phi(I64)
        i.add_incoming(ir.Constant(I64, 0), restart)
        generation = b.load_atomic(self.wake, "acquire", 4)
        b.cbranch(b.icmp_unsigned("!=", generation, seen), got, check)
        b.position_at_end(check)
        self.spin_hint(b)
        nxt = b.add(i, ir.Constant(I64, 1))
        i.add_incoming(nxt, check)
        b.cbranch(b.icmp_unsigned("==", b.and_(nxt, ir.Constant(I64, 63)), ir.Constant(I64, 0)), clock, spin)
        b.position_at_end(clock)
        i.add_incoming(nxt, clock)
        waited = b.sub(b.call(self.now, []), start)
        crowded = b.icmp_signed("!=", b.load_atomic(self.crowded, "monotonic", 4), ir.Constant(I32, 0))
        limit = b.select(crowded, ir.Constant(I64, CROWDED_IDLE_SPIN_NS), ir.Constant(I64, IDLE_SPIN_NS))
        b.cbranch(b.icmp_signed(">", waited, limit), sleep, spin)
        b.position_at_end(sleep)
        if self.futex is not None:  # (the kernel returns at once if ``wake`` is no longer ``seen``)
            b.atomic_rmw("add", self.sleepers, ir.Constant(I32, 1), "seq_cst")
            self.futex_call(b, self.wake, _FUTEX_WAIT_PRIVATE, b.zext(seen, I64))
            b.atomic_rmw("sub", self.sleepers, ir.Constant(I32, 1), "seq_cst")
        else:
            b.call(self.extern("usleep", I32, [I32]), [ir.Constant(I32, 200)])
        b.branch(restart)
        b.position_at_end(got)
        b.ret(generation)
        return fn

    def emit_worker(self) -> ir.Function:
        """``worker(seen)``, a pthread: signals blocked (they are the main thread's to handle), then forever:
        wait for the next task, take part in it."""
        fn, b = self.function("srcjax.pool.worker", PTR, [PTR])
        if self.futex is not None:  # (Linux: sigset_t is 128 bytes)
            mask = b.alloca(ir.ArrayType(I64, 16))
            mask_ptr = b.bitcast(mask, PTR)
            b.call(self.extern("sigfillset", I32, [PTR]), [mask_ptr])
            sigmask = self.extern("pthread_sigmask", I32, [I32, PTR, PTR])
            b.call(sigmask, [ir.Constant(I32, _SIG_SETMASK), mask_ptr, ir.Constant(PTR, None)])
        first = b.trunc(b.ptrtoint(fn.args[0], I64), I32)
        entry = b.block
        loop = fn.append_basic_block("loop")
        b.branch(loop)
        b.position_at_end(loop)
        seen = b.phi(I32)
        seen.add_incoming(first, entry)
        generation = b.call(self.wait_for_task, [seen])
        b.call(self.drain, [])
        seen.add_incoming(generation, b.block)
        b.branch(loop)
        return fn

    # -- the entry ----------------------------------------------------------------------------------------
    def emit_parallel(self) -> None:
        fn = ir.Function(self.module, PARALLEL_TYPE, name=PARALLEL)
        fn.attributes.add("nounwind")
        nest, bufs, n, argument = fn.args
        self.fn = fn
        b = self.b = ir.IRBuilder(fn.append_basic_block("entry"))
        serial, pooled, locked = self.block("serial"), self.block("pooled"), self.block("locked")
        chunks = b.and_(argument, ir.Constant(I64, PARALLEL_SMALL - 1))
        usable = b.and_(b.icmp_signed(">", chunks, ir.Constant(I64, 1)), b.icmp_signed(">", n, ir.Constant(I64, 1)))
        b.cbranch(usable, pooled, serial)
        b.position_at_end(pooled)
        self.take_pool(b.icmp_unsigned(">=", argument, ir.Constant(I64, PARALLEL_SMALL)), locked, serial)
        b.position_at_end(locked)
        wanted = self.start_workers(chunks)
        started = b.call(self.now, [])
        for i, value in enumerate([nest, bufs, n]):
            b.store(value, b.gep(self.task, [ir.Constant(I32, 0), ir.Constant(I32, i)]))
        b.store_atomic(ir.Constant(I32, 0), self.done, "monotonic", 4)
        b.store_atomic(ir.Constant(I64, -1), self.fastest, "monotonic", 8)
        b.store_atomic(b.shl(chunks, ir.Constant(I64, 32)), self.ticket, "release", 8)
        # the bump and the read of ``sleepers`` against a worker's increment and futex wait: with both
        # sequentially consistent, either the worker's wait sees the new generation or this sees the sleeper
        b.store_atomic(b.add(b.load_atomic(self.wake, "monotonic", 4), ir.Constant(I32, 1)), self.wake, "seq_cst", 4)
        if self.futex is not None:
            with b.if_then(b.icmp_signed(">", b.load_atomic(self.sleepers, "seq_cst", 4), ir.Constant(I32, 0))):
                self.futex_call(b, self.wake, _FUTEX_WAKE_PRIVATE, wanted)
        mine = b.call(self.drain, [])
        self.wait_all(chunks, b.call(self.now, []))
        self.judge(chunks, b.sub(chunks, mine), b.sub(b.call(self.now, []), started))
        b.store_atomic(ir.Constant(I32, 0), self.lock, "release", 4)
        b.ret_void()

        b.position_at_end(serial)  # the same chunks, one after the other
        for_range(b, ir.Constant(I64, 0), chunks, lambda t: b.call(self.chunk, [nest, bufs, n, chunks, t]))
        b.ret_void()

    def block(self, name: str) -> ir.Block:
        return self.fn.append_basic_block(name)

    def take_pool(self, small: ir.Value, locked: ir.Block, serial: ir.Block) -> None:
        """Branch to ``locked`` holding the pool, or to ``serial``: while backing off; for a small task when no
        worker is awake (waking one takes longer than the task); or if another thread of this process holds
        the pool. A lock held by another pid was inherited through fork: it is taken over."""
        b = self.b
        names = ("backing_off", "not_backing_off", "me", "stale", "steal")
        backing_off, not_backing_off, me_block, stale, steal = (self.block(s) for s in names)
        skipping = b.icmp_signed(">", b.load_atomic(self.skip, "monotonic", 4), ir.Constant(I32, 0))
        b.cbranch(skipping, backing_off, not_backing_off)
        b.position_at_end(backing_off)
        b.atomic_rmw("sub", self.skip, ir.Constant(I32, 1), "monotonic")
        b.atomic_rmw("add", self.backed_off, ir.Constant(I64, 1), "monotonic")
        b.branch(serial)
        b.position_at_end(not_backing_off)
        asleep = b.sext(b.load_atomic(self.sleepers, "monotonic", 4), I64)
        none_awake = b.icmp_signed(">=", asleep, b.load_atomic(self.workers, "monotonic", 8))
        b.cbranch(b.and_(small, none_awake), serial, me_block)
        b.position_at_end(me_block)
        self.me = b.call(self.extern("getpid", I32, []), [])
        held = b.cmpxchg(self.lock, ir.Constant(I32, 0), self.me, "acquire", "monotonic")
        owner = b.extract_value(held, 0)
        b.cbranch(b.extract_value(held, 1), locked, stale)
        b.position_at_end(stale)
        b.cbranch(b.icmp_unsigned("!=", owner, self.me), steal, serial)
        b.position_at_end(steal)
        b.cbranch(b.extract_value(b.cmpxchg(self.lock, owner, self.me, "acquire", "monotonic"), 1), locked, serial)

    def start_workers(self, chunks: ir.Value) -> ir.Value:
        """Start the missing workers (after a fork, all of them): min(chunks, size) - 1, or fewer if one fails.
        Each starts with the current generation as the last one it saw. Returns how many are wanted."""
        b = self.b
        reset, start, create, attempt, created, done = (
            self.block(s) for s in ("reset", "start", "create", "attempt", "created", "started")
        )
        b.cbranch(b.icmp_unsigned("!=", b.load(self.pid), self.me), reset, start)
        b.position_at_end(reset)  # a new process (or the first call): no workers yet
        b.store_atomic(ir.Constant(I64, 0), self.workers, "monotonic", 8)
        b.store_atomic(ir.Constant(I32, 0), self.sleepers, "monotonic", 4)
        b.store(self.me, self.pid)
        b.branch(start)
        b.position_at_end(start)
        cap = ir.Constant(I64, self.size - 1)
        wanted = b.sub(chunks, ir.Constant(I64, 1))
        wanted = b.select(b.icmp_signed("<", wanted, cap), wanted, cap)
        argument = b.inttoptr(b.zext(b.load_atomic(self.wake, "monotonic", 4), I64), PTR)
        thread_id = b.alloca(I64)
        b.branch(create)
        b.position_at_end(create)
        have = b.load_atomic(self.workers, "monotonic", 8)
        b.cbranch(b.icmp_signed("<", have, wanted), attempt, done)
        b.position_at_end(attempt)
        pthread_create = self.extern("pthread_create", I32, [I64.as_pointer(), PTR, self.worker.type, PTR])
        rc = b.call(pthread_create, [thread_id, ir.Constant(PTR, None), self.worker, argument])
        b.cbranch(b.icmp_signed("==", rc, ir.Constant(I32, 0)), created, done)
        b.position_at_end(created)
        b.call(self.extern("pthread_detach", I32, [I64]), [b.load(thread_id)])
        b.store_atomic(b.add(have, ir.Constant(I64, 1)), self.workers, "monotonic", 8)
        b.branch(create)
        b.position_at_end(done)
        return wanted

    def wait_all(self, chunks: ir.Value, since: ir.Value) -> None:
        """Until every chunk is finished: poll for WAIT_SPIN_NS, then sleep on ``done``. Sleeping frees this
        core, so that the scheduler can move a worker waiting for one onto it."""
        b = self.b
        entry = b.block
        wait, poll, clock, sleep, finished = (self.block(s) for s in ("wait", "poll", "clock", "sleep", "finished"))
        all_done = lambda: b.icmp_unsigned(">=", b.zext(b.load_atomic(self.done, "acquire", 4), I64), chunks)  # noqa: E731
        b.branch(wait)
        b.position_at_end(wait)
        i = b.phi(I64)
        i.add_incoming(ir.Constant(I64, 0), entry)
        b.cbranch(all_done(), finished, poll)
        b.position_at_end(poll)
        self.spin_hint(b)
        nxt = b.add(i, ir.Constant(I64, 1))
        i.add_incoming(nxt, poll)
        i.add_incoming(nxt, clock)
        b.cbranch(b.icmp_unsigned("==", b.and_(nxt, ir.Constant(I64, 63)), ir.Constant(I64, 0)), clock, wait)
        b.position_at_end(clock)
        late = b.icmp_signed(">", b.sub(b.call(self.now, []), since), ir.Constant(I64, WAIT_SPIN_NS))
        b.cbranch(late, sleep, wait)
        b.position_at_end(sleep)
        if self.futex is not None:  # (``waiting`` against the last worker's count: see ``drain``)
            b.store_atomic(ir.Constant(I32, 1), self.waiting, "seq_cst", 4)
            seen = b.load_atomic(self.done, "seq_cst", 4)
            with b.if_then(b.icmp_unsigned("<", b.zext(seen, I64), chunks)):
                self.futex_call(b, self.done, _FUTEX_WAIT_PRIVATE, b.zext(seen, I64))
            b.store_atomic(ir.Constant(I32, 0), self.waiting, "monotonic", 4)
        else:
            b.call(self.extern("sched_yield", I32, []), [])
        b.cbranch(all_done(), finished, sleep)
        b.position_at_end(finished)

    def judge(self, chunks: ir.Value, theirs: ir.Value, took: ir.Value) -> None:
        """Back off when sharing did not pay: when the workers took part (``theirs`` chunks) and the task took
        more than BACKOFF_MIN_LOSS_NS longer than its chunks one after the other would have (estimated by the
        fastest chunk, one that ran undisturbed). That happens when the machine has no idle core: a worker that
        holds a chunk, or the caller, loses its core for a time slice. The next 1, 3, 7, ... 2**MAX_STRIKES - 1
        calls then run serially. Not while the machine is crowded with other processes' threads: there a slow
        call is their doing."""
        b = self.b
        alone = b.mul(b.load_atomic(self.fastest, "monotonic", 8), chunks)
        lost = b.icmp_unsigned(">", took, b.add(alone, ir.Constant(I64, BACKOFF_MIN_LOSS_NS)))
        slower = b.and_(lost, b.icmp_signed(">", theirs, ir.Constant(I64, 0)))
        uncrowded = b.icmp_signed("==", b.load_atomic(self.crowded, "monotonic", 4), ir.Constant(I32, 0))
        slower = b.and_(slower, uncrowded)
        strikes = b.load(self.strikes)
        more = b.add(strikes, ir.Constant(I32, 1))
        more = b.select(b.icmp_signed("<", more, ir.Constant(I32, MAX_STRIKES)), more, ir.Constant(I32, MAX_STRIKES))
        b.store(b.select(slower, more, ir.Constant(I32, 0)), self.strikes)
        with b.if_then(slower):
            b.store_atomic(b.sub(b.shl(ir.Constant(I32, 1), more), ir.Constant(I32, 1)), self.skip, "monotonic", 4)
