"""``lax.linalg.tridiagonal_solve``: a tridiagonal system solved as LAPACK's gtsv solves it, or with
``perturb_singular`` as jaxlib's perturbed kernel does (LAPACK's lagtf + lagts, below).

gtsv is Gaussian elimination with partial pivoting on the three diagonals: at step i, row i is swapped with row
i + 1 when row i+1's subdiagonal entry is larger (in |.|; |re| + |im| for complex), which fills a second
superdiagonal. Here the elimination is one ``lax.scan`` down the rows and back substitution one scan up, over all
batch elements at once; a zero pivot (gtsv's info > 0) makes that batch element's solution NaN, as in JAX.

The solve is a ``custom_linear_solve`` of the tridiagonal product, so its derivatives are JAX's: with x = A^-1 b,
dx = A^-1 (db - dA x), and the transpose solves with A^T (the sub- and superdiagonals exchanged).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from srcjax.runtime import lax
from srcjax.runtime.lax import linalg_eager
from srcjax.runtime.lax.linalg_checks import linalg_operands

__all__ = ["tridiagonal_solve"]


def tridiagonal_solve(dl: Any, d: Any, du: Any, b: Any, *, perturb_singular: bool = False) -> Any:
    """X with A X = b for the tridiagonal A with ``A[i, i-1] = dl[i]``, ``A[i, i] = d[i]``, ``A[i, i+1] = du[i]``
    (``dl[0]`` and ``du[m-1]`` are ignored); diagonals ``[..., m]``, b ``[..., m, n]``."""
    from srcjax.runtime.numpy._core import aval

    def shape_rule(dl_shape: tuple, d_shape: tuple, du_shape: tuple, b_shape: tuple) -> None:
        if not dl_shape == d_shape == du_shape:
            raise TypeError("tridiagonal_solve requires that all diagonal arguments have the same shape.")
        if dl_shape != b_shape[:-1]:
            raise TypeError("tridiagonal_solve requires that the leading ndim-1 dimensions of b equal the "
                            "dimensions of the diagonal arguments.")

    dl, d, du, b = linalg_operands("tridiagonal_solve", (dl, d, du, b), (1, 1, 1, 2), "fc", shape_rule)
    m = aval(d).shape[-1]
    if m == 0:
        return b
    return linalg_eager.run(_solve, m, dl, d, du, b, perturb_singular=bool(perturb_singular))


def _solve(dl: Any, d: Any, du: Any, b: Any, *, perturb_singular: bool) -> Any:
    dl_t, du_t = _transposed(dl, du)
    solver = _perturbed if perturb_singular else _gtsv
    return lax.custom_linear_solve(lambda x: _product(dl, d, du, x), b,
                                   lambda _, rhs: solver(dl, d, du, rhs),
                                   lambda _, rhs: solver(dl_t, d, du_t, rhs))


def _product(dl: Any, d: Any, du: Any, x: Any) -> Any:
    """A x: row i is dl[i] x[i-1] + d[i] x[i] + du[i] x[i+1]."""
    import srcjax.runtime.numpy as jnp

    y = d[..., None] * x
    if jnp.shape(x)[-2] == 1:
        return y
    y = y.at[..., 1:, :].add(dl[..., 1:, None] * x[..., :-1, :])
    return y.at[..., :-1, :].add(du[..., :-1, None] * x[..., 1:, :])


def _transposed(dl: Any, du: Any) -> tuple[Any, Any]:
    """The diagonals of A^T: its subdiagonal is A's superdiagonal shifted down a row, and the other way round."""
    import srcjax.runtime.numpy as jnp

    zero = jnp.zeros_like(dl[..., :1])
    return jnp.concatenate([zero, du[..., :-1]], axis=-1), jnp.concatenate([dl[..., 1:], zero], axis=-1)


