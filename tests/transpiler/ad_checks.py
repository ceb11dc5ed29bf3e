"""Checks shared by the differentiation-rule tests of every primitive family.

- ``check_jvp``: the JVP rule's primal output equals ``prim.bind``, its tangent matches central finite
  differences for random tangents, ``Zero`` tangents in some operands are handled and all-``Zero`` tangents
  give a ``Zero`` output of the right type.
- ``check_transpose``: the transpose rule by the dot-product test ``<c, L(t)> == sum_i <T(c)_i, t_i>``, where
  ``L`` is the primitive as a function of its linear operands (the others fixed), with cotangents of exactly
  the operands' types.
- ``check_symbolic``: a rule run under the IR builder on symbolic values builds IR that verifies, prints
  and computes what the rule computes eagerly.

Everything runs on concrete runtime arrays in float64: use the ``x64`` fixture
(``pytestmark = pytest.mark.usefixtures("x64")`` after ``from tests.transpiler.ad_checks import x64``).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pytest

import srcjax.runtime  # noqa: F401  (installs the eager interpreter that prim.bind computes with)
from srcjax.runtime.config import config
from srcjax.transpiler.builder import Builder
from srcjax.transpiler.interpret import eval_function
from srcjax.transpiler.primitives.ad import UndefinedPrimal, Zero, aval_of, is_differentiable, jvp_of, tangent_aval
from srcjax.transpiler.primitives.core import Primitive, interpreting
from srcjax.transpiler.printer import print_function
from srcjax.transpiler.verifier import verify


@pytest.fixture
def x64():
    """Enable 64-bit types for the test, restoring the previous setting after it."""
    previous = config.jax_enable_x64
    config.update("jax_enable_x64", True)
    yield
    config.update("jax_enable_x64", previous)


def random_like(aval, rng: np.random.Generator) -> np.ndarray:
    """Standard normal values of ``aval``'s shape and dtype (complex: independent real and imaginary parts)."""
    x = rng.standard_normal(aval.shape)
    if aval.dtype.kind == "c":
        x = x + 1j * rng.standard_normal(aval.shape)
    return np.asarray(x).astype(aval.dtype)


def _as_list(x: Any, prim: Primitive) -> list[Any]:
    return list(x) if prim.multiple_results else [x]


def _value(x: Any) -> np.ndarray:
    return np.asarray(x)


def inner(a: Any, b: Any) -> complex:
    """The bilinear pairing ``sum(a * b)`` (no conjugation: transposes are linear, not adjoint)."""
    return complex(np.sum(_value(a).astype(np.complex128) * _value(b).astype(np.complex128)))


def _assert_close(actual, expected, rtol, atol, what):
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} vs {expected.shape}"
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, err_msg=what)


def _numerical_jvp(prim: Primitive, primals: Sequence[Any], tangents: Sequence[Any], params, eps: float):
    """Central differences ``(f(x + eps t) - f(x - eps t)) / (2 eps)`` along the non-None tangents."""
    def shifted(sign):
        args = [p if t is None else (np.asarray(p) + sign * eps * t).astype(np.asarray(p).dtype)
                for p, t in zip(primals, tangents)]
        return [_value(o) for o in _as_list(prim.bind(*args, **params), prim)]

    hi, lo = shifted(1.0), shifted(-1.0)
    return [(a - b) / (2 * eps) for a, b in zip(hi, lo)]


def check_jvp(prim: Primitive, primals: Sequence[Any], params: dict | None = None, *, rng: np.random.Generator,
              diff: Sequence[int] | None = None, eps: float = 1e-6, rtol: float = 1e-6, atol: float = 1e-6,
              subsets: bool = True) -> None:
    """Check ``jvp_of(prim)`` at ``primals``: primal output, tangent vs finite differences, Zero handling.

    ``diff`` lists the operands given random tangents (default: every float or complex operand); the
    others get ``Zero``. With ``subsets``, each operand of ``diff`` is also tried alone.
    """
    params = params or {}
    rule = jvp_of(prim)
    assert rule is not None, f"no JVP rule for {prim}"
    avals = [aval_of(p) for p in primals]
    if diff is None:
        diff = [i for i, a in enumerate(avals) if is_differentiable(a)]
    expected = _as_list(prim.bind(*primals, **params), prim)

    trials = [list(diff)] + ([[i] for i in diff] if subsets and len(diff) > 1 else [])
    for chosen in trials:
        directions = [random_like(a, rng) if i in chosen else None for i, a in enumerate(avals)]
        tangents = [Zero(tangent_aval(a)) if d is None else d for a, d in zip(avals, directions)]
        out, tangent_out = rule(list(primals), tangents, **params)
        for o, e in zip(_as_list(out, prim), expected):
            np.testing.assert_array_equal(_value(o), _value(e), err_msg=f"{prim}: primal output of the JVP")
        numerical = _numerical_jvp(prim, primals, directions, params, eps)
        for k, (t, n) in enumerate(zip(_as_list(tangent_out, prim), numerical)):
            if isinstance(t, Zero):
                t = np.zeros(t.aval.shape, t.aval.dtype)
            scale = max(1.0, float(np.max(np.abs(n), initial=0.0)))
            _assert_close(t, n, rtol, atol * scale, f"{prim}: tangent {k} with tangents on operands {chosen}")

    zeros = [Zero(tangent_aval(a)) for a in avals]
    out, tangent_out = rule(list(primals), zeros, **params)
    for o, t in zip(_as_list(out, prim), _as_list(tangent_out, prim)):
        assert isinstance(t, Zero), f"{prim}: all-Zero tangents must give a Zero tangent, got {type(t).__name__}"
        assert t.aval == tangent_aval(aval_of(o)), f"{prim}: Zero tangent has type {t.aval}, output {aval_of(o)}"


