"""``srcjax.scipy.linalg``: SciPy's linear-algebra functions (JAX's subset), on lax.linalg and jnp.linalg.

SciPy's conventions differ from NumPy's in places and are kept: ``cholesky`` and ``cho_factor`` give the
upper factor by default, ``eigh`` returns (w, v), ``lu`` returns (p, l, u) with a = p l u, ``qr`` defaults
to mode='full', and a right-hand side ``b`` is a vector when it has one axis fewer than ``a``.

The Schur family (schur, hessenberg, rsf2csf, sqrtm, funm, solve_sylvester), the special matrices and
eigh_tridiagonal live in ``linalg_schur``, ``linalg_matrices`` and ``linalg_tridiagonal``, re-exported here.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

import srcjax.runtime.numpy as jnp
from srcjax.runtime import dtypes, lax
from srcjax.runtime.lax import linalg as lax_linalg
from srcjax.runtime.numpy import linalg as jnp_linalg
from srcjax.runtime.numpy._core import aval, check_arraylike, promote_dtypes, promote_dtypes_inexact
from srcjax.runtime.scipy.linalg_matrices import (  # the special matrices
    companion, convolution_matrix, dft, fiedler, fiedler_companion, hadamard, helmert, hilbert, invhilbert, invpascal,
    leslie, pascal,
)
from srcjax.runtime.scipy.linalg_schur import funm, hessenberg, rsf2csf, schur, solve_sylvester, sqrtm
from srcjax.runtime.scipy.linalg_tridiagonal import eigh_tridiagonal

__all__ = [
    "block_diag", "cho_factor", "cho_solve", "cholesky", "circulant", "det", "eigh", "expm", "expm_frechet", "hankel",
    "inv", "lu", "lu_factor", "lu_solve", "polar", "qr", "qr_multiply", "solve", "solve_triangular", "svd",
    "toeplitz",
    # linalg_schur.py
    "funm", "hessenberg", "rsf2csf", "schur", "solve_sylvester", "sqrtm",
    # linalg_matrices.py
    "companion", "convolution_matrix", "dft", "fiedler", "fiedler_companion", "hadamard", "helmert", "hilbert",
    "invhilbert", "invpascal", "leslie", "pascal",
    # linalg_tridiagonal.py
    "eigh_tridiagonal",
]


def _inexact(name: str, *args: Any) -> list[Any]:
    check_arraylike(f"jax.scipy.linalg.{name}", *args)
    return promote_dtypes_inexact(*(jnp.asarray(a) for a in args))


def _square(name: str, a: Any) -> None:
    shape = aval(a).shape
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"jax.scipy.linalg.{name}: a must have shape [..., n, n], got {shape}")


def _solve_with(name: str, a: Any, b: Any, solve_matrices) -> Any:
    """``solve_matrices(a, b)`` for b [..., n, k] or a vector b, after broadcasting the batch axes of a and b
    against each other. As JAX's, b is a vector when it has one axis, or one axis fewer than a and a's size."""
    n, b_shape = aval(a).shape[-1], aval(b).shape
    b_is_vector = len(b_shape) == 1 or (len(b_shape) == aval(a).ndim - 1 and b_shape[-1] == n)
    rows = b_shape[-1] if b_is_vector else (b_shape[-2] if len(b_shape) >= 2 else None)
    if rows != n:
        raise ValueError(f"jax.scipy.linalg.{name}: b {b_shape} does not match a {aval(a).shape}: it must be "
                         f"[..., {n}] (one axis fewer than a) or [..., {n}, k]")
    if b_is_vector:
        b = jnp.expand_dims(b, -1)
    a_shape, b_shape = aval(a).shape, aval(b).shape
    batch = jnp.broadcast_shapes(a_shape[:-2], b_shape[:-2])
    x = solve_matrices(jnp.broadcast_to(a, batch + a_shape[-2:]), jnp.broadcast_to(b, batch + b_shape[-2:]))
    return jnp.squeeze(x, -1) if b_is_vector else x


_TRANS = {0: (False, False), "N": (False, False), 1: (True, False), "T": (True, False), 2: (True, True),
          "C": (True, True)}


def _trans(trans: Any) -> tuple[bool, bool]:
    """(transpose_a, conjugate_a) for SciPy's trans: 0/'N' solves a x = b, 1/'T' a^T x = b, 2/'C' a^H x = b."""
    key = trans if isinstance(trans, str) else int(trans) if isinstance(trans, (int, np.integer)) else None
    if key not in _TRANS:
        raise ValueError(f"jax.scipy.linalg: invalid 'trans' value {trans!r}; use 0, 1, 2 or 'N', 'T', 'C'")
    return _TRANS[key]


