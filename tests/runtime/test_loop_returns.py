"""A function may return from inside a loop on traced values with any pytree, a dict included (the loop carries the
returned value; it is not one of the user's containers changing). Fuzzer seed 300105."""

import numpy as np

import srcjax
import srcjax.numpy as jnp


def first_above(x):
    for r in x:
        if r > 0.3:
            return {"out": r * 2.0, "rest": [x[0], jnp.sum(x)]}
    return {"out": x[0], "rest": [x[1], jnp.sum(x)]}


def reference(x):
    for r in x:
        if r > 0.3:
            return {"out": r * 2.0, "rest": [x[0], x.sum()]}
    return {"out": x[0], "rest": [x[1], x.sum()]}


def test_a_dict_returned_from_inside_a_loop():
    for x in (np.linspace(-1, 1, 5, dtype=np.float32), np.full(4, -1.0, np.float32)):
        want = reference(x)
        for f in (first_above, srcjax.jit(first_above)):
            got = f(x)
            np.testing.assert_allclose(got["out"], want["out"], rtol=1e-6)
            np.testing.assert_allclose(got["rest"], want["rest"], rtol=1e-6)
    xs = np.linspace(-1, 1, 10, dtype=np.float32).reshape(2, 5)
    np.testing.assert_allclose(srcjax.vmap(first_above)(xs)["out"], [reference(r)["out"] for r in xs], rtol=1e-6)
    g = srcjax.grad(lambda v: first_above(v)["out"])(np.linspace(-1, 1, 5, dtype=np.float32))
    np.testing.assert_allclose(g, [0, 0, 0, 2.0, 0])
