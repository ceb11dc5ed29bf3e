"""``lax.custom_linear_solve``: the solve's derivatives by the implicit function theorem, with respect to the
right-hand side and to what ``matvec`` closes over, in both modes and to second order (JAX 0.10.2's numbers)."""

import numpy as np
import pytest

import srcjax as jax
import srcjax.numpy as jnp
from srcjax import lax

A0 = np.array([[4.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 2.0]], np.float32)
B0 = np.array([1.0, 2.0, 3.0], np.float32)


def direct(a, b):
    A = A0 + a * np.eye(3, dtype=np.float32) + a ** 2 * np.triu(np.ones((3, 3), np.float32), 1)  # not symmetric
    return lax.custom_linear_solve(lambda x: A @ x, b, lambda m, r: jnp.linalg.solve(A, r),
                                   lambda vm, r: jnp.linalg.solve(A.T, r))


def conjugate_gradients(a, b):
    """Three steps of CG in a while loop: exact for this 3x3 system; never differentiated itself."""
    A = A0 + a * np.eye(3, dtype=np.float32)

    def cg(matvec, r):
        def body(c):
            x, res, p, k = c
            Ap = matvec(p)
            alpha = (res @ res) / (p @ Ap)
            x, new = x + alpha * p, res - alpha * Ap
            return x, new, new + (new @ new) / (res @ res) * p, k + 1

        return lax.while_loop(lambda c: c[3] < 3, body, (jnp.zeros_like(r), r, r, 0))[0]

    return lax.custom_linear_solve(lambda x: A @ x, b, cg, symmetric=True)


def test_values_and_gradients_match_jax():
    np.testing.assert_allclose(np.asarray(direct(0.5, B0)), [0.12348178, 0.1255061, 1.1497976], rtol=1e-5)
    grads = jax.grad(lambda a, b: direct(a, b).sum() ** 2, argnums=(0, 1))(0.5, B0)
    np.testing.assert_allclose(float(grads[0]), -2.2305274, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(grads[1]), [0.54365754, 0.35111207, 0.88910663], rtol=1e-5)
    np.testing.assert_allclose(np.asarray(jax.jacfwd(direct)(0.5, B0)), [-0.24663575, -0.15125635, -0.39941648],
                               rtol=1e-5)
    np.testing.assert_allclose(np.asarray(jax.jacrev(direct, argnums=1)(0.5, B0)),
                               [[0.24291497, -0.09311741, 0.02226721], [-0.08097166, 0.36437246, -0.17408906],
                                [0.03238866, -0.14574899, 0.46963564]], rtol=1e-5)
    np.testing.assert_allclose(float(jax.jit(jax.grad(lambda a: jnp.sin(direct(a, B0)).sum()))(0.3)), -0.41167364,
                               rtol=1e-5)
    np.testing.assert_allclose(np.asarray(jax.vmap(direct, in_axes=(0, None))(jnp.array([0.1, 0.2]), B0)),
                               [[0.20770589, 0.13342135, 1.3650376], [0.1901708, 0.14360411, 1.2983617]], rtol=1e-5)
    # second order: the transposed solve is itself differentiated implicitly
    np.testing.assert_allclose(float(jax.hessian(lambda a: direct(a, B0).sum())(0.5)), -0.082286894, rtol=1e-4)


def test_an_iterative_symmetric_solver_is_not_differentiated():
    np.testing.assert_allclose(np.asarray(conjugate_gradients(0.5, B0)), [0.17760618, 0.20077224, 1.1196911],
                               rtol=1e-5)
    np.testing.assert_allclose(float(jax.grad(lambda a: conjugate_gradients(a, B0).sum())(0.5)), -0.449725,
                               rtol=1e-5)
    np.testing.assert_allclose(np.asarray(jax.grad(lambda b: conjugate_gradients(0.5, b).sum())(B0)),
                               [0.19305019, 0.13127413, 0.34749037], rtol=1e-5)


def test_aux_and_missing_transpose_solve():
    def with_aux(a, b):
        A = A0 * a
        solve = lambda m, r: (jnp.linalg.solve(A, r), jnp.array(7))  # noqa: E731
        return lax.custom_linear_solve(lambda x: A @ x, b, solve, solve, has_aux=True)

    x, aux = with_aux(2.0, B0)
    np.testing.assert_allclose(np.asarray(x), [0.11111111, 0.05555554, 0.72222227], rtol=1e-5)
    assert int(aux) == 7
    np.testing.assert_allclose(float(jax.grad(lambda a: with_aux(a, B0)[0].sum())(2.0)), -0.44444448, rtol=1e-5)
    scaled = lambda a: lax.custom_linear_solve(lambda x: a * x, B0, lambda m, r: r / a)  # noqa: E731
    with pytest.raises(TypeError, match="transpose_solve required"):
        jax.grad(lambda a: scaled(a).sum())(2.0)
    out, tangent = jax.jvp(scaled, (2.0,), (1.0,))  # forward mode needs no transpose
    np.testing.assert_allclose(np.asarray(tangent), [-0.25, -0.5, -0.75], rtol=1e-6)
