"""pmap over virtual CPU devices, against JAX 0.10.2's recorded results (8 host devices)."""

from functools import partial

import numpy as np
import pytest

import srcjax
import srcjax.numpy as jnp
from srcjax import lax

# (of the virtual CPU devices and the CPU's native code: the CPU is the default backend, GPU or not)
pytestmark = pytest.mark.usefixtures("cpu_backend")


@pytest.fixture(autouse=True)
def eight_devices():
    saved = srcjax.config.jax_num_cpu_devices
    srcjax.config.update("jax_num_cpu_devices", 8)
    yield
    srcjax.config.update("jax_num_cpu_devices", saved)


X = np.arange(12.0, dtype=np.float32).reshape(4, 3)


def test_results_are_laid_out_over_the_devices_as_jax_lays_them_out():
    y = srcjax.pmap(lambda v: v * 2 + lax.axis_index("i"), axis_name="i")(X)
    np.testing.assert_array_equal(np.asarray(y), X * 2 + np.arange(4)[:, None])
    assert y.shape == (4, 3) and len(y.addressable_shards) == 4
    shard = y.addressable_shards[2]
    assert shard.index == (slice(2, 3), slice(None)) and shard.data.shape == (1, 3)
    np.testing.assert_array_equal(np.asarray(shard.data), [[14.0, 16.0, 18.0]])
    assert y.devices() == set(srcjax.devices()[:4])
    assert y.sharding.spec == ("_internal_pmap_axis_name",)


def test_collectives():
    np.testing.assert_array_equal(np.asarray(srcjax.pmap(lambda v: lax.psum(v, "i"), "i")(X)),
                                  np.tile(X.sum(0), (4, 1)))
    mean, top = srcjax.pmap(lambda v: (lax.pmean(v, "i"), lax.pmax(v, "i")), "i")(X)
    np.testing.assert_allclose(np.asarray(mean), np.tile(X.mean(0), (4, 1)))
    np.testing.assert_array_equal(np.asarray(top), np.tile(X[-1], (4, 1)))
    assert srcjax.pmap(lambda v: lax.all_gather(v, "i"), "i")(X).shape == (4, 4, 3)


def test_axis_index_over_several_names():
    """Over a tuple of names, the index over them together, the last varying fastest (JAX 0.10's numbers)."""
    inner = srcjax.vmap(srcjax.vmap(lambda x: lax.axis_index(("i", "j")), axis_name="j"), axis_name="i")
    np.testing.assert_array_equal(np.asarray(inner(np.zeros((2, 3)))), [[0, 1, 2], [3, 4, 5]])
    swapped = srcjax.vmap(srcjax.vmap(lambda x: lax.axis_index(("j", "i")), axis_name="j"), axis_name="i")
    np.testing.assert_array_equal(np.asarray(swapped(np.zeros((2, 3)))), [[0, 2, 4], [1, 3, 5]])
    outer = srcjax.pmap(srcjax.vmap(lambda x: lax.axis_index(("i", "j")), axis_name="j"), axis_name="i")
    np.testing.assert_array_equal(np.asarray(outer(np.zeros((2, 3)))), [[0, 1, 2], [3, 4, 5]])


def test_static_broadcast_and_unmapped_arguments_and_out_axes():
    np.testing.assert_array_equal(np.asarray(srcjax.pmap(lambda v, k: v * k, static_broadcasted_argnums=1)(X, 3)),
                                  X * 3)
    np.testing.assert_array_equal(np.asarray(srcjax.pmap(lambda v, w: v + w, in_axes=(0, None))(X, np.ones(3))),
                                  X + 1)
    moved = srcjax.pmap(lambda v: v * 2, out_axes=1)(X)
    assert moved.shape == (3, 4)
    np.testing.assert_array_equal(np.asarray(moved), (X * 2).T)


