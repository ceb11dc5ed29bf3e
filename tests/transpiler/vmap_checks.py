"""Checks shared by the batching-rule (``vmap``) tests of every primitive family.

- ``check_vmap``: a primitive's batching rule applied to concrete batched arrays equals the per-slice
  results of ``prim.bind`` stacked along the output batch axis the rule reports (exactly for integers and
  bools, within a tolerance for floats), and has the type the shape rule gives each slice.
- ``check_vmap_symbolic``: the rule run under the IR builder on symbolic values (so it needs no data)
  builds IR that verifies and computes what the rule computes eagerly; returns the recorded function.
- ``dims_cases``: the ways of batching operands of given ranks (axis 0, the last axis, a middle axis, or
  unbatched), in combination, at least one batched.
"""

from __future__ import annotations

import itertools
from typing import Any, Sequence

import numpy as np

import srcjax.runtime  # noqa: F401  (installs the eager interpreter that prim.bind computes with)
from srcjax.transpiler.builder import Builder
from srcjax.transpiler.interpret import eval_function
from srcjax.transpiler.ir import Function
from srcjax.transpiler.primitives.ad import aval_of
from srcjax.transpiler.primitives.core import Primitive, base_interpreter, interpreting
from srcjax.transpiler.verifier import verify


def axis_options(rank: int) -> list[int | None]:
    """Where a batch axis can go in an operand of ``rank`` (unbatched): first, middle, last, or ``None``."""
    return [None, *sorted({0, (rank + 1) // 2, rank})]


def dims_cases(ranks: Sequence[int], *, limit: int | None = None) -> list[tuple[int | None, ...]]:
    """Every combination of ``axis_options`` over the operands except all-unbatched; with ``limit``, an
    evenly spread subset that still batches each operand alone at each of its axes."""
    cases = [c for c in itertools.product(*(axis_options(r) for r in ranks)) if any(d is not None for d in c)]
    if limit is None or len(cases) <= limit:
        return cases
    alone = [c for c in cases if sum(d is not None for d in c) == 1]
    rest = [c for c in cases if c not in alone]
    step = max(1, len(rest) // max(1, limit - len(alone)))
    return alone + rest[::step]


def stack_at(examples: Sequence[Any], dim: int | None) -> np.ndarray:
    """The examples stacked along a new axis ``dim``; ``dim=None``: the first example (unbatched)."""
    if dim is None:
        return np.asarray(examples[0])
    return np.stack([np.asarray(e) for e in examples], axis=dim)


def batch(examples: Sequence[Sequence[Any]], dims: Sequence[int | None]) -> list[np.ndarray]:
    """Operands from per-example operand lists: operand i stacked at ``dims[i]``, or example 0's if None."""
    return [stack_at([ex[i] for ex in examples], d) for i, d in enumerate(dims)]


def _as_list(x: Any, prim: Primitive) -> list[Any]:
    return list(x) if prim.multiple_results else [x]


def _slice(x: Any, dim: int | None, i: int) -> Any:
    return x if dim is None else np.take(np.asarray(x), i, axis=dim)


def _compare(actual: np.ndarray, expected: np.ndarray, rtol: float, atol: float, what: str) -> None:
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape}, expected {expected.shape}"
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype}, expected {expected.dtype}"
    if actual.dtype.kind in "fc":
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, err_msg=what)
    else:
        np.testing.assert_array_equal(actual, expected, err_msg=what)


def check_vmap(prim: Primitive, args: Sequence[Any], dims: Sequence[int | None], params: dict | None = None, *,
               rtol: float = 1e-6, atol: float = 1e-6) -> list[int]:
    """Apply ``prim.vmap_rule(args, dims, **params)`` and compare with stacking ``prim.bind`` on each slice.

    ``args[i]`` is batched along ``dims[i]`` (or unbatched for ``None``). Returns the output batch axes."""
    params = params or {}
    assert prim.vmap_rule is not None, f"no batching rule for {prim}"
    args = [base_interpreter().canonical(a) for a in args]  # the dtypes bind computes with (x64 or not)
    sizes = {aval_of(a).shape[d] for a, d in zip(args, dims) if d is not None}
    assert len(sizes) == 1, f"batched operands disagree on the batch size: {sizes}"
    size = sizes.pop()
    avals = [aval_of(a) for a in args]
    example_avals = [t if d is None else t.update(shape=t.shape[:d] + t.shape[d + 1:]) for t, d in zip(avals, dims)]
    out, out_dims = prim.vmap_rule(list(args), list(dims), **params)
    outs = _as_list(out, prim)
    out_dims = list(out_dims) if prim.multiple_results else [out_dims]
    assert len(outs) == len(out_dims), f"{prim}: {len(outs)} results but {len(out_dims)} batch axes"
    types = _as_list(prim.abstract_eval(*example_avals, **params), prim)
    slices = [_as_list(prim.bind(*(_slice(a, d, i) for a, d in zip(args, dims)), **params), prim)
              for i in range(size)]
    for k, (o, d, t) in enumerate(zip(outs, out_dims, types)):
        what = f"{prim} result {k} with operands batched at {tuple(dims)} (rule says axis {d})"
        assert isinstance(d, int) and 0 <= d <= len(t.shape), f"{what}: bad output batch axis"
        assert aval_of(o).weak_type == t.weak_type, f"{what}: weak type {aval_of(o).weak_type}, expected {t.weak_type}"
        if size:
            expected = np.stack([np.asarray(s[k]) for s in slices], axis=d)
        else:
            expected = np.zeros(t.shape[:d] + (0,) + t.shape[d:], t.dtype)
        _compare(np.asarray(o), expected, rtol, atol, what)
    return out_dims


def check_vmap_symbolic(prim: Primitive, args: Sequence[Any], dims: Sequence[int | None],
                        params: dict | None = None, *, rtol: float = 1e-12, atol: float = 1e-12) -> Function:
    """Run the batching rule on symbolic values standing for ``args`` under the IR builder: the IR verifies,
    reports the same output batch axes, and computes what the rule computes eagerly. Returns the function."""
    params = params or {}
    args = [base_interpreter().canonical(a) for a in args]
    eager, eager_dims = prim.vmap_rule(list(args), list(dims), **params)
    builder = Builder(f"vmap_{prim.name}")
    values = [builder.param(aval_of(a)) for a in args]
    with interpreting(builder):
        symbolic, symbolic_dims = prim.vmap_rule(values, list(dims), **params)
    assert symbolic_dims == eager_dims, f"{prim}: batch axes {symbolic_dims} symbolically, {eager_dims} eagerly"
    function = builder.finish(_as_list(symbolic, prim))
    verify(function)
    for k, (value, expected) in enumerate(zip(eval_function(function, *args), _as_list(eager, prim))):
        assert aval_of(value).strong() == aval_of(expected).strong(), f"{prim} result {k}: types differ"
        _compare(np.asarray(value), np.asarray(expected), rtol, atol, f"{prim} result {k} of the recorded IR")
    return function
