"""Reading the assembly of compiled code in tests, for whichever CPU it was compiled for.

The suite runs on machines with AVX-512, with AVX2 only, and (``SRCJAX_CPU=x86-64-v2``) for SSE4.2: a check
that code is vectorised asks for packed instructions on the widest registers of the target the code was
compiled for, and fails on scalar code (``mulss``/``mulsd`` are not packed).
"""

from __future__ import annotations

import re

from srcjax.codegen.llvm import engine


def full_width_registers() -> str:
    """A pattern for the vector registers a vectorised loop uses on the target: 512 or 256 bits with AVX-512
    (LLVM prefers 256-bit vectors on some of these CPUs), 256 with AVX, 128 otherwise."""
    enabled = engine.target().enabled
    if "avx512f" in enabled:
        return "[yz]mm"
    return "ymm" if "avx" in enabled else "xmm"


def packed(assembly: str, mnemonic: str) -> bool:
    """Whether an instruction matching ``mnemonic`` (a pattern: ``v?mulps``) works on full vector registers."""
    return re.search(rf"\b(?:{mnemonic})\s[^\n]*%{full_width_registers()}\d", assembly) is not None


def packed_multiply_add(assembly: str, dtype_suffix: str) -> bool:
    """Packed multiply-adds (polynomials) of ``ps`` (float32) or ``pd`` (float64) lanes: FMA instructions where
    the target has them, packed multiplies where it does not."""
    return packed(assembly, rf"vfmadd\w*{dtype_suffix}" if engine.has_fma() else rf"v?mul{dtype_suffix}")


def called(assembly: str) -> set[str]:
    """The functions the code calls."""
    return set(re.findall(r"\bcall[lq]?\s+\*?([\w.@\"]+)", assembly))