def test_compositions():
    # recorded from JAX: grad through a pmap, pmap of a grad with a psum (psum's transpose is psum: 4 * 2 v)
    np.testing.assert_allclose(
        np.asarray(srcjax.grad(lambda v: jnp.sum(srcjax.pmap(jnp.sin)(v)))(X)), np.cos(X), rtol=1e-6)
    np.testing.assert_array_equal(
        np.asarray(srcjax.pmap(srcjax.grad(lambda v: lax.psum(v * v, "i").sum()), axis_name="i")(X)), 8 * X)
    np.testing.assert_array_equal(np.asarray(srcjax.jit(srcjax.pmap(lambda v: v * 3))(X)), X * 3)
    assert srcjax.vmap(srcjax.pmap(lambda v: v * 3))(np.ones((5, 4, 3))).shape == (5, 4, 3)
    assert srcjax.pmap(srcjax.vmap(lambda v: v * 3))(np.ones((4, 5, 3))).shape == (4, 5, 3)
    assert srcjax.pmap(srcjax.pmap(lambda v: v + 1))(np.ones((2, 4, 3))).shape == (2, 4, 3)


def test_seed_normalize_with_psum():
    @partial(srcjax.pmap, axis_name="i")
    def normalize(x):
        return x / lax.psum(x, "i")

    np.testing.assert_allclose(np.asarray(normalize(jnp.arange(4.0))), [0.0, 1 / 6, 1 / 3, 0.5], rtol=1e-6)


def test_more_replicas_than_devices_is_an_error():
    with pytest.raises(ValueError, match="requires 9 logical devices, but only 8"):
        srcjax.pmap(lambda v: v)(np.ones((9, 2)))


# -- replicas on threads, collectives in shared memory (codegen/llvm/replicas.py) -------------------------------------
def _both_ways(monkeypatch, f, *args):
    """``f(*args)`` as replicas on threads and as one batched call: the results must agree (bit for bit)."""
    monkeypatch.setenv("SRCJAX_PMAP", "replicas")
    threaded = srcjax.pmap(f, axis_name="i")
    got = threaded(*args)
    assert any(s is not None for s in threaded._spmd.values()), "the replicas did not run natively"
    monkeypatch.setenv("SRCJAX_PMAP", "batched")
    want = srcjax.pmap(f, axis_name="i")(*args)
    for g, w in zip(srcjax.tree_util.tree_leaves(got), srcjax.tree_util.tree_leaves(want)):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)
    return got


@pytest.mark.parametrize("size", [6, 40_000])  # (the second shares the reduction out by slices)
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_replicas_meet_for_every_collective(monkeypatch, size, dtype):
    x = (np.random.default_rng(0).normal(size=(4, size)) * 10).astype(dtype)

    def f(v):
        return (lax.psum(v, "i"), lax.pmax(v, "i"), lax.pmin(v, "i"), lax.pmean(v, "i"), lax.all_gather(v, "i"),
                lax.axis_index("i"))

    total, top, bottom, mean, gathered, index = _both_ways(monkeypatch, f, x)
    np.testing.assert_array_equal(np.asarray(top)[2], x.max(0))
    np.testing.assert_array_equal(np.asarray(gathered)[1], x)
    np.testing.assert_array_equal(np.asarray(index), np.arange(4))
    for row in np.asarray(total):  # every replica holds the same bits
        np.testing.assert_array_equal(row, np.asarray(total)[0])


def test_replicas_in_loops_and_branches(monkeypatch):
    x = np.arange(8.0, dtype=np.float32).reshape(4, 2) + 1.0

    def f(v):
        while lax.psum(jnp.sum(v), "i") < 1000.0:  # a loop every replica leaves on the same trip
            v = v * 2.0
        if lax.pmax(v[0], "i") > 100.0:  # a branch every replica takes
            v = v + lax.pmax(v, "i")
        else:
            v = v - lax.pmax(v, "i")
        return v

    _both_ways(monkeypatch, f, x)


