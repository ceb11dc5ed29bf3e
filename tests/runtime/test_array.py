"""Array: immutability, conversions, protocols, repr, weak types."""

import copy
import pickle

import numpy as np
import pytest

import srcjax
import srcjax.numpy as jnp
from srcjax.runtime.array import Array


def test_item_assignment_raises_and_points_to_at():
    x = jnp.array([1.0, 2.0])
    with pytest.raises(TypeError, match=r"x.at\[idx\].set\(y\)"):
        x[0] = 3.0


def test_buffer_is_read_only_and_not_shared_with_numpy_source():
    source = np.array([1.0, 2.0, 3.0], np.float32)
    x = srcjax.device_put(source)
    source[0] = 100.0
    assert np.asarray(x)[0] == 1.0
    with pytest.raises(ValueError):
        np.asarray(x)[0] = 5.0


@pytest.mark.parametrize(
    "value, text",
    [
        (np.array([1.0, 2.0], np.float32), "Array([1., 2.], dtype=float32)"),
        (np.array([1, 2, 3], np.int32), "Array([1, 2, 3], dtype=int32)"),
        (np.zeros((0, 2), np.float32), "Array([], shape=(0, 2), dtype=float32)"),
        (np.array(True), "Array(True, dtype=bool)"),
    ],
)
def test_repr_like_jax(value, text):
    assert repr(Array(value)) == text


def test_repr_weak_type_and_str():
    assert repr(jnp.asarray(2.0)) == "Array(2., dtype=float32, weak_type=True)"
    assert str(jnp.array([1, 2])) == "[1 2]"


def test_scalar_conversions():
    x = jnp.asarray(3.5)
    assert float(x) == 3.5 and int(x) == 3 and complex(x) == 3.5 + 0j
    assert bool(jnp.asarray(1)) is True
    assert [1, 2, 3][jnp.asarray(1)] == 2
    with pytest.raises(TypeError, match="only size-1 arrays"):
        float(jnp.ones(3))
    with pytest.raises(ValueError, match="ambiguous"):
        bool(jnp.ones(3))
    with pytest.raises(TypeError, match="integer arrays"):
        [1, 2][jnp.asarray(1.0)]


def test_len_and_iteration():
    x = Array(np.arange(6, dtype=np.int32).reshape(3, 2))
    assert len(x) == 3
    rows = list(x)
    assert all(isinstance(r, Array) and r.shape == (2,) for r in rows)
    np.testing.assert_array_equal(rows[2], [4, 5])
    with pytest.raises(TypeError, match="0-d"):
        iter(jnp.asarray(1.0)).__next__()
    with pytest.raises(TypeError, match="unsized"):
        len(jnp.asarray(1.0))


def test_unhashable():
    with pytest.raises(TypeError, match="unhashable"):
        hash(jnp.ones(2))


def test_attributes():
    x = Array(np.ones((2, 3), np.float32))
    assert x.shape == (2, 3) and x.ndim == 2 and x.size == 6 and x.dtype == np.float32
    assert x.itemsize == 4 and x.nbytes == 24
    assert x.block_until_ready() is x
    assert x.device == srcjax.devices()[0]
    assert x.weak_type is False


def test_numpy_interop():
    x = Array(np.arange(4, dtype=np.float32))
    assert isinstance(np.asarray(x), np.ndarray)
    a = np.array(x)
    a[0] = 7  # np.array copies: the copy is writable, the Array unchanged
    assert float(x[0]) == 0.0
    assert np.asarray(x, dtype=np.float64).dtype == np.float64
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert x.item(1) == 1.0


def test_copy_and_pickle_round_trip():
    x = jnp.array([1.0, 2.0])
    assert copy.copy(x) is x and copy.deepcopy(x) is x
    y = pickle.loads(pickle.dumps(x))
    assert isinstance(y, Array) and y.dtype == x.dtype
    np.testing.assert_array_equal(y, x)


def test_format():
    assert f"{jnp.asarray(1.5):.2f}" == "1.50"