# -- triangular and Cholesky solves ---------------------------------------------------------------------------
def solve_triangular(a: Any, b: Any, trans: Any = 0, lower: bool = False, unit_diagonal: bool = False,
                     overwrite_b: bool = False, debug: Any = None, check_finite: bool = True) -> Any:
    a, b = _inexact("solve_triangular", a, b)
    _square("solve_triangular", a)
    transpose_a, conjugate_a = _trans(trans)

    def solve_matrices(a, rhs):
        return lax_linalg.triangular_solve(a, rhs, left_side=True, lower=lower, transpose_a=transpose_a,
                                           conjugate_a=conjugate_a, unit_diagonal=unit_diagonal)

    return _solve_with("solve_triangular", a, b, solve_matrices)


def cholesky(a: Any, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True) -> Any:
    """The Cholesky factor of a: upper U with a = U^H U by default, lower L with a = L L^H if ``lower``.

    As SciPy's (and JAX's), it reads only that triangle of a: a is not symmetrized."""
    (a,) = _inexact("cholesky", a)
    _square("cholesky", a)
    if lower:
        return lax_linalg.cholesky(a, symmetrize_input=False)
    return lax_linalg._adjoint(lax_linalg.cholesky(lax_linalg._adjoint(a), symmetrize_input=False))


def cho_factor(a: Any, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True) -> tuple[Any, bool]:
    return cholesky(a, lower=lower), lower


def cho_solve(c_and_lower: tuple[Any, bool], b: Any, overwrite_b: bool = False, check_finite: bool = True) -> Any:
    """x with a x = b, given cho_factor(a): two triangular solves, L y = b then L^H x = y."""
    c, lower = c_and_lower
    c, b = _inexact("cho_solve", c, b)
    _square("cho_solve", c)

    def solve_matrices(c, rhs):
        # Written with the lower factor L (= U^H when c is upper): first L y = b, then L^H x = y.
        first = dict(lower=lower, transpose_a=not lower, conjugate_a=not lower)
        second = dict(lower=lower, transpose_a=lower, conjugate_a=lower)
        y = lax_linalg.triangular_solve(c, rhs, left_side=True, **first)
        return lax_linalg.triangular_solve(c, y, left_side=True, **second)

    return _solve_with("cho_solve", c, b, solve_matrices)


# -- LU -------------------------------------------------------------------------------------------------------
def lu_factor(a: Any, overwrite_a: bool = False, check_finite: bool = True) -> tuple[Any, Any]:
    """(lu, pivots): L below the diagonal of lu (unit diagonal implied), U on and above; row i was swapped with
    row pivots[i]."""
    (a,) = _inexact("lu_factor", a)
    if aval(a).ndim < 2:  # (rectangular a are factored too, as JAX's)
        raise ValueError(f"jax.scipy.linalg.lu_factor: a must have shape [..., m, n], got {aval(a).shape}")
    lu_, pivots, _ = lax_linalg.lu(a)
    return lu_, pivots


def lu_solve(lu_and_piv: tuple[Any, Any], b: Any, trans: int = 0, overwrite_b: bool = False,
             check_finite: bool = True) -> Any:
    lu_, pivots = lu_and_piv
    lu_, b = _inexact("lu_solve", lu_, b)
    _square("lu_solve", lu_)
    permutation = lax_linalg.lu_pivots_to_permutation(pivots, aval(lu_).shape[-1])
    code = {"N": 0, "T": 1, "C": 2}.get(trans, trans) if isinstance(trans, str) else trans
    if code not in (0, 1, 2):
        raise ValueError(f"jax.scipy.linalg.lu_solve: invalid 'trans' value {trans!r}; use 0, 1 or 2")

    def solve_matrices(factors, rhs):
        rows = jnp.broadcast_to(permutation, aval(factors).shape[:-1])
        return jnp_linalg._lu_solve(factors, rows, rhs, code)

    return _solve_with("lu_solve", lu_, b, solve_matrices)


