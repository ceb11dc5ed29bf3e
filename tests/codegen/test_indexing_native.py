"""Gathers, scatters, arg-reductions and cumulative scans compiled natively (no host call), against the eager
runtime: the index tables of tests/runtime/test_getitem.py, every gather/scatter mode with indices out of
range, batching axes from vmap, duplicates, NaNs and signed zeros, dtypes, and empty arrays."""

import numpy as np
import pytest

import srcjax
import srcjax.numpy as jnp
from srcjax.runtime.config import config
from srcjax.runtime.numpy.indexing import IndexUpdateHelper, getitem
from srcjax import lax
from tests.runtime.test_getitem import INDEXES, UPDATE_INDEXES, X

RNG = np.random.default_rng(7)


def native(fn, *args, **jit_kwargs):
    """``fn`` under jit, checked to have compiled with no host call; returns (compiled result, eager result)."""
    jitted = srcjax.jit(fn, **jit_kwargs)
    got = jitted(*args)
    (specialisation,) = jitted._cache.values()
    assert specialisation.native is not None, specialisation.native_error
    assert not specialisation.native.plan.host_ops, [op.name for op in specialisation.native.plan.host_ops]
    return got, fn(*[jnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args])


def agree(got, want, exact=True):
    for g, w in zip(srcjax.tree_util.tree_leaves(got), srcjax.tree_util.tree_leaves(want)):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        if exact or w.dtype.kind in "biu":
            np.testing.assert_array_equal(g, w)
        else:
            eps = float(np.finfo(w.dtype).eps)
            scale = float(np.max(np.abs(w[np.isfinite(w)]), initial=1.0))
            np.testing.assert_allclose(g, w, rtol=8 * eps, atol=8 * eps * scale)


# -- gather -------------------------------------------------------------------------------------------------
GATHERED = [i for i in INDEXES if not isinstance(i, bool)]


@pytest.mark.parametrize("index", GATHERED, ids=[repr(i).replace("\n", "") for i in GATHERED])
def test_getitem_compiled(index):
    got, want = native(lambda x: getitem(x, index) * 2.0, X)
    agree(got, want)
    np.testing.assert_array_equal(np.asarray(got), X[index] * 2.0)


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint8, np.int32, np.int64, np.float64])
def test_gather_dtypes_and_run_time_indices(dtype):
    with config_x64():
        x = (RNG.normal(size=(7, 4)) * 5).astype(dtype)
        idx = np.array([6, 0, -1, 3, 3, 9, -9], np.int32)  # negative ones wrap, out-of-range ones clamp
        got, want = native(lambda x, i: (x[i], x[i, 1:3], jnp.take(x, i, axis=0, mode="fill")), x, idx)
        agree(got, want)


@pytest.mark.parametrize("mode", ["clip", "fill", "promise_in_bounds"])
def test_gather_modes(mode):
    dn = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(), start_index_map=(0,))
    x = np.arange(10.0, dtype=np.float32)
    idx = np.array([[0], [8], [9], [-2], [3]], np.int32)
    got, want = native(lambda x, i: lax.gather(x, i, dn, (2,), mode=mode, fill_value=-1.0 if mode == "fill" else None),
                       x, idx)
    agree(got, want)


def test_gather_of_fused_operand_and_indices():
    x = RNG.normal(size=(8, 5)).astype(np.float32)
    labels = np.array([4, 0, 3, 3, 1, 2, 0, 4], np.int32)

    def loss(x, labels):  # the negative log-likelihood of the labels: indices computed, operand fused
        logp = jax_log_softmax(x)
        return -jnp.mean(logp[jnp.arange(x.shape[0]), labels]), jnp.take_along_axis(x * 2.0, (labels % 5)[:, None],
                                                                                   axis=1)

    got, want = native(loss, x, labels)
    agree(got, want, exact=False)


def jax_log_softmax(x):
    return x - jnp.log(jnp.sum(jnp.exp(x), axis=1, keepdims=True))


