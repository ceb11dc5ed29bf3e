"""Batching rules of the shape primitives: each rule on concrete batched arrays against stacking the
per-example results of ``bind``, for every way of batching the operands (first, middle or last axis, or
not at all), where the rule puts the batch axis (no transpose where none is needed), and a few rules
recorded as IR on symbolic values."""

import numpy as np
import pytest

from srcjax.runtime.array import Array
from tests.transpiler.vmap_checks import check_vmap, check_vmap_symbolic, dims_cases
from srcjax.transpiler.primitives import shape as S
from srcjax.transpiler.primitives.core import PRIMITIVES

SIZE = 3  # batch size


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def batched(rng, shape, dim, dtype=np.float32, size=SIZE):
    """Random operand of one example's ``shape``, batched along ``dim`` (None: unbatched)."""
    shape = tuple(shape) if dim is None else (*shape[:dim], size, *shape[dim:])
    if np.dtype(dtype).kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if np.dtype(dtype).kind in "iu":
        return rng.integers(-20, 20, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def op_names(fn) -> list[str]:
    return [op.prim.name for op in fn.body.ops]


# -- broadcast_in_dim -------------------------------------------------------------------------------------
BROADCASTS = [  # operand shape, shape, broadcast_dimensions
    ((), (3,), ()),
    ((), (), ()),
    ((3,), (2, 3), (1,)),
    ((3,), (3, 2), (0,)),
    ((1, 3), (4, 3), (0, 1)),  # a stretched axis
    ((2, 1), (2, 5, 3), (0, 2)),  # a new axis and a stretched one
    ((2, 4), (2, 3, 4, 5), (0, 2)),
    ((0, 2), (3, 0, 2), (1, 2)),
]


@pytest.mark.parametrize("shape, out, bdims", BROADCASTS)
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_broadcast_in_dim(shape, out, bdims, dtype, rng):
    for (d,) in dims_cases([len(shape)]):
        check_vmap(S.broadcast_in_dim_p, [batched(rng, shape, d, dtype)], [d],
                   dict(shape=out, broadcast_dimensions=bdims))


def test_broadcast_in_dim_needs_no_transpose(rng):
    # batched in the middle of (2, 4) -> (2, 3, 4, 5): the batch axis follows output axis 0
    fn = check_vmap_symbolic(S.broadcast_in_dim_p, [batched(rng, (2, 4), 1)], [1],
                             dict(shape=(2, 3, 4, 5), broadcast_dimensions=(0, 2)))
    assert op_names(fn) == ["broadcast_in_dim"]
    assert check_vmap(S.broadcast_in_dim_p, [batched(rng, (2, 4), 1)], [1],
                      dict(shape=(2, 3, 4, 5), broadcast_dimensions=(0, 2))) == [1]


# -- reshape ---------------------------------------------------------------------------------------------
RESHAPES = [  # operand shape, new_sizes, dimensions
    ((2, 3), (3, 2), None),
    ((2, 3), (6,), (1, 0)),
    ((), (1, 1), None),
    ((1,), (), None),
    ((2, 3, 4), (4, 6), (2, 0, 1)),
    ((2, 3, 4), (6, 2, 2), None),
    ((0, 3), (3, 0), None),
]


@pytest.mark.parametrize("shape, new_sizes, dimensions", RESHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_reshape(shape, new_sizes, dimensions, dtype, rng):
    for (d,) in dims_cases([len(shape)]):
        check_vmap(S.reshape_p, [batched(rng, shape, d, dtype)], [d], dict(new_sizes=new_sizes, dimensions=dimensions))


def test_reshape_keeps_a_first_or_last_batch_axis(rng):
    params = dict(new_sizes=(4, 6), dimensions=None)
    assert check_vmap(S.reshape_p, [batched(rng, (2, 3, 4), 0)], [0], params) == [0]
    assert check_vmap(S.reshape_p, [batched(rng, (2, 3, 4), 3)], [3], params) == [2]
    # in the middle: moved first by the reshape's own ``dimensions``, not a separate transpose
    fn = check_vmap_symbolic(S.reshape_p, [batched(rng, (2, 3, 4), 1)], [1], params)
    assert op_names(fn) == ["reshape"]
    assert fn.body.ops[0].params["dimensions"] == (1, 0, 2, 3)


# -- transpose, rev --------------------------------------------------------------------------------------
TRANSPOSES = [((2, 3), (1, 0)), ((2, 3, 4), (2, 0, 1)), ((2, 3, 4), (0, 1, 2)), ((), ()), ((3,), (0,))]


@pytest.mark.parametrize("shape, permutation", TRANSPOSES)
def test_transpose(shape, permutation, rng):
    for (d,) in dims_cases([len(shape)]):
        assert check_vmap(S.transpose_p, [batched(rng, shape, d)], [d], dict(permutation=permutation)) == [d]


REVS = [((3,), (0,)), ((2, 3), (0, 1)), ((2, 3, 4), (1,)), ((), ()), ((2, 3), ())]


@pytest.mark.parametrize("shape, dimensions", REVS)
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_rev(shape, dimensions, dtype, rng):
    for (d,) in dims_cases([len(shape)]):
        assert check_vmap(S.rev_p, [batched(rng, shape, d, dtype)], [d], dict(dimensions=dimensions)) == [d]


# -- squeeze, expand_dims --------------------------------------------------------------------------------
SQUEEZES = [((1, 3), (0,)), ((2, 1, 3, 1), (3, 1)), ((1,), (0,)), ((1, 1), (0, 1)), ((2, 3), ())]


@pytest.mark.parametrize("shape, dimensions", SQUEEZES)
def test_squeeze(shape, dimensions, rng):
    for (d,) in dims_cases([len(shape)]):
        check_vmap(S.squeeze_p, [batched(rng, shape, d)], [d], dict(dimensions=dimensions))


EXPANDS = [((), (0,)), ((), (0, 1)), ((3,), (0,)), ((3,), (1,)), ((2, 3), (0, 2)), ((2, 3), (1, 3)),
           ((2, 3), (2,)), ((2, 3), ())]


@pytest.mark.parametrize("shape, dimensions", EXPANDS)
@pytest.mark.parametrize("dtype", [np.float32, np.bool_])
def test_expand_dims(shape, dimensions, dtype, rng):
    for (d,) in dims_cases([len(shape)]):
        check_vmap(S.expand_dims_p, [batched(rng, shape, d, dtype)], [d], dict(dimensions=dimensions))


def test_squeeze_and_expand_dims_need_no_transpose(rng):
    fn = check_vmap_symbolic(S.squeeze_p, [batched(rng, (2, 1, 3, 1), 2)], [2], dict(dimensions=(1, 3)))
    assert op_names(fn) == ["squeeze"]
    fn = check_vmap_symbolic(S.expand_dims_p, [batched(rng, (2, 3), 1)], [1], dict(dimensions=(0, 2)))
    assert op_names(fn) == ["expand_dims"]


# -- concatenate -----------------------------------------------------------------------------------------
CONCATENATES = [  # operand shapes, dimension
    ([(2, 3), (1, 3)], 0),
    ([(2, 3), (2, 1), (2, 0)], 1),
    ([(4,)], 0),
    ([(2,), (3,), (1,)], 0),
    ([(2, 2, 3), (2, 1, 3)], 1),
]


@pytest.mark.parametrize("shapes, dimension", CONCATENATES)
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_concatenate(shapes, dimension, dtype, rng):
    for dims in dims_cases([len(s) for s in shapes]):
        args = [batched(rng, s, d, dtype) for s, d in zip(shapes, dims)]
        out_dims = check_vmap(S.concatenate_p, args, dims, dict(dimension=dimension))
        assert out_dims == [next(d for d in dims if d is not None)]  # the first batched operand's axis


def test_concatenate_symbolic_broadcasts_unbatched_operands(rng):
    args = [batched(rng, (2, 3), 2), batched(rng, (2, 1), None), batched(rng, (2, 2), 0)]
    fn = check_vmap_symbolic(S.concatenate_p, args, [2, None, 0], dict(dimension=1))
    assert sorted(op_names(fn)) == ["broadcast_in_dim", "concatenate", "transpose"]


def test_concatenate_batch_sizes_must_agree(rng):
    args = [batched(rng, (2,), 0, size=3), batched(rng, (2,), 0, size=4)]
    with pytest.raises(ValueError, match="different sizes along their batch axes"):
        S.concatenate_p.vmap_rule(args, [0, 0], dimension=0)


# -- pad ------------------------------------------------------------------------------------------------
PADS = [  # operand shape, padding_config
    ((3,), ((1, 2, 0),)),
    ((2, 3), ((0, 1, 1), (-1, 2, 0))),
    ((), ()),
    ((4,), ((-1, -1, 2),)),
    ((0, 2), ((1, 1, 0), (0, 0, 1))),
    ((2, 3, 2), ((1, 0, 0), (0, 0, 0), (2, -1, 1))),
]


@pytest.mark.parametrize("shape, config", PADS)
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_pad(shape, config, dtype, rng):
    for dims in dims_cases([len(shape), 0]):
        args = [batched(rng, shape, dims[0], dtype), batched(rng, (), dims[1], dtype)]
        out_dims = check_vmap(S.pad_p, args, dims, dict(padding_config=config))
        assert out_dims == [0 if dims[0] is None else dims[0]]


def test_pad_symbolic_with_a_value_per_example(rng):
    args = [batched(rng, (2, 3), 1), batched(rng, (), 0)]
    fn = check_vmap_symbolic(S.pad_p, args, [1, 0], dict(padding_config=((1, 0, 1), (0, -1, 0))))
    assert "select_n" in op_names(fn) and not fn.consts  # the mask is built from a scalar, not stored


def test_pad_keeps_weak_types():
    x = Array(np.arange(6, dtype=np.float32).reshape(2, 3), weak_type=True)
    value = Array(np.array([7, 8], np.float32), weak_type=True)
    out, dim = S.pad_p.vmap_rule([x, value], [0, 0], padding_config=((1, 0, 0),))
    assert out.aval.weak_type and dim == 0
    np.testing.assert_array_equal(np.asarray(out), [[7, 0, 1, 2], [8, 3, 4, 5]])


# -- every primitive of the family ------------------------------------------------------------------------
def test_every_shape_primitive_has_a_batching_rule_or_says_why():
    family = [p for p in PRIMITIVES.values() if p.family == "transpiler/primitives/shape.py"]
    assert len(family) == 9
    for prim in family:
        assert prim.rule_state("vmap") in ("rule", "unsupported"), prim
    assert S.iota_p.vmap_rule is None and S.iota_p.rule_state("vmap") == "unsupported"
