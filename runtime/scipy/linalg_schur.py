"""``jax.scipy.linalg``'s Schur family: ``hessenberg``, ``schur``, ``rsf2csf``, ``sqrtm``, ``funm`` and
``solve_sylvester``.

As in JAX, the two decompositions run on the host (JAX calls LAPACK on the CPU; here ``schur_host`` does what
LAPACK does, in NumPy) and have no derivative; ``vmap`` maps them over a stack. The rest is written over jnp
and lax on top of them, with JAX's algorithms: Givens rotations for rsf2csf, Bjorck and Hammarling's recurrence
for the square root of a triangular matrix, Parlett's recurrence (Golub and Van Loan, algorithm 11.1.1) for
funm and Bartels and Stewart's method for the Sylvester equation.

What rounding decides: the Schur vectors of a complex matrix, and those of a 2x2 block of a real one, are
fixed only up to a phase (a sign or a rotation within the block); these may differ from JAX's, with the same
eigenvalues on the diagonal, in the same order but for some float32 matrices (see ``schur_host``).
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

import srcjax.runtime.numpy as jnp
from srcjax.runtime import dtypes, lax
from srcjax.runtime.lax import linalg_eager
from srcjax.runtime.numpy import linalg as jnp_linalg
from srcjax.runtime.numpy._core import aval, promote_dtypes_complex, promote_dtypes_inexact
from srcjax.runtime.scipy import schur_host

__all__ = ["funm", "hessenberg", "rsf2csf", "schur", "solve_sylvester", "sqrtm"]


def _check_operand(name: str, a: Any) -> Any:
    """a as an array of float or complex matrices (a stack), with the errors of JAX's lax.linalg.{name}."""
    a = jnp.asarray(a)
    typ = aval(a)
    if typ.dtype.kind not in "fc":
        raise TypeError(f"{name} does not accept dtype {typ.dtype.name} at position 0. Accepted dtypes at position 0 "
                        f"are subtypes of floating, complexfloating.")
    if typ.ndim < 2:
        raise TypeError(f"Input 0 to {name} must have rank at least 2, but got shape={typ.shape}")
    if typ.dtype.itemsize < 4:  # (LAPACK has no half precision)
        raise NotImplementedError(f"Unsupported dtype {typ.dtype.name}.")
    return a


@functools.cache
def _host_decomposition(name: str) -> Callable[[Any], Any]:
    """a -> (first, second) computed by ``schur_host.{name}`` on the host, mapped over a stack under vmap, with
    no derivative (JAX's primitive has none)."""
    from srcjax.runtime.api import ShapeDtypeStruct  # not at import: the api imports the numpy package
    from srcjax.runtime.autodiff import custom_jvp
    from srcjax.runtime.callbacks import pure_callback

    host = getattr(schur_host, name)

    def on_host(m):
        return tuple(host(np.asarray(m)))

    def decompose(a):
        result = ShapeDtypeStruct(aval(a).shape, aval(a).dtype)
        return pure_callback(on_host, (result, result), a, vmap_method="expand_dims")

    def no_derivative(primals, tangents):
        raise NotImplementedError(f"Differentiation rule for '{name}' not implemented")

    # (named so that the printed IR reads custom_jvp_call[...'schur'] over pure_callback[...'schur_host.schur'])
    on_host.__name__ = on_host.__qualname__ = f"schur_host.{name}"
    decompose.__name__ = decompose.__qualname__ = name
    decompose = custom_jvp(decompose)
    decompose.defjvp(no_derivative)
    return decompose


def hessenberg(a: Any, *, calc_q: bool = False, overwrite_a: bool = False, check_finite: bool = True) -> Any:
    """h with a = q h q^H, q unitary and h zero below its first subdiagonal; (h, q) with ``calc_q``."""
    a = _check_operand("hessenberg", a)
    shape = aval(a).shape
    if shape[-1] != shape[-2]:
        raise ValueError(f"Argument to Hessenberg reduction must have shape [..., n, n], got shape {shape}")
    if shape[-1] == 0:
        return (jnp.zeros_like(a), jnp.zeros_like(a)) if calc_q else jnp.zeros_like(a)
    h, q = _host_decomposition("hessenberg")(a)
    return (h, q) if calc_q else h


