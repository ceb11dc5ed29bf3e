"""Host calls: ops without a native lowering, computed by their NumPy implementation from inside native code.

A function that is mostly native but uses, say, a gather, a sort or an eigendecomposition still compiles:
``control.ControlEmitter`` splits it around such ops, and the native entry calls back into Python for each
one with the op's index and the addresses of its operand and result buffers. ``HostCalls`` runs the host calls
of one executable. The callback the native code calls is one function for the whole process, which hands the
call to the ``HostCalls`` of the entry the calling thread is running: executables of equal IR share their machine
code, and with it the one slot the callback's address is stored in, though each has its own ops (a debug
callback's Python function is a param) and may be freed before the others. Python exceptions cannot cross
native frames, so one raised by an op's implementation is kept, the remaining host calls of the run are
skipped, and the caller re-raises it when the native entry returns.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any, Callable

import numpy as np

from srcjax.transpiler.ir import Literal, Op

CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.POINTER(ctypes.c_void_p))


class _Slot:
    """How one array operand or result of a host op is read from its buffer: a ctypes type of its bytes, made
    once, so a call costs one ``from_address`` and one ``frombuffer`` per array."""

    def __init__(self, shape: tuple[int, ...], dtype: np.dtype):
        self.shape, self.dtype = shape, dtype
        count = int(np.prod(shape, dtype=np.int64))
        self.raw = ctypes.c_char * (count * dtype.itemsize) if count else None

    def array(self, address: int) -> np.ndarray:
        """The buffer at ``address`` as a writable NumPy array (no copy)."""
        if self.raw is None:
            return np.empty(self.shape, self.dtype)
        return np.frombuffer(self.raw.from_address(address), self.dtype).reshape(self.shape)


def _operand(v):
    return np.asarray(v.value, v.aval.dtype) if isinstance(v, Literal) else _Slot(v.aval.shape, np.dtype(v.aval.dtype))


_running = threading.local()  # ``.calls``: the ``HostCalls`` of the native entry this thread is in, if any


def _dispatch(index: int, pointers: Any) -> None:
    calls = getattr(_running, "calls", None)
    if calls is not None:
        calls._run(index, pointers)


_DISPATCH = CALLBACK(_dispatch)  # (alive as long as the process: any loaded code may call it)


class HostCalls:
    """The host calls of one executable; ``address`` is what its entry's ``<name>.host`` global holds (the same
    for every executable: the process's dispatcher)."""

    def __init__(self, ops: list[Op]):
        self.ops = ops
        # per op: its primitive, params, operands (a literal's value or a _Slot) and result slots
        self._plans = [
            (op.prim, op.params, [_operand(v) for v in op.operands],
             [_Slot(r.aval.shape, np.dtype(r.aval.dtype)) for r in op.results])
            for op in ops
        ]
        self._errors = threading.local()  # per calling thread: calls may run concurrently
        self.address = ctypes.cast(_DISPATCH, ctypes.c_void_p).value

    def _run(self, index: int, pointers: Any) -> None:
        if getattr(self._errors, "error", None) is not None:
            return  # an earlier host call of this run failed: its results are garbage anyway
        try:
            prim, params, operand_slots, result_slots = self._plans[index]
            operands, k = [], 0
            for slot in operand_slots:
                if isinstance(slot, _Slot):
                    operands.append(slot.array(pointers[k]))
                    k += 1
                else:
                    operands.append(slot)
            if prim.impl_into is not None:  # (it writes the result buffers itself)
                prim.impl_into([slot.array(pointers[k + i]) for i, slot in enumerate(result_slots)], *operands,
                               **params)
                return
            with np.errstate(all="ignore"):
                outs = prim.impl(*operands, **params)
            for slot, out in zip(result_slots, outs if prim.multiple_results else [outs], strict=True):
                target = slot.array(pointers[k])
                target[...] = np.asarray(out).astype(slot.dtype, copy=False).reshape(slot.shape)
                k += 1
        except BaseException as e:  # noqa: BLE001 - re-raised by ``checked`` once native code has returned
            self._errors.error = e

    def checked(self, call: Callable[[tuple], None]) -> Callable[[tuple], None]:
        """``call`` (an executable's native entry), raising what a host call raised during it."""

        def run(buffers: tuple) -> None:
            self._errors.error = None
            outer = getattr(_running, "calls", None)  # (a host call may run another compiled function)
            _running.calls = self
            try:
                call(buffers)
            finally:
                _running.calls = outer
            error = self._errors.error
            if error is not None:
                self._errors.error = None
                raise error

        return run
