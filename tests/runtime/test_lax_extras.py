"""lax's smaller functions: ``approx_max_k``/``approx_min_k`` (exact on CPU, as JAX's), ``platform_dependent``,
``composite``, ``stage``, ``dce_sink``, ``shape_as_value``, ``with_sharding_constraint``, ``pbroadcast`` and
``pswapaxes``. Oracle: values, dtypes and indices recorded from JAX 0.10.2 for the same calls, and NumPy."""

import numpy as np
import pytest

import srcjax
import srcjax.numpy as jnp
from srcjax import lax

A = np.array([[3.0, 1, 4, 1, 5], [9, 2, 6, 5, 3]], np.float32)


def same(got, want):
    for g, w in zip(got, want):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


@pytest.mark.parametrize("call, want", [
    (lambda: lax.approx_max_k(A, 2), ([[5.0, 4], [9, 6]], [[4, 2], [0, 2]])),
    (lambda: lax.approx_min_k(A, 2), ([[1.0, 1], [2, 3]], [[1, 3], [1, 4]])),
    (lambda: lax.approx_max_k(np.array([[3.0, 1], [4, 1], [5, 9]], np.float32), 2, reduction_dimension=0),
     ([[5.0, 9], [4, 1]], [[2, 2], [1, 0]])),
    (lambda: lax.approx_max_k(np.array([np.nan, 1, 2], np.float32), 2), ([np.nan, 2.0], [0, 2])),
    (lambda: lax.approx_min_k(np.array([np.nan, 1, 2], np.float32), 2), ([np.nan, 1.0], [0, 1])),  # NaN first
    (lambda: lax.approx_max_k(np.ones(3, np.float32), 2), ([1.0, 1.0], [0, 1])),  # ties: the first ones
    (lambda: lax.approx_min_k(np.array([-0.0, 0.0, 1.0], np.float32), 2), ([-0.0, 0.0], [0, 1])),
    (lambda: lax.approx_min_k(np.array([1.0, -np.inf, np.inf], np.float32), 2), ([-np.inf, 1.0], [1, 0])),
    (lambda: lax.approx_max_k(A, 2, aggregate_to_topk=False), ([[5.0, 4, 3, 1, 1], [9, 6, 5, 3, 2]],
                                                               [[4, 2, 0, 1, 3], [0, 2, 3, 4, 1]])),
])
def test_approx_k_as_jax(call, want):
    values, indices = call()
    assert values.dtype == np.float32 and indices.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(values), np.asarray(want[0], np.float32))
    np.testing.assert_array_equal(np.asarray(indices), np.asarray(want[1]))
    assert np.array_equal(np.signbit(np.asarray(values)), np.signbit(np.asarray(want[0], np.float32)))


def test_approx_k_transforms_and_errors():
    grad_max = srcjax.grad(lambda x: lax.approx_max_k(x, 2)[0].sum())(A)
    np.testing.assert_array_equal(np.asarray(grad_max), [[0, 0, 1, 0, 1], [1, 0, 1, 0, 0]])
    grad_min = srcjax.jit(srcjax.grad(lambda x: lax.approx_min_k(x, 2)[0].sum()))(A)
    np.testing.assert_array_equal(np.asarray(grad_min), [[0, 1, 0, 1, 0], [0, 1, 0, 0, 1]])
    values, indices = srcjax.vmap(lambda r: lax.approx_min_k(r, 3))(A)
    np.testing.assert_array_equal(np.asarray(values), np.sort(A, 1)[:, :3])
    with pytest.raises(ValueError, match="floating type"):
        lax.approx_max_k(jnp.arange(3), 2)
    with pytest.raises(ValueError, match="k must be smaller"):
        lax.approx_max_k(jnp.ones(2), 3)


def test_platform_dependent_runs_the_cpu_branch_or_the_default():
    branch = lambda x: lax.platform_dependent(x, cpu=lambda x: x * 3, default=lambda x: x - 1)  # noqa: E731
    assert float(srcjax.jit(branch)(1.0)) == 3.0 and float(srcjax.grad(branch)(1.0)) == 3.0
    assert float(lax.platform_dependent(1.0, cuda=lambda x: x + 1, default=lambda x: x - 1)) == 0.0
    assert lax.platform_dependent(1.0, 2.0, cpu=lambda x, y: (x + y, x), default=None) == (3.0, 1.0)
    with pytest.raises(NotImplementedError, match="no branch for the platform cpu"):
        lax.platform_dependent(1.0, cuda=lambda x: x)


