"""Programs an adversarial comparison with JAX 0.10.2 found crashing or wrong, checked against the values JAX
gives for them: vmap of derivatives over NumPy's float64 arrays (x64 off), lax.switch with an index per example,
log_softmax over a row masked whole, and jnp.interp's derivative at its last knot."""

import numpy as np
import pytest

import srcjax
import srcjax.numpy as jnp
from srcjax import lax


def test_vmap_of_derivatives_takes_float64_numpy_arrays():
    x = np.linspace(0.0, 1.0, 4)  # (float64, as np.linspace gives)
    np.testing.assert_allclose(np.asarray(srcjax.vmap(srcjax.grad(jnp.sin))(x)), np.cos(x), rtol=1e-6)
    X = np.linspace(0.1, 1.0, 6).reshape(2, 3)
    f = lambda v: jnp.sum(jnp.sin(v) * v[0])  # noqa: E731
    assert srcjax.vmap(srcjax.hessian(f))(X).shape == (2, 3, 3)
    values, grads = srcjax.vmap(srcjax.value_and_grad(f))(X)
    assert values.dtype == np.float32 and grads.shape == (2, 3)
    _, tangents = srcjax.vmap(lambda v: srcjax.jvp(jnp.sin, (v,), (v,)))(x)
    np.testing.assert_allclose(np.asarray(tangents), np.cos(x) * x, rtol=1e-6)


def test_switch_with_an_index_per_example():
    branches = [lambda x: x**2, lambda x: -x, lambda x: jnp.sin(x)]
    f = lambda i, x: lax.switch(i, branches, x)  # noqa: E731
    i = np.array([0, 1, 2, 5, -3], np.int32)  # (clamped: 5 takes the last branch, -3 the first)
    x = np.array([1.0, 2.0, 3.0, 4.0, 5.0], np.float32)
    want = [1.0, -2.0, np.sin(3.0), np.sin(4.0), 25.0]
    np.testing.assert_allclose(np.asarray(srcjax.vmap(f)(i, x)), want, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(srcjax.jit(srcjax.vmap(f))(i, x)), want, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(srcjax.vmap(srcjax.grad(f, argnums=1))(i, x)),
                               [2.0, -1.0, np.cos(3.0), np.cos(4.0), 10.0], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(srcjax.vmap(srcjax.hessian(f, argnums=1))(i, x)),
                               [2.0, 0.0, -np.sin(3.0), -np.sin(4.0), 2.0], rtol=1e-5, atol=1e-6)
    # differentiated outside the vmap, a clamped index's branch passes the derivative on (it had been zero)
    gradient = srcjax.grad(lambda x: jnp.sum(srcjax.vmap(f)(i, x)))
    for got in (gradient(x), srcjax.jit(gradient)(x)):
        np.testing.assert_allclose(np.asarray(got), [2.0, -1.0, np.cos(3.0), np.cos(4.0), 10.0], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(srcjax.jacfwd(srcjax.vmap(f, in_axes=(0, None)), argnums=1)(i, 2.0)),
                               [4.0, -1.0, np.cos(2.0), np.cos(2.0), 4.0], rtol=1e-6)
    A = np.array([[[0.1, 0.2], [0.0, 0.3]], [[1.0, 2.0], [0.5, 0.1]]], np.float32)  # (expm switches on the norm)
    np.testing.assert_allclose(np.asarray(srcjax.vmap(srcjax.scipy.linalg.expm)(A)),
                               [[[1.105171, 0.24468787], [0.0, 1.3498588]],
                                [[3.8300312, 4.2042394], [1.0510598, 1.9381233]]], rtol=2e-6)


def test_log_softmax_of_a_row_masked_whole_has_a_zero_gradient():
    x = np.array([[1.0, 3.0, 2.0], [1.0, 2.0, 3.0]], np.float32)
    mask = np.array([[True, True, False], [False, False, False]])
    loss = lambda x: jnp.where(mask, srcjax.nn.log_softmax(x, where=mask), 0.0).sum()  # noqa: E731
    grad = np.asarray(srcjax.grad(loss)(x))
    np.testing.assert_allclose(grad, [[0.7615942, -0.76159406, 0.0], [0.0, 0.0, 0.0]], rtol=1e-6)
    values = np.asarray(srcjax.nn.log_softmax(x, where=mask))
    assert np.isneginf(values[1]).all() and np.isneginf(values[0, 2])


def test_interp_is_differentiable_at_its_last_knot():
    slope = srcjax.vmap(srcjax.grad(lambda v: jnp.interp(v, jnp.array([0.0, 1.0, 2.0]), jnp.array([0.0, 3.0, 1.0]))))
    np.testing.assert_array_equal(np.asarray(slope(jnp.array([0.0, 1.0, 2.0]))), [3.0, -2.0, -2.0])
    assert float(jnp.interp(2.0, jnp.array([0.0, 1.0, 2.0]), jnp.array([0.0, 3.0, 1.0]))) == 1.0


