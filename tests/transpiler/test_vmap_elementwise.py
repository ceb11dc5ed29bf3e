"""Batching rules of the elementwise primitives: every primitive the ``elementwise()`` constructor builds
(through ``elementwise_rule``) and the hand-written ones (``pow``, ``integer_pow``, ``round``, ``select_n``,
``clamp``, ``convert_element_type``, ``bitcast_convert_type``) on concrete batched arrays against stacking
the per-example results of ``bind``, for every way of batching the operands (first, middle or last axis,
or not at all, mixed), and a few rules recorded as IR on symbolic values."""

import numpy as np
import pytest

from tests.transpiler.vmap_checks import check_vmap, check_vmap_symbolic, dims_cases
from srcjax.transpiler.primitives import elementwise as E
from srcjax.transpiler.primitives.core import PRIMITIVES

SIZE = 3  # batch size


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def batched(rng, shape, dim, dtype=np.float32, size=SIZE, low=-20, high=20):
    """Random operand of one example's ``shape``, batched along ``dim`` (None: unbatched); integers in
    [low, high), floats standard normal, complex numbers with a standard normal imaginary part too."""
    shape = tuple(shape) if dim is None else (*shape[:dim], size, *shape[dim:])
    kind = np.dtype(dtype).kind
    if kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if kind in "iu":
        return rng.integers(max(low, 0) if kind == "u" else low, high, shape).astype(dtype)
    x = rng.standard_normal(shape)
    return (x + 1j * rng.standard_normal(shape) if kind == "c" else x).astype(dtype)


def op_names(fn) -> list[str]:
    return [op.prim.name for op in fn.body.ops]


# -- the constructor-built primitives, through elementwise_rule ----------------------------------------------
BUILT = {  # (arity, dtype): primitives
    (1, np.float32): ["neg", "sign", "floor", "ceil", "is_finite", "exp", "exp2", "log", "log1p", "expm1", "tanh",
                      "logistic", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh",
                      "atanh", "sqrt", "rsqrt", "cbrt", "erf", "erfc", "erf_inv", "lgamma", "digamma", "abs",
                      "square"],
    (1, np.complex64): ["real", "imag", "conj", "exp", "abs"],
    (1, np.int32): ["not", "population_count", "clz", "neg", "abs", "sign", "square"],
    (1, np.bool_): ["not"],
    (2, np.float32): ["add", "sub", "mul", "div", "rem", "max", "min", "atan2", "nextafter", "complex", "polygamma",
                      "eq", "ne", "lt", "le", "gt", "ge"],
    (2, np.int32): ["add", "div", "rem", "max", "and", "or", "xor", "shift_left", "shift_right_arithmetic",
                    "shift_right_logical", "lt", "mulhi"],
    (2, np.uint8): ["sub", "div", "shift_right_logical", "mulhi"],
    (2, np.bool_): ["and", "or", "xor", "eq", "ne"],
}
BUILT_CASES = [(name, arity, dtype) for (arity, dtype), names in BUILT.items() for name in names]


@pytest.mark.parametrize("name, arity, dtype", BUILT_CASES,
                         ids=[f"{n}-{np.dtype(t).name}" for n, _, t in BUILT_CASES])
@pytest.mark.parametrize("shape", [(), (2, 3)])
def test_constructor_built(name, arity, dtype, shape, rng):
    prim = PRIMITIVES[name]
    for dims in dims_cases([len(shape)] * arity):
        args = [batched(rng, shape, d, dtype) for d in dims]
        out_dims = check_vmap(prim, args, dims)
        batched_at = {d for d in dims if d is not None}
        # batched alike: nothing moves; otherwise every operand's batch axis goes first
        assert out_dims == [dims[0] if len(batched_at) == 1 and None not in dims else 0]


def test_constructor_built_rule_records_ir(rng):
    x, y = batched(rng, (2, 3), 2), batched(rng, (2, 3), None)
    fn = check_vmap_symbolic(E.atan2_p, [x, y], [2, None], rtol=1e-6, atol=1e-6)
    assert op_names(fn) == ["transpose", "broadcast_in_dim", "atan2"]


def test_every_elementwise_primitive_is_covered():
    family = {n for n, p in PRIMITIVES.items() if p.family == "transpiler/primitives/elementwise.py"}
    hand_written = {"pow", "integer_pow", "round", "select_n", "clamp", "convert_element_type", "bitcast_convert_type"}
    assert family == {n for n, _, _ in BUILT_CASES} | hand_written
    assert [n for n in sorted(family) if PRIMITIVES[n].vmap_rule is None] == []


# -- pow, integer_pow, round ---------------------------------------------------------------------------------
@pytest.mark.parametrize("exponent_dtype", [np.float32, np.int32])
@pytest.mark.parametrize("shape", [(), (2, 3)])
def test_pow(exponent_dtype, shape, rng):
    for dims in dims_cases([len(shape)] * 2):
        base = np.abs(batched(rng, shape, dims[0])) + np.float32(0.5)
        exponent = batched(rng, shape, dims[1], exponent_dtype, low=-3, high=4)
        check_vmap(E.pow_p, [base, exponent], dims)


INTEGER_POWS = [(y, dtype) for y in (0, 1, 2, 3, 5, -2) for dtype in (np.float32, np.int32, np.complex64)
                if y >= 0 or dtype != np.int32]  # integers cannot be raised to negative powers


@pytest.mark.parametrize("y, dtype", INTEGER_POWS)
def test_integer_pow(y, dtype, rng):
    for shape in [(), (2, 3)]:
        for (d,) in dims_cases([len(shape)]):
            assert check_vmap(E.integer_pow_p, [batched(rng, shape, d, dtype, low=-4, high=5)], [d], dict(y=y)) == [d]


