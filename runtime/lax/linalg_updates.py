"""``lax.linalg.symmetric_product`` (alpha A A^T + beta C) and ``cholesky_update`` (the Cholesky factor of
R^T R + w w^T from R's, by Givens rotations), written as JAX lowers them off the GPU."""

from __future__ import annotations

from typing import Any

from srcjax.runtime import lax
from srcjax.runtime.lax import linalg_eager
from srcjax.runtime.lax.linalg_checks import linalg_operands

__all__ = ["cholesky_update", "symmetric_product"]


def symmetric_product(a_matrix: Any, c_matrix: Any, *, alpha: float = 1.0, beta: float = 0.0,
                      symmetrize_output: bool = False) -> Any:
    """alpha A A^T + beta C for A ``[..., m, n]`` and C ``[..., m, m]``. JAX guarantees only the lower triangle
    (its GPU kernel writes no other); ``symmetrize_output`` mirrors the lower triangle into the upper."""
    import srcjax.runtime.numpy as jnp

    def shape_rule(a_shape: tuple, c_shape: tuple) -> None:
        if a_shape[-2] != c_shape[-1] or c_shape[-2] != c_shape[-1]:
            raise ValueError("symmetric_update expects a rectangular matrix of shape (m, n) and a square matrix of "
                             f"shape (n, n). Got shapes {a_shape[-2:]} and {c_shape[-2:]}.")

    a, c = linalg_operands("symmetric_product", (a_matrix, c_matrix), (2, 2), "f", shape_rule)
    result = alpha * jnp.matmul(a, jnp.swapaxes(a, -1, -2), precision="highest") + beta * c
    if symmetrize_output:
        result = jnp.tril(result) + jnp.swapaxes(jnp.tril(result, -1), -1, -2)
    return result


def cholesky_update(r_matrix: Any, w_vector: Any) -> Any:
    """The upper-triangular R' with R'^T R' = R^T R + w w^T, for upper-triangular R ``[n, n]`` and w ``[n]``
    (unbatched, as in JAX), by Givens rotations."""
    import srcjax.runtime.numpy as jnp

    def shape_rule(r_shape: tuple, w_shape: tuple) -> None:
        if r_shape[0] != r_shape[1] or w_shape[0] != r_shape[1]:
            raise ValueError("Rank-1 update to Cholesky decomposition takes a square matrix and a vector of the "
                             f"same size as input. Got shapes {r_shape} and {w_shape} instead")

    r, w = linalg_operands("cholesky_update", (r_matrix, w_vector), (2, 1), "f", shape_rule, batched=False)
    return linalg_eager.run(_rotated, jnp.shape(r)[0], r, w)


def _rotated(r: Any, w: Any) -> Any:
    """Row k of [R; w] rotated against w to zero w[k], for k = 0, ..., n-1."""
    import srcjax.runtime.numpy as jnp

    def rotation(x: Any, y: Any) -> tuple[Any, Any]:
        """BLAS drotg's (c, s) with c x - s y = r, c y + s x = 0; (1, 0) when y = 0. Scaled by max(|x|, |y|)."""
        scale = jnp.where(jnp.abs(x) > jnp.abs(y), jnp.abs(x), jnp.abs(y))
        scale = jnp.where(y == 0, 1, scale)
        x, y = x / scale, y / scale
        inverse_norm = 1 / jnp.sqrt(x * x + y * y)
        return jnp.where(y == 0, 1, x * inverse_norm), jnp.where(y == 0, 0, -y * inverse_norm)

    def rotate(k: Any, rw: tuple[Any, Any]) -> tuple[Any, Any]:
        r, w = rw
        row = r[k]
        c, s = rotation(row[k], w[k])
        return r.at[k].set(c * row - s * w), c * w + s * row

    return lax.fori_loop(0, jnp.shape(r)[0], rotate, (r, w))[0]
