"""``lax.fft`` and ``lax.FftType``: the Fourier transform primitive under JAX's name and signature.

The module is not called ``fft.py`` so that, once ``runtime.lax`` star-imports it, ``lax.fft`` is the function.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from srcjax.transpiler.primitives.fft import FftType, fft_p, fft_type_of
from srcjax.transpiler.types import complex_dtype

__all__ = ["FftType", "fft"]


def fft(x: Any, fft_type: FftType | str, fft_lengths: Sequence[int]) -> Any:
    """The transform ``fft_type`` over the trailing ``len(fft_lengths)`` (1 to 3) axes of ``x``.

    As in JAX, a real operand of a complex-to-complex or inverse-real transform is converted to complex first;
    RFFT accepts real operands only.
    """
    from srcjax.runtime.numpy._core import aval, convert  # imported late: runtime.numpy imports runtime.lax

    kind = fft_type_of(fft_type)
    dtype = aval(x).dtype
    if kind == FftType.RFFT:
        if dtype.kind == "c":
            raise ValueError(f"lax.fft: RFFT takes real operands only, got {dtype.name}")
    elif dtype.kind != "c":
        x = convert(x, complex_dtype(dtype))
    return fft_p.bind(x, fft_type=kind, fft_lengths=tuple(int(n) for n in fft_lengths))