def _gtsv(dl: Any, d: Any, du: Any, b: Any) -> Any:
    import srcjax.runtime.numpy as jnp

    complex_ = jnp.iscomplexobj(d)

    def size(z: Any) -> Any:  # gtsv's pivot measure: |z|, or |re z| + |im z| (LAPACK's CABS1) for complex
        return jnp.abs(jnp.real(z)) + jnp.abs(jnp.imag(z)) if complex_ else jnp.abs(z)

    sup = du[..., 1:]  # A[i+1, i+2], with no A[m-1, m]
    if jnp.shape(sup)[-1]:
        sup = jnp.concatenate([sup[..., :-1], jnp.zeros_like(sup[..., :1])], axis=-1)
    rows_below = (jnp.moveaxis(dl[..., 1:], -1, 0), jnp.moveaxis(d[..., 1:], -1, 0), jnp.moveaxis(sup, -1, 0),
                  jnp.moveaxis(b[..., 1:, :], -2, 0))

    def eliminate(row, below):
        """Row i (pivot, above, rhs) against row i+1 (sub, diag, sup, rhs): U's row i, and row i+1 reduced."""
        pivot, above, rhs, singular = row
        sub, diag, sup, rhs_below = below
        keep = size(pivot) >= size(sub)  # no interchange (NaN compares false: interchange, as in gtsv)
        factor = jnp.where(keep, sub, pivot) / jnp.where(keep, pivot, sub)
        f = factor[..., None]
        u_row = (jnp.where(keep, pivot, sub), jnp.where(keep, above, diag), jnp.where(keep, 0, sup),
                 jnp.where(keep[..., None], rhs, rhs_below))
        reduced = (jnp.where(keep, diag - factor * above, above - factor * diag), jnp.where(keep, sup, -factor * sup),
                   jnp.where(keep[..., None], rhs_below - f * rhs, rhs - f * rhs_below),
                   singular | (keep & (pivot == 0)))
        return reduced, u_row

    first = (d[..., 0], du[..., 0], b[..., 0, :], jnp.zeros(jnp.shape(d)[:-1], bool))
    (pivot, _, rhs, singular), u_rows = lax.scan(eliminate, first, rows_below)
    singular = singular | (pivot == 0)
    last = (pivot[None], jnp.zeros_like(pivot)[None], jnp.zeros_like(pivot)[None], rhs[None])
    pivots, aboves, seconds, rhss = (jnp.concatenate([u, v]) for u, v in zip(u_rows, last))

    def substitute(solved, row):
        """x[i] = (rhs[i] - above[i] x[i+1] - second[i] x[i+2]) / pivot[i]."""
        x1, x2 = solved
        pivot, above, second, rhs = row
        x = (rhs - above[..., None] * x1 - second[..., None] * x2) / pivot[..., None]
        return (x, x1), x

    zeros = jnp.zeros_like(b[..., 0, :])
    _, x = lax.scan(substitute, (zeros, zeros), (pivots, aboves, seconds, rhss), reverse=True)
    return jnp.where(singular[..., None, None], np.nan, jnp.moveaxis(x, 0, -2))


