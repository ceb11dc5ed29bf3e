"""lax's shape functions against NumPy (exact: they only move elements), with JAX's signatures, dtypes and weak
types (recorded with JAX 0.10.2), its treatment of negative axes, and bad input."""

import numpy as np
import pytest

import srcjax.numpy as jnp
from srcjax import lax

RNG = np.random.default_rng(0)
X = RNG.integers(0, 100, size=(2, 3)).astype(np.float32)
Y = RNG.integers(0, 100, size=(2, 3, 4)).astype(np.float32)


def a(x, dtype=np.float32):
    return jnp.asarray(np.asarray(x).astype(dtype))


def same(out, expected, dtype="float32", weak=False):
    assert str(out.dtype) == dtype, (out.dtype, dtype)
    assert out.weak_type == weak, (out.weak_type, weak)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(expected))


# (label, lax call, NumPy oracle, JAX's dtype, JAX's weak bit)
CASES = [
    ("broadcast", lambda: lax.broadcast(a(X), (4,)), np.broadcast_to(X, (4, 2, 3)), "float32", False),
    ("broadcast python scalar", lambda: lax.broadcast(1.0, (2,)), [1.0, 1.0], "float32", True),
    ("broadcast nothing", lambda: lax.broadcast(a(X), ()), X, "float32", False),
    ("broadcast_in_dim", lambda: lax.broadcast_in_dim(a(X[:, :1]), (4, 2, 3), (1, 2)),
     np.broadcast_to(X[:, :1], (4, 2, 3)), "float32", False),
    ("broadcast_in_dim int scalar", lambda: lax.broadcast_in_dim(2, (3,), ()), [2, 2, 2], "int32", True),
    ("broadcast_to_rank", lambda: lax.broadcast_to_rank(a(X), 4), X[None, None], "float32", False),
    ("broadcast_to_rank already", lambda: lax.broadcast_to_rank(a(X), 1), X, "float32", False),
    ("broadcast_like", lambda: lax.broadcast_like(a(X[0]), a(X)), np.broadcast_to(X[0], X.shape), "float32", False),
    ("reshape", lambda: lax.reshape(a(X), (3, 2)), X.reshape(3, 2), "float32", False),
    ("reshape with dimensions", lambda: lax.reshape(a(X), (3, 2), (1, 0)), X.T.reshape(3, 2), "float32", False),
    ("reshape int size", lambda: lax.reshape(a(X), 6), X.ravel(), "float32", False),
    ("transpose", lambda: lax.transpose(a(Y), (2, 0, 1)), Y.transpose(2, 0, 1), "float32", False),
    ("transpose scalar", lambda: lax.transpose(1.0, ()), 1.0, "float32", True),
    ("squeeze negative", lambda: lax.squeeze(a(X[:1, :, None]), (-1, 0)), X[0], "float32", False),
    ("expand_dims negative", lambda: lax.expand_dims(a(X), (-1, 0)), X[None, :, :, None], "float32", False),
    ("concatenate", lambda: lax.concatenate([a(X), a(X[:, :1]), a(X)], 1), np.concatenate([X, X[:, :1], X], 1),
     "float32", False),
    ("concatenate one", lambda: lax.concatenate([a(X)], 0), X, "float32", False),
    ("concatenate ints", lambda: lax.concatenate([a([1], np.int8), a([2, 3], np.int8)], 0), [1, 2, 3], "int8", False),
    ("pad", lambda: lax.pad(a(X), 0.0, [(1, 1, 0), (0, 2, 1)]),
     np.pad(np.insert(X, [1, 2], 0.0, axis=1), ((1, 1), (0, 2))), "float32", False),
    ("pad negative", lambda: lax.pad(a([0.0, 1, 2, 3]), 9.0, [(-1, 2, 1)]), [9, 1, 9, 2, 9, 3, 9, 9], "float32",
     False),
    ("pad numpy scalar", lambda: lax.pad(a(X), np.float32(-1), [(0, 1, 0), (1, 0, 0)]),
     np.pad(X, ((0, 1), (1, 0)), constant_values=-1), "float32", False),
    ("pad weak with weak", lambda: lax.pad(lax.broadcast(1.0, (2,)), 0.0, [(1, 0, 0)]), [0, 1, 1], "float32", True),
    ("iota", lambda: lax.iota(int, 3), [0, 1, 2], "int32", False),
    ("iota float16", lambda: lax.iota(jnp.float16, 3), [0, 1, 2], "float16", False),
    ("iota float64 narrows", lambda: lax.iota(np.float64, 2), [0, 1], "float32", False),
    ("iota empty", lambda: lax.iota(jnp.int32, 0), np.zeros(0), "int32", False),
    ("broadcasted_iota", lambda: lax.broadcasted_iota("int32", (2, 3), 1), [[0, 1, 2], [0, 1, 2]], "int32", False),
    ("broadcasted_iota uint8", lambda: lax.broadcasted_iota(jnp.uint8, (2, 3), 0), [[0] * 3, [1] * 3], "uint8",
     False),
    ("rev", lambda: lax.rev(a(X), (1,)), X[:, ::-1], "float32", False),
    ("rev both", lambda: lax.rev(a(X), (0, 1)), X[::-1, ::-1], "float32", False),
    ("rev nothing", lambda: lax.rev(a(X), ()), X, "float32", False),
    ("collapse", lambda: lax.collapse(a(Y), 1), Y.reshape(2, 12), "float32", False),
    ("collapse negative start", lambda: lax.collapse(a(Y), -2), Y.reshape(2, 12), "float32", False),
    ("collapse negative stop", lambda: lax.collapse(a(Y), 0, -1), Y.reshape(6, 4), "float32", False),
    ("collapse one axis", lambda: lax.collapse(a(Y), 1, 2), Y, "float32", False),
    ("full python float", lambda: lax.full((2,), 1.0), [1.0, 1.0], "float32", True),
    ("full python int", lambda: lax.full((2,), 1), [1, 1], "int32", True),
    ("full numpy scalar", lambda: lax.full((2,), np.int8(3)), [3, 3], "int8", False),
    ("full dtype", lambda: lax.full((2,), 1.5, jnp.int32), [1, 1], "int32", False),
    ("full 0-d", lambda: lax.full((), 2.0), 2.0, "float32", True),
    ("full_like", lambda: lax.full_like(a(X), 2), np.full_like(X, 2), "float32", False),
    ("full_like shape", lambda: lax.full_like(a(X), 2, shape=(4,)), [2.0] * 4, "float32", False),
    ("full_like dtype", lambda: lax.full_like(a(X), 2, jnp.int32), np.full(X.shape, 2), "int32", False),
    ("full_like python scalar", lambda: lax.full_like(3, 2.5), 2, "int32", True),
    ("empty", lambda: lax.empty((2,), jnp.float32), [0.0, 0.0], "float32", False),
    ("split", lambda: lax.split(a(Y), [1, 3], axis=2)[1], Y[:, :, 1:], "float32", False),
    ("split first", lambda: lax.split(a(Y), [1, 1])[0], Y[:1], "float32", False),
    ("split empty piece", lambda: lax.split(a(X), [0, 3], 1)[0], X[:, :0], "float32", False),
    ("stack", lambda: lax.stack([a(X), a(X + 1)], 1), np.stack([X, X + 1], 1), "float32", False),
    ("stack last", lambda: lax.stack([a(X), a(X + 1)], -1), np.stack([X, X + 1], -1), "float32", False),
    ("unstack", lambda: lax.unstack(a(Y), 1)[2], Y[:, 2], "float32", False),
    ("tile", lambda: lax.tile(a(X), [2, 3]), np.tile(X, (2, 3)), "float32", False),
    ("tile 1-d", lambda: lax.tile(a([0, 1, 2], np.int32), [2]), [0, 1, 2, 0, 1, 2], "int32", False),
    ("tile zero", lambda: lax.tile(a(X), [0, 1]), np.tile(X, (0, 1)), "float32", False),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_lax_shape_function_matches_numpy(case):
    _, call, expected, dtype, weak = case
    same(call(), expected, dtype, weak)


def test_identity_calls_return_the_operand_itself():
    x = a(X)
    assert lax.reshape(x, (2, 3)) is x
    assert lax.transpose(x, (0, 1)) is x
    assert lax.broadcast_in_dim(x, (2, 3), (0, 1)) is x
    assert lax.squeeze(x, ()) is x
    assert lax.rev(x, ()) is x


@pytest.mark.parametrize("call", [
    lambda x: lax.reshape(x, (2, 3)), lambda x: lax.transpose(x, (0, 1)), lambda x: lax.rev(x, ()),
    lambda x: lax.broadcast_in_dim(x, (2, 3), (0, 1)), lambda x: lax.broadcast(x, ()), lambda x: lax.squeeze(x, ()),
    lambda x: lax.broadcast_to_rank(x, 1), lambda x: lax.broadcast_like(x, x), lambda x: lax.concatenate([x], 0),
    lambda x: lax.collapse(x, 0, 1), lambda x: lax.slice(x, (0, 0), (2, 3)), lambda x: lax.slice_in_dim(x, 0, None),
    lambda x: lax.convert_element_type(x, np.float32), lambda x: lax.reduce_precision(x, 8, 23),
])
def test_identity_calls_of_numpy_operands_give_arrays(call):
    # as JAX 0.10.2: an ArrayImpl of the canonical dtype (float32 without x64), not the caller's float64 NumPy array
    x = X.astype(np.float64)
    out = call(x)
    assert isinstance(out, jnp.ndarray) and not isinstance(out, np.ndarray)
    same(out, X, "float32")


def test_broadcast_shapes():
    assert lax.broadcast_shapes((2, 1), (3,)) == (2, 3)
    assert lax.broadcast_shapes((), (4, 1)) == (4, 1)
    with pytest.raises(ValueError, match="incompatible shapes"):
        lax.broadcast_shapes((2,), (3,))


@pytest.mark.parametrize("call, error, message", [
    # like JAX, transpose, concatenate and rev take no negative axes
    (lambda: lax.concatenate([a(X), a(X)], -1), ValueError, "dimension -1 out of range"),
    (lambda: lax.rev(a(X), (-1,)), ValueError, r"dimensions \(-1,\) out of range"),
    (lambda: lax.transpose(a(X), (-1, 0)), ValueError, "must be a permutation"),
    (lambda: lax.concatenate([a([1.0, 2]), a([1, 2], np.int32)], 0), TypeError, "one dtype"),
    (lambda: lax.concatenate([a(1.0), a(2.0)], 0), ValueError, "rank-0"),
    (lambda: lax.concatenate([], 0), ValueError, "at least one"),
    (lambda: lax.pad(a(X), a(0, np.int32), [(1, 1, 0)] * 2), TypeError, "padding_value has dtype int32"),
    (lambda: lax.pad(a([1.0, 2, 3]), 0.0, [(-2, -2, 0)]), ValueError, "removes more"),
    (lambda: lax.pad(a([1.0, 2, 3]), 0.0, [(0, 0, -1)]), ValueError, "interior padding"),
    (lambda: lax.reshape(a(X), (-1,)), ValueError, "negative size"),
    (lambda: lax.reshape(a(X), (4,)), ValueError, "cannot reshape"),
    (lambda: lax.squeeze(a(X), (0,)), ValueError, "size is not 1"),
    (lambda: lax.squeeze(a(X), (2,)), ValueError, "out of bounds"),
    (lambda: lax.expand_dims(a(X), (5,)), ValueError, "out of bounds"),
    (lambda: lax.expand_dims(a(X), (0, -4)), ValueError, "repeated axis"),
    (lambda: lax.broadcast_in_dim(a([1.0, 2, 3]), (2, 4), (1,)), ValueError, "cannot broadcast"),
    (lambda: lax.iota(jnp.bool_, 3), TypeError, "number type"),
    (lambda: lax.broadcasted_iota("int32", (2, 3), -1), ValueError, "out of range"),
    (lambda: lax.collapse(a(Y), 2, 1), ValueError, "cannot collapse"),
    (lambda: lax.transpose([1, 2], (0,)), TypeError, "expected an array"),
    (lambda: lax.reshape(a(X), (2, "3")), TypeError, "new_sizes must be a sequence of ints"),
    (lambda: lax.full((2,), a([1.0, 2.0])), TypeError, "fill_value must be a scalar"),
    (lambda: lax.full((-1,), 1.0), TypeError, "negative dimension"),
    (lambda: lax.split(a(X), [1, 2]), ValueError, "add up to dimension 0"),
    (lambda: lax.split(a(X), [4, -1]), ValueError, "non-negative"),
    (lambda: lax.stack([], 0), ValueError, "at least one"),
    (lambda: lax.stack([a(X), a(X)], 3), ValueError, "out of bounds"),
    (lambda: lax.unstack(a(X), 2), ValueError, "out of bounds"),
    (lambda: lax.tile(a(X), [2]), TypeError, "one entry per axis"),
], ids=lambda v: getattr(v, "__name__", str(v))[:24])
def test_bad_input_raises_clear_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_unstack_and_split_return_every_piece():
    assert len(lax.unstack(a(Y), 2)) == 4 and len(lax.split(a(Y), [1, 0, 2, 1], axis=2)) == 4
    np.testing.assert_array_equal(np.concatenate([np.asarray(p) for p in lax.split(a(Y), [1, 0, 2, 1], 2)], 2), Y)


def test_new_shape_functions_compile_and_differentiate():
    import srcjax

    x = a(X)
    tiled = srcjax.jit(lambda x: lax.tile(x, [2, 3]))(x)
    np.testing.assert_array_equal(np.asarray(tiled), np.tile(X, (2, 3)))
    # each element appears 6 times in the tile, once in each split piece and in each stacked copy
    np.testing.assert_array_equal(np.asarray(srcjax.grad(lambda x: lax.tile(x, [2, 3]).sum())(x)), np.full(X.shape, 6))
    split_sum = lambda x: sum((p * (i + 1)).sum() for i, p in enumerate(lax.split(x, [1, 2], 1)))  # noqa: E731
    np.testing.assert_array_equal(np.asarray(srcjax.jit(srcjax.grad(split_sum))(x)), [[1, 2, 2], [1, 2, 2]])
    stacked = lambda x: (lax.stack([x, 2 * x], 0) * 3).sum() + sum(r.sum() for r in lax.unstack(x))  # noqa: E731
    np.testing.assert_array_equal(np.asarray(srcjax.grad(stacked)(x)), np.full(X.shape, 10))