def test_staging_helpers():
    double = lax.composite(lambda x, *, k=2: x * k, "my.double")
    assert float(double(3.0)) == 6.0 and float(double(3.0, k=4)) == 12.0 and float(srcjax.jit(double)(2.0)) == 4.0
    assert float(srcjax.grad(double)(1.0)) == 2.0  # (JAX has no JVP for composites; srcjax differentiates it)
    staged = lax.stage(np.float64(2.0))
    assert staged.dtype == np.float32 and not staged.weak_type
    assert lax.stage(2).weak_type and lax.stage(2).dtype == np.int32
    assert lax.dce_sink(jnp.ones(3)) is None
    shape = lax.shape_as_value((2, 3))
    assert isinstance(shape, np.ndarray) and shape.dtype == np.int32 and shape.tolist() == [2, 3]
    x = jnp.ones((3, 4))
    assert lax.with_sharding_constraint(x, srcjax.sharding.SingleDeviceSharding(srcjax.devices()[0])) is x
    with pytest.raises(ValueError, match="sharding None"):
        lax.with_sharding_constraint(x, None)


def test_pbroadcast_and_pswapaxes():
    x = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    out = srcjax.vmap(lambda r: lax.pbroadcast(r, "i", 1), axis_name="i")(x)
    np.testing.assert_array_equal(np.asarray(out), np.broadcast_to(x[1], (3, 4)))
    y = np.arange(18.0, dtype=np.float32).reshape(3, 3, 2)
    swapped = srcjax.vmap(lambda r: lax.pswapaxes(r, "i", 0), axis_name="i")(y)
    np.testing.assert_array_equal(np.asarray(swapped), y.transpose(1, 0, 2))  # (as JAX's)
    with pytest.raises(ValueError, match="source 3 is outside"):
        srcjax.vmap(lambda r: lax.pbroadcast(r, "i", 3), axis_name="i")(x)


def _bisect(f, bounds):
    """A root of a scalar increasing ``f`` by bisection: its derivative through the loop is zero."""
    lo, hi = bounds
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = jnp.where(f(mid) < 0, mid, lo), jnp.where(f(mid) < 0, hi, mid)
    return (lo + hi) / 2


def test_custom_root_differentiates_implicitly():
    """d sqrt(a)/da = 1 / (2 sqrt(a)) whatever the solver: Newton's steps or bisection, whose own derivative is 0.
    Values as JAX 0.10.2's for the Newton program."""
    def newton(f, x):
        for _ in range(30):
            x = x - f(x) / srcjax.grad(f)(x)
        return x

    def root(a, solve=newton, guess=1.0):
        return lax.custom_root(lambda x: x**2 - a, guess, solve, lambda g, y: y / g(1.0))

    np.testing.assert_allclose(float(root(2.0)), np.sqrt(2), rtol=1e-6)
    np.testing.assert_allclose(float(srcjax.grad(root)(2.0)), 0.35355338, rtol=1e-6)
    np.testing.assert_allclose(float(srcjax.jit(srcjax.grad(root))(3.0)), 0.28867513, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(srcjax.vmap(srcjax.grad(root))(jnp.array([1.0, 4.0]))), [0.5, 0.25])
    bisected = lambda a: root(a, _bisect, (0.0, 10.0))  # noqa: E731
    np.testing.assert_allclose(float(srcjax.grad(bisected)(2.0)), 0.35355338, rtol=1e-4)
    np.testing.assert_allclose(float(srcjax.jvp(bisected, (9.0,), (1.0,))[1]), 1 / 6, rtol=1e-4)
    value, aux = lax.custom_root(lambda x: x**2 - 2.0, 1.0, lambda f, x: (newton(f, x), 7), lambda g, y: y / g(1.0),
                                 has_aux=True)
    np.testing.assert_allclose(float(value), np.sqrt(2), rtol=1e-6)
    assert int(aux) == 7


def test_custom_root_of_a_vector_system():
    """x with A x + x**3 = b: dx/db = (A + 3 diag(x**2))^-1, against that inverse at the root."""
    A = np.array([[4.0, 1.0], [1.0, 3.0]], np.float32)

    def solve(f, x):
        for _ in range(20):
            x = x - jnp.linalg.solve(srcjax.jacfwd(f)(x), f(x))
        return x

    def root(b):
        return lax.custom_root(lambda x: A @ x + x**3 - b, jnp.zeros(2), solve,
                               lambda g, y: jnp.linalg.solve(srcjax.jacfwd(g)(y), y))

    b = jnp.array([1.0, 2.0])
    x = np.asarray(root(b))
    np.testing.assert_allclose(A @ x + x**3, [1.0, 2.0], rtol=1e-5)
    want = np.linalg.inv(A + np.diag(3 * x**2))
    np.testing.assert_allclose(np.asarray(srcjax.jacrev(root)(b)), want, rtol=1e-4)
    np.testing.assert_allclose(np.asarray(srcjax.jit(srcjax.jacfwd(root))(b)), want, rtol=1e-4)
