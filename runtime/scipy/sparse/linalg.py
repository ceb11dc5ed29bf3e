"""``srcjax.scipy.sparse.linalg``: the Krylov solvers ``cg``, ``bicgstab`` and ``gmres`` as JAX has them.

The operator is a matrix or a function of a vector (any pytree of arrays), and so is the preconditioner ``M``.
Every solve goes through ``lax.custom_linear_solve``: it is differentiated implicitly (one more solve with the
transposed operator), not through the iterations. The iteration stops where ``|r| <= max(tol |b|, atol)``.
"""

from __future__ import annotations

import functools
import operator
from typing import Any, Callable

import numpy as np

import srcjax.runtime.numpy as jnp
from srcjax.runtime import dtypes, lax
from srcjax.runtime.autodiff import _run_user
from srcjax.runtime.numpy._core import aval, convert, is_arraylike
from srcjax.runtime.scipy import linalg as scipy_linalg
from srcjax.runtime.tree_util import tree_leaves, tree_map, tree_reduce, tree_structure

__all__ = ["cg", "gmres", "bicgstab"]


# -- vectors as pytrees ----------------------------------------------------------------------------------------------
def _dot(a: Any, b: Any) -> Any:
    return jnp.dot(a, b, precision=lax.Precision.HIGHEST)


def _vdot(a: Any, b: Any) -> Any:
    return jnp.vdot(a, b, precision=lax.Precision.HIGHEST)


def _vdot_real_part(x: Any, y: Any) -> Any:
    """Re(x^H y) without the cross terms of the real and imaginary parts: a real number."""
    result = _vdot(x.real, y.real)
    if jnp.iscomplexobj(x) or jnp.iscomplexobj(y):
        result += _vdot(x.imag, y.imag)
    return result


def _vdot_real_tree(x: Any, y: Any) -> Any:
    return sum(tree_leaves(tree_map(_vdot_real_part, x, y)))


def _vdot_tree(x: Any, y: Any) -> Any:
    return sum(tree_leaves(tree_map(_vdot, x, y)))


def _norm(x: Any) -> Any:
    leaves = tree_leaves(x)
    return jnp.sqrt(sum(_vdot_real_part(leaf, leaf) for leaf in leaves))


def _scale(scalar: Any, tree: Any) -> Any:
    return tree_map(lambda leaf: scalar * leaf, tree)


def _add(x: Any, y: Any) -> Any:
    return tree_map(operator.add, x, y)


def _sub(x: Any, y: Any) -> Any:
    return tree_map(operator.sub, x, y)


def _identity(x: Any) -> Any:
    return x


def _as_operator(f: Any) -> Callable:
    """A matrix-vector product from a function, a square matrix or an object with ``@``."""
    if callable(f):
        return lambda x: _run_user(f, x)
    if isinstance(f, np.ndarray) or is_arraylike(f) and not isinstance(f, (int, float, complex, bool, np.generic)):
        shape = aval(f).shape
        if len(shape) != 2 or shape[0] != shape[1]:
            raise ValueError(f"linear operator must be a square matrix, but has shape: {shape}")
        return functools.partial(_dot, f)
    if hasattr(f, "__matmul__"):
        if hasattr(f, "shape") and len(f.shape) != 2 or f.shape[0] != f.shape[1]:
            raise ValueError(f"linear operator must be a square matrix, but has shape: {f.shape}")
        return functools.partial(operator.matmul, f)
    raise TypeError(f"linear operator must be either a function or ndarray: {f}")


def _cast_one(leaves: list) -> Any:
    """1 in the type the leaves promote to, weakly typed where they all are."""
    dtype, weak = dtypes.jax_result_type(*leaves, return_weak_type_flag=True)
    return convert(np.array(1, dtype), dtype, weak)


