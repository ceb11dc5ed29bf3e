"""The thread pool behind ``srcjax_parallel`` (codegen/llvm/pool.py): a nest split into chunks gives the
same results as the nest run serially, from several Python threads at once (a caller that finds the pool
busy runs the chunks itself), and in a forked child (which has no workers until it starts its own)."""

import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import srcjax
import srcjax.numpy as jnp
from srcjax.codegen.llvm import kernels, pool

RNG = np.random.default_rng(7)
THREADS = "4"  # (16 chunks; the pool has the workers of the thread count when its code was first emitted)


def selu(x, alpha=1.67, lmbda=1.05):
    return lmbda * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)


def poly(x):
    return x * x + x * 2.0


def integer_mix(a):
    return a * 3 - (a >> 1), jnp.sum(a), jnp.max(a, axis=0)


def compiled(fn, args, parallel: bool, monkeypatch):
    """``fn`` compiled natively for ``args``, its nests split across threads from one element (waking the
    workers for any) or never."""
    monkeypatch.setenv("SRCJAX_NUM_THREADS", THREADS)
    monkeypatch.setenv("SRCJAX_CACHE", "0")  # (the disk cache's key does not know WAKE_MIN_WORK)
    monkeypatch.setattr(kernels, "PARALLEL_MIN_WORK", 1 if parallel else 1 << 62)
    monkeypatch.setattr(kernels, "WAKE_MIN_WORK", 0)  # (no task is too small to wake the workers for)
    srcjax.clear_caches()  # (jit(fn) again would find the compilation made under the other settings, as JAX's)
    executable = srcjax.jit(fn).lower(*args).compile().native
    assert executable is not None
    assert ("srcjax_parallel" in executable.llvm_ir) == parallel
    return executable


def _f32(*shape):
    return RNG.normal(size=shape).astype(np.float32)


ELEMENTWISE = [
    ("selu", selu, [_f32(300_001)]),
    ("poly", poly, [_f32(1001, 257)]),
    ("grad_logistic", srcjax.grad(lambda x: jnp.sum(1.0 / (1.0 + jnp.exp(-x)))), [_f32(100_003)]),
    ("integers", integer_mix, [RNG.integers(-1000, 1000, (5003, 13)).astype(np.int32)]),
    ("few_rows", lambda x: jnp.tanh(x) * 3.0, [_f32(3, 50_000)]),  # fewer rows than chunks
]


@pytest.mark.parametrize("name,fn,args", ELEMENTWISE, ids=[e[0] for e in ELEMENTWISE])
def test_threads_give_the_serial_results(name, fn, args, monkeypatch):
    """Elementwise results and integer reductions are the same bits however the rows are split."""
    serial = compiled(fn, args, False, monkeypatch)(*args)
    threaded = compiled(fn, args, True, monkeypatch)(*args)
    for s, t in zip(serial, threaded):
        if name == "grad_logistic":  # (a sum feeds it: split into partial sums, it rounds differently)
            np.testing.assert_allclose(t, s, rtol=1e-6, atol=0)
        else:
            np.testing.assert_array_equal(t, s)


REDUCTIONS = [  # (name, function, its NumPy form for the float64 oracle, shape)
    ("total", jnp.sum, np.sum, (2_000_003,)),
    ("columns", lambda x: jnp.sum(x, axis=0), lambda x: np.sum(x, axis=0), (40_001, 37)),  # partials per slot
    ("rows", lambda x: jnp.sum(x, axis=1), lambda x: np.sum(x, axis=1), (4001, 301)),
    ("few_rows", lambda x: jnp.sum(x, axis=0), lambda x: np.sum(x, axis=0), (3, 70_001)),
    ("max_columns", lambda x: jnp.max(x, axis=0), lambda x: np.max(x, axis=0), (20_001, 11)),
    ("mean_of_squares", lambda x: jnp.mean(x * x), lambda x: np.mean(x * x), (1_000_001,)),
]


@pytest.mark.parametrize("name,fn,oracle,shape", REDUCTIONS, ids=[r[0] for r in REDUCTIONS])
def test_threaded_reductions(name, fn, oracle, shape, monkeypatch):
    """Float32 partial results per slot, combined afterwards: close to the serial result and to float64."""
    x = RNG.uniform(0.5, 1.5, shape).astype(np.float32)  # (positive: no cancellation, tight tolerances)
    (serial,) = compiled(fn, [x], False, monkeypatch)(x)
    (threaded,) = compiled(fn, [x], True, monkeypatch)(x)
    want = oracle(x.astype(np.float64))
    assert threaded.dtype == np.float32 and threaded.shape == want.shape
    np.testing.assert_allclose(threaded, want, rtol=1e-6)
    np.testing.assert_allclose(serial, want, rtol=2e-6)
    if "max" in name:
        np.testing.assert_array_equal(threaded, serial)