def test_collectives_under_branches_and_loops_that_differ_between_replicas_run_batched(monkeypatch):
    """A branch or trip count decided per replica around a collective: the replicas would wait for each other
    forever, or meet in different collectives and combine unrelated values (the branch gave [9, 9, 9, 9]); the
    batched call gives each example its own value: JAX 0.10.2's vmap with axis_name gives these numbers."""
    monkeypatch.setenv("SRCJAX_PMAP", "replicas")
    x = np.arange(4.0, dtype=np.float32).reshape(4, 1)

    def branches(v):
        if lax.axis_index("i") % 2 == 0:
            v = lax.pmax(v * 2, "i")
        else:
            v = lax.pmax(v * 3, "i")
        return v

    def trips(v, k):  # (k is mapped: each replica its own trip count; trip 2 sums 0 + 7 + 8 + 9)
        return lax.fori_loop(0, k, lambda i, c: c + lax.psum(c, "i"), v)

    def uniform_trips(v, k):  # (k unmapped, the same on every replica: the replicas run it)
        return lax.fori_loop(0, k, lambda i, c: c + lax.psum(c, "i"), v)

    f = srcjax.pmap(branches, "i")
    np.testing.assert_array_equal(np.asarray(f(x)).ravel(), [6.0, 9.0, 6.0, 9.0])
    assert all(s is None for s in f._spmd.values())
    g = srcjax.pmap(trips, "i")
    np.testing.assert_array_equal(np.asarray(g(x, np.array([0, 1, 1, 2], np.int32))).ravel(), [0.0, 7.0, 8.0, 33.0])
    assert all(s is None for s in g._spmd.values())
    h = srcjax.pmap(uniform_trips, "i", in_axes=(0, None))
    np.testing.assert_array_equal(np.asarray(h(x, 2)).ravel(), [36.0, 37.0, 38.0, 39.0])
    assert all(s is not None for s in h._spmd.values())


def test_pytree_prefix_in_axes_and_keyword_arguments():
    """in_axes may be a prefix of an argument's tree (a dict or tuple entry per leaf), as vmap's; keyword
    arguments are mapped over their axis 0. Values as JAX 0.10.2's."""
    x = np.arange(8.0, dtype=np.float32).reshape(4, 2)
    b = np.float32(1.0)
    f = srcjax.pmap(lambda p: p["a"] + p["b"], in_axes=({"a": 0, "b": None},))
    np.testing.assert_array_equal(np.asarray(f({"a": x, "b": b})), x + 1)
    g = srcjax.pmap(lambda p: p[0] + p[1], in_axes=((0, None),))
    np.testing.assert_array_equal(np.asarray(g((x, b))), x + 1)
    h = srcjax.pmap(lambda v, s=None: v * s)
    v, s = np.arange(12.0, dtype=np.float32).reshape(4, 3), np.arange(4.0, dtype=np.float32)[:, None] * np.ones(3)
    np.testing.assert_array_equal(np.asarray(h(v, s=s.astype(np.float32))), v * s)


def test_static_arguments_stay_python_values_on_replicas(monkeypatch):
    """A static_broadcasted_argnums argument is a Python value to the replicas' trace too: an `if` on it picks a
    path, a tuple of it is a shape (it was traced as an array there, the `if` refused)."""
    monkeypatch.setenv("SRCJAX_PMAP", "replicas")
    x = np.arange(8.0, dtype=np.float32).reshape(4, 2)
    f = srcjax.pmap(lambda k, v: lax.psum(v, "i").sum() if k else v, "i", static_broadcasted_argnums=0)
    np.testing.assert_array_equal(np.asarray(f(True, x)), np.full(4, x.sum()))
    np.testing.assert_array_equal(np.asarray(f(False, x)), x)
    g = srcjax.pmap(lambda v, shape: lax.psum(v.reshape(shape), "i"), "i", static_broadcasted_argnums=1)
    np.testing.assert_array_equal(np.asarray(g(x, (2, 1))), np.tile(x.sum(0)[:, None], (4, 1, 1)))
    h = srcjax.pmap(lambda v, k: lax.psum(v, "i") * k, "i", static_broadcasted_argnums=1)
    assert np.asarray(h(x, True)).dtype == np.float32 and np.asarray(h(x, 2)).dtype == np.float32
    np.testing.assert_array_equal(np.asarray(h(x, 3)), np.tile(x.sum(0) * 3, (4, 1)))