# -- CG and BiCGSTAB -------------------------------------------------------------------------------------------------
def _cg_solve(A: Callable, b: Any, x0: Any, *, maxiter: Any, tol: float, atol: float, M: Callable) -> Any:
    """Conjugate gradients, preconditioned by ``M``, as SciPy runs it (the residual tested each step)."""
    atol2 = jnp.maximum(jnp.square(tol) * _vdot_real_tree(b, b), jnp.square(atol))

    def more(value: tuple) -> Any:
        _, r, gamma, _, k = value
        rs = gamma.real if M is _identity else _vdot_real_tree(r, r)  # (gamma = r^T M r is |r|^2 unpreconditioned)
        return (rs > atol2) & (k < maxiter)

    def step(value: tuple) -> tuple:
        x, r, gamma, p, k = value
        Ap = A(p)
        alpha = gamma / _vdot_real_tree(p, Ap).astype(dtype)
        x_next = _add(x, _scale(alpha, p))
        r_next = _sub(r, _scale(alpha, Ap))
        z_next = M(r_next)
        gamma_next = _vdot_real_tree(r_next, z_next).astype(dtype)
        p_next = _add(z_next, _scale(gamma_next / gamma, p))
        return x_next, r_next, gamma_next, p_next, k + 1

    r0 = _sub(b, A(x0))
    p0 = z0 = M(r0)
    dtype = jnp.result_type(*tree_leaves(p0))
    gamma0 = _vdot_real_tree(r0, z0).astype(dtype)
    return lax.while_loop(more, step, (x0, r0, gamma0, p0, 0))[0]


def _bicgstab_solve(A: Callable, b: Any, x0: Any, *, maxiter: Any, tol: float, atol: float, M: Callable) -> Any:
    """Preconditioned BiCGSTAB as SciPy runs it; a breakdown (rho, alpha or omega zero) stops it (k < 0)."""
    atol2 = jnp.maximum(jnp.square(tol) * _vdot_real_tree(b, b), jnp.square(atol))

    def more(value: tuple) -> Any:
        _, r, *_, k = value
        return (_vdot_real_tree(r, r) > atol2) & (k < maxiter) & (k >= 0)

    def step(value: tuple) -> tuple:
        x, r, rhat, alpha, omega, rho, p, q, k = value
        rho_next = _vdot_tree(rhat, r)
        beta = rho_next / rho * alpha / omega
        p_next = _add(r, _scale(beta, _sub(p, _scale(omega, q))))
        phat = M(p_next)
        q_next = A(phat)
        alpha_next = rho_next / _vdot_tree(rhat, q_next)
        s = _sub(r, _scale(alpha_next, q_next))
        exit_early = _vdot_real_tree(s, s) < atol2  # (the half step already converged)
        shat = M(s)
        t = A(shat)
        omega_next = _vdot_tree(t, s) / _vdot_tree(t, t)
        x_half = _add(x, _scale(alpha_next, phat))
        x_full = _add(x, _add(_scale(alpha_next, phat), _scale(omega_next, shat)))
        x_next = tree_map(lambda half, full: jnp.where(exit_early, half, full), x_half, x_full)
        r_next = tree_map(lambda half, full: jnp.where(exit_early, half, full), s, _sub(s, _scale(omega_next, t)))
        k_next = jnp.where((omega_next == 0) | (alpha_next == 0), -11, k + 1)
        k_next = jnp.where(rho_next == 0, -10, k_next)
        return x_next, r_next, rhat, alpha_next, omega_next, rho_next, p_next, q_next, k_next

    r0 = _sub(b, A(x0))
    one = _cast_one(tree_leaves(b))
    return lax.while_loop(more, step, (x0, r0, r0, one, one, one, r0, r0, 0))[0]


def _shapes(tree: Any) -> list:
    return [np.shape(leaf) if not is_arraylike(leaf) else aval(leaf).shape for leaf in tree_leaves(tree)]


def _prepare(A: Any, b: Any, x0: Any, M: Any) -> tuple[Callable, Any, Any, Callable]:
    if x0 is None:
        x0 = tree_map(jnp.zeros_like, b)
    b, x0 = tree_map(jnp.asarray, (b, x0))  # (Python numbers become arrays, as device_put makes them)
    A = _as_operator(A)
    M = _identity if M is None else _as_operator(M)
    if tree_structure(x0) != tree_structure(b):
        raise ValueError(f"x0 and b must have matching tree structure: {tree_structure(x0)} vs {tree_structure(b)}")
    return A, b, x0, M