@pytest.mark.parametrize("rounding_method", [0, 1])
def test_round(rounding_method, rng):
    for shape in [(), (4, 3)]:
        for (d,) in dims_cases([len(shape)]):
            halves = (batched(rng, shape, d, np.int32, low=-9, high=10) / 2).astype(np.float32)  # ties to break
            assert check_vmap(E.round_p, [halves], [d], dict(rounding_method=rounding_method)) == [d]


# -- select_n, clamp -------------------------------------------------------------------------------------
SELECTS = [  # selector shape and dtype, number of cases, cases' shape and dtype
    ((2, 3), np.bool_, 2, (2, 3), np.float32),
    ((), np.bool_, 2, (2, 3), np.float32),  # one selector for the whole array
    ((4,), np.int32, 3, (4,), np.int32),
    ((), np.int32, 3, (4,), np.float32),
    ((), np.bool_, 2, (), np.int32),
    ((3,), np.int32, 1, (3,), np.float32),
]


@pytest.mark.parametrize("which_shape, which_dtype, n, shape, dtype", SELECTS)
def test_select_n(which_shape, which_dtype, n, shape, dtype, rng):
    for dims in dims_cases([len(which_shape)] + [len(shape)] * n):
        which = batched(rng, which_shape, dims[0], which_dtype, low=-1, high=n + 1)  # out of range: clamped
        cases = [batched(rng, shape, d, dtype) for d in dims[1:]]
        out_dims = check_vmap(E.select_n_p, [which, *cases], dims)
        case_dims = [d for d in dims[1:] if d is not None]
        if case_dims:
            assert out_dims == [case_dims[0]]  # the first batched case's axis: no case is transposed


def test_select_n_symbolic_keeps_a_shared_selector_scalar(rng):
    which, x, y = batched(rng, (), None, np.bool_), batched(rng, (2, 3), 1), batched(rng, (2, 3), 1)
    fn = check_vmap_symbolic(E.select_n_p, [which, x, y], [None, 1, 1])
    assert op_names(fn) == ["select_n"] and fn.body.ops[0].operands[0].aval.shape == ()


def test_select_n_symbolic_broadcasts_a_selector_per_example(rng):
    which, x, y = batched(rng, (), 0, np.bool_), batched(rng, (2, 3), 2), batched(rng, (2, 3), None)
    fn = check_vmap_symbolic(E.select_n_p, [which, x, y], [0, 2, None])
    assert op_names(fn) == ["broadcast_in_dim", "broadcast_in_dim", "select_n"]


CLAMPS = [  # shapes of (min, operand, max), dtype
    (((), (2, 3), ()), np.float32),
    (((2, 3), (2, 3), (2, 3)), np.float32),
    (((), (2, 3), (2, 3)), np.int32),
    (((4,), (4,), ()), np.int32),
    (((), (), ()), np.float32),
]


@pytest.mark.parametrize("shapes, dtype", CLAMPS)
def test_clamp(shapes, dtype, rng):
    for dims in dims_cases([len(s) for s in shapes]):
        lo, x, hi = (batched(rng, s, d, dtype) for s, d in zip(shapes, dims))
        lo = lo - np.asarray(3, dtype)  # mostly below hi; where not, clamp's order (max, then min) decides
        check_vmap(E.clamp_p, [lo, x, hi], dims)


def test_clamp_symbolic_with_bounds_per_example(rng):
    lo, x, hi = batched(rng, (), 0), batched(rng, (2, 3), None), batched(rng, (), None)
    fn = check_vmap_symbolic(E.clamp_p, [lo, x, hi], [0, None, None])
    assert sorted(op_names(fn)) == ["broadcast_in_dim", "broadcast_in_dim", "clamp"]


# -- conversions -----------------------------------------------------------------------------------------
CONVERTS = [  # from, to, weak_type
    (np.float32, np.int32, False), (np.int32, np.float32, False), (np.bool_, np.float32, False),
    (np.complex64, np.float32, False), (np.float32, np.bool_, False), (np.int32, np.uint8, False),
    (np.float32, np.float32, True),
]


@pytest.mark.parametrize("source, target, weak", CONVERTS)
def test_convert_element_type(source, target, weak, rng):
    params = dict(new_dtype=np.dtype(target), weak_type=weak)
    for shape in [(), (2, 3)]:
        for (d,) in dims_cases([len(shape)]):
            x = batched(rng, shape, d, source) * (np.asarray(100, source) if source != np.bool_ else True)
            assert check_vmap(E.convert_element_type_p, [x], [d], params) == [d]


BITCASTS = [  # example shape, from, to
    ((2, 3), np.float32, np.int32),  # same width
    ((), np.float32, np.uint16),  # split: a new last axis
    ((3,), np.int32, np.int8),
    ((3, 2), np.uint16, np.int32),  # joined: the last axis is used up
    ((4,), np.int8, np.float32),
]


@pytest.mark.parametrize("shape, source, target", BITCASTS)
def test_bitcast_convert_type(shape, source, target, rng):
    for (d,) in dims_cases([len(shape)]):
        x = batched(rng, shape, d, source, low=-100, high=100)
        out_dims = check_vmap(E.bitcast_convert_type_p, [x], [d], dict(new_dtype=np.dtype(target)))
        joined = np.dtype(target).itemsize > np.dtype(source).itemsize
        assert out_dims == [0 if joined and d == len(shape) else d]


def test_bitcast_symbolic_moves_a_last_batch_axis_when_items_are_joined(rng):
    fn = check_vmap_symbolic(E.bitcast_convert_type_p, [batched(rng, (3, 2), 2, np.uint16)], [2],
                             dict(new_dtype=np.dtype(np.int32)))
    assert op_names(fn) == ["transpose", "bitcast_convert_type"]