def test_vmapped_gather_has_batching_axes():
    x = RNG.normal(size=(4, 6, 3)).astype(np.float32)
    idx = np.array([[5, 0], [1, 1], [2, 4], [0, 3]], np.int32)
    got, want = native(srcjax.vmap(lambda x, i: x[i] + 1.0), x, idx)
    agree(got, want)
    np.testing.assert_array_equal(np.asarray(got), np.stack([x[b][idx[b]] + 1.0 for b in range(4)]))


def test_gather_result_not_written_over_a_donated_operand():
    perm = np.array([3, 2, 1, 0, 4, 5], np.int32)
    x = np.arange(6.0, dtype=np.float32)
    f = srcjax.jit(lambda x, i: x[i], donate_argnums=0)
    out = f(jnp.asarray(x), perm)
    np.testing.assert_array_equal(np.asarray(out), x[perm])


# -- scatter ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("index", UPDATE_INDEXES, ids=[repr(i).replace("\n", "") for i in UPDATE_INDEXES])
def test_at_updates_compiled(index):
    values = RNG.integers(-9, 9, X[index].shape).astype(np.float32)
    for name in ["set", "add", "multiply", "min", "max"]:
        update = lambda x, v, name=name: getattr(IndexUpdateHelper(x)[index], name)(v)  # noqa: E731
        got, want = native(update, X, values)
        agree(got, want)


@pytest.mark.parametrize("mode", [None, "clip", "drop", "promise_in_bounds"])
def test_scatter_modes_out_of_range(mode):
    idx = np.array([1, 1, 7, -1, -8, 4], np.int32)
    x = np.arange(5, dtype=np.int32)
    vals = np.array([10, 20, 30, 40, 50, 60], np.int32)
    ref = lambda x, i, v: (x.at[i].add(v, mode=mode), x.at[i].set(v, mode=mode), x.at[i].max(v, mode=mode))  # noqa
    got, want = native(ref, x, idx, vals)
    agree(got, want)


def test_scatter_windows_clip_and_drop():
    sdn = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(),
                                      scatter_dims_to_operand_dims=(0,))
    idx = np.array([[4], [0], [2]], np.int32)
    ups = np.ones((3, 2), np.float32)
    for mode in ["clip", "fill"]:
        add = lambda x, i, u, mode=mode: lax.scatter_add(x, i, u, sdn, mode=mode)  # noqa: E731
        got, want = native(add, np.zeros(5, np.float32), idx, ups)
        agree(got, want)


@pytest.mark.parametrize("dtype", [np.bool_, np.uint8, np.int64, np.float64])
def test_scatter_dtypes_with_duplicates(dtype):
    with config_x64():
        x = (RNG.normal(size=(6, 3)) * 4).astype(dtype)
        idx = np.array([5, 0, 5, 2, 5], np.int32)
        v = (RNG.normal(size=(5, 3)) * 4).astype(dtype)
        f = lambda x, i, v: (x.at[i].add(v), x.at[i].multiply(v), x.at[i].min(v), x.at[i].set(v))  # noqa: E731
        got, want = native(f, x, idx, v)
        agree(got, want, exact=np.dtype(dtype).kind != "f")


def test_vmapped_scatter_and_gather_gradient():
    x = RNG.normal(size=(3, 6)).astype(np.float32)
    idx = np.array([[0, 5, 5], [1, 2, 3], [4, 4, 4]], np.int32)
    got, want = native(srcjax.vmap(lambda x, i: x.at[i].add(x[i] * 2.0)), x, idx)
    agree(got, want, exact=False)
    grad = srcjax.grad(lambda x, i: jnp.sum(jnp.sin(x[i]) * jnp.arange(3.0)))
    got, want = native(grad, x[0], idx[2])
    agree(got, want, exact=False)


# -- argmax / argmin ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.uint8, np.bool_])
def test_arg_reductions(dtype):
    with config_x64():
        x = (RNG.normal(size=(5, 7, 3)) * 3).astype(dtype)
        x[1, 2, 0] = x[1, 5, 0]  # ties: the first wins
        if np.dtype(dtype).kind == "f":
            x[2, 3, 1] = x[2, 6, 1] = np.nan  # the first NaN wins
            x[4, :, 2] = -0.0
            x[4, 3, 2] = 0.0  # -0.0 and 0.0 tie

        def f(x):
            return [jnp.argmax(x, axis=a) for a in (0, 1, 2)] + [jnp.argmin(x, axis=a) for a in (0, 1, 2)] + [
                jnp.argmax(x), jnp.argmin(x.T, axis=1), jnp.argmax(x, axis=-1, keepdims=True)]

        got, want = native(f, x)
        agree(got, want)
        for a in (0, 1, 2):
            np.testing.assert_array_equal(np.asarray(got[a]), np.argmax(x, axis=a))


