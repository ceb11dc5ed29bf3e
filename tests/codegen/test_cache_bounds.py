"""Bounded compile caches: the disk cache's size cap (least recently used entries go first) and what it reads,
the loaded code kept for reuse, each jitted function's specialisations, ``clear_caches``, and a process that
jits fresh closures without end staying within fixed memory and disk."""

import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import srcjax
import srcjax.numpy as jnp
from srcjax.codegen import cache
from srcjax.codegen.llvm import codegen_worker, engine

KEY = bytes(range(32))


@pytest.fixture
def disk_limit():
    saved = dict(cache.limits)
    yield cache.configure
    cache.limits.update(saved)


def _read_soon(path, key, seconds=5.0):
    """``read_entry`` in a thread that must finish within ``seconds`` (a FIFO must not hang it)."""
    result = []
    reader = threading.Thread(target=lambda: result.append(cache.read_entry(path, key)), daemon=True)
    reader.start()
    reader.join(seconds)
    assert not reader.is_alive(), "reading the entry hangs"
    return result[0]


# -- what the disk cache reads -------------------------------------------------------------------------------------
def test_special_files_are_not_read_as_entries(tmp_path):
    link = tmp_path / "zero.o"
    link.symlink_to("/dev/zero")
    assert _read_soon(link, KEY) is None  # (not 6 GB of zeros)
    fifo = tmp_path / "fifo.o"
    os.mkfifo(fifo)
    assert _read_soon(fifo, KEY) is None  # (no writer: reading it would block for ever)
    good = tmp_path / "good.o"
    good.write_bytes(cache.encode(KEY, {"name": "f", "entries": ["f"]}, b"code", "ir"))
    target = tmp_path / "link-to-good.o"
    target.symlink_to(good)
    assert _read_soon(good, KEY) is not None and _read_soon(target, KEY) is None


def test_an_oversized_entry_is_not_read(tmp_path, disk_limit):
    path = tmp_path / "big.o"
    path.write_bytes(cache.encode(KEY, {"name": "f", "entries": ["f"]}, b"x" * 5000, "ir"))
    assert cache.read_entry(path, KEY) is not None
    disk_limit(4096)
    assert cache.read_entry(path, KEY) is None


def test_a_special_file_in_place_of_an_entry_is_replaced_by_a_compiled_one(tmp_path, monkeypatch):
    monkeypatch.setenv("SRCJAX_CACHE", "1")
    srcjax.config.update("jax_compilation_cache_dir", str(tmp_path))
    try:
        f = srcjax.jit(lambda x: x * 3.0 + 1.0)
        x = np.arange(4, dtype=np.float32)
        np.testing.assert_array_equal(np.asarray(f(x)), x * 3.0 + 1.0)
        (entry,) = [p for p in tmp_path.iterdir()
                    if cache.decode(p.read_bytes(), bytes.fromhex(p.stem))[0]["name"] != "srcjax_parallel"]
        entry.unlink()
        os.mkfifo(entry)
        cache.clear_memory()
        srcjax.clear_caches()
        done = []
        caller = threading.Thread(target=lambda: done.append(np.asarray(f(x))), daemon=True)
        caller.start()
        caller.join(60)
        assert done, "jit hangs on a FIFO in the cache"
        np.testing.assert_array_equal(done[0], x * 3.0 + 1.0)
        assert entry.is_file() and not entry.is_symlink()  # compiled again and stored over it
    finally:
        srcjax.config.update("jax_compilation_cache_dir", None)


# -- the disk cache's size --------------------------------------------------------------------------------------------
def test_the_directory_stays_under_its_limit_and_keeps_the_recently_used(tmp_path, disk_limit):
    disk_limit(20_000)
    entry = cache.encode(KEY, {"name": "f", "entries": ["f"]}, b"y" * 900, "ir")  # about 1 KB each
    first = tmp_path / "first.o"
    assert cache.write_entry(first, entry)
    for i in range(60):
        assert cache.read_entry(first, KEY) is not None  # used again and again: renewed each time
        assert cache.write_entry(tmp_path / f"e{i}.o", entry)
        os.utime(tmp_path / f"e{i}.o", (time.time() - 1000 + i, time.time() - 1000 + i))  # written in order
    sizes = [p.stat().st_size for p in tmp_path.iterdir()]
    assert sum(sizes) <= 20_000
    assert first.exists()  # the entry read last survives; the oldest unread ones went first
    assert not (tmp_path / "e0.o").exists() and (tmp_path / "e59.o").exists()
    disk_limit(0)  # nothing is written at all
    assert not cache.write_entry(tmp_path / "never.o", entry) and not (tmp_path / "never.o").exists()


