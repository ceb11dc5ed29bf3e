"""The rule matrix's GPU column (codegen/ptx/table.py): every primitive has a row; a CPU fallback says why.
Run with -s to see the column beside the CPU's."""

import numpy as np
import pytest

import srcjax.transpiler.primitives  # noqa: F401 - registers every family
from srcjax import lax
from srcjax.codegen.llvm.table import CPU
from srcjax.codegen.ptx import program
from srcjax.codegen.ptx.table import GPU, How
from srcjax.transpiler.frontend import trace_function
from srcjax.transpiler.primitives.core import PRIMITIVES
from srcjax.transpiler.types import TensorType


def test_print_gpu_column(capsys):
    with capsys.disabled():
        print(f"\n{'primitive':28s} {'cpu':22s} gpu")
        for name in sorted(PRIMITIVES):
            cpu, gpu = CPU.get(name), GPU.get(name)
            cell = "(no row)" if gpu is None else gpu.how.value + (f"  ({gpu.note})" if gpu.note else "")
            print(f"{name:28s} {cpu.kind.value if cpu else '(no row)':22s} {cell}")


@pytest.mark.parametrize("name", sorted(PRIMITIVES))
def test_every_primitive_has_a_row_in_the_gpu_column(name):
    row = GPU.get(name)
    assert row is not None, f"'{name}' has no GPU row (codegen/ptx/table.py)"
    if row.how is How.CPU:
        assert row.note, f"'{name}' falls back to the CPU without a reason"


def test_a_convolution_is_patches_and_a_cublas_product():
    ir, _ = trace_function(
        lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "SAME"),
        [TensorType(np.dtype(np.float32), (2, 3, 9, 9)), TensorType(np.dtype(np.float32), (4, 3, 3, 3))])
    assert "cublas gemm" in program.build(ir).describe()