def lu(a: Any, permute_l: bool = False, overwrite_a: bool = False, check_finite: bool = True) -> tuple[Any, ...]:
    """a = p l u with p a permutation matrix, l [m, k] unit lower triangular and u [k, n] upper (k = min(m, n));
    (p l, u) with ``permute_l``."""
    (a,) = _inexact("lu", a)
    shape = aval(a).shape
    if len(shape) < 2:
        raise ValueError(f"jax.scipy.linalg.lu: a must have shape [..., m, n], got {shape}")
    lu_, _, permutation = lax_linalg.lu(a)
    *batch, m, n = shape
    k = min(m, n)
    dtype = aval(a).dtype
    l_part = lax.slice_in_dim(lu_, 0, k, axis=len(shape) - 1)
    lower = jnp.tril(l_part, -1) + jnp.eye(m, k, dtype=dtype)
    upper = jnp.triu(lax.slice_in_dim(lu_, 0, k, axis=len(shape) - 2))
    # a[permutation] = l u, so p[permutation[i], i] = 1
    p = (jnp.expand_dims(permutation, -2) == lax.broadcasted_iota(np.int32, (*batch, m, m), len(shape) - 2))
    p = p.astype(dtype)
    if permute_l:
        return jnp.matmul(p, lower), upper
    return p, lower, upper


# -- other factorizations -------------------------------------------------------------------------------------
def qr(a: Any, overwrite_a: bool = False, lwork: Any = None, mode: str = "full", pivoting: bool = False,
       check_finite: bool = True) -> tuple[Any, ...]:
    """(q, r) for mode 'full' ([m,m], [m,n]) or 'economic' ([m,k], [k,n]); (r,) for mode 'r'; with ``pivoting``, the
    column permutation p (a[:, p] = q r) after them."""
    if mode not in ("full", "economic", "r"):
        raise ValueError(f"jax.scipy.linalg.qr: unsupported mode {mode!r}; use 'full', 'economic' or 'r'")
    (a,) = _inexact("qr", a)
    if aval(a).ndim < 2:
        raise ValueError(f"jax.scipy.linalg.qr: a must have shape [..., m, n], got {aval(a).shape}")
    q, r, *p = lax_linalg.qr(a, pivoting=pivoting, full_matrices=mode != "economic")
    return (r, *p) if mode == "r" else (q, r, *p)


def qr_multiply(a: Any, c: Any, mode: str = "right", pivoting: bool = False, conjugate: bool = False,
                overwrite_a: bool = False, overwrite_c: bool = False) -> tuple[Any, ...]:
    """(q c, r) for mode 'left' (c [..., k, p], k = min(m, n)) or (c q, r) for 'right' (c [..., p, m], the result
    [..., p, k]), q [m, k] and r [k, n] from a = q r (conj(q) with ``conjugate``); a vector c is a column
    ('left') or a row ('right') and the result a vector. With ``pivoting``, the column permutation p after them."""
    a, c = promote_dtypes_inexact(jnp.asarray(a), jnp.asarray(c))
    if mode not in ("right", "left"):
        raise ValueError(f"mode must be 'right' or 'left', got {mode!r}")
    vector = aval(c).ndim == 1
    if vector:
        c = jnp.expand_dims(c, -1 if mode == "left" else 0)
    if aval(a).ndim < 2:
        raise ValueError(f"jax.scipy.linalg.qr_multiply: a must have shape [..., m, n], got {aval(a).shape}")
    m, n = aval(a).shape[-2:]
    k = min(m, n)
    if mode == "left" and aval(c).shape[-2] != k:
        raise ValueError(f"Array shapes are not compatible for Q @ c operation: a has shape {aval(a).shape} so Q "
                         f"has {k} columns, but c has {aval(c).shape[-2]} rows (expected {k}).")
    if mode == "right" and aval(c).shape[-1] != m:
        raise ValueError(f"Array shapes are not compatible for c @ Q operation: a has shape {aval(a).shape} so Q "
                         f"has {m} rows, but c has {aval(c).shape[-1]} columns (expected {m}).")
    batch = jnp.broadcast_shapes(aval(a).shape[:-2], aval(c).shape[:-2])
    a = jnp.broadcast_to(a, batch + aval(a).shape[-2:])
    c = jnp.broadcast_to(c, batch + aval(c).shape[-2:])
    q, r, *p = lax_linalg.qr(a, pivoting=pivoting, full_matrices=False)
    if conjugate:
        q = jnp.conj(q)
    product = jnp.matmul(q, c) if mode == "left" else jnp.matmul(c, q)
    if vector:
        product = jnp.ravel(product)
    return (product, jnp.triu(r), *p)


