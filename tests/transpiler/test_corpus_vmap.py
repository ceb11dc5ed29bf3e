"""The corpus, batched: vmap of every program equals a Python loop over the batch, for several in_axes,
including programs with data-dependent if and while on batched values."""

import numpy as np
import pytest

import srcjax
import srcjax.numpy as jnp
from srcjax.runtime import tree_util
from tests.corpus import programs
from tests.transpiler.test_corpus import sample

BATCH = 3


def batched_args(entry, rng, axes):
    """Per-example arguments, and the batched ones: each mapped argument stacked along its axis."""
    examples = [[sample(s, rng, entry["positive"]) for s in entry["args"]] for _ in range(BATCH)]
    batched = []
    for i in range(len(entry["args"])):
        axis = axes[i]
        if axis is None:
            shared = examples[0][i]
            for ex in examples:
                ex[i] = shared
            batched.append(shared)
        else:
            batched.append(tree_util.tree_map(lambda *xs, axis=axis: np.stack(xs, axis=axis),
                                              *[ex[i] for ex in examples]))
    return examples, batched


def axes_variants(entry):
    specs = entry["args"]
    dyn = [i for i, s in enumerate(specs) if isinstance(s, (str, tuple, list, dict))]
    statics = {i: None for i in range(len(specs)) if i not in dyn}
    variants = [{**{i: 0 for i in dyn}, **statics}]
    if len(dyn) > 1:
        variants.append({**{i: (0 if k == 0 else None) for k, i in enumerate(dyn)}, **statics})
    flat_ranked = [i for i in dyn if isinstance(specs[i], str) and "[]" not in specs[i]]
    if flat_ranked:
        variants.append({**{i: (-1 if i in flat_ranked else 0) for i in dyn}, **statics})
    return [tuple(v[i] for i in range(len(specs))) for v in variants]


CASES = [(name, axes) for name in sorted(programs.CASES) for axes in axes_variants(programs.CASES[name])]


@pytest.mark.parametrize("name, axes", CASES, ids=[f"{n}-{a}" for n, a in CASES])
def test_vmap_matches_loop(name, axes):
    entry = programs.CASES[name]
    examples, batched = batched_args(entry, np.random.default_rng(5), axes)
    fn = entry["fn"]
    run_one = srcjax.jit(fn) if entry["compiled_only"] else fn
    per_example = [run_one(*[jnp.asarray(a) if isinstance(a, np.ndarray) else a for a in ex]) for ex in examples]
    want = tree_util.tree_map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *per_example)
    got = srcjax.vmap(fn, in_axes=axes)(*batched)
    got_leaves, got_tree = tree_util.tree_flatten(got)
    want_leaves, want_tree = tree_util.tree_flatten(want)
    assert got_tree == want_tree
    for g, w in zip(got_leaves, want_leaves):
        g = np.asarray(g)
        assert g.shape == w.shape, f"{name}: batched shape {g.shape}, looped {w.shape}"
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-5, err_msg=name)


def test_vmap_of_matrix_vector_product_is_one_matrix_product():
    mat = np.arange(12, dtype=np.float32).reshape(3, 4)

    def apply_matrix(v):
        return jnp.dot(mat, v)

    ir = srcjax.make_jaxpr(srcjax.vmap(apply_matrix))(np.ones((5, 4), np.float32)).ir
    names = [op.prim.name for op in ir.body.ops]
    assert names.count("dot_general") == 1 and not {"for", "while", "scan"} & set(names), names
    np.testing.assert_allclose(srcjax.vmap(apply_matrix)(np.eye(4, dtype=np.float32)), mat.T)


def test_corpus_is_batched_broadly():
    assert len(CASES) >= 150
