"""``srcjax.scipy.linalg``: SciPy's linear-algebra functions (JAX's subset), on lax.linalg and jnp.linalg.

SciPy's conventions differ from NumPy's in places and are kept: ``cholesky`` and ``cho_factor`` give the
upper factor by default, ``eigh`` returns (w, v), ``lu`` returns (p, l, u) with a = p l u, ``qr`` defaults
to mode='full', and a right-hand side ``b`` is a vector when it has one axis fewer than ``a``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import srcjax.runtime.numpy as jnp
from srcjax.runtime import dtypes, lax
from srcjax.runtime.lax import linalg as lax_linalg
from srcjax.runtime.numpy import linalg as jnp_linalg
from srcjax.runtime.numpy._core import aval, check_arraylike, promote_dtypes, promote_dtypes_inexact

__all__ = [
    "block_diag", "cho_factor", "cho_solve", "cholesky", "det", "eigh", "expm", "inv", "lu", "lu_factor", "lu_solve",
    "qr", "solve", "solve_triangular", "svd",
]


def _inexact(name: str, *args: Any) -> list[Any]:
    check_arraylike(f"jax.scipy.linalg.{name}", *args)
    return promote_dtypes_inexact(*(jnp.asarray(a) for a in args))


def _square(name: str, a: Any) -> None:
    shape = aval(a).shape
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"jax.scipy.linalg.{name}: a must have shape [..., n, n], got {shape}")


def _solve_with(name: str, a: Any, b: Any, solve_matrices) -> Any:
    """``solve_matrices(a, b)`` for b [..., n, k] or a vector b [..., n] (one axis fewer than a), after
    broadcasting the batch axes of a and b against each other."""
    n, b_shape = aval(a).shape[-1], aval(b).shape
    b_is_vector = len(b_shape) == aval(a).ndim - 1
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
    """The Cholesky factor of a: upper U with a = U^H U by default, lower L with a = L L^H if ``lower``."""
    return jnp_linalg.cholesky(a, upper=not lower)


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
    _square("lu_factor", a)
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
    """(q, r) for mode 'full' ([m,m], [m,n]) or 'economic' ([m,k], [k,n]); (r,) for mode 'r'."""
    if pivoting:
        raise NotImplementedError("jax.scipy.linalg.qr: pivoting=True is not supported")
    if mode not in ("full", "economic", "r"):
        raise ValueError(f"jax.scipy.linalg.qr: unsupported mode {mode!r}; use 'full', 'economic' or 'r'")
    (a,) = _inexact("qr", a)
    if aval(a).ndim < 2:
        raise ValueError(f"jax.scipy.linalg.qr: a must have shape [..., m, n], got {aval(a).shape}")
    q, r = lax_linalg.qr(a, full_matrices=mode != "economic")
    return (r,) if mode == "r" else (q, r)


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
    return cho_solve(cho_factor(a, lower=lower), b)


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
