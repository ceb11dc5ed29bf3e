"""Registered pytrees whose own code treats their children as arrays (``__init__`` calling ``jnp.asarray``, an
unflatten that reads ``.shape``) go through every transformation: the user's code sees arrays or traced values,
never srcjax's placeholders (types, leaf numbers).

Oracle: the values are NumPy's. JAX 0.10.2 runs the identity cases, vmap, grad and make_jaxpr the same way (its
unflatten sees tracers); for jit it also builds the output on ``ShapedArray``s (its ``jnp.asarray`` of one fails,
JAX swallows that), and jacrev/jacfwd of these pytrees fail in JAX (it builds the Jacobian's structure on
``None``s): srcjax runs those too. eval_shape builds its result on ShapeDtypeStructs in both.
"""

import numpy as np
import pytest

import srcjax
import srcjax.numpy as jnp
from srcjax import tree_util
from srcjax.transpiler.ir import Value

SEEN = []  # the types a pytree's own code was given


@tree_util.register_pytree_node_class
class Pair:
    def __init__(self, a, b):
        SEEN.extend([type(a), type(b)])
        self.a = jnp.asarray(a)
        self.b = jnp.asarray(b)

    def tree_flatten(self):
        return (self.a, self.b), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)


class Scaled:
    """Registered with functions; its unflatten reads the child's shape."""

    def __init__(self, x):
        SEEN.append(type(x))
        self.x = jnp.asarray(x)


tree_util.register_pytree_node(
    Scaled, lambda s: ((s.x,), None), lambda aux, children: Scaled(children[0] * np.ones(children[0].shape, np.float32))
)

A = np.arange(3.0, dtype=np.float32)
B = np.ones(3, np.float32)


def fresh_pair():
    return Pair(A, B)


def close(a, b):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)


CASES = {
    "vmap": lambda: srcjax.vmap(lambda t: t)(fresh_pair()),
    "jit_vmap": lambda: srcjax.jit(srcjax.vmap(lambda t: t))(fresh_pair()),
    "jit": lambda: srcjax.jit(lambda t: t)(fresh_pair()),
    "jvp": lambda: srcjax.jvp(lambda t: t, (fresh_pair(),), (fresh_pair(),))[1],
    "vjp": lambda: srcjax.vjp(lambda t: t, fresh_pair())[1](fresh_pair())[0],
    "linearize": lambda: srcjax.linearize(lambda t: t, fresh_pair())[1](fresh_pair()),
    "checkpoint": lambda: srcjax.checkpoint(lambda t: t)(fresh_pair()),
}


@pytest.mark.parametrize("name", list(CASES))
def test_identity_on_a_pytree_that_calls_asarray(name):
    out = CASES[name]()
    SEEN.clear()
    assert isinstance(out, Pair)
    close(out.a, A)
    close(out.b, B)


@pytest.mark.parametrize("transform", ["vmap", "jit", "grad", "make_jaxpr", "jacrev", "jacfwd"])
def test_user_code_sees_arrays_or_traced_values(transform):
    pair = fresh_pair()
    SEEN.clear()
    run = {
        "vmap": lambda: srcjax.vmap(lambda t: Pair(t.a * 2, t.b))(pair),
        "jit": lambda: srcjax.jit(lambda t: Pair(t.b, t.a))(pair),
        "grad": lambda: srcjax.grad(lambda t: jnp.sum(t.a * t.b))(pair),
        "make_jaxpr": lambda: srcjax.make_jaxpr(lambda t: t.a + t.b)(pair),
        "jacrev": lambda: srcjax.jacrev(lambda t: jnp.sum(t.a))(pair),
        "jacfwd": lambda: srcjax.jacfwd(lambda t: jnp.sum(t.a))(pair),
    }[transform]
    run()
    assert SEEN and all(issubclass(t, (Value, srcjax.Array, np.ndarray)) for t in SEEN), SEEN


def test_values():
    pair = fresh_pair()
    g = srcjax.grad(lambda t: jnp.sum(t.a * t.b))(pair)
    assert isinstance(g, Pair)
    close(g.a, B)
    close(g.b, A)
    out = srcjax.vmap(lambda t: Pair(t.a * 2, t.b + t.a))(pair)
    close(out.a, 2 * A)
    close(out.b, A + B)
    jac = srcjax.jacrev(lambda t: jnp.sum(t.a * t.a))(pair)
    close(jac.a, 2 * A)
    close(jac.b, np.zeros(3))
    (value, aux), g = srcjax.value_and_grad(lambda t: (jnp.sum(t.a), Pair(t.b, t.a)), has_aux=True)(pair)
    close(value, A.sum())
    assert isinstance(aux, Pair)
    close(aux.a, B)
    close(g.a, np.ones(3))


def test_unflatten_reading_shapes():
    s = Scaled(A)
    for out in (srcjax.vmap(lambda t: t)(s), srcjax.jit(lambda t: t)(s), srcjax.grad(lambda t: jnp.sum(t.x**2))(s)):
        assert isinstance(out, Scaled)
    close(srcjax.grad(lambda t: jnp.sum(t.x**2))(s).x, 2 * A)
    close(srcjax.jit(lambda t: Scaled(t.x + 1))(s).x, A + 1)


def test_eval_shape_result_is_built_on_shape_structs_as_in_jax():
    """JAX builds eval_shape's result on ShapeDtypeStructs; jnp.asarray of one is a TypeError in JAX too."""
    with pytest.raises(TypeError):
        srcjax.eval_shape(lambda t: t, fresh_pair())
    out = srcjax.eval_shape(lambda t: (t.a, t.b[:2]), fresh_pair())
    assert [o.shape for o in out] == [(3,), (2,)]


def test_registered_nodes_and_namedtuples_take_the_quick_path_with_the_same_results():
    """jit's quick path (no Signature per call) takes registered nodes (an optimizer's state) and namedtuples, keyed
    with their aux data: a new aux (another structure) compiles again, and results are the general path's."""
    from collections import namedtuple

    from srcjax.example_libraries import optimizers

    init, update, get = optimizers.adam(0.1)
    state = init({"w": jnp.ones(3), "b": jnp.zeros(2)})
    step = srcjax.jit(lambda i, g, s: update(i, g, s))
    grads = {"w": jnp.full(3, 0.5), "b": jnp.ones(2)}
    first = step(0, grads, state)
    second = step(1, grads, first)
    assert len(step._quick) == 1 and len(step._cache) == 1
    want = get(update(1, grads, update(0, grads, state)))["w"]
    np.testing.assert_allclose(np.asarray(get(second)["w"]), np.asarray(want), rtol=1e-6)
    other = init({"w": jnp.ones(3)})  # (another tree_def in the aux data: another compilation)
    step(0, {"w": jnp.ones(3)}, other)
    assert len(step._cache) == 2
    Pair = namedtuple("Pair", "a b")
    add = srcjax.jit(lambda p: p.a + p.b)
    assert float(add(Pair(jnp.float32(1), jnp.float32(2)))) == 3.0 and float(add(Pair(jnp.float32(2), 3.0))) == 5.0