def test_concurrent_callers(monkeypatch):
    """Python threads call threaded code at once (large calls release the GIL): one holds the pool, the
    others run their chunks themselves; every call gets its own right answer, bit for bit."""
    fn = lambda x, y: (selu(x) * y, jnp.sum(x * y, axis=0))  # noqa: E731
    args = [[_f32(50_000, 8), _f32(50_000, 8)] for _ in range(6)]
    threaded = compiled(fn, args[0], True, monkeypatch)
    want = [threaded(*a) for a in args]  # one caller at a time
    errors = []

    def caller(k):
        try:
            for i in range(15):
                a = args[(k + i) % len(args)]
                got = threaded(*a)
                for g, w in zip(got, want[(k + i) % len(args)]):
                    if not np.array_equal(g, w):
                        errors.append((k, i))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    workers = [threading.Thread(target=caller, args=(k,)) for k in range(6)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=120)
    assert not any(w.is_alive() for w in workers), "a caller hangs"
    assert errors == []


SCRIPT = """
import os, sys, threading
import numpy as np
from srcjax.codegen.llvm import kernels, pool
pool.MAX_STRIKES = 0  # (never back off to serial calls, however busy the machine)
from srcjax.codegen.llvm import blas
blas.LOAD_CHECK_SECONDS = float("inf")  # (nor run serially because other processes keep the cores busy)
kernels.PARALLEL_MIN_WORK = kernels.WAKE_MIN_WORK = 1
import srcjax, srcjax.numpy as jnp

def threads():  # (those Python does not know: the pool's workers, once started)
    return len(os.listdir("/proc/self/task")) - threading.active_count()

x = np.linspace(-3, 3, 100_000, dtype=np.float32)
f = srcjax.jit(lambda x: jnp.tanh(x) * 2.0)
want = np.tanh(x.astype(np.float64)) * 2.0
assert "srcjax_parallel" in f.lower(x).compile().native.llvm_ir
before = threads()
counts = []
for _ in range(100):
    assert np.allclose(f(x), want, rtol=1e-6, atol=1e-6)
    counts.append(threads() - before)
pid = os.fork()
if pid == 0:
    alone = threads()
    ok = np.allclose(f(x), want, rtol=1e-6, atol=1e-6)
    os._exit(0 if ok and alone == 0 and threads() == 2 else 1)
_, status = os.waitpid(pid, 0)
print(sorted(set(counts)), os.waitstatus_to_exitcode(status))
"""


@pytest.mark.skipif(sys.platform != "linux", reason="counts threads in /proc; forks")
def test_workers_start_once_per_process():
    """A fresh process with 3 threads: the first call starts 2 workers and no call starts more; a forked
    child has none (only the forking thread survives a fork) and starts its own 2."""
    env = {**os.environ, "SRCJAX_NUM_THREADS": "3", "SRCJAX_CACHE": "0"}
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=root, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[-2] == "[2] 0"


def _run_in_child(work, timeout: float = 60.0) -> int:
    """Fork; the child runs ``work()`` (True: success) and exits; the child's exit status, or a failure if it
    does not finish within ``timeout`` seconds (then it is killed)."""
    pid = os.fork()
    if pid == 0:  # (the child: never return into pytest)
        status = 1
        try:
            status = 0 if work() else 2
        except BaseException:  # noqa: BLE001
            status = 3
        finally:
            os._exit(status)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.01)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    pytest.fail("the forked child hangs")


@pytest.mark.skipif(not hasattr(os, "fork") or sys.platform != "linux", reason="fork")
def test_forked_child_runs_threaded_code(monkeypatch):
    """The parent's workers do not exist in a child: it starts its own (or runs the chunks itself)."""
    x = _f32(400_000)
    threaded = compiled(selu, [x], True, monkeypatch)
    (want,) = threaded(x)  # the parent's pool is started

    def child():
        return all(np.array_equal(threaded(x)[0], want) for _ in range(20))

    assert _run_in_child(child) == 0
    assert np.array_equal(threaded(x)[0], want)  # the parent's pool still works


@pytest.mark.skipif(not hasattr(os, "fork") or sys.platform != "linux", reason="fork")
def test_fork_while_the_pool_is_held(monkeypatch):
    """Forks while another thread is inside the pool: a child may inherit the pool locked by a thread it
    does not have; it takes the lock over instead of running serially forever or waiting."""
    x = _f32(300_000)
    threaded = compiled(selu, [x], True, monkeypatch)
    (want,) = threaded(x)
    stop = threading.Event()

    def busy():
        while not stop.is_set():
            threaded(x)

    background = threading.Thread(target=busy)
    background.start()
    try:
        for _ in range(4):
            time.sleep(0.002)
            assert _run_in_child(lambda: all(np.array_equal(threaded(x)[0], want) for _ in range(5))) == 0
    finally:
        stop.set()
        background.join(timeout=60)
    assert not background.is_alive()