def schur(a: Any, output: str = "real") -> list[Any]:
    """[t, z] (a list, as JAX's) with a = z t z^H, z unitary: t upper triangular (output 'complex', or complex a),
    or quasi-upper triangular with a 2x2 block for each complex conjugate pair of eigenvalues (output 'real',
    real a)."""
    if output not in ("real", "complex"):
        raise ValueError(f"Expected 'output' to be either 'real' or 'complex', got output={output!r}.")
    a = jnp.asarray(a)
    if output == "complex":
        a = a.astype(dtypes.to_complex_dtype(aval(a).dtype))
    a = _check_operand("schur", a)
    shape = aval(a).shape
    if shape[-1] != shape[-2]:
        raise ValueError(f"The input to schur must be a square matrix. Got shape {shape}.")
    t, z = _host_decomposition("schur")(a)
    return [t, z]


# -- real Schur form to complex -------------------------------------------------------------------------------
def rsf2csf(T: Any, Z: Any, check_finite: bool = True) -> tuple[Any, Any]:  # noqa: N803 - SciPy's names
    """The complex Schur form (t, z) from a real one: a Givens rotation for each 2x2 block of T, from the
    bottom up, splits it into its two eigenvalues."""
    t, z = jnp.asarray(T), jnp.asarray(Z)
    if aval(t).ndim < 2 or aval(t).shape[-1] != aval(t).shape[-2]:
        raise ValueError("Input 'T' must be square.")
    if aval(z).ndim < 2 or aval(z).shape[-1] != aval(z).shape[-2]:
        raise ValueError("Input 'Z' must be square.")
    if aval(t).shape[-1] != aval(z).shape[-1]:
        raise ValueError(f"Input array shapes must match: Z: {aval(z).shape} vs. T: {aval(t).shape}")

    def one_pair(t, z):  # (called eagerly, its loop runs compiled)
        return linalg_eager.run(_rsf2csf_matrix, aval(t).shape[-1], t, z)

    return jnp.vectorize(one_pair, signature="(n,n),(n,n)->(n,n),(n,n)")(t, z)


def _rsf2csf_matrix(t: Any, z: Any) -> tuple[Any, Any]:
    t, z = promote_dtypes_complex(t, z)
    n = aval(t).shape[0]
    if n == 1:
        return t, z
    eps = np.finfo(aval(t).dtype).eps
    columns = jnp.arange(n)

    def split_block(m, t, z):
        # The rotation g with g [mu; t[m, m-1]] = [r; 0], mu = (an eigenvalue of the block) - t[m, m], applied to
        # rows m-1, m of t from the left and to columns m-1, m of t and z from the right (g^H).
        mu = jnp_linalg.eigvals(lax.dynamic_slice(t, (m - 1, m - 1), (2, 2))) - t[m, m]
        r = jnp_linalg.norm(jnp.stack([mu[0], t[m, m - 1]])).astype(aval(t).dtype)
        c, s = mu[0] / r, t[m, m - 1] / r
        g = jnp.stack([jnp.stack([jnp.conj(c), s]), jnp.stack([-s, c])])
        rows = lax.dynamic_slice_in_dim(t, m - 1, 2, axis=0)
        right_of = columns >= m - 1
        rows = jnp.where(right_of, g @ jnp.where(right_of, rows, 0), rows)
        t = lax.dynamic_update_slice_in_dim(t, rows, m - 1, axis=0)
        cols = lax.dynamic_slice_in_dim(t, m - 1, 2, axis=1)
        above = columns[:, None] < m + 1
        cols = jnp.where(above, jnp.where(above, cols, 0) @ jnp.conj(g.T), cols)
        t = lax.dynamic_update_slice_in_dim(t, cols, m - 1, axis=1)
        z_cols = lax.dynamic_slice_in_dim(z, m - 1, 2, axis=1)
        z = lax.dynamic_update_slice_in_dim(z, z_cols @ jnp.conj(g.T), m - 1, axis=1)
        return t, z

    def step(i, tz):
        t, z = tz
        m = n - i
        block = jnp.abs(t[m, m - 1]) > eps * (jnp.abs(t[m - 1, m - 1]) + jnp.abs(t[m, m]))
        t, z = lax.cond(block, split_block, lambda m, t, z: (t, z), m, t, z)
        return t.at[m, m - 1].set(0), z

    return lax.fori_loop(1, n, step, (t, z))