def svd(a: Any, full_matrices: bool = True, compute_uv: bool = True, overwrite_a: bool = False,
        check_finite: bool = True, lapack_driver: str = "gesdd") -> Any:
    out = jnp_linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)
    return tuple(out) if compute_uv else out


def eigh(a: Any, b: Any = None, lower: bool = True, eigvals_only: bool = False, overwrite_a: bool = False,
         overwrite_b: bool = False, turbo: bool = True, eigvals: Any = None, type: int = 1,  # noqa: A002
         check_finite: bool = True) -> Any:
    """Eigenvalues w (ascending) and eigenvectors v of Hermitian a, as (w, v); w alone with ``eigvals_only``."""
    if b is not None:
        raise NotImplementedError("jax.scipy.linalg.eigh: only the standard problem (b=None) is supported")
    if eigvals is not None:
        raise NotImplementedError("jax.scipy.linalg.eigh: eigvals (a subset) is not supported")
    w, v = jnp_linalg.eigh(a, UPLO="L" if lower else "U")
    return w if eigvals_only else (w, v)


def det(a: Any, overwrite_a: bool = False, check_finite: bool = True) -> Any:
    return jnp_linalg.det(a)


def inv(a: Any, overwrite_a: bool = False, check_finite: bool = True) -> Any:
    return jnp_linalg.inv(a)


_ASSUME = {"gen": "gen", "general": "gen", "sym": "gen", "symmetric": "gen", "her": "gen", "hermitian": "gen",
           "pos": "pos", "positive definite": "pos"}


def solve(a: Any, b: Any, lower: bool = False, overwrite_a: bool = False, overwrite_b: bool = False,
          debug: bool = False, check_finite: bool = True, assume_a: str = "gen") -> Any:
    """x with a x = b. assume_a='pos' solves through the Cholesky factor (of a symmetrized, as JAX's does; b is a
    vector when it has one axis fewer than a); the others through LU, with jnp.linalg.solve's rule for b."""
    if assume_a not in _ASSUME:
        raise ValueError(f"jax.scipy.linalg.solve: assume_a must be one of {sorted(set(_ASSUME))}, got {assume_a!r}")
    if _ASSUME[assume_a] == "gen":
        return jnp_linalg.solve(a, b)
    a, b = _inexact("solve", a, b)
    _square("solve", a)
    b_is_vector = aval(b).ndim == aval(a).ndim - 1
    if b_is_vector:
        b = jnp.expand_dims(b, -1)
    if aval(b).ndim != aval(a).ndim or aval(b).shape[-2] != aval(a).shape[-1]:
        raise ValueError(f"jax.scipy.linalg.solve: b {aval(b).shape} does not match a {aval(a).shape}: it must be "
                         f"[..., {aval(a).shape[-1]}] (one axis fewer than a) or [..., {aval(a).shape[-1]}, k]")
    batch = jnp.broadcast_shapes(aval(a).shape[:-2], aval(b).shape[:-2])
    b = jnp.broadcast_to(b, batch + aval(b).shape[-2:])
    x = _solve_positive_with_jvp()(a, b, lower)
    return jnp.squeeze(x, -1) if b_is_vector else x


def _solve_positive(a: Any, b: Any, lower: bool) -> Any:
    return cho_solve(cho_factor(lax.stop_gradient(a), lower=lower), b)