def _isolve(solver: Callable, A: Any, b: Any, x0: Any = None, *, tol: float = 1e-5, atol: float = 0.0,
            maxiter: Any = None, M: Any = None, check_symmetric: bool = False) -> tuple[Any, None]:
    A, b, x0, M = _prepare(A, b, x0, M)
    if maxiter is None:
        maxiter = 10 * sum(int(np.prod(aval(leaf).shape)) for leaf in tree_leaves(b))  # (SciPy's default)
    if _shapes(x0) != _shapes(b):
        raise ValueError(f"arrays in x0 and b must have matching shapes: {_shapes(x0)} vs {_shapes(b)}")
    solve = functools.partial(solver, x0=x0, tol=tol, atol=atol, maxiter=maxiter, M=M)
    # a real operator CG accepts is symmetric: its solve is its own transpose
    symmetric = check_symmetric and all(not jnp.iscomplexobj(leaf) for leaf in tree_leaves(b))
    return lax.custom_linear_solve(A, b, solve=solve, transpose_solve=solve, symmetric=symmetric), None


def cg(A: Any, b: Any, x0: Any = None, *, tol: float = 1e-5, atol: float = 0.0, maxiter: Any = None,
       M: Any = None) -> tuple[Any, None]:
    """Solve ``A x = b`` for Hermitian positive definite ``A`` by conjugate gradients; ``(x, None)``."""
    return _isolve(_cg_solve, A, b, x0, tol=tol, atol=atol, maxiter=maxiter, M=M, check_symmetric=True)


def bicgstab(A: Any, b: Any, x0: Any = None, *, tol: float = 1e-5, atol: float = 0.0, maxiter: Any = None,
             M: Any = None) -> tuple[Any, None]:
    """Solve ``A x = b`` for a general ``A`` by BiCGSTAB; ``(x, None)``."""
    return _isolve(_bicgstab_solve, A, b, x0, tol=tol, atol=atol, maxiter=maxiter, M=M)


# -- GMRES -----------------------------------------------------------------------------------------------------------
def _safe_normalize(x: Any, thresh: Any = None) -> tuple[Any, Any]:
    """``(x / |x|, |x|)``, or zeros and 0 where ``|x|`` is at most ``thresh`` (the dtype's eps by default)."""
    norm = _norm(x)
    dtype, weak = dtypes.jax_result_type(*tree_leaves(x), return_weak_type_flag=True)
    if thresh is None:
        thresh = jnp.finfo(norm.dtype).eps
    thresh = jnp.asarray(thresh).astype(dtype).real
    use_norm = norm > thresh
    norm_cast = convert(norm, dtype, weak)
    normalized = tree_map(lambda y: jnp.where(use_norm, y / norm_cast, 0.0), x)
    return normalized, jnp.where(use_norm, norm, 0.0)


def _project_on_columns(Q: Any, v: Any) -> Any:
    """``Q^H v``, summed over the leaves."""
    parts = tree_map(lambda X, y: jnp.einsum("...n,...->n", X.conj(), y, precision=lax.Precision.HIGHEST), Q, v)
    return tree_reduce(operator.add, parts)


def _iterative_classical_gram_schmidt(Q: Any, x: Any, xnorm: Any, max_iterations: int = 2) -> tuple[Any, Any]:
    """``x`` made orthogonal to the orthonormal columns of ``Q`` (``(q, r)``, ``r`` the overlaps removed): classical
    Gram-Schmidt, repeated while the remainder lost more than a factor sqrt(2) of its norm (up to
    ``max_iterations`` passes)."""
    Q0 = tree_leaves(Q)[0]
    r = jnp.zeros(Q0.shape[-1], dtype=Q0.dtype)

    def project_out(carry: tuple) -> tuple:
        k, q, r, qnorm_scaled = carry
        h = _project_on_columns(Q, q)
        q = _sub(q, tree_map(lambda X: _dot(X, h), Q))
        r = _add(r, h)

        def measure(carry: tuple) -> tuple:
            k, _, q, _ = carry
            _, qnorm = _safe_normalize(q)
            return k, False, q, qnorm / jnp.sqrt(2.0)

        # (the norm is measured at most once, and only when another pass may follow)
        _, _, q, qnorm_scaled = lax.while_loop(lambda c: jnp.logical_and(c[1], c[0] < max_iterations - 1), measure,
                                               (k, True, q, qnorm_scaled))
        return k + 1, q, r, qnorm_scaled

    def again(carry: tuple) -> Any:
        k, _, r, qnorm_scaled = carry
        _, rnorm = _safe_normalize(r)
        return jnp.logical_and(k < max_iterations - 1, rnorm < qnorm_scaled)

    carry = project_out((0, x, r, xnorm / jnp.sqrt(2.0)))
    _, q, r, _ = lax.while_loop(again, project_out, carry)
    return q, r


