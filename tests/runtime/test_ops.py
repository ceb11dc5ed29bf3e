"""srcjax.ops: the older index-update functions and the segment reductions (NumPy loops as the oracle;
empty-segment fills and out-of-range ids as JAX handles them)."""

import numpy as np
import pytest

from srcjax.runtime import numpy as jnp
from srcjax.runtime import ops


def test_index_helpers_are_functional_updates():
    x = jnp.asarray([1, 2, 3])
    y = ops.index_update(x, 0, 123)
    assert y.tolist() == [123, 2, 3] and x.tolist() == [1, 2, 3] and y.dtype == np.int32  # the seed's example
    assert ops.index[1:3] == slice(1, 3) and ops.index[0, ...] == (0, Ellipsis)
    m = jnp.zeros((3, 3))
    assert ops.index_update(m, ops.index[1, :], 1.0).tolist()[1] == [1.0, 1.0, 1.0]
    assert ops.index_add(x, jnp.asarray([0, 0, 2]), 5).tolist() == [11, 2, 8]  # repeated indices accumulate
    assert ops.index_mul(x, ops.index[1:], 3).tolist() == [1, 6, 9]
    assert ops.index_min(x, ops.index[:], 2).tolist() == [1, 2, 2]
    assert ops.index_max(x, ops.index[::2], 2).tolist() == [2, 2, 3]
    assert ops.index_update(np.arange(3.0), 1, -1.0).tolist() == [0.0, -1.0, 2.0]


def _np_segment(data, ids, n, reduce, fill):
    out = np.full((n, *data.shape[1:]), fill, dtype=np.float64)
    for k in range(n):
        rows = data[ids == k]
        if len(rows):
            out[k] = reduce(rows, axis=0)
    return out


SEGMENTS = [
    ("segment_sum", np.sum, 0.0),
    ("segment_prod", np.prod, 1.0),
    ("segment_max", np.max, -np.inf),
    ("segment_min", np.min, np.inf),
]


@pytest.mark.parametrize("name, reduce, fill", SEGMENTS)
def test_segment_reductions_against_numpy(name, reduce, fill):
    rs = np.random.RandomState(0)
    data = rs.randn(7, 2).astype(np.float32)
    ids = np.array([0, 2, 2, 0, 4, 2, 0])
    got = getattr(ops, name)(jnp.asarray(data), jnp.asarray(ids), num_segments=5)
    assert got.shape == (5, 2) and got.dtype == np.float32
    np.testing.assert_allclose(np.asarray(got), _np_segment(data, ids, 5, reduce, fill), rtol=1e-6)
    # without num_segments it is max(id) + 1; sorted ids give the same answer with the hint
    got = getattr(ops, name)(jnp.asarray(data[:3]), jnp.asarray([0, 0, 1]), indices_are_sorted=True)
    np.testing.assert_allclose(np.asarray(got), _np_segment(data[:3], np.array([0, 0, 1]), 2, reduce, fill), rtol=1e-6)


def test_segment_edge_cases_are_jax_s():
    data = jnp.asarray([1.0, 2.0, 3.0, 4.0])
    # id 5 is past num_segments and -1 is negative: both are dropped (no wrap-around)
    assert ops.segment_sum(data, jnp.asarray([0, 0, 2, 5]), 4).tolist() == [3.0, 0.0, 3.0, 0.0]
    assert ops.segment_sum(data, jnp.asarray([0, 0, 2, -1])).tolist() == [3.0, 0.0, 3.0]
    ints = jnp.asarray([1, 2, 3, 4])
    info = np.iinfo(np.int32)
    assert ops.segment_max(ints, jnp.asarray([0, 0, 2, 5]), 4).tolist() == [2, info.min, 3, info.min]
    assert ops.segment_min(ints, jnp.asarray([0, 0, 2, 5]), 4).tolist() == [1, info.max, 3, info.max]
    assert ops.segment_prod(ints, jnp.asarray([0, 0, 2, 5]), 4).tolist() == [2, 1, 3, 1]
    assert ops.segment_sum(jnp.ones((3, 2)), jnp.asarray([1, 0, 1])).tolist() == [[1.0, 1.0], [2.0, 2.0]]
    assert ops.segment_sum(jnp.zeros((0, 2)), jnp.zeros((0,), jnp.int32)).shape == (0, 2)
    assert ops.segment_sum(data, jnp.asarray([1, 0, 1, 0]), 2, bucket_size=1).tolist() == [6.0, 4.0]


def test_segment_errors():
    with pytest.raises(ValueError, match="one id per row"):
        ops.segment_sum(jnp.ones(3), jnp.asarray([0, 1]))
    with pytest.raises(ValueError, match="one-dimensional"):
        ops.segment_sum(jnp.ones(3), jnp.asarray([[0, 1, 1]]))
    with pytest.raises(TypeError, match="segment_ids must be integers"):
        ops.segment_sum(jnp.ones(2), jnp.asarray([0.0, 1.0]))
    with pytest.raises(ValueError, match="unknown mode"):
        ops.segment_sum(jnp.ones(2), jnp.asarray([0, 1]), mode="wrap")
