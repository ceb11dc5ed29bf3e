"""Bad programs: each error names what was wrong and points at the user's line and column."""

import inspect
import pathlib
import traceback

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
    fn, args, pattern, anchor, kind, notes = bad_programs.BAD[name]
    with pytest.raises(TranspileError, match=pattern) as info:
        trace_function(fn, [abstract(a) for a in args])
    error = info.value
    assert isinstance(error, kind), f"{type(error).__mro__} is not a {kind.__name__}:\n{error}"
    line, text = marked_line(fn, name)
    assert error.line == line, f"reported line {error.line}, expected {line}:\n{error}"
    assert error.column == text.index(anchor) + 1, f"reported column {error.column}:\n{error}"
    rendered = str(error)
    assert rendered.startswith(f"{bad_programs.__file__}:{line}:{error.column}: error: ")
    assert text.rstrip("\n") in rendered and "^" in rendered
    noted = [note.loc.line for note in error.notes if note.loc is not None]
    assert noted[:len(notes)] == [marked_line(fn, note)[0] for note in notes], f"notes at lines {noted}:\n{error}"


def _innermost_line_in(error, path):
    lines = [frame.lineno for frame in traceback.extract_tb(error.__traceback__) if frame.filename == path]
    return lines[-1] if lines else None


@pytest.mark.parametrize("name", sorted(bad_programs.BAD_CALLS))
def test_bad_call(name):
    """A wrong use of the API raises JAX's exception type at the user's line: the error's own location, or the
    user's frame it passes through (JAX reports these without a location of their own)."""
    fn, kind, pattern = bad_programs.BAD_CALLS[name]
    with pytest.raises(kind, match=pattern) as info:
        fn()
    line, _ = marked_line(fn, name)
    error = info.value
    where = error.line if isinstance(error, TranspileError) and error.line is not None else \
        _innermost_line_in(error, bad_programs.__file__)
    assert where == line, f"raised at line {where}, expected {line}:\n{error}"


def test_enough_bad_programs():
    assert len(bad_programs.BAD) >= 100 and len(bad_programs.BAD_CALLS) >= 15


def test_errors_keep_their_python_type():
    fn, args, *_ = bad_programs.BAD["lax_dtype_mismatch"]
    with pytest.raises(TypeError):
        trace_function(fn, [abstract(a) for a in args])
    fn, args, *_ = bad_programs.BAD["undefined_name"]
    with pytest.raises(NameError):
        trace_function(fn, [abstract(a) for a in args])


def test_two_lambdas_on_one_line_are_told_apart():
    import srcjax

    square, cube = bad_programs.TWO_LAMBDAS
    assert float(srcjax.jit(square)(3.0)) == 9.0 and float(srcjax.jit(cube)(3.0)) == 27.0
    fn, args, *_ = bad_programs.BAD["undefined_name"]
    with pytest.raises(NameError):
        trace_function(fn, [abstract(a) for a in args])


def test_caret_underlines_the_expression():
    fn, args, *_ = bad_programs.BAD["if_on_array"]
    with pytest.raises(TranspileError) as info:
        trace_function(fn, [abstract(a) for a in args])
    lines = str(info.value).splitlines()
    assert lines[2].strip() == "^~~~~"  # under `x > 0`
    np.testing.assert_equal(info.value.length, len("x > 0"))


def _error_text(name):
    fn, args, *_ = bad_programs.BAD[name]
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


def test_error_in_a_helper_names_each_call_that_led_there():
    """The helper's line (the one to change), then, innermost first, each call from the compiled function down to
    it, as a C++ compiler names each instantiation that led to an error."""
    fn, args, *_ = bad_programs.BAD["helper_chain_dot"]
    with pytest.raises(TranspileError) as info:
        trace_function(fn, [abstract(a) for a in args])
    file = bad_programs.__file__
    at = {name: marked_line(fn, name)[0] for name in ("helper_chain_dot", "helper_chain_dot:inner",
                                                      "helper_chain_dot:mid")}
    assert str(info.value) == (
        f"{file}:{at['helper_chain_dot']}:12: error: dot: shapes (2, 3) and (4,) are not aligned: 3 (axis 1) != 4 "
        "(axis 0)\n"
        "        return jnp.dot(a, b)  # <- helper_chain_dot\n"
        "               ^~~~~~~~~~~~~\n"
        f"{file}:{at['helper_chain_dot:inner']}:12: note: in _chain_inner(), called here\n"
        "        return _chain_inner(a, b) + 1.0  # <- helper_chain_dot:inner\n"
        "               ^~~~~~~~~~~~~~~~~~\n"
        f"{file}:{at['helper_chain_dot:mid']}:12: note: in _chain_mid(), called here\n"
        "        return _chain_mid(a, b)  # <- helper_chain_dot:mid\n"
        "               ^~~~~~~~~~~~~~~~")


def test_a_recursive_call_is_named_once():
    def deep(x, n):
        return deep(x, n - 1) if n else x @ jnp.ones(4)

    with pytest.raises(TranspileError) as info:
        trace_function(lambda x: deep(x, 20), [abstract("f32[3]")])
    notes = info.value.notes
    assert len(notes) == 2  # the one recursive call site (named once), then the lambda's call of deep
    assert [n.message for n in notes] == ["in deep(), called here", "in deep(), called here"]


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


def _helper_with_a_bad_dot(a, b):
    return jnp.dot(a, b)


@pytest.mark.parametrize("transform", ["jit", "grad", "vmap"])
def test_a_located_error_leaves_with_the_users_frames_only(transform):
    """The error's message names the user's lines, so its traceback keeps the user's frames only, as JAX filters
    its tracebacks (``jax_traceback_filtering``); "off" keeps srcjax's frames and the original cause."""
    import srcjax

    def f(a):
        return _helper_with_a_bad_dot(a, jnp.ones(4)).sum()

    call = {"jit": lambda: srcjax.jit(f)(jnp.ones((2, 3))), "grad": lambda: srcjax.grad(f)(jnp.ones((2, 3))),
            "vmap": lambda: srcjax.vmap(f)(jnp.ones((5, 2, 3)))}[transform]
    from srcjax.transpiler.frontend import frame

    frontend = str(pathlib.Path(frame.__file__).resolve())
    with pytest.raises(TypeError, match="not aligned") as info:
        call()
    files = [str(pathlib.Path(frame.filename).resolve()) for frame in traceback.extract_tb(info.value.__traceback__)]
    assert frontend not in files and info.value.__cause__ is None
    srcjax.config.update("jax_traceback_filtering", "off")
    try:
        with pytest.raises(TypeError, match="not aligned") as info:
            call()
    finally:
        srcjax.config.update("jax_traceback_filtering", "auto")
    files = [str(pathlib.Path(frame.filename).resolve()) for frame in traceback.extract_tb(info.value.__traceback__)]
    assert frontend in files and info.value.__cause__ is not None