def _kth_arnoldi_iteration(k: Any, A: Callable, M: Callable, V: Any, H: Any) -> tuple[Any, Any, Any]:
    """Column k + 1 of the Krylov basis ``V``: ``M(A(V[:, k]))`` orthonormalized against the columns so far, its
    overlaps written to row k of ``H``; ``breakdown`` where it vanished (an invariant subspace)."""
    dtype, _ = dtypes.jax_result_type(*tree_leaves(V), return_weak_type_flag=True)
    eps = jnp.finfo(dtype).eps
    v = M(A(tree_map(lambda X: X[..., k], V)))
    _, v_norm_0 = _safe_normalize(v)
    v, h = _iterative_classical_gram_schmidt(V, v, v_norm_0, max_iterations=2)
    unit_v, v_norm_1 = _safe_normalize(v, thresh=eps * v_norm_0)
    V = tree_map(lambda X, y: X.at[..., k + 1].set(y), V, unit_v)
    h = h.at[k + 1].set(v_norm_1.astype(dtype))
    return V, H.at[k, :].set(h), v_norm_1 == 0.0


def _rotate_vectors(H: Any, i: Any, cs: Any, sn: Any) -> Any:
    x1, y1 = H[i], H[i + 1]
    H = H.at[i].set(cs.conj() * x1 - sn.conj() * y1)
    return H.at[i + 1].set(sn * x1 + cs * y1)


def _givens_rotation(a: Any, b: Any) -> tuple[Any, Any]:
    """``(cs, sn)`` of the rotation zeroing ``b`` against ``a``."""
    b_zero = abs(b) == 0
    a_lt_b = abs(a) < abs(b)
    t = -jnp.where(a_lt_b, a, b) / jnp.where(a_lt_b, b, a)
    r = lax.rsqrt(1 + abs(t) ** 2).astype(t.dtype)
    cs = jnp.where(b_zero, 1, jnp.where(a_lt_b, r * t, r))
    sn = jnp.where(b_zero, 0, jnp.where(a_lt_b, r, r * t))
    return cs, sn


def _apply_givens_rotations(H_row: Any, givens: Any, k: Any) -> tuple[Any, Any]:
    """Row k of H rotated by the k rotations so far, then by a new one zeroing its entry k + 1."""
    R_row = lax.fori_loop(0, k, lambda i, row: _rotate_vectors(row, i, *givens[i, :]), H_row)
    factors = _givens_rotation(R_row[k], R_row[k + 1])
    givens = givens.at[k, :].set(factors)
    return _rotate_vectors(R_row, k, *factors), givens


def _krylov_basis(unit_residual: Any, restart: int) -> Any:
    return tree_map(lambda x: jnp.pad(x[..., None], ((0, 0),) * x.ndim + ((0, restart),)), unit_residual)


def _gmres_incremental(A: Callable, b: Any, x0: Any, unit_residual: Any, residual_norm: Any, ptol: Any,
                       restart: int, M: Callable) -> tuple[Any, Any, Any]:
    """One restart, the least-squares problem's QR built by Givens rotations as the basis grows; its last
    rotated entry is the residual, so the restart ends early once that is under ``ptol``."""
    V = _krylov_basis(unit_residual, restart)
    dtype = jnp.result_type(*tree_leaves(b))
    R = jnp.eye(restart, restart + 1, dtype=dtype)
    givens = jnp.zeros((restart, 2), dtype=dtype)
    beta_vec = jnp.zeros(restart + 1, dtype=dtype).at[0].set(residual_norm.astype(dtype))

    def step(carry: tuple) -> tuple:
        k, _, V, R, beta_vec, givens = carry
        V, H, _ = _kth_arnoldi_iteration(k, A, M, V, R)
        R_row, givens = _apply_givens_rotations(H[k, :], givens, k)
        R = R.at[k, :].set(R_row)
        beta_vec = _rotate_vectors(beta_vec, k, *givens[k, :])
        return k + 1, abs(beta_vec[k + 1]), V, R, beta_vec, givens

    carry = lax.while_loop(lambda c: jnp.logical_and(c[0] < restart, c[1] > ptol), step,
                           (0, residual_norm, V, R, beta_vec, givens))
    _, _, V, R, beta_vec, _ = carry
    y = scipy_linalg.solve_triangular(R[:, :-1].T, beta_vec[:-1])
    x = _add(x0, tree_map(lambda X: _dot(X[..., :-1], y), V))
    unit_residual, residual_norm = _safe_normalize(M(_sub(b, A(x))))
    return x, unit_residual, residual_norm


