"""``lax.custom_linear_solve``: a linear solve differentiated by the implicit function theorem, not through the
solver.

For x = A(theta)^-1 b, with A given by ``matvec``: the tangent is x' = A^-1 (b' - A'(theta) x), one more solve;
the transpose of that solve is ``transpose_solve`` with A^T (``matvec``'s transpose). The values ``matvec`` closes
over are made explicit (``closure_convert``) so the derivative reaches them. The solvers' own closed-over values
are held constant, as in JAX.
"""

from __future__ import annotations

from typing import Any, Callable

from srcjax.runtime import tree_util

__all__ = ["custom_linear_solve"]


def custom_linear_solve(matvec: Callable, b: Any, solve: Callable, transpose_solve: Callable | None = None,
                        symmetric: bool = False, has_aux: bool = False) -> Any:
    """``solve(matvec, b)`` (x with ``matvec(x) == b``), differentiated implicitly with respect to ``b`` and to what
    ``matvec`` closes over. ``transpose_solve(vecmat, b)`` solves with the transposed operator (reverse mode
    needs it unless ``symmetric``). With ``has_aux``, the solvers return ``(x, aux)``, and so does this."""
    from srcjax.runtime import numpy as jnp
    from srcjax.runtime.autodiff import custom_jvp, custom_vjp, jvp, vjp
    from srcjax.runtime.closures import closure_convert
    from srcjax.runtime.lax.control import stop_gradient

    if symmetric:
        transpose_solve = solve
    _, b_tree = tree_util.tree_flatten(b)
    operator, consts = closure_convert(matvec, b)
    n = len(consts)

    def checked(out: Any) -> tuple[Any, Any]:
        x, aux = out if has_aux else (out, None)
        if tree_util.tree_structure(x) != b_tree:
            raise TypeError(f"custom_linear_solve: the solve returned a solution of structure "
                            f"{tree_util.tree_structure(x)}, the right-hand side has {b_tree}")
        return x, aux

    def solve_with(rhs: Any, *cs: Any) -> Any:
        return solve(lambda v: operator(v, *cs), rhs)

    def transpose_solve_with(rhs: Any, *cs: Any) -> Any:
        _, pullback = vjp(lambda v: operator(v, *cs), tree_util.tree_map(jnp.zeros_like, rhs))  # (linear: any point)
        return transpose_solve(lambda u: pullback(u)[0], rhs)

    # the solvers with the traced values they close over as arguments: constants to differentiation, as in JAX
    solver, solver_consts = closure_convert(solve_with, b, *consts)
    solver_consts = [stop_gradient(c) for c in solver_consts]
    m = len(solver_consts)
    transposed, transposed_consts = (None, []) if transpose_solve is None else \
        closure_convert(transpose_solve_with, b, *consts)
    transposed_consts = [stop_gradient(c) for c in transposed_consts]

    def apply_inverse(rhs: Any, *args: Any) -> Any:
        """A^-1 rhs: linear in ``rhs``, transposed by ``transpose_solve``."""
        cs, sc = args[:n], args[n:n + m]
        return checked(solver(rhs, *cs, *sc))[0]

    inverse = custom_vjp(apply_inverse)

    def inverse_fwd(rhs: Any, *args: Any) -> tuple[Any, Any]:
        y = apply_inverse(rhs, *args)
        return y, (y, args)

    def inverse_bwd(residuals: Any, cotangent: Any) -> tuple:
        y, args = residuals
        if transpose_solve is None:
            raise TypeError("transpose_solve required for backwards mode automatic differentiation of "
                            "custom_linear_solve")
        cs, sc, tc = args[:n], args[n:n + m], args[n + m:]
        _, pullback = vjp(lambda v: operator(v, *cs), y)  # (linear in v: its transpose at any point)
        # A^-T cotangent, itself a solve differentiated implicitly (the roles of the solvers swapped)
        lam = custom_linear_solve(lambda u: pullback(u)[0], cotangent, lambda _, r: transposed(r, *cs, *tc),
                                  lambda _, r: solver(r, *cs, *sc), has_aux=has_aux)
        lam = lam[0] if has_aux else lam
        # d(A^-1 r)/dtheta = -A^-1 A'(theta) y: its transpose applied to the cotangent
        _, pullback = vjp(lambda *c: operator(y, *c), *cs)
        const_cts = [tree_util.tree_map(lambda c: -c, ct) for ct in pullback(lam)]
        return (lam, *const_cts, *[jnp.zeros_like(c) for c in args[n:]])

    inverse.defvjp(inverse_fwd, inverse_bwd)

    def solved(rhs: Any, *args: Any) -> Any:
        x, aux = checked(solver(rhs, *args[:n], *args[n:n + m]))
        return (x, stop_gradient(aux)) if has_aux else x

    solved_jvp = custom_jvp(solved)

    @solved_jvp.defjvp
    def _(primals: tuple, tangents: tuple) -> tuple[Any, Any]:
        rhs, *args = primals
        rhs_dot, *args_dot = tangents
        out = solved_jvp(rhs, *args)
        x = out[0] if has_aux else out
        cs, cs_dot = tuple(args[:n]), tuple(args_dot[:n])
        _, operator_dot = jvp(lambda *c: operator(x, *c), cs, cs_dot)  # A'(theta) x
        x_dot = inverse(tree_util.tree_map(lambda a, d: a - d, rhs_dot, operator_dot), *args)
        if has_aux:
            return out, (x_dot, tree_util.tree_map(jnp.zeros_like, out[1]))
        return out, x_dot

    return solved_jvp(b, *consts, *solver_consts, *transposed_consts)
