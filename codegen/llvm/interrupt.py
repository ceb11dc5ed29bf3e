"""Ctrl-C inside compiled loops: a process-wide count of SIGINTs that loops read on every trip.

Python's SIGINT handler only flags the signal; the interpreter raises ``KeyboardInterrupt`` at its next
bytecode, which never comes while a thread runs a native loop that does not end. So a small native handler
(compiled here, once per process) takes SIGINT first: it adds one to ``srcjax_interrupts`` and calls the
handler it replaced (Python's). A compiled ``while`` or ``for`` loop (codegen/llvm/control.py) leaves the loop
when the count has moved since its function began, the function runs to its end on what it has (every index
is clamped, so that is safe), and ``guard`` raises ``KeyboardInterrupt`` in the calling thread: a partial result
is never returned. In the main thread Python's own handler raises it first; in the dispatch thread the error
is kept on the job and raised where its results are read.

The handler is chained only where it can be (Linux, a plain handler installed, not SIG_IGN or SIG_DFL); a
handler installed later with ``signal.signal`` replaces the chain, and loops then run to their end as before.
"""

from __future__ import annotations

import ctypes
import signal
import sys
import threading
from typing import Any, Callable

import llvmlite.ir as ir

from srcjax.codegen.llvm import engine

COUNTER = "srcjax_interrupts"
HANDLER = "srcjax_on_sigint"
I64 = ir.IntType(64)

_counter = ctypes.c_int64(0)  # the symbol's storage
_state: list[bool] = []  # [whether the handler is chained], once bound
_lock = threading.Lock()

# glibc's struct sigaction on Linux (x86-64 and AArch64): the handler, a 1024-bit mask, then the flags
_SIGACTION_SIZE, _FLAGS_OFFSET, _SA_SIGINFO = 152, 136, 4


def counter(module: ir.Module) -> ir.GlobalVariable:
    """``srcjax_interrupts`` declared in ``module`` (an i64 the loops read atomically)."""
    if COUNTER in module.globals:
        return module.globals[COUNTER]
    return ir.GlobalVariable(module, I64, name=COUNTER)


def read(b: ir.IRBuilder, module: ir.Module) -> ir.Value:
    return b.load_atomic(counter(module), "monotonic", 8)


def bind() -> None:
    """Make the counter's symbol resolve and chain the SIGINT handler (once per process; before loading code
    that reads the counter)."""
    if _state:
        return
    with _lock:
        if not _state:
            engine.add_symbol(COUNTER, ctypes.addressof(_counter))
            _state.append(sys.platform.startswith("linux") and _chain_sigint())


def chained() -> bool:
    bind()
    return _state[0]


def guard(call: Callable[[Any], None]) -> Callable[[Any], None]:
    """``call`` raising ``KeyboardInterrupt`` when a SIGINT arrived while it ran (its loops stopped early)."""

    def guarded(arrays: Any) -> None:
        before = _counter.value
        call(arrays)
        if _counter.value != before:
            raise KeyboardInterrupt("a compiled loop was interrupted")

    return guarded


def _chain_sigint() -> bool:
    libc = ctypes.CDLL(None, use_errno=True)
    current = ctypes.create_string_buffer(_SIGACTION_SIZE)
    if libc.sigaction(signal.SIGINT, None, current) != 0:
        return False
    previous = ctypes.c_void_p.from_buffer(current, 0).value or 0
    flags = ctypes.c_int.from_buffer(current, _FLAGS_OFFSET).value
    if previous in (signal.SIG_DFL, signal.SIG_IGN) or flags & _SA_SIGINFO:
        return False
    address = _compile_handler(previous)
    replacement = ctypes.create_string_buffer(current.raw, _SIGACTION_SIZE)  # same mask and flags
    ctypes.c_void_p.from_buffer(replacement, 0).value = address
    return libc.sigaction(signal.SIGINT, replacement, None) == 0


def _compile_handler(previous: int) -> int:
    """``void srcjax_on_sigint(int)``: count the signal, then call ``previous`` (async-signal-safe: an atomic add
    and a call)."""
    module = engine.new_module("srcjax_interrupt")
    handler_type = ir.FunctionType(ir.VoidType(), [ir.IntType(32)])
    fn = ir.Function(module, handler_type, name=HANDLER)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    b.atomic_rmw("add", counter(module), ir.Constant(I64, 1), "monotonic")
    b.call(b.inttoptr(ir.Constant(I64, previous), handler_type.as_pointer()), fn.args)
    b.ret_void()
    return engine.compile_module(module, [HANDLER], speed_level=1, permanent=True).addresses[HANDLER]
