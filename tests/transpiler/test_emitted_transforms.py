"""Every transform of every corpus program, as the Python module ``srcjax transpile`` prints: it imports
only public names, runs, computes what the IR it was emitted from computes bit for bit, and agrees with
the in-process transformation (``srcjax.grad``, ``jvp``, ``vjp``, ``vmap``, ``jacfwd``, ``jacrev``,
``hessian``). A transformation the in-process API refuses for a program is skipped, with its reason."""

from __future__ import annotations

import re
import runpy

import numpy as np
import pytest

import srcjax
from srcjax.runtime import tree_util
from srcjax.transpile import TransformRefused, transformed
from srcjax.transpiler.emit_python import emit_module
from srcjax.transpiler.frontend import trace_function
from srcjax.transpiler.interpret import eval_function
from srcjax.transpiler.types import TensorType
from tests.corpus import loops, programs
from tests.transpiler.test_corpus import abstract, dynamic_leaves, sample

TRANSFORMS = ("grad", "vjp", "jvp", "vmap", "jacfwd", "jacrev", "hessian")
BATCH = 3
LOOPS = {  # loops.py: arguments as programs.CASES gives them
    "run_10": dict(fn=loops.run_10, args=("f32[3]",)),
    "run_10000": dict(fn=loops.run_10000, args=("f32[3]",)),
    "annotated": dict(fn=loops.annotated, args=("f32[3]", "f32[]")),
    "clipped_sum": dict(fn=loops.clipped_sum, args=("f32[4]", "f32[]")),
}
PROGRAMS = {**{name: {"positive": False, "tol": 1e-5, **entry} for name, entry in LOOPS.items()}, **programs.CASES}
FLOAT0 = np.dtype([("float0", "V")])  # JAX's dtype of an integer's cotangent
# Jacobians beyond this many elements (of a large input) are not worth computing in a test
MAX_OUTPUT = 1 << 16


def _is_type(x):
    return isinstance(x, TensorType)


def _float_arg(spec) -> bool:
    leaves = tree_util.tree_leaves(abstract(spec), is_leaf=_is_type)
    return bool(leaves) and all(_is_type(t) and t.dtype.kind == "f" for t in leaves)


def _dynamic(spec) -> bool:
    return isinstance(spec, (str, tuple, list, dict))


def _leaves(tree):
    return [np.asarray(x) for x in tree_util.tree_leaves(tree)]


def _floats(values):
    return [np.asarray(v) for v in values if np.asarray(v).dtype.kind in "fc"]


def _reference(kind, fn, specs, args, nums, extra):
    """The in-process transformation's flat results, and what the emitted function takes after the args."""
    if kind == "vmap":
        return _leaves(srcjax.vmap(fn, in_axes=extra)(*args)), []
    if kind in ("grad", "jacfwd", "jacrev", "hessian"):  # (an integer output's Jacobian, zeros, is not emitted)
        return [x for x in _leaves(getattr(srcjax, kind)(fn, argnums=nums)(*args)) if x.dtype.kind in "fc"], []
    # jvp and vjp: the function of its float leaves (the rest fixed), as the emitted module takes them
    flat, tree = tree_util.tree_flatten(list(args))
    kinds = tree_util.tree_leaves([abstract(s) for s in specs], is_leaf=_is_type)
    spots = [i for i, t in enumerate(kinds) if _is_type(t) and t.dtype.kind == "f"]

    def on_floats(*xs):
        leaves = list(flat)
        for i, x in zip(spots, xs):
            leaves[i] = x
        return fn(*tree_util.tree_unflatten(tree, leaves))

    primals = [flat[i] for i in spots]
    rng = np.random.default_rng(11)
    if kind == "jvp":
        tangents = [rng.normal(size=np.shape(p)).astype(np.asarray(p).dtype) for p in primals]
        out, tangent_out = srcjax.jvp(on_floats, primals, tangents)
        outs = _leaves(out)
        return outs + [t for t, o in zip(_leaves(tangent_out), outs) if o.dtype.kind in "fc"], tangents
    out, pullback = srcjax.vjp(on_floats, *primals)
    cotangents = tree_util.tree_map(lambda o: rng.normal(size=np.shape(o)).astype(np.asarray(o).dtype)
                                    if np.asarray(o).dtype.kind in "fc" else np.zeros(np.shape(o), FLOAT0), out)
    return _leaves(out) + _floats(_leaves(pullback(cotangents))), _leaves(cotangents)


# run_10000 is run_10 with a loop 1000 times longer: its transforms are emitted and compiled, not run (eagerly,
# 10,000 steps of each take a minute; run_10 runs the same code)
NOT_RUN = {"run_10000"}
CASES = [pytest.param(name, kind, id=f"{kind}-{name}") for name in sorted(PROGRAMS) for kind in TRANSFORMS]


def _output_size(kind, fn, specs, nums):
    """How many elements a Jacobian or Hessian has (outputs times inputs, times inputs again), from types."""
    if kind not in ("jacfwd", "jacrev", "hessian"):
        return 0
    ir, _ = trace_function(fn, [abstract(s) for s in specs])
    inputs = sum(t.size for i in nums for t in tree_util.tree_leaves(abstract(specs[i]), is_leaf=_is_type))
    return sum(r.aval.size for r in ir.results) * inputs ** (2 if kind == "hessian" else 1)


