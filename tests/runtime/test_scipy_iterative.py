"""The iterative solvers: ``experimental.ode.odeint``, ``scipy.optimize.minimize``, ``scipy.sparse.linalg`` (cg,
bicgstab, gmres) and ``scipy.integrate.trapezoid``, against closed forms, NumPy float64 and numbers recorded from
JAX 0.10.2 (where a loose tolerance or an iteration cap makes the answer depend on the algorithm's own steps)."""

import numpy as np
import pytest

import srcjax
import srcjax.numpy as jnp
import srcjax.scipy.integrate
import srcjax.scipy.optimize
import srcjax.scipy.sparse.linalg as sparse_linalg
from srcjax.experimental.ode import odeint


def test_trapezoid():
    y = np.array([1, 2, 3, 2, 3, 2, 1])
    x = np.array([0, 2, 5, 7, 10, 15, 20])
    trapezoid = srcjax.scipy.integrate.trapezoid
    assert trapezoid(jnp.asarray(y)).dtype == np.float32
    np.testing.assert_allclose(trapezoid(jnp.asarray(y), dx=0.5), 6.5)
    np.testing.assert_allclose(trapezoid(jnp.asarray(y), jnp.asarray(x)), np.sum(np.diff(x) * (y[1:] + y[:-1]) / 2))
    z = np.arange(12.0).reshape(3, 4)
    np.testing.assert_allclose(trapezoid(jnp.asarray(z), axis=0), (z[1:] + z[:-1]).sum(0) / 2)


# -- odeint -----------------------------------------------------------------------------------------------------------
def _forced(y, t, a):
    return -a * y + jnp.sin(t)


def _forced_solution(t, y0, a):
    """y' = -a y + sin t: y = (y0 + 1 / (1 + a^2)) e^(-a t) + (a sin t - cos t) / (1 + a^2)."""
    c = 1.0 / (1.0 + a * a)
    return (y0[None] + c) * np.exp(-a * t)[:, None] + (c * (a * np.sin(t) - np.cos(t)))[:, None]


