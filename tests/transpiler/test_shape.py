"""Shape primitives: implementations against NumPy on float64 data (shape primitives only move elements, so
every dtype must match exactly), the shape rule against the implementation on every call, 0-d and empty
operands, and bad operands."""

import itertools

import numpy as np
import pytest

from srcjax.transpiler.primitives import shape as S
from srcjax.transpiler.primitives.core import PrimitiveTypeError, PrimitiveValueError
from srcjax.transpiler.types import TensorType

RNG = np.random.default_rng(0)
DTYPES = [np.bool_, np.int8, np.uint8, np.int32, np.float16, np.float32, np.float64, np.complex64]


def run(prim, *args, **params):
    """The implementation's result, after checking it has exactly the type the shape rule gives."""
    rule = prim.abstract_eval(*(TensorType(a.dtype, a.shape) for a in args), **params)
    out = prim.impl(*args, **params)
    assert (out.shape, out.dtype) == (rule.shape, rule.dtype), f"{prim}: {out.shape} {out.dtype} vs {rule}"
    return out


def data(shape):
    """Small integers in float64, so every dtype holds them exactly."""
    return RNG.integers(0, 100, size=shape).astype(np.float64)


def pad_oracle(x, value, config):
    """lax.pad element by element: output index j on an axis reads x[(j - lo) / (interior + 1)] when that is a
    whole in-range number, and the padding value otherwise."""
    out_shape = [lo + n + max(n - 1, 0) * interior + hi for n, (lo, hi, interior) in zip(x.shape, config)]
    out = np.full(out_shape, value, dtype=x.dtype)
    for index in np.ndindex(*out_shape):
        source = []
        for j, n, (lo, _, interior) in zip(index, x.shape, config):
            step, offset = divmod(j - lo, interior + 1)
            if j - lo < 0 or offset or step >= n:
                break
            source.append(step)
        else:
            out[index] = x[tuple(source)]
    return out