# -- in memory -----------------------------------------------------------------------------------------------------
def test_loaded_code_kept_for_reuse_is_bounded(tmp_path, monkeypatch):
    monkeypatch.setenv("SRCJAX_CACHE", "1")
    srcjax.config.update("jax_compilation_cache_dir", str(tmp_path))
    srcjax.config.update("srcjax_code_cache_max_entries", 3)
    try:
        for i in range(8):
            f = srcjax.jit(lambda x: x * float(i) + 2.0)  # noqa: B023 - called at once
            np.testing.assert_array_equal(np.asarray(f(np.ones(3, np.float32))), [i + 2.0] * 3)
        assert len(cache._loaded) <= 3
    finally:
        srcjax.config.update("srcjax_code_cache_max_entries", 512)
        srcjax.config.update("jax_compilation_cache_dir", None)


def test_a_jitted_function_keeps_a_bounded_number_of_specialisations():
    srcjax.config.update("srcjax_jit_cache_max_entries", 3)
    try:
        f = srcjax.jit(lambda x: jnp.sum(x * 2.0))
        for n in range(1, 8):
            assert float(f(jnp.ones(n))) == 2.0 * n
            assert len(f._cache) <= 3
        assert float(f(jnp.ones(1))) == 2.0  # dropped, compiled again
    finally:
        srcjax.config.update("srcjax_jit_cache_max_entries", 1024)


def test_clear_caches_drops_compiled_code_and_traces():
    f = srcjax.jit(lambda x: x + 1.0)
    g = srcjax.grad(lambda x: jnp.sin(x) * 2.0)
    f(jnp.ones(2))
    g(1.0)
    assert f._cache
    srcjax.clear_caches()
    assert not f._cache and not cache._loaded
    np.testing.assert_array_equal(np.asarray(f(jnp.ones(2))), [2.0, 2.0])
    assert float(g(0.0)) == 2.0


# -- the code generator's child process ---------------------------------------------------------------------------
def test_the_child_process_generates_the_same_code_as_this_one():
    module = engine.new_module("worker_probe")
    import llvmlite.ir as ir

    fn = ir.Function(module, ir.FunctionType(ir.DoubleType(), [ir.DoubleType()]), name="worker_probe")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    b.ret(b.fmul(fn.args[0], fn.args[0]))
    here = codegen_worker.generate(str(module), engine.target_machine(), 3)
    chosen = engine.target()
    worker = codegen_worker.Worker()
    try:
        there = worker.generate(str(module), codegen_worker.MachineSpec(chosen.cpu, chosen.features, False), 3)
        assert there == here
        with pytest.raises(RuntimeError, match="(?s)child process.*expected top-level entity"):
            worker.generate("this is not LLVM IR", codegen_worker.MachineSpec(chosen.cpu, chosen.features, False), 3)
        assert worker.generate(str(module), codegen_worker.MachineSpec(chosen.cpu, chosen.features, True), 3)[0]
    finally:
        worker.stop()
    assert worker.process is None


FRESH_CLOSURES = """
import os, sys
import numpy as np
import srcjax as jax, srcjax.numpy as jnp

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

jax.config.update("jax_compilation_cache_max_size", 2 << 20)
w = np.ones(8, np.float32)
marks = {}
for i in range(1200):
    out = jax.jit(lambda w: jnp.tanh(w * i) + w)(w)
    if i in (400, 1199):
        marks[i] = rss()
np.testing.assert_allclose(np.asarray(out), np.tanh(w * 1199) + w, rtol=1e-6)
print(marks[400], marks[1199])
"""


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_twelve_hundred_fresh_closures_stay_within_fixed_memory_and_disk(tmp_path):
    """Each closure is new code (a different constant). Without bounds this grew by about 200 KB of memory and
    16 KB of disk per call; now the code of dead closures is freed, optimisation moves to a child process after
    the first modules (llvmlite's pass builder leaks: here after 64, so that the child is also replaced within
    the run, after its CHILD_LIMIT), and the disk cache evicts."""
    script = tmp_path / "closures.py"
    script.write_text(FRESH_CLOSURES)
    env = {**os.environ, "SRCJAX_CACHE": "1", "XDG_CACHE_HOME": str(tmp_path / "xdg"),
           "SRCJAX_IN_PROCESS_COMPILES": "64"}
    run = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    at_400, at_1200 = map(int, run.stdout.split())
    assert at_1200 - at_400 < 16 << 20, f"grew by {(at_1200 - at_400) >> 20} MB over 800 closures"
    directory = tmp_path / "xdg" / "srcjax"
    assert sum(p.stat().st_size for p in directory.iterdir()) <= 2 << 20
