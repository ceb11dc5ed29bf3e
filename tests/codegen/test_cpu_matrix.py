"""The rule matrix's CPU column: how each primitive runs in native code. ``native``: lowered to LLVM (fused
loop nests, BLAS, or control flow); ``inlined``: a custom-derivative call compiles its function; ``host``: a
host call into the primitive's NumPy implementation from inside the native code (codegen/llvm/host.py).
Every host primitive is listed below with the reason; the test fails when one is neither lowered nor listed.
Run with -s to see the column."""

import pytest

import srcjax.transpiler.primitives  # noqa: F401 - registers every family
from srcjax.codegen.llvm.control import BETWEEN, CONTROL, CUSTOM
from srcjax.codegen.llvm.fusion import (
    ARG_REDUCTIONS, IDENTITIES, MULTI_RESULT_ELEMENTWISE, REDUCTIONS, SCANS, SCATTERS, VIEW_OPS)
from srcjax.codegen.llvm.rules import ELEMENTWISE
from srcjax.transpiler.primitives.core import PRIMITIVES

NATIVE = set(ELEMENTWISE) | MULTI_RESULT_ELEMENTWISE | VIEW_OPS | IDENTITIES | set(REDUCTIONS) | CONTROL | BETWEEN | {
    "dot_general", "concatenate", "pad", "iota", "gather", "conv_general_dilated",  # (convolutions of floats)
} | set(SCATTERS) | set(ARG_REDUCTIONS) | set(SCANS)

LAPACK = "LAPACK through NumPy (no native kernel would beat it)"
FFT = "NumPy's pocketfft"
WINDOWS = "fused when the window has at most 16 elements and no padding; larger windows through NumPy"
HOST = {
    "cholesky": LAPACK, "eig": LAPACK, "eigh": LAPACK, "lu": LAPACK, "qr": LAPACK, "svd": LAPACK,
    "triangular_solve": LAPACK, "lu_pivots_to_permutation": "a short serial loop beside LAPACK's LU", "fft": FFT,
    "sort": "NumPy's sorts", "top_k": "NumPy's partial sort",
    "complex": "complex numbers are not in the nests' dtypes", "conj": "complex numbers", "real": "complex numbers",
    "imag": "complex numbers",
    "reduce_window_sum": WINDOWS, "reduce_window_max": WINDOWS, "reduce_window_min": WINDOWS,
    "polygamma": "rare; per order m, a recurrence and an asymptotic series in NumPy",
    "psum": "collectives run only under vmap or pmap", "pmean": "collectives", "pmax": "collectives",
    "pmin": "collectives", "all_gather": "collectives", "axis_index": "collectives",
}


def cpu_cell(name: str) -> str:
    if name in NATIVE:
        return "native"
    if name in CUSTOM:
        return "inlined"
    return "host"


def test_print_cpu_column(capsys):
    with capsys.disabled():
        print(f"\n{'primitive':28s} cpu")
        for name in sorted(PRIMITIVES):
            cell = cpu_cell(name)
            print(f"{name:28s} {cell}" + (f"  ({HOST[name]})" if cell == "host" and name in HOST else ""))


@pytest.mark.parametrize("name", sorted(PRIMITIVES))
def test_every_primitive_has_a_cpu_strategy(name):
    prim = PRIMITIVES[name]
    cell = cpu_cell(name)
    if cell == "host":
        assert name in HOST, f"'{name}' is neither lowered natively nor listed as a host call with a reason"
        assert prim.impl is not None, f"'{name}' runs as a host call but has no NumPy implementation"
    else:
        assert name not in HOST, f"'{name}' is lowered natively now: remove it from HOST"
