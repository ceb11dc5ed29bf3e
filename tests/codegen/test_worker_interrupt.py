"""A compile interrupted while the parent talks to the code generator's child process (codegen_worker.Worker):
Ctrl-C while a request is half written, while the reply is awaited or half read. The stream would be out of
step (the next compile reading the last one's reply: "the JIT has no function(s)", or a hang), so the child is
killed and the next compile starts a new one: later compiles work and give the same code as this process."""

import os
import signal
import sys
import time

import llvmlite.ir as ir
import numpy as np
import pytest

import srcjax
import srcjax.numpy as jnp
from srcjax.codegen.llvm import codegen_worker, engine

pytestmark = pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs signal.setitimer")


def _module(name: str, functions: int = 1) -> str:
    """LLVM IR of ``functions`` small functions (more of them: a module that takes longer to optimise)."""
    module = engine.new_module(name)
    for i in range(functions):
        fn = ir.Function(module, ir.FunctionType(ir.DoubleType(), [ir.DoubleType()]), name=f"{name}_{i}")
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        y = fn.args[0]
        for k in range(20):
            y = b.fadd(b.fmul(y, y), ir.Constant(ir.DoubleType(), float(i + k)))
        b.ret(y)
    return str(module)


def _spec() -> codegen_worker.MachineSpec:
    chosen = engine.target()
    return codegen_worker.MachineSpec(chosen.cpu, chosen.features, False)


@pytest.fixture
def worker():
    w = codegen_worker.Worker()
    yield w
    w.stop()


def _assert_works(worker):
    """The next request is answered with its own reply: the code this process generates for it."""
    text = _module(f"after_{time.monotonic_ns()}")
    assert worker.generate(text, _spec(), 3) == codegen_worker.generate(text, engine.target_machine(), 3)


def _interrupt_once(monkeypatch, name, after_bytes=None):
    """Make the worker's ``name`` (``_send`` or ``_receive``) raise KeyboardInterrupt once: at once, or (``_send``)
    after writing ``after_bytes`` of the request, or (``_receive``) after reading the reply's first part."""
    original = getattr(codegen_worker, name)
    state = {"armed": True}

    def send(stream, parts):
        if not state.pop("armed", False):
            return original(stream, parts)
        data = b"".join(codegen_worker._LEN.pack(len(p)) + p for p in parts)
        stream.write(data[:after_bytes])
        stream.flush()
        raise KeyboardInterrupt

    def receive(stream, count):
        if not state.pop("armed", False):
            return original(stream, count)
        if after_bytes:
            original(stream, 1)
        raise KeyboardInterrupt

    monkeypatch.setattr(codegen_worker, name, send if name == "_send" else receive)


@pytest.mark.parametrize("name, after_bytes", [
    ("_send", 0),  # before a byte went out
    ("_send", 40),  # the header's length and part of it: the child waits for the rest
    ("_receive", 0),  # the request went out, the reply is left unread
    ("_receive", 1),  # the reply's first part read, the rest left
], ids=["before-request", "mid-request", "reply-unread", "mid-reply"])
def test_an_interrupted_exchange_leaves_the_worker_usable(worker, monkeypatch, name, after_bytes):
    _assert_works(worker)  # (a child running)
    child = worker.process
    _interrupt_once(monkeypatch, name, after_bytes)
    with pytest.raises(KeyboardInterrupt):
        worker.generate(_module("interrupted"), _spec(), 3)
    assert worker.process is None and child.poll() is not None  # killed and reaped
    for _ in range(3):
        _assert_works(worker)


def test_real_alarms_during_compiles(worker):
    """SIGALRM raising KeyboardInterrupt at times spread over a compile in the child (mostly while the parent
    waits for the reply); after each, the worker answers the next requests correctly."""
    text = _module("big", 150)
    spec = _spec()
    start = time.perf_counter()
    worker.generate(text, spec, 3)
    took = time.perf_counter() - start
    state = {"armed": False}

    def handler(signum, frame):
        if state["armed"]:
            raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, handler)
    interrupted = 0
    try:
        for fraction in (0.05, 0.3, 0.6, 0.9):
            try:
                try:
                    state["armed"] = True
                    signal.setitimer(signal.ITIMER_REAL, max(took * fraction, 1e-4))
                    worker.generate(text, spec, 3)
                finally:
                    state["armed"] = False
                    signal.setitimer(signal.ITIMER_REAL, 0)
            except KeyboardInterrupt:
                interrupted += 1
            _assert_works(worker)
    finally:
        signal.signal(signal.SIGALRM, previous)
    assert interrupted >= 1


def test_jit_after_an_interrupted_compile(monkeypatch):
    """Through ``jit`` with every module optimised in the child: a compile interrupted mid-exchange, then
    later compiles give the right values (they read their own replies)."""
    monkeypatch.setenv("SRCJAX_CACHE", "0")
    monkeypatch.setattr(codegen_worker, "IN_PROCESS_LIMIT", 0)
    fresh = codegen_worker.Worker()
    monkeypatch.setattr(engine, "_worker", fresh)
    try:
        x = np.linspace(-1.0, 1.0, 5).astype(np.float32)
        _interrupt_once(monkeypatch, "_receive")
        with pytest.raises(KeyboardInterrupt):
            srcjax.jit(lambda x: jnp.sin(x) * 2.0)(x)
        for i in range(3):
            got = srcjax.jit(lambda x, i=i: jnp.cos(x) * i + jnp.sin(x))(x)
            np.testing.assert_allclose(np.asarray(got), np.cos(x) * i + np.sin(x), rtol=1e-6)
        got = srcjax.jit(lambda x: jnp.sin(x) * 2.0)(x)  # (the interrupted one, compiled again)
        np.testing.assert_allclose(np.asarray(got), np.sin(x) * 2.0, rtol=1e-6)
    finally:
        fresh.stop()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="POSIX signals to the child")
def test_the_child_ignores_ctrl_c(worker):
    """Ctrl-C at a terminal reaches the whole process group: an idle child stays for the next request."""
    _assert_works(worker)
    child = worker.process
    os.kill(child.pid, signal.SIGINT)
    time.sleep(0.2)
    assert child.poll() is None
    _assert_works(worker)
    assert worker.process is child