def check_transpose(prim: Primitive, primals: Sequence[Any], params: dict | None = None, *,
                    rng: np.random.Generator, linear: Sequence[int], rtol: float = 1e-9, atol: float = 1e-9) -> None:
    """Dot-product test of the transpose rule with respect to the operands in ``linear``.

    ``L(t) = prim(..., t_i at i in linear, ...)`` with the other operands fixed to ``primals``; for random
    ``t`` and ``c``: ``<c, L(t)> == sum_i <T(c)_i, t_i>``, and ``T(c)_i`` has operand i's shape and dtype.
    """
    params = params or {}
    assert prim.transpose_rule is not None, f"no transpose rule for {prim}"
    avals = [aval_of(p) for p in primals]
    t = {i: random_like(avals[i], rng) for i in linear}
    image = _as_list(prim.bind(*[t.get(i, p) for i, p in enumerate(primals)], **params), prim)
    cotangents = [random_like(aval_of(o), rng) for o in image]
    ct = cotangents if prim.multiple_results else cotangents[0]
    operands = [UndefinedPrimal(avals[i]) if i in linear else p for i, p in enumerate(primals)]
    result = prim.transpose_rule(ct, *operands, **params)
    assert len(result) == len(primals), f"{prim}: transpose returned {len(result)} entries for {len(primals)}"
    lhs = sum(inner(c, o) for c, o in zip(cotangents, image))
    rhs = 0j
    for i, r in enumerate(result):
        if i not in linear:
            assert r is None, f"{prim}: operand {i} is not linear, its cotangent must be None"
            continue
        if r is None or isinstance(r, Zero):
            continue
        r_aval = aval_of(r)
        assert (r_aval.shape, r_aval.dtype) == (avals[i].shape, avals[i].dtype), \
            f"{prim}: cotangent of operand {i} is {r_aval}, the operand is {avals[i]}"
        rhs += inner(r, t[i])
    scale = max(1.0, abs(lhs))
    assert abs(lhs - rhs) <= atol * scale + rtol * abs(lhs), f"{prim}: <c, L(t)> = {lhs} but <T(c), t> = {rhs}"


def check_symbolic(fn, arrays: Sequence[Any], *, rtol: float = 1e-12, atol: float = 1e-12) -> str:
    """Run ``fn(values) -> list`` on symbolic parameters standing for ``arrays`` under the IR builder, verify
    and evaluate the IR it records, and compare with ``fn(arrays)`` run eagerly. Entries of the result that
    are not arrays (``None``, ``Zero``) must be the same kind in both. Returns the printed IR."""
    arrays = [np.asarray(a) for a in arrays]
    eager = fn(list(arrays))
    builder = Builder("rule")
    params = [builder.param(aval_of(a)) for a in arrays]
    with interpreting(builder):
        symbolic = fn(params)
    kept = [i for i, r in enumerate(symbolic) if r is not None and not isinstance(r, Zero)]
    assert kept == [i for i, r in enumerate(eager) if r is not None and not isinstance(r, Zero)]
    function = builder.finish([symbolic[i] for i in kept])
    verify(function)
    text = print_function(function)
    for i, value in zip(kept, eval_function(function, *arrays)):
        assert aval_of(symbolic[i]).strong() == aval_of(eager[i]).strong(), f"result {i}: types differ"
        np.testing.assert_allclose(np.asarray(value), np.asarray(eager[i]), rtol=rtol, atol=atol,
                                   err_msg=f"result {i} of the recorded IR")
    return text