def test_small_tasks_do_not_wake_workers(monkeypatch):
    """A nest below WAKE_MIN_WORK is marked small in its call: the same chunks, run by the caller alone
    when every worker sleeps."""
    x = _f32(50_000)
    monkeypatch.setenv("SRCJAX_NUM_THREADS", THREADS)
    monkeypatch.setenv("SRCJAX_CACHE", "0")
    monkeypatch.setattr(kernels, "PARALLEL_MIN_WORK", 1)
    monkeypatch.setattr(kernels, "WAKE_MIN_WORK", 1 << 62)
    srcjax.clear_caches()  # (jit of the same function shares its compilations, as JAX's)
    small = srcjax.jit(selu).lower(x).compile().native
    monkeypatch.setattr(kernels, "WAKE_MIN_WORK", 0)
    srcjax.clear_caches()
    large = srcjax.jit(selu).lower(x).compile().native
    chunks = min(int(THREADS) * kernels.CHUNKS_PER_THREAD, x.shape[0])
    assert f"i64 {chunks + pool.PARALLEL_SMALL})" in small.llvm_ir and f"i64 {chunks})" in large.llvm_ir
    for _ in range(3):
        time.sleep(0.01)  # (the workers fall asleep)
        np.testing.assert_array_equal(small(x)[0], large(x)[0])


def test_blas_gets_only_the_cores_other_processes_leave(monkeypatch):
    """``blas.fit_threads_to_load``: OpenBLAS's thread count follows the cores left free (at least one, at most
    its own), checked at most every LOAD_CHECK_SECONDS; a native call with a product checks first."""
    import os

    from srcjax.codegen.llvm import blas

    calls = []
    monkeypatch.setattr(blas._load, "set", calls.append)
    monkeypatch.setattr(blas._load, "get", lambda: 4)
    monkeypatch.setattr(blas._load, "most", None)
    monkeypatch.setattr(blas._load, "current", None)
    monkeypatch.setattr(blas, "LOAD_CHECK_SECONDS", 0.0)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)), raising=False)
    for others, want in [(0, None), (5, 3), (7, 1), (20, 1), (1, 4)]:
        monkeypatch.setattr(blas, "_others_running", lambda others=others: others)
        monkeypatch.setattr(blas._load, "checked", 0.0)
        blas.fit_threads_to_load()
        if want is not None:
            assert calls[-1] == want, (others, calls)
    assert calls == [3, 1, 4]  # (set only when the count changes)
    assert blas._others_running() >= 0  # (the real reading works here)


def test_the_pool_is_told_when_the_machine_is_crowded(monkeypatch):
    """With at most one core free of other processes' threads, ``fit_threads_to_load`` tells the pool the
    machine is crowded (it then does not back off to serial calls when a call was slow), and that it is not
    once cores come free; the results are the same either way."""
    from srcjax.codegen.llvm import blas

    monkeypatch.setenv("SRCJAX_NUM_THREADS", THREADS)
    monkeypatch.setenv("SRCJAX_CACHE", "0")
    monkeypatch.setattr(kernels, "PARALLEL_MIN_WORK", 1)
    monkeypatch.setattr(blas, "LOAD_CHECK_SECONDS", 0.0)
    monkeypatch.setattr(blas._load, "crowded", False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(4)), raising=False)
    x = _f32(300_000)
    f = srcjax.jit(selu).lower(x).compile().native
    want = f(x)[0]
    try:
        for others, crowded in [(3, True), (2, False), (5, True), (0, False)]:
            monkeypatch.setattr(blas, "_others_running", lambda others=others: others)
            got = f(x)[0]  # (the call checks the load first)
            assert pool._crowded.value == crowded, others
            np.testing.assert_array_equal(got, want)
    finally:
        pool.set_crowded(False)


BACKOFF_SCRIPT = """
import numpy as np
from srcjax.codegen.llvm import pool
import srcjax
c = srcjax.device_put(np.ones((784, 512), np.float32))
a, b = srcjax.device_put(np.ones((128, 784), np.float32)), srcjax.device_put(np.ones((128, 512), np.float32))
step = srcjax.jit(lambda a, b, c: c - 0.01 * (a.T @ b))  # (an SGD update: a product, then a short update nest)
step(a, b, c).block_until_ready()
before = pool.backed_off_calls()
for _ in range(200):
    step(a, b, c).block_until_ready()
print(pool.backed_off_calls() - before)
"""


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2,
                    reason="needs two cores the pool can have")
def test_a_short_memory_bound_nest_does_not_back_the_pool_off():
    """A pooled call that took a little longer than its chunks one after the other (a 1.6 MB update: 8 chunks
    of a few microseconds sharing the memory bus) is no reason to back off; the back-off is the pool's, so it
    made the product before it run serially too, nearly every call (191 of the 400 parallel calls below ran
    serially before the margin, none or a few after). (Where other processes keep a core busy, the pool is told the
    machine is crowded and does not back off at all: a call slowed by them is no sign that sharing does not pay.)"""
    env = {**os.environ, "SRCJAX_NUM_THREADS": "2", "SRCJAX_CACHE": "0"}
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    done = subprocess.run([sys.executable, "-c", BACKOFF_SCRIPT], cwd=root, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.split()[-1]) < 60
