"""Reductions whose target is a long innermost kept axis (``sum(a, axis=0)`` of a wide ``a``) add into the target
a tile at a time (codegen/llvm/nodes.py, ``tile_target``): every dtype and combination, a last tile cut short,
kept axes before and between the reduced ones, split across threads or not, against NumPy."""

import numpy as np
import pytest

import srcjax
import srcjax.numpy as jnp
from srcjax.codegen.llvm import entry, kernels, nodes

RNG = np.random.default_rng(11)
LONG = 3 * nodes.TILE_BYTES // 4 + 5  # float32: one tile and a short one; float64: two and a short one


@pytest.fixture(autouse=True)
def _x64(x64):  # (every test here: 64-bit types on)
    yield


def compiled(fn, args, monkeypatch, parallel):
    monkeypatch.setenv("SRCJAX_NUM_THREADS", "4")
    monkeypatch.setenv("SRCJAX_CACHE", "0")
    monkeypatch.setattr(kernels, "PARALLEL_MIN_WORK", 1 if parallel else 1 << 62)
    monkeypatch.setattr(kernels, "WAKE_MIN_WORK", 0)
    executable = srcjax.jit(fn).lower(*args).compile().native
    assert executable is not None
    return executable


@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("combine", ["sum", "max", "min", "prod"])
def test_a_reduction_over_leading_axes_adds_into_tiles(monkeypatch, parallel, dtype, combine):
    shape = (3, 2, 5, LONG)
    a = RNG.normal(size=shape) * (1.0 if combine != "prod" else 0.3) + (1.0 if combine == "prod" else 0.0)
    a = (a * 10).astype(dtype) if np.dtype(dtype).kind == "i" else a.astype(dtype)
    if combine == "prod" and np.dtype(dtype).kind == "i":
        a = np.clip(a, 1, 2).astype(dtype) * RNG.choice([1, -1], size=shape).astype(dtype)
    reducer = getattr(jnp, combine)

    def fn(a):
        return reducer(a, axis=0), reducer(a, axis=(0, 2)), reducer(a * 2, axis=2), reducer(a, axis=(1, 2))

    executable = compiled(fn, [a], monkeypatch, parallel)
    got = executable(a)
    exact = a.astype(np.float64) if a.dtype.kind == "f" else a
    want = [getattr(np, combine)(x, axis=ax)
            for x, ax in ((exact, 0), (exact, (0, 2)), (exact * 2, 2), (exact, (1, 2)))]
    for g, w in zip(got, want):
        if a.dtype.kind == "f":
            np.testing.assert_allclose(np.asarray(g, np.float64), w, rtol=5e-6 if dtype == np.float32 else 1e-13,
                                       atol=1e-5 if dtype == np.float32 else 1e-13)
        else:
            np.testing.assert_array_equal(g, w)


def test_booleans_and_an_iota_on_another_axis(monkeypatch):
    a = RNG.normal(size=(4, LONG)) > 0.5

    def fn(a):
        rows = jnp.arange(4)[:, None] * jnp.ones((4, a.shape[1]), jnp.int32)
        return jnp.any(a, axis=0), jnp.all(a, axis=0), jnp.sum(jnp.where(a, rows, 0), axis=0)

    got = compiled(fn, [a], monkeypatch, parallel=True)(a)
    np.testing.assert_array_equal(got[0], a.any(0))
    np.testing.assert_array_equal(got[1], a.all(0))
    np.testing.assert_array_equal(got[2], np.where(a, np.arange(4)[:, None], 0).sum(0))


def test_the_wide_sum_is_tiled_and_a_narrow_one_is_not(monkeypatch):
    tiles = []

    def spy(body):
        body = nodes.tile_target(body)
        tiles.append(body.tile)
        return body

    monkeypatch.setattr(entry, "tile_target", spy)
    compiled(lambda a: jnp.sum(a, axis=0), [_f32(8, LONG)], monkeypatch, parallel=True)
    compiled(lambda a: jnp.sum(a, axis=0), [_f32(8, 300)], monkeypatch, parallel=True)
    compiled(lambda a: jnp.sum(a, axis=1), [_f32(8, LONG)], monkeypatch, parallel=True)
    assert tiles == [(0, LONG), None, None]


def _f32(*shape):
    return RNG.normal(size=shape).astype(np.float32)