@pytest.mark.parametrize("name, kind", CASES)
def test_emitted_transform_runs_and_agrees(name, kind):
    entry = PROGRAMS[name]
    fn, specs = entry["fn"], list(entry["args"])
    nums = tuple(i for i, s in enumerate(specs) if _float_arg(s))
    rng = np.random.default_rng(7)
    axes = tuple(0 if _dynamic(s) else None for s in specs)
    if kind == "vmap":
        types = [tree_util.tree_map(lambda t: t.update(shape=(BATCH, *t.shape)), abstract(s), is_leaf=_is_type)
                 if _dynamic(s) else s for s in specs]
        examples = [[sample(s, rng, entry["positive"]) for s in specs] for _ in range(BATCH)]
        args = [tree_util.tree_map(lambda *xs: np.stack(xs), *[ex[i] for ex in examples]) if _dynamic(s)
                else s for i, s in enumerate(specs)]
    else:
        if kind in ("grad", "jacfwd", "jacrev", "hessian") and not nums:
            pytest.skip("no float argument to differentiate")
        types = [abstract(s) for s in specs]
        args = [sample(s, rng, entry["positive"]) for s in specs]
    try:
        size = _output_size(kind, fn, specs, nums)
        if size > MAX_OUTPUT:
            pytest.skip(f"{kind} of {name} has {size} elements")
        want, extra = (None, None) if name in NOT_RUN else _reference(kind, fn, specs, args, nums, axes)
    except (TypeError, ValueError, NotImplementedError) as e:  # the in-process transformation refuses too
        pytest.skip(f"{kind} of {name} is refused in-process: {str(e).splitlines()[0]}")
    try:
        ir = transformed(fn, types, [kind], argnums=nums, in_axes=axes)
    except TransformRefused as e:
        if name not in NOT_RUN:  # (the in-process transformation took it)
            raise
        pytest.skip(str(e))
    source = emit_module(ir)
    imports = re.findall(r"^(?:from|import) (\S+)", source, re.MULTILINE)
    assert set(imports) <= {"base64", "numpy", "srcjax", "srcjax.lax", "srcjax.numpy"}, imports
    namespace: dict = {}
    exec(compile(source, f"<emitted {kind} of {name}>", "exec"), namespace)
    if name in NOT_RUN:
        return
    leaves = dynamic_leaves(args, specs)
    inputs = [*leaves, *(extra if kind in ("jvp", "vjp") else [])]
    if kind == "vjp":  # a cotangent for every output (an integer output's is zeros of its type)
        inputs = [*leaves, *[c if c.dtype.kind in "fc" else np.zeros(p.aval.shape, p.aval.dtype)
                             for c, p in zip(extra, ir.params[len(leaves):])]]
    got = namespace[ir.name](*inputs)
    got = list(got) if isinstance(got, (tuple, list)) else [got]
    for g, w in zip(got, eval_function(ir, *inputs)):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w), err_msg="emitted Python vs its IR")
    if kind == "jvp":  # the tangents of integer outputs (float0) are not compared
        n = len(ir.results) // 2
        got = got[:n] + [t for t, o in zip(got[n:], got[:n]) if np.asarray(o).dtype.kind in "fc"]
    assert len(got) == len(want), f"{len(got)} results, in-process {len(want)}"
    tol = max(entry["tol"], 1e-4)
    for g, w in zip(got, want):
        g = np.asarray(g)
        assert g.shape == w.shape, f"shape {g.shape}, in-process {w.shape}"
        np.testing.assert_allclose(g.astype(np.float64) if g.dtype.kind in "iub" else g, w, rtol=tol, atol=tol)


def test_the_readme_loss_gradient_runs_as_emitted(tmp_path):
    """The README's loss (a ``while`` on data): its gradient as emitted Python runs, keeps no stack (what it
    would save each iteration is a constant), and reads as written."""
    source_file = tmp_path / "f.py"
    source_file.write_text(
        "import srcjax.numpy as jnp\n\n\n"
        "def loss(w, x):\n"
        "    h = jnp.tanh(jnp.dot(w, x))\n"
        "    while h.sum() > 1.0:\n"
        "        h = h / 2.0\n"
        "    return jnp.sum(h)\n"
    )
    namespace = runpy.run_path(str(source_file))
    ir = transformed(namespace["loss"], [TensorType(np.float32, (3, 4)), TensorType(np.float32, (4,))], ["grad"])
    source = emit_module(ir)
    assert "append" not in source and "const" not in source and "precision" not in source
    loop = "    while lax.reduce_sum(h, axes=(0,)) > 1.0:  # while h.sum() > 1.0:  (f.py:6)\n        h = h / 2.0"
    assert loop in source
    assert "        h_bar = h_bar / 2.0" in source and "1.0 - t" in source
    emitted: dict = {}
    exec(compile(source, "<grad_loss>", "exec"), emitted)
    w, x = np.full((3, 4), 0.5, np.float32), np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(emitted["grad_loss"](w, x)),
                                  np.asarray(srcjax.grad(namespace["loss"])(w, x)))


def test_a_program_whose_transform_the_api_refuses_is_refused_here_too():
    with pytest.raises(TransformRefused, match="--grad of int_arith"):
        transformed(programs.int_arith, [TensorType(np.int32, (5,))] * 2, ["grad"])
