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


def test_every_public_name_of_a_jax_array():
    # (the public names of a JAX 0.10.2 Array, recorded; traceback and format hold XLA's objects: not here)
    names = """T addressable_data addressable_shards all any argmax argmin argpartition argsort astype at aval
    block_until_ready byteswap choose clip clone committed compress conj conjugate copy copy_to_host_async cumprod
    cumsum delete device devices diagonal dot dtype flatten global_shards imag is_deleted is_fully_addressable
    is_fully_replicated is_ready item itemsize mT max mean min nbytes ndim nonzero on_device_size_in_bytes platform
    prod ptp ravel real repeat reshape round searchsorted shape sharding size sort squeeze std sum swapaxes take
    to_device tobytes tolist trace transpose unsafe_buffer_pointer var view weak_type""".split()
    x = jnp.arange(6.0).reshape(2, 3)
    assert [n for n in names if not hasattr(x, n)] == []
    assert x.addressable_data(0).tolist() == x.tolist() and x.clone().tolist() == x.tolist()
    assert x.copy_to_host_async() is None and x.on_device_size_in_bytes() == 24 and x.platform() == "cpu"
    assert x.to_device(srcjax.devices()[0]).tolist() == x.tolist() and isinstance(x.unsafe_buffer_pointer(), int)
    with pytest.raises(NotImplementedError, match="consider arr.flatten"):
        _ = x.flat
    with pytest.raises(AttributeError, match="addressable_data"):
        _ = x.device_buffer


@pytest.mark.parametrize("dtype", [np.int32, np.int16, np.float32, np.float16, np.uint8, np.bool_, np.complex64])
def test_byteswap_reverses_each_elements_bytes(dtype):
    values = (np.arange(5) * 37 + 1).astype(dtype) if dtype != np.complex64 else np.array([1 + 2j, -3.5j], dtype)
    want = values.byteswap()
    for got in (jnp.asarray(values).byteswap(), srcjax.jit(lambda v: v.byteswap())(jnp.asarray(values))):
        assert got.dtype == dtype
        np.testing.assert_array_equal(np.asarray(got).view(np.uint8), want.view(np.uint8))


def test_method_arguments_as_jax():
    v = jnp.asarray([3.0, 1.0, 2.0])
    # Array.compress(condition, axis): the array is jnp.compress's second operand
    assert v.compress(np.array([True, False, True])).tolist() == [3.0, 2.0]
    m = jnp.arange(6.0).reshape(2, 3)
    assert m.compress(np.array([False, True]), axis=0).tolist() == [[3.0, 4.0, 5.0]]
    assert srcjax.jit(lambda v: v.compress(np.array([True, False, True])))(v).tolist() == [3.0, 2.0]
    with pytest.raises(TypeError, match="'kind' argument to sort is not supported"):
        v.sort(kind="stable")
    with pytest.raises(TypeError, match="'kind' argument to argsort"):
        v.argsort(kind="quicksort")
    with pytest.raises(ValueError, match="`a` array must be integer typed"):
        v.choose([v, v])
    for convert in (float, int):  # (a complex number has no real value: JAX's TypeError, not its real part)
        with pytest.raises(TypeError, match="complex"):
            convert(jnp.asarray(2.5 + 5j))
    assert float(jnp.asarray(2.5)) == 2.5 and int(jnp.asarray(-2.7)) == -2


def test_in_searches_a_one_dimensional_array_for_a_scalar():
    """``v in x`` as JAX defines it: ``any(x == v)`` for a 1-d ``x`` and a scalar ``v``; JAX's errors otherwise."""
    x = jnp.arange(3)
    assert 2 in x and 5 not in x and 1.0 in x and jnp.int32(0) in x
    with pytest.raises(ValueError, match="search array must be one-dimensional"):
        jnp.array([1, 2]) in jnp.arange(6).reshape(3, 2)  # noqa: B015
    with pytest.raises(ValueError, match="query value must be a scalar"):
        jnp.array([1, 2]) in x  # noqa: B015
    with pytest.raises(TypeError, match="unsupported operand type"):
        None in x  # noqa: B015
