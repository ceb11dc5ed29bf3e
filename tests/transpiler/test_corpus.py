"""The corpus, three ways: NumPy (float64 oracle), the IR interpreted eagerly, and the emitted Python.

Every program is also run eagerly on srcjax arrays; every IR passes the verifier and round-trips through
print and parse; its printed IR and emitted Python match the golden files in tests/golden/corpus
(regenerate with SRCJAX_UPDATE_GOLDEN=1 after an intended change, and read the diff).
"""

import os
import pathlib
import runpy

import numpy as np
import pytest

import srcjax
import srcjax.numpy as jnp
from srcjax.runtime import tree_util
from tests.corpus import programs
from srcjax.transpiler.emit_python import emit_module
from srcjax.transpiler.frontend import trace_function
from srcjax.transpiler.interpret import eval_function
from srcjax.transpiler.parser import parse_function
from srcjax.transpiler.printer import print_function
from srcjax.transpiler.types import DTYPES_BY_SHORT_NAME, TensorType
from srcjax.transpiler.verifier import verify

REFERENCE = runpy.run_path(programs.__file__, init_globals={"__corpus_numpy__": np})["CASES"]
GOLDEN = pathlib.Path(__file__).resolve().parents[1] / "golden" / "corpus"
UPDATE = os.environ.get("SRCJAX_UPDATE_GOLDEN") == "1"


def parse_type(text):
    name, dims = text[:-1].split("[")
    return TensorType(DTYPES_BY_SHORT_NAME[name], tuple(int(d) for d in dims.split(",") if d))


def abstract(spec):
    if isinstance(spec, str):
        return parse_type(spec)
    if isinstance(spec, (tuple, list)):
        return type(spec)(abstract(s) for s in spec)
    if isinstance(spec, dict):
        return {k: abstract(v) for k, v in spec.items()}
    return spec


def sample(spec, rng, positive):
    if isinstance(spec, str):
        t = parse_type(spec)
        if t.dtype.kind == "f":
            x = rng.normal(size=t.shape)
            return (np.abs(x) + 0.5 if positive else x).astype(t.dtype)
        if t.dtype.kind in "iu":
            return rng.integers(-5, 6, size=t.shape).astype(t.dtype)
        return rng.random(t.shape) > 0.5
    if isinstance(spec, (tuple, list)):
        return type(spec)(sample(s, rng, positive) for s in spec)
    if isinstance(spec, dict):
        return {k: sample(v, rng, positive) for k, v in spec.items()}
    return spec


def as_float64(tree):
    return tree_util.tree_map(lambda x: x.astype(np.float64) if isinstance(x, np.ndarray) and x.dtype.kind == "f"
                              else (x.copy() if isinstance(x, np.ndarray) else x), tree)


def dynamic_leaves(args, specs):
    leaves = []
    for arg, spec in zip(args, specs):
        arg_leaves = tree_util.tree_leaves(arg)
        spec_leaves = tree_util.tree_leaves(abstract(spec), is_leaf=lambda t: isinstance(t, TensorType))
        leaves.extend(a for a, s in zip(arg_leaves, spec_leaves) if isinstance(s, TensorType))
    return leaves


def assert_close(got, want, tol, what):
    got_leaves, got_tree = tree_util.tree_flatten(got)
    want_leaves, want_tree = tree_util.tree_flatten(want)
    assert len(got_leaves) == len(want_leaves), f"{what}: {got_tree} vs {want_tree}"
    for g, w in zip(got_leaves, want_leaves):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape, f"{what}: shape {g.shape} != {w.shape}"
        if w.dtype.kind in "iub" and g.dtype.kind in "iub":
            np.testing.assert_array_equal(g, w, err_msg=what)
        else:
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol, err_msg=what)


def check_golden(name, suffix, text):
    path = GOLDEN / f"{name}.{suffix}"
    if UPDATE or not path.exists():
        path.write_text(text)
        return
    assert path.read_text() == text, f"{path.name} differs from the golden file (SRCJAX_UPDATE_GOLDEN=1 renews it)"


@pytest.mark.parametrize("name", sorted(programs.CASES))
def test_corpus_program(name):
    entry = programs.CASES[name]
    fn, specs, tol = entry["fn"], entry["args"], entry["tol"]
    ir, out_tree = trace_function(fn, [abstract(s) for s in specs])
    verify(ir)
    text = print_function(ir)
    assert print_function(parse_function(text)) == text
    source = emit_module(ir)
    namespace = {}
    exec(compile(source, f"<emitted {name}>", "exec"), namespace)
    emitted = namespace[ir.name]
    check_golden(name, "ir", text)
    check_golden(name, "py", source)
    for seed in range(3):
        rng = np.random.default_rng(seed)
        args = [sample(s, rng, entry["positive"]) for s in specs]
        want = REFERENCE[name]["fn"](*as_float64(args))
        leaves = dynamic_leaves(args, specs)
        interpreted = eval_function(ir, *leaves)
        python = emitted(*leaves)
        python = list(python) if isinstance(python, (tuple, list)) and len(ir.results) != 1 else [python]
        for a, b in zip(interpreted, python):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=f"{name}: IR vs emitted Python")
        assert_close(tree_util.tree_unflatten(out_tree, list(interpreted)), want, tol, f"{name} (IR, seed {seed})")
        eager_args = tree_util.tree_map(lambda x: jnp.asarray(x) if isinstance(x, np.ndarray) else x, args)
        if entry["compiled_only"]:
            with pytest.raises(TypeError, match="immutable"):
                fn(*eager_args)
        else:
            assert_close(fn(*eager_args), want, tol, f"{name} (eager, seed {seed})")


def test_corpus_size():
    assert len(programs.CASES) >= 80


def test_jit_runs_corpus_programs():
    for name in ["if_on_scalar", "newton_sqrt", "break_in_for", "convolve", "dict_params"]:
        entry = programs.CASES[name]
        rng = np.random.default_rng(7)
        args = [sample(s, rng, entry["positive"]) for s in entry["args"]]
        want = REFERENCE[name]["fn"](*as_float64(args))
        assert_close(srcjax.jit(entry["fn"])(*args), want, entry["tol"], name)