def _solve_positive_jvp(lower: bool, primals: Any, tangents: Any) -> Any:
    # JAX's implicit derivative (its lax.custom_linear_solve): x' = h^-1 (b' - a' x) with the whole of a', h being
    # the Hermitian matrix the value reads from one triangle of a. The tangent's solve, linear in its right-hand
    # side so that reverse mode can transpose it, is an LU solve with h + (a - stop_gradient(a)): its value is h
    # and its derivative a', as the operator of JAX's solve, so that higher derivatives are JAX's too.
    (a, b), (a_dot, b_dot) = primals, tangents
    x = _solve_positive_with_jvp()(a, b, lower)
    triangle = jnp.tril(a) if lower else jnp.triu(a)
    half = jnp.where(jnp.eye(aval(a).shape[-1], dtype=bool), triangle / 2, triangle)
    operator = lax.stop_gradient(half + lax_linalg._adjoint(half)) + (a - lax.stop_gradient(a))
    return x, jnp_linalg.solve(operator, b_dot - jnp.matmul(a_dot, x))


@functools.cache
def _solve_positive_with_jvp() -> Any:
    from srcjax.runtime.autodiff import custom_jvp  # not at import: autodiff imports the numpy package

    solve_ = custom_jvp(_solve_positive, nondiff_argnums=(2,))
    solve_.defjvp(_solve_positive_jvp)
    return solve_


def block_diag(*arrs: Any) -> Any:
    """The matrices (scalars are 1x1, vectors 1xn) down the diagonal of one matrix, zeros elsewhere."""
    if not arrs:
        return jnp.zeros((1, 0), dtypes.default_float_dtype())
    check_arraylike("jax.scipy.linalg.block_diag", *arrs)
    arrs = [jnp.atleast_2d(jnp.asarray(a)) for a in arrs]
    for i, a in enumerate(arrs):
        if aval(a).ndim > 2:
            raise ValueError(f"jax.scipy.linalg.block_diag: arguments must have at most 2 dimensions, got shape "
                             f"{aval(a).shape} at argument {i}")
    arrs = promote_dtypes(*arrs)
    width = sum(aval(a).shape[1] for a in arrs)
    rows, left = [], 0
    for a in arrs:
        cols = aval(a).shape[1]
        rows.append(lax.pad(a, np.zeros((), aval(a).dtype), [(0, 0, 0), (left, width - left - cols, 0)]))
        left += cols
    return lax.concatenate(rows, 0)



# -- the matrix exponential ------------------------------------------------------------------------------------
# Scaling and squaring with a diagonal Pade approximant (Higham, "The scaling and squaring method for the matrix
# exponential revisited", 2005), as JAX chooses it: the degree by the 1-norm of a, from the thresholds below
# for the dtype's precision, the largest degree after scaling a by 2**-s so that its norm is at most the last one.
_PADE = {
    3: (120.0, 60.0, 12.0, 1.0),
    5: (30240.0, 15120.0, 3360.0, 420.0, 30.0, 1.0),
    7: (17297280.0, 8648640.0, 1995840.0, 277200.0, 25200.0, 1512.0, 56.0, 1.0),
    9: (17643225600.0, 8821612800.0, 2075673600.0, 302702400.0, 30270240.0, 2162160.0, 110880.0, 3960.0, 90.0,
        1.0),
    13: (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0, 129060195264000.0,
         10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0, 40840800.0, 960960.0, 16380.0, 182.0, 1.0),
}
# (degrees in order, the norms below which each applies but the last, the norm the last is scaled to)
_PADE_CHOICE = {
    8: ((3, 5, 7, 9, 13), (1.495585217958292e-2, 2.539398330063230e-1, 9.504178996162932e-1, 2.097847961257068),
        5.371920351148152),
    4: ((3, 5, 7), (4.258730016922831e-1, 1.880152677804762), 3.925724783138660),
}


def _pade(degree: int, a: Any) -> tuple[Any, Any]:
    """(U, V): the odd and even parts of the degree's Pade numerator, exp(a) ~ (V - U)^-1 (V + U)."""
    b = _PADE[degree]
    eye = jnp.eye(aval(a).shape[-1], dtype=aval(a).dtype)
    powers = [eye, a @ a]  # a^0, a^2, a^4, ...
    if degree == 13:
        a4 = powers[1] @ powers[1]
        a6 = a4 @ powers[1]
        u = a @ (a6 @ (b[13] * a6 + b[11] * a4 + b[9] * powers[1]) + b[7] * a6 + b[5] * a4 + b[3] * powers[1]
                 + b[1] * eye)
        v = a6 @ (b[12] * a6 + b[10] * a4 + b[8] * powers[1]) + b[6] * a6 + b[4] * a4 + b[2] * powers[1] + b[0] * eye
        return u, v
    while len(powers) <= degree // 2:
        powers.append(powers[-1] @ powers[1])
    u = a @ sum(b[2 * k + 1] * p for k, p in enumerate(powers))
    v = sum(b[2 * k] * p for k, p in enumerate(powers))
    return u, v