def test_grad_of_at_mul_and_divide_with_static_indices():
    """An index of ints and slices names each element once, so reverse mode through .at[].mul/divide works, as in
    JAX (values recorded from JAX 0.10.2)."""
    x = jnp.arange(1.0, 4.0)
    np.testing.assert_array_equal(np.asarray(srcjax.grad(lambda x: x.at[1].mul(x[0]).sum())(x)), [3.0, 1.0, 1.0])
    np.testing.assert_array_equal(np.asarray(srcjax.grad(lambda x: x.at[1:].mul(x[0]).sum())(x)), [6.0, 1.0, 1.0])
    np.testing.assert_allclose(np.asarray(srcjax.grad(lambda x: x.at[..., 2].divide(x[0]).sum())(x)),
                               [-2.0, 1.0, 1.0])


def test_x64_dtypes_of_fft_of_integers_and_of_searchsorted():
    with srcjax.enable_x64(True):
        spectrum = jnp.fft.fft(jnp.array([1, 2, 3], dtype=jnp.int64))
        assert spectrum.dtype == np.complex128 and jnp.fft.fft(jnp.arange(4)).dtype == np.complex128
        np.testing.assert_array_equal(np.asarray(spectrum), np.fft.fft([1.0, 2.0, 3.0]))
        assert jnp.fft.rfft(jnp.arange(4)).dtype == np.complex128
        assert jnp.searchsorted(jnp.array([1, 2, 3]), 2).dtype == np.int32  # (int32 in JAX, x64 or not)
    assert jnp.fft.fft(jnp.arange(4)).dtype == np.complex64


def test_while_loop_whose_constant_carry_turns_traced():
    """A carry that starts as a constant and becomes traced in the body (c * w, w an argument: Newton's and
    bisection's shape) is compiled as a loop, not refused. Values as JAX 0.10.2's."""
    f = lambda w: lax.while_loop(lambda c: c < 5.0, lambda c: c * w, 1.0)  # noqa: E731
    g = lambda w: lax.while_loop(lambda c: c[1] < 5.0, lambda c: (c[0] + 1, c[1] * w), (0, 1.0))  # noqa: E731
    np.testing.assert_allclose(float(srcjax.jit(f)(1.1)), 5.0544715, rtol=1e-6)
    steps, value = srcjax.jit(g)(1.1)
    assert int(steps) == 17
    np.testing.assert_allclose(float(srcjax.jvp(f, (1.1,), (1.0,))[1]), 78.114555, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(srcjax.jacfwd(srcjax.vmap(f))(jnp.array([1.1, 2.0]))),
                               [[78.114555, 0.0], [0.0, 12.0]], rtol=1e-5)
    np.testing.assert_allclose(float(srcjax.jvp(g, (1.3,), (1.0,))[1][1]), 33.787655, rtol=1e-5)


def test_unmapped_arrays_are_concrete_where_the_function_needs_their_values():
    """An argument vmap does not map (in_axes None, or every one with axis_size) is an ordinary array in JAX, so
    jnp.arange(n), and jnp.choose / ravel_multi_index with mode='raise', see its value (JAX 0.10.2 accepts all)."""
    x = np.ones((2, 3), np.float32)
    f = lambda v, n: v * jnp.arange(n).sum()  # noqa: E731
    np.testing.assert_array_equal(np.asarray(srcjax.vmap(f, in_axes=(0, None))(x, np.array(3))), x * 3)
    np.testing.assert_array_equal(np.asarray(srcjax.vmap(srcjax.vmap(f, in_axes=(0, None)), in_axes=(0, None))(
        x, jnp.asarray(4))), x * 6)
    choose = lambda i, a, b: jnp.choose(i, [a, b])  # noqa: E731
    i = np.array([0, 1, 1], np.int32)
    np.testing.assert_array_equal(np.asarray(srcjax.vmap(choose, in_axes=(None, 0, 0))(i, x, -x)),
                                  [[1, -1, -1], [1, -1, -1]])
    np.testing.assert_array_equal(np.asarray(srcjax.vmap(choose, in_axes=None, axis_size=2)(i, x[0], -x[0])),
                                  [[1, -1, -1], [1, -1, -1]])
    flat = srcjax.vmap(lambda i, j: jnp.ravel_multi_index((i, j), (3, 4)), in_axes=None, axis_size=2)
    np.testing.assert_array_equal(np.asarray(flat(np.array([0, 2]), np.array([1, 3]))), [[1, 11], [1, 11]])
    # a mapped one is not concrete: the message says what to write instead
    with pytest.raises(srcjax.errors.ConcretizationTypeError, match="mode='clip' or 'wrap'"):
        srcjax.vmap(choose, in_axes=(0, None, None))(np.array([[0, 1, 1]]), x[0], -x[0])
