"""Host calls: ops without a native lowering, computed by their NumPy implementation from inside native code.

A function that is mostly native but uses, say, a gather, a sort or an eigendecomposition still compiles:
``control.ControlEmitter`` splits it around such ops, and the native entry calls back into Python for each
one with the op's index and the addresses of its operand and result buffers. ``HostCalls`` is that
callback for one executable. Python exceptions cannot cross native frames, so one raised by an op's
implementation is kept, the remaining host calls of the run are skipped, and the caller re-raises it when
the native entry returns.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any, Callable

import numpy as np

from transpiler.ir import Literal, Op

CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.POINTER(ctypes.c_void_p))


def _array(address: int, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """The buffer at ``address`` as a writable NumPy array (no copy)."""
    count = int(np.prod(shape, dtype=np.int64))
    if count == 0:
        return np.empty(shape, dtype)
    raw = (ctypes.c_char * (count * dtype.itemsize)).from_address(address)
    return np.frombuffer(raw, dtype).reshape(shape)


class HostCalls:
    """The host callback of one executable; ``address`` is what its entry's ``<name>.host`` global holds."""

    def __init__(self, ops: list[Op]):
        self.ops = ops
        self._errors = threading.local()  # per calling thread: calls may run concurrently
        self._callback = CALLBACK(self._run)  # (kept alive as long as the executable)
        self.address = ctypes.cast(self._callback, ctypes.c_void_p).value

    def _run(self, index: int, pointers: Any) -> None:
        if getattr(self._errors, "error", None) is not None:
            return  # an earlier host call of this run failed: its results are garbage anyway
        try:
            op = self.ops[index]
            operands, k = [], 0
            for v in op.operands:
                if isinstance(v, Literal):
                    operands.append(np.asarray(v.value, v.aval.dtype))
                else:
                    operands.append(_array(pointers[k], v.aval.shape, np.dtype(v.aval.dtype)))
                    k += 1
            with np.errstate(all="ignore"):
                outs = op.prim.impl(*operands, **op.params)
            outs = outs if op.prim.multiple_results else [outs]
            for r, out in zip(op.results, outs, strict=True):
                target = _array(pointers[k], r.aval.shape, np.dtype(r.aval.dtype))
                target[...] = np.asarray(out).astype(target.dtype, copy=False).reshape(target.shape)
                k += 1
        except BaseException as e:  # noqa: BLE001 - re-raised by ``checked`` once native code has returned
            self._errors.error = e

    def checked(self, call: Callable[[tuple], None]) -> Callable[[tuple], None]:
        """``call`` (an executable's native entry), raising what a host call raised during it."""

        def run(buffers: tuple) -> None:
            self._errors.error = None
            call(buffers)
            error = self._errors.error
            if error is not None:
                self._errors.error = None
                raise error

        return run