def test_argmax_of_a_fused_expression_and_lax_index_dtype():
    x = RNG.normal(size=(16, 10)).astype(np.float32)
    got, want = native(lambda x: (jnp.argmax(jnp.tanh(x) * 2.0, axis=1),
                                  lax.argmin(x, 0, np.uint8), lax.argmax(x, 1, np.int8)), x)
    agree(got, want)


# -- cumulative scans -------------------------------------------------------------------------------------
SCANS = [lax.cumsum, lax.cumprod, lax.cummax, lax.cummin, lax.cumlogsumexp]


@pytest.mark.parametrize("scan", SCANS, ids=[s.__name__ for s in SCANS])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.uint8])
def test_scans(scan, dtype):
    if scan is lax.cumlogsumexp and np.dtype(dtype).kind != "f":
        return
    with config_x64():
        x = (RNG.normal(size=(4, 9, 3)) * (0.7 if scan is lax.cumprod else 3)).astype(dtype)
        if np.dtype(dtype).kind == "f":
            x[0, 0, 0], x[1, 4, 1], x[2, :, 2] = -0.0, np.nan, -np.inf

        def f(x):
            return [scan(x, axis=a, reverse=r) for a in (0, 1, 2) for r in (False, True)]

        got, want = native(f, x)
        agree(got, want, exact=scan in (lax.cummax, lax.cummin) or np.dtype(dtype).kind != "f")
        if scan is lax.cumsum and np.dtype(dtype).kind == "f":
            assert np.signbit(np.asarray(got[0])[0, 0, 0])  # -0.0 stays -0.0


def test_cumsum_long_row_and_jnp_forms():
    x = RNG.normal(size=(3000,)).astype(np.float32)
    m = RNG.integers(0, 5, size=(6, 5)).astype(np.int32)
    got, want = native(lambda x, m: (jnp.cumsum(x), jnp.cumprod(m, axis=1), jnp.cumsum(m), jnp.cumsum(x[:0]),
                                      jnp.cumsum(x[:1] * 3.0)), x, m)
    agree(got, want)


def test_float32_running_sums_and_products_accumulate_in_float64():
    # a float32 running value drifts with the row's length (~1e-5 here; JAX's tree of partial sums ~4e-7):
    # each prefix is the float64 running value rounded, compiled and eager alike
    x = RNG.uniform(0.5, 1.5, size=(2, 100_000)).astype(np.float32)
    y = RNG.uniform(0.999, 1.001, size=(100_000,)).astype(np.float32)
    got, want = native(lambda x, y: (jnp.cumsum(x, axis=1), lax.cumsum(x, axis=1, reverse=True), jnp.cumprod(y)), x, y)
    agree(got, want)
    wide = [np.cumsum(x.astype(np.float64), axis=1), np.flip(np.cumsum(np.flip(x, 1).astype(np.float64), 1), 1),
            np.cumprod(y.astype(np.float64))]
    for g, w in zip(got, wide, strict=True):
        np.testing.assert_array_max_ulp(np.asarray(g), w.astype(np.float32), maxulp=1)


def test_grad_of_cumsum_compiled():
    x = RNG.normal(size=(5, 4)).astype(np.float32)
    got, want = native(srcjax.grad(lambda x: jnp.sum(jnp.cumsum(x, axis=1) ** 2)), x)
    agree(got, want, exact=False)


class config_x64:
    """float64 and int64 arguments stay themselves inside the block (with x64 off, jit narrows them)."""

    def __enter__(self):
        self.saved = config.jax_enable_x64
        config.update("jax_enable_x64", True)

    def __exit__(self, *exc):
        config.update("jax_enable_x64", self.saved)
