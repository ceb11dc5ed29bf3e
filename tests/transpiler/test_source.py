"""Where a function's source comes from, and what happens when it cannot be used: a file edited after the
function was loaded, code rewritten before it ran (pytest's asserts), code typed where Python keeps no text
(standard input, ``python -c``). The function is then traced, as JAX traces it, and srcjax says so once."""

import importlib.util
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import srcjax
import srcjax.numpy as jnp
from srcjax.transpiler.frontend.errors import MissingSourceWarning


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_file_edited_after_loading_gives_the_loaded_function_not_the_new_text(tmp_path):
    path = tmp_path / "edited_module.py"
    path.write_text("def f(x):\n    return x * 2.0\n")
    module = _load(path, "edited_module")
    path.write_text("def f(x):\n    return x * 100.0\n")
    os.utime(path, (os.path.getmtime(path) + 5,) * 2)  # (a newer modification time, as an editor leaves it)
    with pytest.warns(MissingSourceWarning, match=r"'f' .*edited_module.py:1.*not the code that runs"):
        assert float(srcjax.jit(module.f)(1.0)) == 2.0
    assert float(srcjax.grad(module.f)(1.0)) == 2.0
    assert float(module.f(1.0)) == 2.0


@pytest.mark.parametrize("text", ["def f(x:\n    return (((\n", "\xff\xfe not text", ""])
def test_a_file_rewritten_unparsable_gives_the_loaded_function(tmp_path, text):
    path = tmp_path / f"broken_module_{len(text)}.py"
    path.write_text(f"def f(x):\n    return x * 2.0 + {len(text)}\n")  # (code of its own: no other test's)
    module = _load(path, path.stem)
    path.write_text(text, encoding="latin-1")  # (a syntax error, bytes that are not UTF-8, nothing)
    with pytest.warns(MissingSourceWarning, match=r"'f' "):
        assert float(srcjax.jit(module.f)(1.0)) == 2.0 + len(text)
    assert float(srcjax.grad(module.f)(1.0)) == 2.0


def test_a_reload_after_an_edit_in_the_same_second_and_size_reads_the_new_text(tmp_path, monkeypatch):
    """linecache keeps a file's text while its size and modification time (in seconds) stay: the reloaded
    function's source is read again all the same, so its `if` on a traced value still compiles."""
    monkeypatch.setattr(sys, "dont_write_bytecode", True)  # (else the reload would run the first text's bytecode)
    path = tmp_path / "quick_edit_module.py"
    text = "def f(x):\n    if x > 0:\n        return x * 2.0\n    return -x\n"
    path.write_text(text)
    module = _load(path, "quick_edit_module")
    assert float(srcjax.jit(module.f)(3.0)) == 6.0  # (the first text, now in linecache)
    before = os.stat(path)
    path.write_text(text.replace("2.0", "5.0"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    module = _load(path, "quick_edit_module")
    with warnings.catch_warnings():
        warnings.simplefilter("error", MissingSourceWarning)
        f = srcjax.jit(module.f)
        assert [float(f(v)) for v in (3.0, -3.0)] == [15.0, 3.0]


def test_an_unedited_file_is_read_and_its_control_flow_compiled(tmp_path):
    path = tmp_path / "steady_module.py"
    path.write_text("def f(x):\n    if x > 0:\n        return x * 2.0\n    return -x\n")
    module = _load(path, "steady_module")
    with warnings.catch_warnings():
        warnings.simplefilter("error", MissingSourceWarning)
        f = srcjax.jit(module.f)
        assert [float(f(v)) for v in (3.0, -3.0)] == [6.0, 3.0]


def test_code_pytest_rewrote_is_traced_not_misread():
    def checked(x):
        assert x.shape == (3,)  # (pytest rewrites this statement in test modules)
        return jnp.sum(x * 2.0)

    with pytest.warns(MissingSourceWarning, match="rewritten before it ran"):
        value = srcjax.jit(checked)(np.ones(3, np.float32))
    assert float(value) == 6.0


def test_a_script_on_standard_input_is_traced_with_one_message(tmp_path):
    script = ("import srcjax as jax, srcjax.numpy as jnp\n"
              "f = lambda x: jnp.sin(x) * 2\n"
              "print(float(jax.jit(f)(1.0)), float(jax.grad(f)(1.0)), float(jax.jit(f)(2.0)))\n")
    run = subprocess.run([sys.executable, "-"], input=script, capture_output=True, text=True, cwd=tmp_path,
                         env={**os.environ, "SRCJAX_CACHE": "0"})
    assert run.returncode == 0, run.stderr
    values = [float(v) for v in run.stdout.split()]
    np.testing.assert_allclose(values, [2 * np.sin(1.0), 2 * np.cos(1.0), 2 * np.sin(2.0)], rtol=1e-6)
    assert run.stderr.count("MissingSourceWarning") == 1
    assert "<stdin>" in run.stderr and "standard input" in run.stderr


CELL = "def cell_fn(x):\n    if x > 0:\n        return x * 2.0\n    return -x\n"


@pytest.mark.parametrize("filename", ["<ipython-input-7-0123456789ab>", "/tmp/ipykernel_4242/2718281828.py"],
                         ids=["ipython_terminal", "jupyter_kernel"])
def test_notebook_cells_are_read_through_linecache(filename):
    """IPython and Jupyter keep each cell's text in linecache under a name of their own (the terminal's
    ``<ipython-input-N-...>``, ipykernel's temporary file that is never written): the cell is read from there,
    so Python control flow on traced values compiles, with no message."""
    import linecache

    linecache.cache[filename] = (len(CELL), None, CELL.splitlines(True), filename)
    try:
        namespace = {}
        exec(compile(CELL, filename, "exec"), namespace)
        with warnings.catch_warnings():
            warnings.simplefilter("error", MissingSourceWarning)
            assert float(srcjax.jit(namespace["cell_fn"])(3.0)) == 6.0
            assert float(srcjax.jit(namespace["cell_fn"])(-3.0)) == 3.0
            assert float(srcjax.grad(namespace["cell_fn"])(-2.0)) == -1.0
    finally:
        linecache.cache.pop(filename, None)


def test_an_ipython_session_compiles_control_flow_of_its_cells(tmp_path):
    """A real IPython session (where IPython is installed) fed on standard input."""
    pytest.importorskip("IPython")
    session = ("import srcjax as jax\n" + CELL + "\n"
               "print('result', float(jax.jit(cell_fn)(3.0)), float(jax.jit(cell_fn)(-1.5)))\n")
    run = subprocess.run([sys.executable, "-m", "IPython", "--simple-prompt", "--no-banner", "--colors=NoColor"],
                         input=session, capture_output=True, text=True, cwd=tmp_path,
                         env={**os.environ, "SRCJAX_CACHE": "0"})
    assert "result 6.0 1.5" in run.stdout, run.stdout + run.stderr
    assert "MissingSourceWarning" not in run.stdout + run.stderr


class _Scaled:
    def __init__(self, scale):
        self.scale = scale

    def __call__(self, x):
        if x > 0:  # control flow on a traced value: compiled, as in a plain function
            return x * self.scale
        return -x


def test_a_callable_object_is_read_from_its_call_method():
    model = _Scaled(3.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", MissingSourceWarning)
        assert float(srcjax.jit(model)(2.0)) == 6.0
        assert float(srcjax.grad(model)(-1.0)) == -1.0
        np.testing.assert_allclose(srcjax.vmap(model)(jnp.array([1.0, -2.0])), [3.0, 2.0])
        np.testing.assert_allclose(srcjax.jit(lambda v: model(v) + 1.0)(jnp.float32(-4.0)), 5.0)