def _gmres_batched(A: Callable, b: Any, x0: Any, unit_residual: Any, residual_norm: Any, ptol: Any,
                   restart: int, M: Callable) -> tuple[Any, Any, Any]:
    """One restart: the whole basis (unless it breaks down), then the least-squares problem by its normal
    equations (no early end within the restart)."""
    V = _krylov_basis(unit_residual, restart)
    dtype, weak = dtypes.jax_result_type(*tree_leaves(b), return_weak_type_flag=True)
    H = convert(jnp.eye(restart, restart + 1, dtype=dtype), dtype, weak)

    def step(carry: tuple) -> tuple:
        V, H, _, k = carry
        V, H, breakdown = _kth_arnoldi_iteration(k, A, M, V, H)
        return V, H, breakdown, k + 1

    V, H, _, _ = lax.while_loop(lambda c: jnp.logical_and(c[3] < restart, jnp.logical_not(c[2])), step,
                                (V, H, False, 0))
    beta_vec = jnp.zeros_like(H, shape=(restart + 1,)).at[0].set(residual_norm.astype(dtype))
    a = H.T
    # the normal equations by Cholesky (JAX's solve with assume_a="pos"; its own derivative rule is not needed here,
    # as the solve is differentiated implicitly)
    y = scipy_linalg.cho_solve(scipy_linalg.cho_factor(_dot(a.T.conj(), a)), _dot(a.T.conj(), beta_vec))
    x = _add(x0, tree_map(lambda X: _dot(X[..., :-1], y), V))
    unit_residual, residual_norm = _safe_normalize(M(_sub(b, A(x))))
    return x, unit_residual, residual_norm


def _gmres_solve(A: Callable, b: Any, x0: Any, atol: Any, ptol: Any, restart: int, maxiter: int, M: Callable,
                 restart_once: Callable) -> Any:
    """Restart from the last solution until ``|M (b - A x)| <= atol`` or ``maxiter`` restarts."""
    unit_residual, residual_norm = _safe_normalize(M(_sub(b, A(x0))))

    def step(value: tuple) -> tuple:
        x, k, unit_residual, residual_norm = value
        x, unit_residual, residual_norm = restart_once(A, b, x, unit_residual, residual_norm, ptol, restart, M)
        return x, k + 1, unit_residual, residual_norm

    return lax.while_loop(lambda v: jnp.logical_and(v[1] < maxiter, v[3] > atol), step,
                          (x0, 0, unit_residual, residual_norm))[0]


def gmres(A: Any, b: Any, x0: Any = None, *, tol: float = 1e-5, atol: float = 0.0, restart: int = 20,
          maxiter: Any = None, M: Any = None, solve_method: str = "batched") -> tuple[Any, Any]:
    """Solve ``A x = b`` by restarted GMRES (``restart`` basis vectors per restart, ``maxiter`` restarts);
    ``(x, info)``, ``info`` -1 where ``x`` has a NaN and 0 otherwise."""
    A, b, x0, M = _prepare(A, b, x0, M)
    size = sum(int(np.prod(aval(leaf).shape)) for leaf in tree_leaves(b))
    if maxiter is None:
        maxiter = 10 * size  # (SciPy's default)
    restart = min(restart, size)
    b_norm = _norm(b)
    atol = jnp.maximum(tol * b_norm, atol)
    ptol = _norm(M(b)) * jnp.minimum(1.0, atol / b_norm)  # (the preconditioned residual's tolerance)
    restart_once = {"incremental": _gmres_incremental, "batched": _gmres_batched}.get(solve_method)
    if restart_once is None:
        raise ValueError(f"invalid solve_method {solve_method}, must be either 'incremental' or 'batched'")

    def solve(A: Callable, b: Any) -> Any:
        return _gmres_solve(A, b, x0, atol, ptol, restart, maxiter, M, restart_once)

    x = lax.custom_linear_solve(A, b, solve=solve, transpose_solve=solve)
    return x, jnp.where(jnp.isnan(_norm(x)), -1, 0)
