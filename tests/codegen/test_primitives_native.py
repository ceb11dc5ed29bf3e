"""The per-primitive tables of tests/transpiler/test_elementwise.py, compiled: each primitive and dtype as a
one-op function under ``jit``, run natively (float16 and complex numbers through host calls), agrees with the
eager implementation: integers and booleans exactly, floats within a few ulp of the result's scale."""

import numpy as np
import pytest

import srcjax
from srcjax.runtime.config import config
from tests.transpiler.test_elementwise import BINARY, UNARY, data, run
from srcjax.transpiler.primitives import elementwise as E

SHAPES = [(), (37,), (0, 3)]  # a scalar, a vector longer than a vector register, an empty array


@pytest.fixture(autouse=True)
def x64():
    """float64 arguments stay float64 (with x64 off, jit would take them as float32)."""
    saved = config.jax_enable_x64
    config.update("jax_enable_x64", True)
    yield
    config.update("jax_enable_x64", saved)


def assert_agrees(got, want, what):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, what
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    finite = want[np.isfinite(want)]
    scale = float(np.max(np.abs(finite), initial=1.0))
    eps = float(np.finfo(want.dtype).eps)
    np.testing.assert_allclose(got, want, rtol=8 * eps, atol=8 * eps * scale, err_msg=what)


def compiled(fn, *args):
    jitted = srcjax.jit(fn)
    out = jitted(*args)
    (specialisation,) = jitted._cache.values()
    assert specialisation.native is not None, specialisation.native_error
    return out


def _domain(domain):
    return domain if isinstance(domain, tuple) else (-3.0, 3.0)


@pytest.mark.parametrize("prim, dtypes, domain, oracle", UNARY, ids=[case[0].name for case in UNARY])
def test_unary_compiled_agrees_with_eager(prim, dtypes, domain, oracle):
    for dtype in dtypes:
        xs = [data(shape, dtype, *_domain(domain)) for shape in SHAPES]
        if prim is E.digamma_p:  # away from the poles
            xs = [np.where(np.abs(x - np.round(x)) < 0.1, x + 0.25, x).astype(dtype) for x in xs]
        got = compiled(lambda *xs: [prim.bind(x) for x in xs], *xs)
        for x, g in zip(xs, got):
            assert_agrees(g, run(prim, x), f"{prim.name} {np.dtype(dtype)} {x.shape}")


@pytest.mark.parametrize("prim, dtypes, domain, oracle, fix", BINARY, ids=[case[0].name for case in BINARY])
def test_binary_compiled_agrees_with_eager(prim, dtypes, domain, oracle, fix):
    for dtype in dtypes:
        pairs = []
        for shape in SHAPES:
            x, y = (data(shape, dtype, *_domain(domain)) for _ in range(2))
            pairs.append((x, fix(y) if fix else y))
        got = compiled(lambda *xs: [prim.bind(xs[i], xs[i + 1]) for i in range(0, len(xs), 2)],
                       *[a for pair in pairs for a in pair])
        for (x, y), g in zip(pairs, got):
            assert_agrees(g, run(prim, x, y), f"{prim.name} {np.dtype(dtype)} {x.shape}")


ALL_DTYPES = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64,
              np.float16, np.float32, np.float64]


@pytest.mark.parametrize("source", ALL_DTYPES, ids=lambda d: np.dtype(d).name)
def test_conversions_compiled_agree_with_eager(source):
    """Every conversion between these dtypes, natively: True is 1 in every integer dtype (bool is an i1, one byte
    in memory like int8 and uint8: a shortcut for equal byte sizes once made it -1)."""
    x = data((37,), source, -3.0, 3.0)
    got = compiled(lambda x: [E.convert_element_type_p.bind(x, new_dtype=np.dtype(t), weak_type=False)
                              for t in ALL_DTYPES], x)
    for target, g in zip(ALL_DTYPES, got):
        want = run(E.convert_element_type_p, x, new_dtype=np.dtype(target), weak_type=False)
        assert_agrees(g, want, f"{np.dtype(source)} -> {np.dtype(target)}")
    if np.dtype(source) == np.bool_:
        summed = srcjax.jit(lambda b: (b.astype(np.int8).sum(), b.astype(np.uint8) + np.uint8(1)))(x)
        assert int(summed[0]) == int(x.sum()) and np.asarray(summed[1]).tolist() == (x + 1).astype(np.uint8).tolist()