def expm(A: Any, *, upper_triangular: bool = False, max_squarings: int = 16) -> Any:
    """The matrix exponential of A [..., n, n]; NaN where it would need more than ``max_squarings`` squarings.
    ``upper_triangular``: A is, and the Pade quotient is solved by back substitution."""
    (a,) = _inexact("expm", A)
    shape = aval(a).shape
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"Expected A to be a (batched) square matrix, got A.shape={shape}.")
    if shape[-1] == 0:  # the exponential of an empty matrix is empty (its norm would reduce nothing)
        return a
    if len(shape) > 2:
        return jnp.vectorize(lambda m: expm(m, upper_triangular=upper_triangular, max_squarings=max_squarings),
                             signature="(n,n)->(n,n)")(a)
    double = np.dtype(aval(a).dtype) in (np.dtype(np.float64), np.dtype(np.complex128))
    degrees, bounds, largest = _PADE_CHOICE[8 if double else 4]
    norm = jnp.max(jnp.sum(jnp.abs(a), axis=0))
    squarings = jnp.maximum(0, jnp.floor(jnp.log2(norm / largest)))
    scaled = a / (2.0 ** squarings).astype(aval(a).dtype)
    which = sum((norm >= bound).astype(np.int32) for bound in bounds)
    u, v = lax.switch(which, [lambda m, d=d: _pade(d, m) for d in degrees], scaled)
    p, q = u + v, v - u
    r = solve_triangular(q, p) if upper_triangular else jnp_linalg.solve(q, p)

    def square(i, m):
        return jnp.where(i < squarings, jnp.matmul(m, m, precision=lax.Precision.HIGHEST), m)

    r = lax.fori_loop(0, max_squarings, square, r)
    return jnp.where(squarings > max_squarings, jnp.full_like(r, np.nan), r)


def expm_frechet(A: Any, E: Any, *, method: str | None = None, compute_expm: bool = True) -> Any:  # noqa: N803
    """The Frechet derivative of expm at A in the direction E (expm's JVP, as JAX computes it); with
    ``compute_expm``, (expm(A), that derivative)."""
    from srcjax.runtime.autodiff import jvp  # not at import: autodiff imports the numpy package

    a, e = jnp.asarray(A), jnp.asarray(E)
    for name, x in (("A", a), ("E", e)):
        shape = aval(x).shape
        if len(shape) < 2 or shape[-1] != shape[-2]:
            raise ValueError(f"jax.scipy.linalg.expm_frechet: expected {name} to be a (batched) square matrix, got "
                             f"{name}.shape={shape}")
    if aval(a).shape != aval(e).shape:
        raise ValueError(f"jax.scipy.linalg.expm_frechet: expected A and E to be the same shape, got "
                         f"A.shape={aval(a).shape} E.shape={aval(e).shape}")
    value, derivative = jvp(lambda m: expm(m, upper_triangular=False, max_squarings=16), (a,), (e,))
    return (value, derivative) if compute_expm else derivative


# -- structured matrices (batched over leading axes of their vectors, as JAX's) ----------------------------------
def _from_diagonals(name: str, v: Any, rows: int, cols: int, index) -> Any:
    """The [rows, cols] matrix with entry (i, j) = v[..., index(i, j)], v's leading axes a batch."""
    i = lax.broadcasted_iota(np.int32, (rows, cols), 0)
    j = lax.broadcasted_iota(np.int32, (rows, cols), 1)
    batch = aval(v).shape[:-1]
    picked = jnp.take(v, jnp.ravel(index(i, j)), axis=-1)
    return jnp.reshape(picked, (*batch, rows, cols))


