"""The corpus, a fourth way: every program compiled to native code (host calls included) agrees with the IR
interpreter, integers and booleans exactly, floats within a few float32 ulp of the result's scale."""

import numpy as np
import pytest

from srcjax.codegen.llvm.compile import compile_function
from tests.corpus import programs
from tests.transpiler.test_corpus import abstract, dynamic_leaves, sample
from tests.transpiler.test_corpus_grad import as_function, differentiable_cases
from srcjax.transpiler.frontend import trace_function
from srcjax.transpiler.interpret import eval_function


@pytest.mark.parametrize("name", sorted(programs.CASES))
def test_corpus_program_compiles_natively(name):
    entry = programs.CASES[name]
    specs = entry["args"]
    ir, _ = trace_function(entry["fn"], [abstract(s) for s in specs])
    native = compile_function(ir)
    assert native is not None, f"{name} is not compiled natively"
    for seed in range(2):
        rng = np.random.default_rng(seed)
        args = [sample(s, rng, entry["positive"]) for s in specs]
        leaves = dynamic_leaves(args, specs)
        want = [np.asarray(v) for v in eval_function(ir, *leaves)]
        got = native(*[np.asarray(leaf) for leaf in leaves])
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype, f"{name}: {g.shape} {g.dtype} vs {w.shape} {w.dtype}"
            if w.dtype.kind in "iub":
                np.testing.assert_array_equal(g, w, err_msg=name)
            else:
                scale = float(np.max(np.abs(w[np.isfinite(w)]), initial=1.0))
                eps = float(np.finfo(w.dtype).eps)
                np.testing.assert_allclose(g, w, rtol=64 * eps, atol=64 * eps * scale, err_msg=name)


def _loss(entry, f):
    """A scalar of the program's float outputs (sum of squares: nonzero gradients everywhere)."""
    import srcjax.numpy as jnp

    def loss(*xs):
        return sum(jnp.sum(jnp.square(o)) for o in f(*xs))

    return loss


@pytest.mark.parametrize("name", differentiable_cases())
def test_corpus_gradient_compiles_natively(name):
    """``jit(grad(...))`` of every differentiable program (loops and their stacks included) runs natively and
    agrees with the interpreted gradient."""
    import srcjax

    entry = programs.CASES[name]
    rng = np.random.default_rng(5)
    args = [sample(s, rng, entry["positive"]) for s in entry["args"]]
    f, xs = as_function(entry, args)
    xs = [x.astype(np.float32) for x in xs]
    g = srcjax.jit(srcjax.grad(_loss(entry, f), argnums=tuple(range(len(xs)))))
    g(*xs)
    (compiled,) = g._cache.values()
    assert compiled.native is not None, f"{name}: {compiled.native_error}"
    want = [np.asarray(v) for v in eval_function(compiled.ir, *xs)]
    got = compiled.native(*xs)
    for gv, w in zip(got, want):
        scale = float(np.max(np.abs(w[np.isfinite(w)]), initial=1.0))
        np.testing.assert_allclose(gv, w, rtol=1e-4, atol=1e-5 * scale, err_msg=name)