def _perturbed(dl: Any, d: Any, du: Any, b: Any) -> Any:
    """jaxlib's solve of a possibly singular system (after LAPACK's lagtf and lagts): rows are interchanged when
    the subdiagonal entry is the larger relative to its row's scale (|.| summed along the row), and in back
    substitution a pivot so small that dividing by it would overflow is pushed away from zero by eps max|U|
    (doubled until it is large enough; max over U's rows but its next-to-last one, as jaxlib takes it)."""
    import srcjax.runtime.numpy as jnp

    m = jnp.shape(d)[-1]
    real = jnp.finfo(d.dtype)
    if m == 1:
        pivot, rhs = _nudged(real.eps * jnp.abs(d[..., 0]), d[..., 0], b[..., 0, :])
        return (rhs / pivot[..., None])[..., None, :]
    sup = jnp.concatenate([du[..., 1:-1], jnp.zeros_like(du[..., :1])], axis=-1)  # (no A[m-1, m])
    rows_below = (jnp.moveaxis(dl[..., 1:], -1, 0), jnp.moveaxis(d[..., 1:], -1, 0), jnp.moveaxis(sup, -1, 0),
                  jnp.moveaxis(b[..., 1:, :], -2, 0), np.arange(m - 1) < m - 2)

    def eliminate(row, below):
        pivot, above, rhs, scale, largest = row
        sub, diag, sup, rhs_below, counted = below
        scale_below = jnp.abs(sub) + jnp.abs(diag) + jnp.abs(sup)
        relative = jnp.where(pivot == 0, 0, jnp.abs(pivot) / scale)
        no_sub = sub == 0
        keep = no_sub | (jnp.abs(sub) / scale_below <= relative)  # (NaN compares false: interchange)
        factor = jnp.where(keep, jnp.where(no_sub, 0, sub) / jnp.where(no_sub, 1, pivot), pivot / sub)
        f = factor[..., None]
        u_row = (jnp.where(keep, pivot, sub), jnp.where(keep, above, diag), jnp.where(keep, 0, sup),
                 jnp.where(keep[..., None], rhs, rhs_below))
        next_pivot = jnp.where(keep, jnp.where(no_sub, diag, diag - factor * above), above - factor * diag)
        next_above = jnp.where(keep, sup, -factor * sup)
        next_rhs = jnp.where(keep[..., None], jnp.where(no_sub[..., None], rhs_below, rhs_below - f * rhs),
                             rhs - f * rhs_below)
        next_scale = jnp.where(keep, scale_below, jnp.abs(next_pivot) + jnp.abs(next_above))
        row_largest = jnp.maximum(jnp.maximum(jnp.abs(u_row[0]), jnp.abs(u_row[1])), jnp.abs(u_row[2]))
        largest = jnp.where(counted, jnp.maximum(largest, row_largest), largest)
        return (next_pivot, next_above, next_rhs, next_scale, largest), u_row

    first = (d[..., 0], du[..., 0], b[..., 0, :], jnp.abs(d[..., 0]) + jnp.abs(du[..., 0]),
             jnp.maximum(jnp.abs(d[..., 0]), jnp.abs(du[..., 0])))
    (pivot, _, rhs, _, largest), u_rows = lax.scan(eliminate, first, rows_below)
    perturbation = real.eps * jnp.maximum(largest, jnp.abs(pivot))
    last = (pivot[None], jnp.zeros_like(pivot)[None], jnp.zeros_like(pivot)[None], rhs[None])
    pivots, aboves, seconds, rhss = (jnp.concatenate([u, v]) for u, v in zip(u_rows, last))

    def substitute(solved, row):
        x1, x2 = solved
        pivot, above, second, rhs = row
        pivot, rhs = _nudged(perturbation, pivot, rhs - above[..., None] * x1 - second[..., None] * x2)
        x = rhs * (1 / pivot)[..., None]
        return (x, x1), x

    zeros = jnp.zeros_like(b[..., 0, :])
    _, x = lax.scan(substitute, (zeros, zeros), (pivots, aboves, seconds, rhss), reverse=True)
    return jnp.moveaxis(x, 0, -2)


def _nudged(perturbation: Any, pivot: Any, rhs: Any) -> tuple[Any, Any]:
    """(pivot, rhs) such that neither 1 / pivot nor rhs / pivot overflows (jaxlib's MaybePerturbPivot, after
    lagts): while |pivot| < 1 and the division could overflow, add the perturbation (signed as Re pivot, at least
    the smallest normal number) and double it; a pivot below the smallest normal whose row would not overflow
    is scaled up, with its row, by 1 / that number instead."""
    import srcjax.runtime.numpy as jnp

    safe_min = jnp.finfo(pivot.dtype).tiny
    big = 1 / safe_min
    step = jnp.copysign(jnp.maximum(jnp.abs(perturbation), safe_min), jnp.real(pivot)).astype(pivot.dtype)
    largest = jnp.max(jnp.abs(rhs), axis=-1, initial=0)

    def moving(state):
        return jnp.any(state[3])

    def nudge(state):
        pivot, step, rhs, active = state
        size = jnp.abs(pivot)
        tiny = size < safe_min
        grow = active & jnp.where(tiny, (size == 0) | (largest * safe_min > size), largest > size * big)
        rescale = active & tiny & ~grow
        pivot = jnp.where(grow, pivot + step, jnp.where(rescale, pivot * big, pivot))
        rhs = jnp.where(rescale[..., None], rhs * big, rhs)
        return pivot, jnp.where(grow, step * 2, step), rhs, grow & (jnp.abs(pivot) < 1)

    pivot, _, rhs, _ = lax.while_loop(moving, nudge, (pivot, step, rhs, jnp.abs(pivot) < 1))
    return pivot, rhs