@pytest.mark.parametrize("dtype", [np.float16, np.complex64])
def test_collectives_of_dtypes_the_replicas_do_not_compile_run_batched(monkeypatch, dtype):
    monkeypatch.setenv("SRCJAX_PMAP", "replicas")
    x = (np.arange(8).reshape(4, 2) * (1 + 1j if dtype == np.complex64 else 1)).astype(dtype)
    total = srcjax.pmap(lambda v: lax.psum(v, "i"), "i")(x)
    assert total.dtype == dtype
    np.testing.assert_array_equal(np.asarray(total), np.tile(x.sum(0), (4, 1)))


def test_an_unmapped_result_is_the_first_devices():
    """out_axes=None takes device 0's value, unchecked (JAX 0.10.2: [0., 2., 4.] and [0., 0.])."""
    x = np.arange(12.0, dtype=np.float32).reshape(4, 3)
    np.testing.assert_array_equal(np.asarray(srcjax.pmap(lambda v: v * 2, out_axes=None)(x)), [0.0, 2.0, 4.0])
    index = srcjax.pmap(lambda v: v[:2] * 0 + lax.axis_index("i"), "i", out_axes=None)(x)
    np.testing.assert_array_equal(np.asarray(index), [0.0, 0.0])
    both = srcjax.pmap(lambda v: (v, v + 1), out_axes=(0, None))(x)
    np.testing.assert_array_equal(np.asarray(both[1]), x[0] + 1)


def test_argument_errors_of_the_axis_and_collectives():
    x = np.ones((4, 3), np.float32)
    with pytest.raises(ValueError, match="Specified axis_size 2 doesn't match received axis_size 4"):
        srcjax.pmap(lambda v: v, axis_size=2)(x)
    with pytest.raises(ValueError, match="scatter_dimension 3 is out of range"):
        srcjax.pmap(lambda v: lax.psum_scatter(v, "i", scatter_dimension=3), "i")(np.ones((4, 2, 4), np.float32))
    with pytest.raises(ValueError, match="repeated axis name"):  # (the integer pmean divided by 16 here)
        srcjax.pmap(lambda v: lax.pmean(v, ("i", "i")), "i")(np.ones((4, 3), np.int32))
    with pytest.raises(TypeError, match="pmap in_axes must be an int, None, or"):  # (JAX's message)
        srcjax.pmap(lambda v: v, in_axes=0.0)
    with pytest.raises(ValueError, match="both static"):
        srcjax.pmap(lambda v, k: v * k, static_broadcasted_argnums=1, donate_argnums=1)


def test_is_fully_replicated():
    """As JAX 0.10.2's: a pmap's mapped result is not, an unmapped one (out_axes=None) and a plain array are."""
    x = np.ones((4, 3), np.float32)
    assert not srcjax.pmap(lambda v: v)(x).is_fully_replicated
    assert srcjax.pmap(lambda v: lax.psum(v, "i"), "i", out_axes=None)(x).is_fully_replicated
    assert jnp.ones(3).is_fully_replicated and jnp.ones(3).sharding.is_fully_replicated


def test_mapped_axis_errors_name_the_argument():
    f = srcjax.pmap(lambda a, b: a + b)
    with pytest.raises(ValueError, match=r"size 4: axis 0 of argument a of type float32\[4,3\];\n.*size 3: axis 0 "
                                         r"of argument b of type float32\[3,3\]"):
        f(np.ones((4, 3), np.float32), np.ones((3, 3), np.float32))
    with pytest.raises(ValueError, match=r"rank should be at least 1, but argument b\[1\] has rank 0"):
        srcjax.pmap(lambda a, b: a)(np.ones(4), (np.ones(4), 2.0))
    with pytest.raises(ValueError, match="pmap can map only arrays, but argument a is a str"):
        srcjax.pmap(lambda a: a)("x")


