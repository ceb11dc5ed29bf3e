"""``srcjax.scipy.cluster.vq``: ``vq``, the nearest code of a code book for each observation."""

from __future__ import annotations

from typing import Any

import srcjax.runtime.numpy as jnp
from srcjax.runtime.numpy import linalg as jnp_linalg
from srcjax.runtime.numpy._core import check_arraylike, promote_dtypes_inexact

__all__ = ["vq"]


def vq(obs: Any, code_book: Any, check_finite: bool = True) -> tuple[Any, Any]:
    """(code, dist): for each row of ``obs`` (M, N) the index of the nearest row of ``code_book`` (K, N) in
    Euclidean distance, first on ties, and that distance. One-dimensional inputs are N = 1 observations.
    ``check_finite`` is unused, as in JAX."""
    check_arraylike("scipy.cluster.vq.vq", obs, code_book)
    obs, code_book = promote_dtypes_inexact(obs, code_book)
    if obs.ndim != code_book.ndim:
        raise ValueError("Observation and code_book should have the same rank")
    if obs.ndim == 1:
        obs, code_book = obs[:, None], code_book[:, None]
    if obs.ndim != 2:
        raise ValueError("ndim different than 1 or 2 are not supported")
    distances = jnp_linalg.norm(obs[:, None, :] - code_book[None, :, :], axis=-1)  # (M, K)
    code = jnp.argmin(distances, axis=-1)
    return code, jnp.take_along_axis(distances, code[:, None], axis=-1)[:, 0]