# -- matrix functions through the complex Schur form ----------------------------------------------------------
def sqrtm(A: Any, blocksize: int = 1) -> Any:  # noqa: N803 - SciPy's name
    """The principal square root of A [n, n] (complex): z sqrt(t) z^H from the complex Schur form a = z t z^H."""
    if blocksize > 1:
        raise NotImplementedError("Blocked version is not implemented yet.")
    t, z = schur(A, output="complex")
    # (called eagerly, the loops run compiled, as in JAX's jitted function: a lax loop run eagerly steps in Python)
    root = linalg_eager.run(_sqrtm_triangular, aval(t).shape[-1] ** 2 // 2, t)
    highest = lax.Precision.HIGHEST
    return jnp.matmul(jnp.matmul(z, root, precision=highest), jnp.conj(z.T), precision=highest)


def _sqrtm_triangular(t: Any) -> Any:
    """u upper triangular with u u = t (Bjorck and Hammarling): u[i, i] = sqrt(t[i, i]), then column by column,
    bottom up, u[i, j] = (t[i, j] - sum_{i<k<j} u[i, k] u[k, j]) / (u[i, i] + u[j, j]) (0 where the numerator
    is exactly 0)."""
    diagonal = jnp.sqrt(jnp.diag(t))
    n = aval(diagonal).shape[0]
    positions = jnp.arange(n)

    def entry(offset, ju):
        j, u = ju
        i = j - 1 - offset
        between = (positions > i) & (positions < j)
        s = jnp.sum(jnp.where(between, u[i, :] * u[:, j], 0))
        value = jnp.where(t[i, j] == s, 0, (t[i, j] - s) / (diagonal[i] + diagonal[j]))
        return j, u.at[i, j].set(value)

    def column(j, u):
        return lax.fori_loop(0, j, entry, (j, u))[1]

    return lax.fori_loop(0, n, column, jnp.diag(diagonal))


def funm(A: Any, func: Callable[[Any], Any], disp: bool = True) -> Any:  # noqa: N803 - SciPy's name
    """f(A) for a square matrix A and a scalar function ``func``: Parlett's recurrence on the complex Schur form
    t, from f on its diagonal. With ``disp=False``, (f(A), an estimate of the relative error)."""
    a = jnp.asarray(A)
    if aval(a).ndim != 2 or aval(a).shape[0] != aval(a).shape[1]:
        raise ValueError("expected square array_like input")
    t, z = rsf2csf(*schur(a))
    f = jnp.diag(func(jnp.diag(t))).astype(aval(t).dtype)
    f, smallest_gap = linalg_eager.run(_parlett, aval(t).shape[-1] ** 2 // 2, f, t)
    f = z @ f @ jnp.conj(z.T)
    if disp:
        return f
    # (JAX's choice: float32's epsilon for complex64, float64's otherwise)
    tol = np.finfo(np.float32 if np.dtype(aval(f).dtype).char.lower() == "f" else np.float64).eps
    smallest_gap = jnp.where(smallest_gap == 0.0, tol, smallest_gap)
    err = jnp.where(jnp.any(jnp.isinf(f)), np.inf,
                    jnp.minimum(1, jnp.maximum(tol, (tol / smallest_gap) * jnp_linalg.norm(jnp.triu(t, 1), 1))))
    return f, err


def _parlett(f: Any, t: Any) -> tuple[Any, Any]:
    """The upper triangle of f = func(t) from its diagonal, superdiagonal by superdiagonal (p = j - i):
    f[i, j] = (t[i, j] (f[j, j] - f[i, i]) + sum_{i<k<j} t[i, k] f[k, j] - f[i, k] t[k, j]) / (t[j, j] - t[i, i]);
    also the smallest |t[j, j] - t[i, i]| (and |t[0, 0]|)."""
    n = aval(t).shape[0]
    positions = jnp.arange(n)

    def entry(i, pf):
        p, f, smallest = pf
        j = i + p  # 1-based i and j, as in the book
        s = t[i - 1, j - 1] * (f[j - 1, j - 1] - f[i - 1, i - 1])
        between = (positions >= i) & (positions < j - 1)
        s = s + (jnp.where(between, t[i - 1], 0) @ jnp.where(between, f[:, j - 1], 0)
                 - jnp.where(between, f[i - 1], 0) @ jnp.where(between, t[:, j - 1], 0))
        gap = t[j - 1, j - 1] - t[i - 1, i - 1]
        s = jnp.where(gap != 0, s / gap, s)
        return p, f.at[i - 1, j - 1].set(s), jnp.minimum(smallest, jnp.abs(gap))

    def superdiagonal(p, fs):
        _, f, smallest = lax.fori_loop(1, n - p + 1, entry, (p, *fs))
        return f, smallest

    return lax.fori_loop(1, n, superdiagonal, (f, jnp.abs(t[0, 0])))


# -- the Sylvester equation a x + x b = c ---------------------------------------------------------------------
def solve_sylvester(A: Any, B: Any, C: Any, *, method: str = "schur", tol: float = 1e-8) -> Any:  # noqa: N803
    """x with A x + x B = C (A [..., m, m], B [..., n, n], C [..., m, n]); NaN where an eigenvalue of A plus one
    of B is within ``tol`` of 0. method 'schur' (Bartels-Stewart on the complex Schur forms) or 'eigen'."""
    a, b, c = promote_dtypes_inexact(jnp.asarray(A), jnp.asarray(B), jnp.asarray(C))
    m, n = aval(c).shape[-2:]
    if aval(a).shape[-2:] != (m, m) or aval(b).shape[-2:] != (n, n):
        raise ValueError(f"Incompatible shapes for Sylvester equation:\nA: {aval(a).shape}\nB: {aval(b).shape}\n"
                         f"C: {aval(c).shape}")
    solve = functools.partial(_sylvester_matrix, method=method, tol=tol)
    return jnp.vectorize(solve, signature="(m,m),(n,n),(m,n)->(m,n)")(a, b, c)


def _sylvester_matrix(a: Any, b: Any, c: Any, *, method: str, tol: float) -> Any:
    m, n = aval(c).shape
    if method == "schur":
        r, u = schur(a, output="complex")
        s, v = schur(jnp.conj(b.T), output="complex")
        f = jnp.conj(u.T) @ c.astype(aval(r).dtype) @ v
        y = linalg_eager.run(_sylvester_triangular, m * n, r, jnp.conj(s.T), f)
        x = u @ y @ jnp.conj(v.T)
    elif method == "eigen":
        from srcjax.runtime.scipy.linalg import inv, solve

        ra, ua = jnp_linalg.eig(a)
        rb, ub = jnp_linalg.eig(b)
        f = solve(ua, c.astype(aval(ra).dtype) @ ub)
        y = f / (ra[:, None] + rb[None, :])
        x = ua[:m, :m] @ y[:m, :n] @ inv(ub)[:n, :n]
    else:
        raise ValueError(f'Unrecognized method {method}. The two valid methods are either "schur" or "eigen".')
    if aval(c).dtype.kind != "c":
        x = jnp.real(x)
    near_singular = jnp.any(jnp.abs(jnp_linalg.eigvals(a)[:, None] + jnp_linalg.eigvals(b)[None, :]) < tol)
    return lax.cond(near_singular, lambda: jnp.zeros_like(x) * np.nan, lambda: x)


def _sylvester_triangular(r: Any, s: Any, f: Any) -> Any:
    """y with r y + y s = f for upper triangular r and lower triangular s, entry by entry from the bottom right:
    y[i, j] = (f[i, j] - sum_{k>i} r[i, k] y[k, j] - sum_{k>j} y[i, k] s[k, j]) / (r[i, i] + s[j, j])."""
    r, s, f = promote_dtypes_inexact(r, s, f)
    m, n = aval(f).shape
    rows, cols = jnp.arange(m), jnp.arange(n)

    def solve_entry(y_flat, index):
        i, j = index // n, index % n
        y = y_flat.reshape((m, n))
        below = jnp.sum(jnp.where(rows > i, r[i, :] * y[:, j], 0.0))
        right = jnp.sum(jnp.where(cols > j, y[i, :] * s[:, j], 0.0))
        value = (f[i, j] - (below + right)) / (r[i, i] + s[j, j])
        return y_flat.at[i * n + j].set(value), None

    y_flat, _ = lax.scan(solve_entry, jnp.zeros((m * n,), aval(f).dtype), jnp.arange(m * n - 1, -1, -1))
    return y_flat.reshape((m, n))
