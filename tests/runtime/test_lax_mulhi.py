"""lax.mulhi, the high half of an integer product: eager, compiled natively, batched and emitted as Python, against
exact Python integers, for every integer width signed and unsigned (JAX 0.10.2: mulhi(int32 -7, 3) is -1,
mulhi(int8 -100, 100) is -40, mulhi(uint8 200, 200) is 156)."""

import numpy as np
import pytest

import srcjax
from srcjax import lax

RNG = np.random.default_rng(5)
DTYPES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]


@pytest.fixture(autouse=True)
def _x64(x64):  # (every test here: 64-bit types on)
    yield


def operands(dtype):
    info = np.iinfo(dtype)
    edges = np.array([info.min, info.max, 0, 1, info.max // 2 + 1, info.min // 2 - 1 if info.min else 7], dtype)
    x = np.concatenate([edges, edges[::-1], RNG.integers(info.min, info.max, 20, dtype=dtype, endpoint=True)])
    y = np.concatenate([edges, edges, RNG.integers(info.min, info.max, 20, dtype=dtype, endpoint=True)])
    return x, y


def exact(x, y):
    bits = x.dtype.itemsize * 8
    return np.array([(int(a) * int(b)) >> bits for a, b in zip(x, y)], x.dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_mulhi_is_the_high_half_of_the_exact_product(dtype):
    x, y = operands(dtype)
    want = exact(x, y)
    for name, f in [("eager", lax.mulhi), ("jit", srcjax.jit(lax.mulhi)), ("vmap", srcjax.vmap(lax.mulhi)),
                    ("jit(vmap)", srcjax.jit(srcjax.vmap(lambda a, b: lax.mulhi(a, b) + lax.mulhi(b, a))))]:
        got = np.asarray(f(x, y))
        assert got.dtype == dtype, name
        np.testing.assert_array_equal(got, want * 2 if name == "jit(vmap)" else want, err_msg=name)


def test_values_jax_gives():
    assert int(lax.mulhi(np.int32(-7), np.int32(3))) == -1
    assert int(lax.mulhi(np.int8(-100), np.int8(100))) == -40
    assert int(lax.mulhi(np.uint8(200), np.uint8(200))) == 156
    with pytest.raises(TypeError, match="mulhi"):
        lax.mulhi(1.0, 2.0)


def test_mulhi_in_emitted_python_and_its_zero_derivative(tmp_path):
    from srcjax.transpile import transformed
    from srcjax.transpiler.emit_python import emit_module
    from srcjax.transpiler.types import TensorType

    def f(a, b):
        return lax.mulhi(a, b) + a

    ir = transformed(f, [TensorType(np.int32, (5,)), TensorType(np.int32, (5,))], [])
    source = emit_module(ir)
    assert "lax.mulhi(" in source
    path = tmp_path / "emitted.py"
    path.write_text(source)
    import runpy

    x, y = operands(np.int32)
    np.testing.assert_array_equal(runpy.run_path(str(path))[ir.name](x[:5], y[:5]), exact(x[:5], y[:5]) + x[:5])
    _, tangent = srcjax.jvp(lambda a: lax.mulhi(a, a), (x,), (np.zeros(x.shape, srcjax.dtypes.float0),))
    assert tangent.dtype == srcjax.dtypes.float0
