"""The corpus, differentiated: every program with float inputs has its derivatives checked against central
finite differences, forward (jvp) and reverse (vjp) mode, in float64 — including the programs with
data-dependent if, for and while. A subset is checked to second order."""

import numpy as np
import pytest

from srcjax.runtime import tree_util
from srcjax.runtime.config import config
from srcjax.runtime.test_util import check_grads
from tests.corpus import programs
from tests.transpiler.test_corpus import abstract, sample
from srcjax.transpiler.types import TensorType

# programs whose outputs are not differentiable functions of their inputs at random points, and why
NOT_DIFFERENTIABLE = {
    "int_arith": "integer inputs",
    "collatz_steps": "integer input",
    "python_index_from_array": "integer input",
}
SECOND_ORDER = ["polynomial", "unary_math", "nested_calls", "logistic_loss", "if_on_scalar", "while_tuple_carry",
                "for_range_sum", "tanh_slides", "dict_params", "while_counter", "early_return", "selu"]


@pytest.fixture
def x64():
    saved = config.jax_enable_x64
    config.update("jax_enable_x64", True)
    yield
    config.update("jax_enable_x64", saved)


def float_inputs(entry):
    leaves = tree_util.tree_leaves([abstract(s) for s in entry["args"]], is_leaf=lambda t: isinstance(t, TensorType))
    return any(isinstance(t, TensorType) and t.dtype.kind == "f" for t in leaves)


def differentiable_cases():
    return sorted(n for n, e in programs.CASES.items() if float_inputs(e) and n not in NOT_DIFFERENTIABLE)


def as_function(entry, args):
    """The program as a function of its float inputs only (ints and statics stay fixed)."""
    specs = entry["args"]
    flat, treedef = tree_util.tree_flatten(args)
    kinds = tree_util.tree_leaves([abstract(s) for s in specs], is_leaf=lambda t: isinstance(t, TensorType))
    float_pos = [i for i, t in enumerate(kinds) if isinstance(t, TensorType) and t.dtype.kind == "f"]

    def f(*xs):
        leaves = list(flat)
        for i, x in zip(float_pos, xs):
            leaves[i] = x
        out = entry["fn"](*tree_util.tree_unflatten(treedef, leaves))
        return [o for o in tree_util.tree_leaves(out) if _kind(o) == "f"]

    if entry["compiled_only"]:  # NumPy-style item assignment runs compiled only
        import srcjax

        f = srcjax.jit(f)
    return f, [np.asarray(flat[i], np.float64) for i in float_pos]


def _kind(x):
    return x.dtype.kind if hasattr(x, "dtype") else np.asarray(x).dtype.kind


@pytest.mark.parametrize("name", differentiable_cases())
def test_corpus_gradients(name, x64):
    entry = programs.CASES[name]
    rng = np.random.default_rng(3)
    args = [sample(s, rng, entry["positive"]) for s in entry["args"]]
    f, xs = as_function(entry, args)
    check_grads(f, xs, order=1, modes=("fwd", "rev"), atol=1e-4, rtol=1e-4, eps=1e-6)


@pytest.mark.parametrize("name", SECOND_ORDER)
def test_corpus_second_order(name, x64):
    entry = programs.CASES[name]
    rng = np.random.default_rng(4)
    args = [sample(s, rng, entry["positive"]) for s in entry["args"]]
    f, xs = as_function(entry, args)
    check_grads(f, xs, order=2, modes=("fwd", "rev"), atol=1e-3, rtol=1e-3, eps=1e-5)


def test_most_of_the_corpus_is_differentiated():
    assert len(differentiable_cases()) >= 85


def test_forward_over_reverse_through_a_data_dependent_while(x64):
    import srcjax

    f = programs.newton_sqrt

    def f_vjp(a):
        out, pullback = srcjax.vjp(f, a)
        return pullback(out)[0]

    for a in (0.7, 1.6, 2.5):
        a = np.float64(a)
        numerical = (f_vjp(a + 1e-5) - f_vjp(a - 1e-5)) / 2e-5
        np.testing.assert_allclose(srcjax.jvp(f_vjp, (a,), (np.float64(1.0),))[1], numerical, rtol=1e-4, atol=1e-8)
        np.testing.assert_allclose(srcjax.jacfwd(srcjax.grad(f))(a), (srcjax.grad(f)(a + 1e-5) - srcjax.grad(f)(
            a - 1e-5)) / 2e-5, rtol=1e-4, atol=1e-8)