def _vectors(name: str, *vs: Any) -> list[Any]:
    check_arraylike(f"jax.scipy.linalg.{name}", *vs)
    return [jnp.atleast_1d(jnp.asarray(v)) for v in vs]


def toeplitz(c: Any, r: Any = None) -> Any:
    """T[..., i, j] = c[..., i - j] for i >= j and r[..., j - i] above (r[0] is not used); r defaults to conj(c)."""
    (c,) = _vectors("toeplitz", c)
    (r,) = [jnp.conj(c)] if r is None else _vectors("toeplitz", r)
    c, r, m, n = _broadcast_column_and_row(c, r)
    if m == 0 or n == 0:
        return jnp.zeros((*aval(c).shape[:-1], m, n), jnp.result_type(c, r))
    elements = jnp.concatenate([jnp.flip(c, -1), r[..., 1:]], axis=-1)  # c reversed, then r past its first
    return _from_diagonals("toeplitz", elements, m, n, lambda i, j: m - 1 - i + j)


def _broadcast_column_and_row(c: Any, r: Any) -> tuple[Any, Any, int, int]:
    """``c`` and ``r`` over their broadcast batch dimensions, and their lengths."""
    batch = jnp.broadcast_shapes(aval(c).shape[:-1], aval(r).shape[:-1])
    m, n = aval(c).shape[-1], aval(r).shape[-1]
    return jnp.broadcast_to(c, (*batch, m)), jnp.broadcast_to(r, (*batch, n)), m, n


def hankel(c: Any, r: Any = None) -> Any:
    """H[..., i, j] = v[..., i + j] with v = concatenate(c, r[1:]) (r[0] is not used); r defaults to zeros."""
    (c,) = _vectors("hankel", c) if jnp.ndim(c) else [None]
    if c is None or (r is not None and jnp.ndim(r) == 0):
        raise ValueError("jax.scipy.linalg.hankel: c and r must be at least 1-dimensional, got a scalar")
    (r,) = [jnp.zeros_like(c)] if r is None else _vectors("hankel", r)
    c, r, m, n = _broadcast_column_and_row(c, r)
    if m == 0 or n == 0:
        return jnp.zeros((*aval(c).shape[:-1], m, n), jnp.result_type(c, r))
    return _from_diagonals("hankel", jnp.concatenate([c, r[..., 1:]], axis=-1), m, n, lambda i, j: i + j)


def circulant(c: Any) -> Any:
    """C[..., i, j] = c[..., (i - j) mod n]: the first column c, cyclically shifted down in each next column."""
    (c,) = _vectors("circulant", c)
    n = aval(c).shape[-1]
    return _from_diagonals("circulant", c, n, n, lambda i, j: (i - j) % n)


def polar(a: Any, side: str = "right", *, method: str = "qdwh", eps: Any = None, max_iterations: Any = None) -> Any:
    """(u, p) with a = u p (side 'right', p [n, n]) or a = p u ('left', p [m, m]), u with orthonormal columns (or
    rows) and p Hermitian positive semi-definite. Both methods compute it from the SVD a = U S V^H: u = U V^H and
    p = V S V^H (or U S U^H); JAX's 'qdwh' iterates to the same factors."""
    check_arraylike("jax.scipy.linalg.polar", a)
    a = jnp.asarray(a)
    if aval(a).ndim < 2:
        raise ValueError("jax.scipy.linalg.polar: the input `a` must be at least a 2-D array")
    if side not in ("right", "left"):
        raise ValueError("jax.scipy.linalg.polar: the argument `side` must be either 'right' or 'left'")
    if method not in ("qdwh", "svd"):
        raise ValueError(f"jax.scipy.linalg.polar: unknown polar decomposition method {method!r}")
    u_svd, s, vh = jnp_linalg.svd(a, full_matrices=False)
    u = jnp.matmul(u_svd, vh, precision=lax.Precision.HIGHEST)
    s = s.astype(aval(u).dtype)
    if side == "right":
        p = jnp.matmul(jnp_linalg._H(vh) * jnp.expand_dims(s, -2), vh, precision=lax.Precision.HIGHEST)
    else:
        p = jnp.matmul(u_svd * jnp.expand_dims(s, -2), jnp_linalg._H(u_svd), precision=lax.Precision.HIGHEST)
    return u, p