def test_lower_and_compile():
    """pmap(f).lower(*args).compile() is called with the non-static arguments, its results laid out as pmap's."""
    x = np.arange(12.0, dtype=np.float32).reshape(4, 3)
    f = srcjax.pmap(lambda v, k: lax.psum(v * k, "i"), "i", static_broadcasted_argnums=1)
    lowered = f.lower(x, 2)
    assert isinstance(lowered.as_text(), str)
    y = lowered.compile()(x)
    np.testing.assert_array_equal(np.asarray(y), np.tile(x.sum(0) * 2, (4, 1)))
    assert len(y.addressable_shards) == 4
    with pytest.raises(TypeError, match="compiled with float32"):
        lowered.compile()(np.ones((4, 2), np.float32))


def test_replicas_are_compiled_again_when_a_traced_flag_changes(monkeypatch):
    """The replicas' programs are keyed by the flags tracing reads, as jit's are (the second call reused the
    first stream's program)."""
    monkeypatch.setenv("SRCJAX_PMAP", "replicas")
    saved = srcjax.config.jax_threefry_partitionable
    keys = srcjax.random.split(srcjax.random.PRNGKey(0), 4)

    def f(k):
        return lax.psum(srcjax.random.normal(k, (3,)), "i")

    try:
        pmapped = srcjax.pmap(f, "i")
        srcjax.config.update("jax_threefry_partitionable", False)
        off = np.asarray(pmapped(keys))
        srcjax.config.update("jax_threefry_partitionable", True)
        on = np.asarray(pmapped(keys))
        np.testing.assert_array_equal(on, np.asarray(srcjax.pmap(f, "i")(keys)))
        assert not np.array_equal(off, on)
    finally:
        srcjax.config.update("jax_threefry_partitionable", saved)


def test_debug_nans_checks_a_pmap_that_would_run_as_replicas(monkeypatch):
    """(JAX 0.10.2 raises FloatingPointError here; the replicas returned the NaNs unchecked.)"""
    monkeypatch.setenv("SRCJAX_PMAP", "replicas")
    x = np.arange(8.0, dtype=np.float32).reshape(4, 2)
    srcjax.config.update("jax_debug_nans", True)
    try:
        with pytest.raises(FloatingPointError, match="nan"):
            srcjax.pmap(lambda v: lax.psum(jnp.log(v - 1.0), "i"), "i")(x)
    finally:
        srcjax.config.update("jax_debug_nans", False)


def test_axis_index_groups():
    """Reductions and all_gather within groups of the axis (JAX 0.10.2's pmap gives these numbers)."""
    x = np.arange(8.0, dtype=np.float32).reshape(4, 2)
    total = srcjax.pmap(lambda v: lax.psum(v, "i", axis_index_groups=[[0, 2], [1, 3]]), "i")(x)
    np.testing.assert_array_equal(np.asarray(total), [[4, 6], [8, 10], [4, 6], [8, 10]])
    top = srcjax.pmap(lambda v: lax.pmax(v, "i", axis_index_groups=[[0, 1], [2, 3]]), "i")(x)
    np.testing.assert_array_equal(np.asarray(top), [[2, 3], [2, 3], [6, 7], [6, 7]])
    mean = srcjax.pmap(lambda v: lax.pmean(v, "i", axis_index_groups=[[0, 1], [2, 3]]), "i")(x.astype(np.int32))
    assert mean.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(mean), [[1, 2], [1, 2], [5, 6], [5, 6]])
    rows = srcjax.pmap(lambda v: lax.all_gather(v, "i", axis_index_groups=[[3, 1], [2, 0]]), "i")(x)
    np.testing.assert_array_equal(np.asarray(rows)[0], x[[2, 0]])
    np.testing.assert_array_equal(np.asarray(rows)[3], x[[3, 1]])
    grad = srcjax.pmap(srcjax.grad(lambda v: (lax.psum(v * v, "i", axis_index_groups=[[0, 1], [2, 3]])
                                              * (1 + lax.axis_index("i"))).sum()), "i")(x)
    np.testing.assert_array_equal(np.asarray(grad), 2 * x * np.array([3, 3, 7, 7], np.float32)[:, None])
    with pytest.raises(ValueError, match="cover all indices exactly once"):
        srcjax.pmap(lambda v: lax.psum(v, "i", axis_index_groups=[[0, 1], [1, 2]]), "i")(x)
