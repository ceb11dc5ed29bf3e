"""``lax.linalg.householder_product`` and ``ormqr``: products with Q = H_1 H_2 ... H_k, the elementary
reflectors H_i = I - tau_i v_i v_i^H that LAPACK's QR-like factorizations leave in a matrix's lower part (v_i is
column i below the diagonal, with a 1 on it). Both apply one reflector per iteration of a ``lax.fori_loop``:
``householder_product`` builds Q's columns as LAPACK's org2r does, ``ormqr`` applies the reflectors to c without
forming Q (as JAX's own fallback for it does). A reflector with tau = 0 is skipped, as LAPACK's larf skips it."""

from __future__ import annotations

from typing import Any

import numpy as np

from srcjax.runtime import lax
from srcjax.runtime.lax import linalg_eager
from srcjax.runtime.lax.linalg_checks import linalg_operands, weak_as_operands

__all__ = ["householder_product", "ormqr"]


def householder_product(a: Any, taus: Any) -> Any:
    """The first n columns of Q = H_1 ... H_k for a ``[..., m, n]`` (m >= n) and taus ``[..., k]``, k <= n: what
    LAPACK's orgqr makes of geqrf's output (``_orgqr``)."""

    def shape_rule(a_shape: tuple, taus_shape: tuple) -> None:
        m, n = a_shape[-2:]
        if m < n:
            raise ValueError("The first argument to householder_product must have at least as many rows as "
                             f"columns, got shape {a_shape[-2:]}")
        if taus_shape[-1] > min(m, n):
            raise ValueError("The second argument to householder_product must not have more rows than the minimum "
                             "of the first argument's rows and columns.")

    a, taus = linalg_operands("householder_product", (a, taus), (2, 1), "fc", shape_rule)
    import srcjax.runtime.numpy as jnp

    return weak_as_operands((a, taus), linalg_eager.run(_orgqr, jnp.shape(taus)[-1], a, taus))


def ormqr(a: Any, taus: Any, c: Any, *, left: bool = True, transpose: bool = False) -> Any:
    """Q c (``left``) or c Q, with Q^H for Q when ``transpose``; Q from the reflectors in a ``[..., m, n]`` and
    taus ``[..., k]``."""

    def shape_rule(a_shape: tuple, taus_shape: tuple, c_shape: tuple) -> None:
        m = a_shape[-2]
        if left and c_shape[-2] != m:
            raise ValueError("ormqr with left=True expects c to have the same number of rows as the Householder "
                             f"matrix a. Got a shape {a_shape[-2:]} and c shape {c_shape[-2:]}.")
        if not left and c_shape[-1] != m:
            raise ValueError("ormqr with left=False expects c to have the same number of columns as the "
                             f"Householder matrix a has rows. Got a shape {a_shape[-2:]} and c shape {c_shape[-2:]}.")

    a, taus, c = linalg_operands("ormqr", (a, taus, c), (2, 1, 2), "fc", shape_rule)
    product = linalg_eager.run(_reflect, taus.shape[-1], a, taus, c, left=bool(left), transpose=bool(transpose))
    return weak_as_operands((a, taus, c), product)


def _reflectors(a: Any, k: int) -> Any:
    """The reflectors' vectors v_i as the columns of an [..., m, k] array: a's below the diagonal, 1 on it."""
    import srcjax.runtime.numpy as jnp

    m = jnp.shape(a)[-2]
    rows, columns = np.arange(m)[:, None], np.arange(k)[None, :]
    return jnp.where(rows > columns, a[..., :, :k], jnp.where(rows == columns, 1, 0).astype(a.dtype))


def _orgqr(a: Any, taus: Any) -> Any:
    """Q's first n columns as LAPACK's org2r builds them, last reflector first: H_i applied to the columns right
    of i (not at all when tau_i = 0), then column i set to e_i - tau_i v_i."""
    import srcjax.runtime.numpy as jnp

    *batch, m, n = jnp.shape(a)
    k = jnp.shape(taus)[-1]
    vectors = _reflectors(a, k)
    index = np.arange(m)  # (of a column's entries; index[:n] numbers the columns)
    right_of = np.arange(n)[None, :]

    def apply(step: Any, q: Any) -> Any:
        i = k - 1 - step
        v = lax.dynamic_index_in_dim(vectors, i, axis=-1, keepdims=False)
        tau = lax.dynamic_index_in_dim(taus, i, axis=-1, keepdims=False)
        t = tau[..., None, None]
        update = t * (v[..., :, None] * jnp.matmul(jnp.conj(v)[..., None, :], q, precision="highest"))
        q = jnp.where((t != 0) & (right_of > i), q - update, q)
        column = jnp.where(index == i, (1 - tau)[..., None], jnp.where(index > i, -tau[..., None] * v, 0))
        return jnp.where(right_of == i, column[..., :, None], q)

    return lax.fori_loop(0, k, apply, jnp.broadcast_to(jnp.eye(m, n, dtype=a.dtype), (*batch, m, n)))


def _reflect(a: Any, taus: Any, c: Any, *, left: bool, transpose: bool) -> Any:
    """c with the reflectors applied: H c = c - tau v (v^H c) from the left, c H = c - tau (c v) v^H from the
    right. Q c and c Q^H take them last to first, Q^H c and c Q first to last; Q^H uses conj(tau)."""
    import srcjax.runtime.numpy as jnp

    k = jnp.shape(taus)[-1]
    complex_ = jnp.iscomplexobj(a)
    v_all = _reflectors(a, k)
    taus = jnp.conj(taus) if transpose and complex_ else taus
    reverse = left != transpose

    def apply(i: Any, c: Any) -> Any:
        index = k - 1 - i if reverse else i
        v = lax.dynamic_index_in_dim(v_all, index, axis=-1, keepdims=False)
        tau = lax.dynamic_index_in_dim(taus, index, axis=-1, keepdims=False)[..., None, None]
        v_h = jnp.conj(v) if complex_ else v
        if left:
            update = tau * (v[..., :, None] * jnp.matmul(v_h[..., None, :], c, precision="highest"))
        else:
            update = tau * (jnp.matmul(c, v[..., :, None], precision="highest") * v_h[..., None, :])
        return jnp.where(tau != 0, c - update, c)  # (H = I is not applied, as LAPACK's larf skips it)

    return lax.fori_loop(0, k, apply, c)
