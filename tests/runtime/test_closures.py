"""``closure_convert`` and ``custom_gradient``: closed-over traced values become explicit arguments (consts) that
a custom rule can differentiate; numbers recorded from JAX 0.10.2."""

import functools

import numpy as np
import pytest

import srcjax as jax
import srcjax.numpy as jnp


@functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
def _apply(f, x, *consts):
    return f(x, *consts)


def _apply_fwd(f, x, *consts):
    return f(x, *consts), (x, consts)


def _apply_bwd(f, res, g):
    x, consts = res
    _, pullback = jax.vjp(f, x, *consts)
    return pullback(2 * g)  # doubled: shows the rule, and the consts' cotangents, are used


_apply.defvjp(_apply_fwd, _apply_bwd)


def _loss(a, x):
    conv, consts = jax.closure_convert(lambda y: jnp.sin(a) * y ** 2, x)
    return _apply(conv, x, *consts)


def test_closure_convert_hoists_traced_values_only():
    conv, consts = jax.closure_convert(lambda y: 3.0 * y, 2.0)
    assert consts == [] and float(conv(2.0)) == 6.0  # (concrete values stay constants, as in JAX)
    seen = []

    def count(a):
        conv, consts = jax.closure_convert(lambda y: jnp.sin(a) * y ** 2, 1.0)
        seen.append([np.shape(c) for c in consts])
        return conv(2.0, *consts)

    np.testing.assert_allclose(float(jax.grad(count)(1.0)), 4 * np.cos(1.0), rtol=1e-6)
    jax.jit(count)(1.0)
    assert seen == [[()], [()]]


def test_closure_convert_in_a_custom_vjp_differentiates_the_consts():
    # JAX 0.10.2: 3.3658838, and grad (a, x) = (4.322418, 6.7317677)
    np.testing.assert_allclose(float(_loss(1.0, 2.0)), 3.3658838, rtol=1e-6)
    for grad in (jax.grad(_loss, argnums=(0, 1)), jax.jit(jax.grad(_loss, argnums=(0, 1)))):
        np.testing.assert_allclose([float(g) for g in grad(1.0, 2.0)], [4.322418, 6.7317677], rtol=1e-6)
    batched = jax.vmap(jax.grad(_loss))(jnp.arange(3.0), jnp.ones(3))
    np.testing.assert_allclose(np.asarray(batched), [2.0, 1.0806046, -0.8322937], rtol=1e-6)


def test_converted_function_checks_its_arguments():
    conv, _ = jax.closure_convert(lambda y: y[0] + y[1], (1.0, 2.0))
    with pytest.raises(TypeError, match="structure"):
        conv(1.0)


def test_custom_gradient():
    @jax.custom_gradient
    def f(x):
        return x ** 2, lambda g: (g * x,)

    assert float(f(3.0)) == 9.0
    assert float(jax.grad(f)(3.0)) == 3.0 and float(jax.jit(jax.grad(f))(3.0)) == 3.0
    assert float(jax.grad(jax.grad(f))(3.0)) == 1.0

    @jax.custom_gradient
    def clip_gradient(x):
        return x, lambda g: (jnp.clip(g, -0.1, 0.1),)

    np.testing.assert_allclose(float(jax.grad(lambda x: jnp.sin(clip_gradient(x)) * 3)(2.0)), -0.1, rtol=1e-6)

    @jax.custom_gradient
    def h(x, y):
        return x * y, lambda g: (g * jnp.cos(y), g * x * 2)

    # JAX 0.10.2: (-0.9899925, 4.0) and [-0.41614684] * 3
    np.testing.assert_allclose([float(v) for v in jax.grad(h, argnums=(0, 1))(2.0, 3.0)], [-0.9899925, 4.0],
                               rtol=1e-6)
    np.testing.assert_allclose(np.asarray(jax.vmap(jax.grad(lambda x: h(x, 2.0)))(jnp.arange(3.0))),
                               [-0.41614684] * 3, rtol=1e-6)
