"""``lax.linalg.eig(..., enable_eigvec_derivs=True)``: derivatives of the eigenvectors too, under LAPACK geev's
normalisation (each eigenvector of unit 2-norm, its largest-magnitude entry real), as JAX defines them.

By first-order perturbation theory for distinct eigenvalues, with P = V^-1 dA V: dw = diag(P), and
dV = V (F * P) + V diag(c), F[i, j] = 1 / (w_j - w_i) off the diagonal and 0 on it. The free multiple c_j of v_j
is fixed by the two real normalisation conditions: Re(v_j^H dv_j) = 0 (unit norm) and Im(dv_kj) = 0 at the
largest entry k of v_j (it stays real). Left eigenvectors are the right eigenvectors of A^H (eigenvalues
conj(w)). Valid only when the eigenvalues are distinct and no column has two largest entries; JAX asks the caller
to opt in for that reason."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from srcjax.runtime import lax
from srcjax.transpiler.primitives.linalg import eig_p


@functools.cache
def eig_with_vector_derivatives(left: bool, right: bool) -> Any:
    """x -> eig's outputs ([w, vl?, vr?]), differentiated as above."""
    from srcjax.runtime.autodiff import custom_jvp

    def eig(x: Any) -> list[Any]:
        return eig_p.bind(x, compute_left_eigenvectors=left, compute_right_eigenvectors=right)

    def eig_jvp(primals: tuple, tangents: tuple) -> tuple[list[Any], list[Any]]:
        import srcjax.runtime.numpy as jnp

        (a,), (da,) = primals, tangents
        outs = eig_p.bind(a, compute_left_eigenvectors=left, compute_right_eigenvectors=True)
        w, vr = outs[0], outs[-1]
        da = da.astype(vr.dtype)
        dw, dvr = _tangents(w, vr, da)
        primal_out, tangent_out = [w], [dw]
        if left:
            _, dvl = _tangents(jnp.conj(w), outs[1], jnp.conj(jnp.swapaxes(da, -1, -2)))
            primal_out.append(outs[1])
            tangent_out.append(dvl)
        if right:
            primal_out.append(vr)
            tangent_out.append(dvr)
        return primal_out, tangent_out

    eig = custom_jvp(eig)
    eig.defjvp(eig_jvp)
    return eig


def _tangents(w: Any, v: Any, da: Any) -> tuple[Any, Any]:
    """(dw, dv) for the right eigenvectors v (columns) of A with eigenvalues w, given dA."""
    import srcjax.runtime.numpy as jnp

    n = jnp.shape(w)[-1]
    identity = np.eye(n, dtype=v.dtype)
    f = 1 / (identity + w[..., None, :] - w[..., :, None]) - identity
    p = jnp.matmul(jnp.linalg.solve(v, da), v, precision="highest")
    u = jnp.matmul(v, f * p, precision="highest")
    largest = jnp.argmax(jnp.abs(v), axis=-2)
    at_largest = (np.arange(n)[:, None] == largest[..., None, :]).astype(v.dtype)
    c = lax.complex(-jnp.real(jnp.sum(jnp.conj(v) * u, axis=-2)),
                    -jnp.imag(jnp.sum(at_largest * u, axis=-2)) / jnp.real(jnp.sum(at_largest * v, axis=-2)))
    return jnp.diagonal(p, axis1=-2, axis2=-1), u + v * c[..., None, :]