def test_odeint_steps_and_adjoint_as_jax(x64):
    t, y0 = jnp.linspace(0.0, 3.0, 7), jnp.array([1.0, 2.0])
    np.testing.assert_allclose(odeint(_forced, y0, t, 0.7), _forced_solution(np.asarray(t), np.array([1.0, 2.0]), 0.7),
                               rtol=1e-7)
    # with loose tolerances the answer is off the true solution by the steps taken: JAX 0.10.2's numbers
    loose = odeint(_forced, y0, t, 0.7, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(loose[1:4], [[0.8136521343701228, 1.5182453719793236],
                                            [0.8626343273653316, 1.3592530898380346],
                                            [1.0059650360374877, 1.3557478530161189]], rtol=1e-12)
    np.testing.assert_allclose(loose[-1], [0.9365401391159971, 1.058872565266497], rtol=1e-12)
    # the adjoint pass: d sum(y^2) / d(y0, a), JAX 0.10.2's numbers
    grads = srcjax.grad(lambda y0, a: jnp.sum(odeint(_forced, y0, t, a, rtol=1e-3, atol=1e-3) ** 2),
                        argnums=(0, 1))(y0, 0.7)
    np.testing.assert_allclose(grads[0], [5.873748872636349, 9.816663085027983], rtol=1e-9)
    np.testing.assert_allclose(grads[1], -31.41809202047879, rtol=1e-9)


def test_odeint_pytree_closure_vmap_and_errors():
    t = jnp.linspace(0.0, 2.0, 5)
    state = {"x": jnp.ones(2), "v": jnp.zeros(2)}

    def oscillator(w):  # x'' = -w^2 x, from x = 1, v = 0: x = cos(w t), v = -w sin(w t)
        return lambda s, t: {"x": s["v"], "v": -(w ** 2) * s["x"]}

    out = odeint(oscillator(1.5), state, t, rtol=1e-6, atol=1e-6)
    assert out["x"].shape == (5, 2) and out["x"].dtype == np.float32
    np.testing.assert_allclose(out["x"][:, 0], np.cos(1.5 * np.asarray(t)), atol=2e-5)
    np.testing.assert_allclose(out["v"][:, 1], -1.5 * np.sin(1.5 * np.asarray(t)), atol=2e-5)
    # d x(t_end) / dw through a closure, and a batch of frequencies
    d = srcjax.grad(lambda w: odeint(oscillator(w), state, t, rtol=1e-6, atol=1e-6)["x"][-1, 0])(1.5)
    np.testing.assert_allclose(d, -2.0 * np.sin(3.0), rtol=1e-3)
    ws = jnp.array([0.5, 1.0])
    batched = srcjax.vmap(lambda w: odeint(oscillator(w), state, t, rtol=1e-6, atol=1e-6)["x"][:, 0])(ws)
    np.testing.assert_allclose(batched, np.cos(np.outer(np.asarray(ws), np.asarray(t))), atol=2e-5)
    with pytest.raises(TypeError, match="t must be an array of floats"):
        odeint(lambda y, t: -y, jnp.ones(2), jnp.arange(3))
    with pytest.raises(TypeError, match="must be arrays or scalars"):
        odeint(lambda y, t, s: -y, jnp.ones(2), t, "s")


# -- minimize ---------------------------------------------------------------------------------------------------------
def _rosenbrock(x):
    return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def test_minimize_iterations_as_jax(x64):
    minimize = srcjax.scipy.optimize.minimize
    # JAX 0.10.2's line search gives up (zoom fails, status 3) on Rosenbrock's valley from (-1.2, 1), here too
    result = minimize(_rosenbrock, jnp.array([-1.2, 1.0]), method="BFGS")
    assert isinstance(result, srcjax.scipy.optimize.OptimizeResults)
    np.testing.assert_allclose(result.x, [-0.2778069614751315, 0.04333877520015739], rtol=1e-9)
    np.testing.assert_allclose(result.fun, 1.7472911993555371, rtol=1e-12)
    assert (int(result.nit), int(result.nfev), int(result.njev), int(result.status), bool(result.success)) == \
        (8, 17, 17, 3, False)
    assert result.hess_inv.shape == (2, 2)
    result = minimize(_rosenbrock, jnp.array([-1.2, 1.0]), method="l-bfgs-experimental-do-not-rely-on-this",
                      options={"maxiter": 4})  # (JAX's L-BFGS stops one iteration past maxiter)
    np.testing.assert_allclose(result.x, [-0.93476346, 0.84011331], rtol=1e-7)
    np.testing.assert_allclose(result.fun, 3.856672590058453, rtol=1e-12)
    assert (int(result.nit), int(result.nfev), int(result.status), result.hess_inv) == (5, 18, 1, None)
    result = minimize(_rosenbrock, jnp.array([-1.2, 1.0, 0.5]), method="BFGS", options={"maxiter": 4})
    np.testing.assert_allclose(result.x, [-0.7048669230436053, 0.5241799863110591, 0.2763672069975717], rtol=1e-9)
    assert (int(result.nit), int(result.nfev), int(result.status)) == (4, 13, 1)
    # a quadratic with its data as args, compiled: the minimizer solves A x = b (JAX: 9 iterations, 13 calls)
    n = 5
    q = np.arange(n * n, dtype=float).reshape(n, n) % 7 - 3
    a, b = q @ q.T + n * np.eye(n), np.arange(1.0, n + 1)
    result = srcjax.jit(lambda x0, a, b: minimize(lambda x, a, b: 0.5 * x @ a @ x - b @ x, x0, (a, b),
                                                  method="BFGS"))(jnp.zeros(n), a, b)
    np.testing.assert_allclose(result.x, np.linalg.solve(a, b), atol=1e-6)
    assert (int(result.nit), int(result.nfev), int(result.status), bool(result.success)) == (9, 13, 0, True)
    with pytest.raises(ValueError, match="Method Nelder not recognized"):
        minimize(_rosenbrock, jnp.ones(2), method="Nelder")
    with pytest.raises(TypeError, match="must be a tuple"):
        minimize(_rosenbrock, jnp.ones(2), args=[1.0], method="BFGS")


# -- Krylov solvers ---------------------------------------------------------------------------------------------------
def _systems():
    n = 5
    q = np.arange(n * n, dtype=float).reshape(n, n) % 7 - 3
    return q @ q.T + n * np.eye(n), q + 6 * np.eye(n), np.arange(1.0, n + 1)


def test_krylov_solutions(x64):
    spd, general, b = _systems()
    x, info = sparse_linalg.cg(spd, b, tol=1e-12)
    assert info is None
    np.testing.assert_allclose(x, np.linalg.solve(spd, b), rtol=1e-10)
    x, info = sparse_linalg.bicgstab(lambda v: general @ v, b, tol=1e-12, M=np.diag(1 / np.diag(general)))
    np.testing.assert_allclose(x, np.linalg.solve(general, b), rtol=1e-10)
    for method in ("batched", "incremental"):
        x, info = sparse_linalg.gmres(general, b, x0=jnp.ones(5), tol=1e-12, solve_method=method)
        np.testing.assert_allclose(x, np.linalg.solve(general, b), rtol=1e-10)
        assert int(info) == 0
        # two restarts of two basis vectors: not converged, JAX 0.10.2's iterate
        x, _ = sparse_linalg.gmres(general, b, restart=2, maxiter=3, solve_method=method)
        np.testing.assert_allclose(x, [0.4723409189399844, 0.5355594018124291, 0.5795077111282981,
                                       0.445325991513936, 1.1590563711789876], rtol=1e-12)
    # capped iterations, JAX 0.10.2's iterates
    np.testing.assert_allclose(sparse_linalg.cg(spd, b, maxiter=2)[0], [
        0.10311429994314215, 0.24553129771027193, 0.4629807185959236, 0.5553761009507056, 0.3976634062437478],
        rtol=1e-12)
    np.testing.assert_allclose(sparse_linalg.bicgstab(general, b, maxiter=2)[0], [
        0.4000509008031877, 0.5451041801497936, 0.5904396415459999, 0.4063314534363276, 1.2000143289356116],
        rtol=1e-12)
    # a pytree of vectors
    tree_b = {"head": jnp.asarray(b[:2]), "tail": jnp.asarray(b[2:])}

    def tree_matvec(v):
        y = spd @ jnp.concatenate([v["head"], v["tail"]])
        return {"head": y[:2], "tail": y[2:]}

    for solver in (sparse_linalg.cg, sparse_linalg.bicgstab, sparse_linalg.gmres):
        x = solver(tree_matvec, tree_b, tol=1e-12)[0]
        np.testing.assert_allclose(np.concatenate([x["head"], x["tail"]]), np.linalg.solve(spd, b), rtol=1e-9)
    with pytest.raises(ValueError, match="square matrix"):
        sparse_linalg.cg(np.ones((2, 3)), b[:2])
    with pytest.raises(ValueError, match="matching tree structure"):
        sparse_linalg.cg(spd, b, x0=(b,))
    with pytest.raises(ValueError, match="invalid solve_method"):
        sparse_linalg.gmres(spd, b, solve_method="direct")


def test_krylov_implicit_gradients():
    spd, general, b = (np.asarray(m, np.float32) for m in _systems())
    for solver, a in ((sparse_linalg.cg, spd), (sparse_linalg.bicgstab, general), (sparse_linalg.gmres, general)):
        # loss = |x|^2, x = A^-1 b: d/db = 2 A^-T x, d/dA = -(2 A^-T x) x^T (A read through a closure)
        x = np.linalg.solve(a.astype(float), b.astype(float))
        lam = np.linalg.solve(a.astype(float).T, 2 * x)
        grad_b, grad_a = srcjax.grad(lambda b, a, solver=solver: jnp.sum(solver(lambda v: a @ v, b, tol=1e-7)[0] ** 2),
                                     argnums=(0, 1))(b, a)
        np.testing.assert_allclose(grad_b, lam, rtol=2e-4, atol=1e-6)
        np.testing.assert_allclose(grad_a, -np.outer(lam, x), rtol=2e-4, atol=1e-6)
    batch = np.stack([b, -b, 2 * b])
    np.testing.assert_allclose(srcjax.vmap(lambda b: sparse_linalg.cg(spd, b)[0])(batch),
                               np.linalg.solve(spd.astype(float), batch.T).T, rtol=1e-4)
