"""Bad programs: each error names what was wrong and points at the user's line and column."""

import inspect

import numpy as np
import pytest

from tests.corpus import bad_programs
from tests.transpiler.test_corpus import abstract
from srcjax.transpiler.frontend import TranspileError, trace_function


def marked_line(fn, name):
    lines, start = inspect.findsource(fn)
    for i, line in enumerate(lines):
        if line.rstrip().endswith(f"# <- {name}") or f"# <- {name} " in line:
            return i + 1, line
    raise AssertionError(f"no line marked for {name}")


@pytest.mark.parametrize("name", sorted(bad_programs.BAD))
def test_bad_program(name):
    fn, args, pattern, anchor = bad_programs.BAD[name]
    with pytest.raises(TranspileError, match=pattern) as info:
        trace_function(fn, [abstract(a) for a in args])
    error = info.value
    line, text = marked_line(fn, name)
    assert error.line == line, f"reported line {error.line}, expected {line}:\n{error}"
    assert error.column == text.index(anchor) + 1, f"reported column {error.column}:\n{error}"
    rendered = str(error)
    assert rendered.startswith(f"{bad_programs.__file__}:{line}:{error.column}: error: ")
    assert text.rstrip("\n") in rendered and "^" in rendered


def test_enough_bad_programs():
    assert len(bad_programs.BAD) >= 25


def test_errors_keep_their_python_type():
    fn, args, _, _ = bad_programs.BAD["lax_dtype_mismatch"]
    with pytest.raises(TypeError):
        trace_function(fn, [abstract(a) for a in args])
    fn, args, _, _ = bad_programs.BAD["undefined_name"]
    with pytest.raises(NameError):
        trace_function(fn, [abstract(a) for a in args])


def test_two_lambdas_on_one_line_are_told_apart():
    import srcjax

    square, cube = bad_programs.TWO_LAMBDAS
    assert float(srcjax.jit(square)(3.0)) == 9.0 and float(srcjax.jit(cube)(3.0)) == 27.0
    fn, args, _, _ = bad_programs.BAD["undefined_name"]
    with pytest.raises(NameError):
        trace_function(fn, [abstract(a) for a in args])


def test_caret_underlines_the_expression():
    fn, args, _, _ = bad_programs.BAD["branch_shape_mismatch"]
    with pytest.raises(TranspileError) as info:
        trace_function(fn, [abstract(a) for a in args])
    lines = str(info.value).splitlines()
    assert lines[2].strip() == "^~~~~~~~~~~"  # under `x.sum() > 0`
    assert "'y' is f32[3] in the then-branch (line" in str(info.value) and "f32[2] in the else-branch" in lines[3]
    np.testing.assert_equal(info.value.length, len("x.sum() > 0"))
