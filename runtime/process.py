"""What the runtime sets up in the process for compiled code: the object offsets its Python entries read, and
glibc's allocator kept from returning freed result buffers to the system."""

from __future__ import annotations

import ctypes
import os
from typing import Any

import numpy as np

from srcjax.codegen.llvm import entry


def _object_offsets() -> tuple[int, int] | None:
    """(offset of a tuple's first item, offset of an ndarray's data pointer) in this interpreter, or None."""
    try:
        probe = np.zeros(3)
        items = (probe,)
        data = probe.ctypes.data

        def find(obj: Any, wanted: int) -> int | None:
            for offset in range(8, 129, 8):
                if ctypes.c_void_p.from_address(id(obj) + offset).value == wanted:
                    return offset
            return None

        other = np.ones(2, np.int8)
        item, pointer = find(items, id(probe)), find(probe, data)
        if item is None or pointer is None or find(other, other.ctypes.data) != pointer:
            return None
        return item, pointer
    except Exception:  # noqa: BLE001 - any surprise means: use the portable entry
        return None


def _keep_freed_memory() -> None:
    """Results are fresh ``np.empty`` arrays. glibc serves large ones with mmap and unmaps them when freed, so
    every call of a step function faults its result pages in again (measured: a momentum update over two
    512x512 leaves 4.5 ms -> 0.36 ms with this). Raise the mmap and trim thresholds so freed buffers are
    reused from the heap. ``SRCJAX_MALLOPT=0`` leaves the allocator alone."""
    if os.environ.get("SRCJAX_MALLOPT", "1") == "0":
        return
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc
        return
    m_trim_threshold, m_mmap_threshold = -1, -3
    mallopt(m_mmap_threshold, 256 << 20)  # (jit(x*x + x*2.0) on 5000x5000: 19 ms -> 10 ms, NumPy's 48 -> 30)
    mallopt(m_trim_threshold, 512 << 20)


def set_up() -> None:
    """Measure the object offsets for native entries and tune the allocator (once, at import)."""
    entry.use_object_offsets(_object_offsets())
    _keep_freed_memory()
