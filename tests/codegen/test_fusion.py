"""The fusion planner's pieces (codegen/llvm/fusion.py, nodes.py) and the LLVM engine (engine.py)."""

import llvmlite.ir as ir
import numpy as np
import pytest

import srcjax
import srcjax.numpy as jnp
from srcjax.codegen.llvm import engine
from srcjax.codegen.llvm.layout import View, blas_layout, contiguous_strides, reshape_view
from srcjax.transpiler.ir import Value
from srcjax.transpiler.types import TensorType

BASE = Value(TensorType(np.float32, (24,)))


def _addresses(view: View) -> np.ndarray:
    """The element offsets a view reads, in row-major order of its shape."""
    index = np.indices(view.shape).reshape(len(view.shape), -1).T if view.shape else np.zeros((1, 0), int)
    return view.offset + index @ np.asarray(view.strides, int) if view.shape else np.array([view.offset])


# (shape, strides, offset, new shape, whether strides can express the reshape)
RESHAPES = [
    ((4, 6), (6, 1), 0, (24,), True),
    ((4, 6), (6, 1), 0, (2, 2, 3, 2), True),
    ((4, 6), (1, 4), 0, (24,), False),  # a transposed view is not one line
    ((4, 6), (1, 4), 0, (4, 2, 3), True),  # splitting an axis of a transposed view is fine
    ((4, 6), (0, 1), 0, (2, 12), False),  # a broadcast row does not merge with the next
    ((4, 6), (0, 1), 0, (2, 2, 6), True),  # splitting the broadcast axis keeps stride 0
    ((3, 1, 4), (8, 5, 2), 3, (1, 3, 4, 1), True),  # unit axes come and go
    ((2, 3), (-3, 1), 3, (6,), False),  # rows in reverse order are not one line
    ((2, 3), (-3, -1), 5, (6,), True),  # but reversing both axes reverses the line
    ((0, 5), (5, 1), 0, (5, 0), True),
]


@pytest.mark.parametrize("shape,strides,offset,new,expressible", RESHAPES)
def test_reshape_view(shape, strides, offset, new, expressible):
    view = View(BASE, shape, strides, offset)
    out = reshape_view(view, new)
    assert (out is not None) == expressible
    if out is not None and 0 not in new:
        np.testing.assert_array_equal(_addresses(out), _addresses(view))


def test_contiguous_strides():
    assert contiguous_strides((2, 3, 4)) == (12, 4, 1)
    assert contiguous_strides(()) == ()


# (rows, cols, row stride, col stride) -> (transposed, leading dimension) or None
LAYOUTS = [
    ((5, 3, 3, 1), (False, 3)),
    ((5, 3, 4, 1), (False, 4)),  # a column slice of a wider matrix
    ((5, 3, 1, 5), (True, 5)),  # a transposed view
    ((5, 3, 2, 10), None),  # no unit stride
    ((5, 3, 0, 1), None),  # broadcast rows
    ((1, 7, 0, 1), (False, 7)),  # the row stride of a single row does not matter
    ((7, 1, 1, 9), (False, 1)),  # nor the column stride of a single column
    ((5, 3, -3, 1), None),  # reversed rows
]


@pytest.mark.parametrize("matrix,layout", LAYOUTS)
def test_blas_layout(matrix, layout):
    assert blas_layout(*matrix) == layout


def test_nests_collapse_to_flat_loops():
    """A contiguous elementwise nest is one loop over all elements; a row reduction keeps two axes."""
    executable = srcjax.jit(lambda x: (x * 2.0, jnp.sum(x, axis=1))).lower(np.ones((30, 40), np.float32)).compile()
    from srcjax.codegen.llvm.nodes import collapse, instantiate

    plan = executable.native.plan
    shapes = [collapse(instantiate(plan, step)).shape for step in plan.steps]
    assert sorted(shapes) == [[30, 40], [1200]]


def test_engine_compiles_and_prints():
    module = engine.new_module("engine_test")
    f32 = ir.FloatType()
    fn = ir.Function(module, ir.FunctionType(f32, [f32, f32]), name="engine_test_add")
    builder = ir.IRBuilder(fn.append_basic_block())
    builder.ret(builder.fadd(fn.args[0], fn.args[1]))
    compiled = engine.compile_module(module, ["engine_test_add"])
    import ctypes

    add = ctypes.CFUNCTYPE(ctypes.c_float, ctypes.c_float, ctypes.c_float)(compiled.addresses["engine_test_add"])
    assert add(1.5, 2.25) == 3.75
    assert "fadd" in compiled.llvm_ir
    assert "vaddss" in compiled.assembly() or "addss" in compiled.assembly()
    assert "x86_64" in engine.host_description()
    with pytest.raises(RuntimeError, match="no function"):
        engine.compile_module(engine.new_module("empty"), ["missing"])