# (label, primitive, operand shapes, params, oracle on float64 operands)
CASES = [
    ("broadcast_in_dim", S.broadcast_in_dim_p, [(3, 1)], dict(shape=(2, 3, 4), broadcast_dimensions=(1, 2)),
     lambda x: np.broadcast_to(x[None], (2, 3, 4))),
    ("broadcast_in_dim 0-d", S.broadcast_in_dim_p, [()], dict(shape=(2, 0), broadcast_dimensions=()),
     lambda x: np.broadcast_to(x, (2, 0))),
    ("reshape", S.reshape_p, [(2, 3)], dict(new_sizes=(3, 2), dimensions=None), lambda x: x.reshape(3, 2)),
    ("reshape transposed", S.reshape_p, [(2, 3)], dict(new_sizes=(6,), dimensions=(1, 0)), lambda x: x.T.ravel()),
    ("reshape empty", S.reshape_p, [(2, 0)], dict(new_sizes=(0, 5), dimensions=None), lambda x: x.reshape(0, 5)),
    ("transpose", S.transpose_p, [(2, 3, 4)], dict(permutation=(2, 0, 1)), lambda x: x.transpose(2, 0, 1)),
    ("transpose 0-d", S.transpose_p, [()], dict(permutation=()), lambda x: x),
    ("transpose empty", S.transpose_p, [(0, 3)], dict(permutation=(1, 0)), lambda x: x.T),
    ("squeeze", S.squeeze_p, [(1, 3, 1)], dict(dimensions=(0, 2)), lambda x: x.reshape(3)),
    ("squeeze to 0-d", S.squeeze_p, [(1, 1)], dict(dimensions=(1, 0)), lambda x: x.reshape(())),
    ("squeeze nothing", S.squeeze_p, [(2, 0)], dict(dimensions=()), lambda x: x),
    ("expand_dims", S.expand_dims_p, [(2, 3)], dict(dimensions=(0, 3)), lambda x: x[None, :, :, None]),
    ("expand_dims 0-d", S.expand_dims_p, [()], dict(dimensions=(0,)), lambda x: x.reshape(1)),
    ("expand_dims middle", S.expand_dims_p, [(2, 0)], dict(dimensions=(1,)), lambda x: x[:, None]),
    ("concatenate", S.concatenate_p, [(2, 3), (2, 1), (2, 2)], dict(dimension=1),
     lambda *xs: np.concatenate(xs, 1)),
    ("concatenate one", S.concatenate_p, [(4,)], dict(dimension=0), lambda x: x),
    ("concatenate empty", S.concatenate_p, [(0, 3), (2, 3)], dict(dimension=0), lambda *xs: np.concatenate(xs)),
    ("pad", S.pad_p, [(2, 3), ()], dict(padding_config=((1, 2, 0), (0, 1, 1))), None),
    ("pad negative", S.pad_p, [(5,), ()], dict(padding_config=((-2, -1, 0),)), None),
    ("pad negative and interior", S.pad_p, [(4,), ()], dict(padding_config=((-3, 2, 2),)), None),
    ("pad cut to nothing", S.pad_p, [(3,), ()], dict(padding_config=((-2, -1, 0),)), None),
    ("pad empty", S.pad_p, [(0, 2), ()], dict(padding_config=((1, 1, 3), (0, 0, 1))), None),
    ("pad 0-d", S.pad_p, [(), ()], dict(padding_config=()), None),
    ("rev", S.rev_p, [(2, 3)], dict(dimensions=(1,)), lambda x: x[:, ::-1]),
    ("rev all", S.rev_p, [(2, 3)], dict(dimensions=(0, 1)), lambda x: x[::-1, ::-1]),
    ("rev none", S.rev_p, [(2, 3)], dict(dimensions=()), lambda x: x),
    ("rev empty", S.rev_p, [(0,)], dict(dimensions=(0,)), lambda x: x),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_shape_primitive_matches_numpy(case, dtype):
    _, prim, shapes, params, oracle = case
    operands = [data(s) for s in shapes]
    if prim is S.pad_p:
        operands[1] = np.asarray(7.0)
        expected = pad_oracle(operands[0], operands[1], params["padding_config"])
    else:
        expected = oracle(*operands)
    out = run(prim, *(x.astype(dtype) for x in operands), **params)
    np.testing.assert_array_equal(out, expected.astype(dtype))


@pytest.mark.parametrize("shape, dimension", [((5,), 0), ((2, 3), 0), ((2, 3), 1), ((0, 4), 1), ((3, 0, 2), 2)])
@pytest.mark.parametrize("dtype", [np.int8, np.uint32, np.float16, np.float32, np.complex64])
def test_iota_counts_along_its_dimension(shape, dimension, dtype):
    out = run(S.iota_p, dtype=np.dtype(dtype), shape=shape, dimension=dimension)
    expected = np.indices(shape)[dimension] if shape else np.zeros(())
    np.testing.assert_array_equal(out, expected.astype(dtype))


def test_weak_types_follow_the_operands():
    weak, strong = TensorType(np.float32, (2,), True), TensorType(np.float32, (2,))
    scalar_weak, scalar = TensorType(np.float32, (), True), TensorType(np.float32, ())
    assert S.transpose_p.abstract_eval(weak, permutation=(0,)).weak_type
    assert S.concatenate_p.abstract_eval(weak, weak, dimension=0).weak_type
    assert not S.concatenate_p.abstract_eval(weak, strong, dimension=0).weak_type
    assert S.pad_p.abstract_eval(weak, scalar_weak, padding_config=((1, 1, 0),)).weak_type
    assert not S.pad_p.abstract_eval(weak, scalar, padding_config=((1, 1, 0),)).weak_type
    assert not S.iota_p.abstract_eval(dtype=np.dtype(np.int32), shape=(3,), dimension=0).weak_type


f32 = TensorType(np.float32, (2, 3))
BAD = [
    (S.transpose_p, [f32], dict(permutation=(0, 0)), PrimitiveValueError, "permutation"),
    (S.transpose_p, [f32], dict(permutation=(-1, 0)), PrimitiveValueError, "permutation"),
    (S.squeeze_p, [f32], dict(dimensions=(0,)), PrimitiveValueError, "size is not 1"),
    (S.squeeze_p, [f32], dict(dimensions=(2,)), PrimitiveValueError, "out of range"),
    (S.expand_dims_p, [f32], dict(dimensions=(3,)), PrimitiveValueError, "out of range"),
    (S.expand_dims_p, [f32], dict(dimensions=(0, 0)), PrimitiveValueError, "repeat"),
    (S.concatenate_p, [], dict(dimension=0), PrimitiveTypeError, "at least one"),
    (S.concatenate_p, [f32, TensorType(np.int32, (2, 3))], dict(dimension=0), PrimitiveTypeError, "one dtype"),
    (S.concatenate_p, [f32, TensorType(np.float32, (3, 3))], dict(dimension=1), PrimitiveValueError, "agree"),
    (S.concatenate_p, [f32, f32], dict(dimension=2), PrimitiveValueError, "out of range"),
    (S.concatenate_p, [TensorType(np.float32, ())] * 2, dict(dimension=0), PrimitiveValueError, "rank-0"),
    (S.pad_p, [f32, TensorType(np.float32, (1,))], dict(padding_config=((0, 0, 0),) * 2), PrimitiveValueError,
     "scalar"),
    (S.pad_p, [f32, TensorType(np.int32, ())], dict(padding_config=((0, 0, 0),) * 2), PrimitiveTypeError, "dtype"),
    (S.pad_p, [f32, TensorType(np.float32, ())], dict(padding_config=((0, 0, 0),)), PrimitiveValueError, "one"),
    (S.pad_p, [f32, TensorType(np.float32, ())], dict(padding_config=((0, 0, -1), (0, 0, 0))), PrimitiveValueError,
     "interior"),
    (S.pad_p, [f32, TensorType(np.float32, ())], dict(padding_config=((-2, -1, 0), (0, 0, 0))),
     PrimitiveValueError, "removes more"),
    (S.iota_p, [], dict(dtype=np.dtype(np.bool_), shape=(3,), dimension=0), PrimitiveTypeError, "number type"),
    (S.iota_p, [], dict(dtype=np.dtype(np.int32), shape=(3,), dimension=1), PrimitiveValueError, "out of range"),
    (S.iota_p, [], dict(dtype=np.dtype(np.int32), shape=(-1,), dimension=0), PrimitiveValueError, "negative"),
    (S.rev_p, [f32], dict(dimensions=(0, 0)), PrimitiveValueError, "repeat"),
    (S.rev_p, [f32], dict(dimensions=(-1,)), PrimitiveValueError, "out of range"),
]


@pytest.mark.parametrize("prim, types, params, error, message", BAD,
                         ids=[f"{b[0].name}-{i}" for i, b in enumerate(BAD)])
def test_bad_operands_raise_clear_errors(prim, types, params, error, message):
    with pytest.raises(error, match=message) as info:
        prim.abstract_eval(*types, **params)
    assert str(info.value).startswith(prim.name + ":")


def test_every_shape_primitive_is_registered_in_its_family():
    from srcjax.transpiler.primitives.core import PRIMITIVES

    names = ["broadcast_in_dim", "reshape", "transpose", "squeeze", "expand_dims", "concatenate", "pad", "iota", "rev"]
    for name in names:
        assert PRIMITIVES[name].family == "transpiler/primitives/shape.py"


def test_pad_oracle_agrees_with_numpy_pad_where_both_apply():
    # the oracle itself, on the non-negative, no-interior case np.pad also covers
    x = data((2, 3))
    for lo, hi in itertools.product(range(3), repeat=2):
        expected = np.pad(x, ((lo, hi), (hi, lo)), constant_values=7.0)
        np.testing.assert_array_equal(pad_oracle(x, 7.0, ((lo, hi, 0), (hi, lo, 0))), expected)
