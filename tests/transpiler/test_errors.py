"""Bad programs: each error names what was wrong and points at the user's line and column."""

import inspect

import numpy as np
import pytest

import srcjax.numpy as jnp
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
    fn, args, _, _ = bad_programs.BAD["if_on_array"]
    with pytest.raises(TranspileError) as info:
        trace_function(fn, [abstract(a) for a in args])
    lines = str(info.value).splitlines()
    assert lines[2].strip() == "^~~~~"  # under `x > 0`
    np.testing.assert_equal(info.value.length, len("x > 0"))


def _error_text(name):
    fn, args, _, _ = bad_programs.BAD[name]
    with pytest.raises(TranspileError) as info:
        trace_function(fn, [abstract(a) for a in args])
    lines, start = inspect.getsourcelines(fn)
    at = {line.strip(): start + i for i, line in enumerate(lines)}  # the function's source lines -> line numbers
    return str(info.value), at


def test_branch_shape_error_names_both_assignments_and_the_branch():
    """The line to change first (the other branch's assignment), then a note per other line involved, each with
    its file:line:col, as clang and rustc print them."""
    text, at = _error_text("branch_shape_mismatch")
    file = bad_programs.__file__
    assert text == (
        f"{file}:{at['y = x[:2]  # <- branch_shape_mismatch']}:9: error: 'y' is f32[2] here but f32[3] in the "
        "then-branch; a value's shape cannot differ between the paths of control flow on a traced value\n"
        "            y = x[:2]  # <- branch_shape_mismatch\n"
        "            ^\n"
        f"{file}:{at['y = x']}:9: note: 'y' is f32[3] here\n"
        "            y = x\n"
        "            ^\n"
        f"{file}:{at['if x.sum() > 0:']}:8: note: the branch is on a traced value\n"
        "        if x.sum() > 0:\n"
        "           ^~~~~~~~~~~")


def test_loop_shape_error_names_the_assignment_and_the_loop():
    text, at = _error_text("shape_change_in_while")
    file = bad_programs.__file__
    assert text == (
        f"{file}:{at['s = jnp.concatenate([s, s])  # <- shape_change_in_while']}:9: error: 's' is f32[4] here after "
        "an iteration but f32[2] before the loop; a value's shape cannot change inside a loop on a traced value\n"
        "            s = jnp.concatenate([s, s])  # <- shape_change_in_while\n"
        "            ^\n"
        f"{file}:{at['while s.sum() < 10.0:']}:5: note: the loop is on a traced value\n"
        "        while s.sum() < 10.0:\n"
        "        ^~~~~~~~~~~~~~~~~~~~~")


def test_notes_at_an_assignment_before_the_branch_or_loop():
    def grows(x):
        y = x
        if x.sum() > 0:
            y = x[:2]
        return y

    def doubles(x):
        y = x
        while x.sum() > 0:
            x = x - 1.0
            y = jnp.concatenate([y, y])
        return y

    for fn, first, want in (
            (grows, "y = x[:2]", ["'y' is f32[2] here but f32[3] in the else-branch", "note: 'y' is f32[3] here",
                                  "note: the branch is on a traced value"]),
            (doubles, "y = jnp.concatenate([y, y])", ["'y' is f32[6] here after an iteration but f32[3] before",
                                                      "note: the loop is on a traced value",
                                                      "note: 'y' is f32[3] here, before the loop"])):
        with pytest.raises(TranspileError) as info:
            trace_function(fn, [abstract("f32[3]")])
        lines, start = inspect.findsource(fn)
        line = next(i + 1 for i, text in enumerate(lines) if text.strip() == first)
        assert (info.value.line, info.value.column) == (line, 13)
        notes = [ln for ln in str(info.value).splitlines() if ": note: " in ln or ": error: " in ln]
        assert len(notes) == len(want) and all(w in n for w, n in zip(want, notes)), str(info.value)
        assert all(n.startswith(f"{__file__}:") for n in notes)
