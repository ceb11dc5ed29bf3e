"""``srcjax.pure_callback``: a Python function's results inside programs, as JAX 0.10.2 gives them (the calls and
shapes each ``vmap_method`` makes, the messages of its checks, recorded beside JAX), eagerly, jitted (a host call
from native code), in loops and branches, batched, and refused under differentiation."""

import numpy as np
import pytest

import srcjax
import srcjax.numpy as jnp
from srcjax import lax


def _like(x):
    return srcjax.ShapeDtypeStruct(x.shape, x.dtype)


def test_eager_and_jitted_calls_get_arrays_and_give_declared_results():
    seen = []

    def sine(x):
        seen.append((type(x), x.dtype))
        return np.sin(x)

    x = jnp.arange(3.0)
    eager = srcjax.pure_callback(sine, _like(x), x)
    f = srcjax.jit(lambda x: srcjax.pure_callback(sine, _like(x), x) * 2)
    assert f.lower(x).compile().native is not None  # (the callback is a host call of the native code)
    np.testing.assert_allclose(eager, np.sin(np.arange(3.0)), rtol=1e-6)
    np.testing.assert_allclose(f(x), 2 * np.sin(np.arange(3.0)), rtol=1e-6)
    assert eager.dtype == np.float32 and seen == [(srcjax.Array, np.float32)] * 2


def test_pytrees_keyword_arguments_and_scalar_results():
    x = jnp.arange(3.0)
    out = srcjax.jit(lambda x: srcjax.pure_callback(lambda a, b, k: {"s": a + b, "p": [a * b * k]},
                                                    {"s": _like(x), "p": [_like(x)]}, x, x, k=3.0))(x)
    assert sorted(out) == ["p", "s"] and isinstance(out["p"], list)
    np.testing.assert_array_equal(out["p"][0], [0.0, 3.0, 12.0])
    total = srcjax.jit(lambda x: srcjax.pure_callback(lambda a: a.sum(), srcjax.ShapeDtypeStruct((), jnp.float32), x))
    assert total(x).shape == () and float(total(x)) == 3.0


def test_results_are_checked_with_jaxs_messages():
    x = jnp.arange(3.0)
    call = srcjax.jit(lambda x, f: srcjax.pure_callback(f, _like(x), x), static_argnums=1)
    with pytest.raises(RuntimeError, match=r"Incorrect output shape for return value #0: Expected: \(3,\), "
                                           r"Actual: \(4,\)"):
        call(x, lambda a: np.zeros(4, np.float32))
    with pytest.raises(RuntimeError, match="Incorrect output dtype for return value #0: Expected: float32, "
                                           "Actual: int32"):
        call(x, lambda a: np.zeros(3, np.int32))
    with pytest.raises(RuntimeError, match="Mismatched number of outputs from callback. Expected: 1, Actual: 2"):
        call(x, lambda a: [a, a])
    assert call(x, lambda a: np.zeros(3, np.float64)).dtype == np.float32  # (float64 is float32 with x64 off)

    def boom(a):
        raise KeyError("from the callback")

    with pytest.raises(KeyError, match="from the callback"):
        call(x, boom)
    with pytest.raises(ValueError, match="vmap_method must be on of the allowed methods"):
        srcjax.pure_callback(np.sin, _like(x), x, vmap_method="parallel")


@pytest.mark.parametrize("method, calls", [
    ("sequential", [((), ())] * 3),
    ("sequential_unrolled", [((), ())] * 3),
    ("expand_dims", [((3,), (1,))]),
    ("broadcast_all", [((3,), (3,))]),
    ("legacy_vectorized", [((3,), ())]),
])
def test_vmap_methods_call_as_jax_does(method, calls):
    seen = []

    def shifted_sine(x, y):
        seen.append((x.shape, y.shape))
        return np.sin(x) + y

    x = jnp.arange(3.0)
    out = srcjax.vmap(lambda x: srcjax.pure_callback(shifted_sine, srcjax.ShapeDtypeStruct((), jnp.float32), x,
                                                     jnp.float32(1), vmap_method=method))(x)
    np.testing.assert_allclose(out, np.sin(np.arange(3.0)) + 1, rtol=1e-6)
    assert seen == calls


def test_vmap_without_a_method_is_refused():
    x = jnp.arange(3.0)
    with pytest.raises(NotImplementedError, match="vmap is only supported for the pure_callback primitive when "
                                                  "vmap_method is one of 'sequential'"):
        srcjax.vmap(lambda x: srcjax.pure_callback(np.sin, srcjax.ShapeDtypeStruct((), jnp.float32), x))(x)


def test_nested_and_moved_batches():
    seen = []

    def cosine(v):
        seen.append(v.shape)
        return np.cos(v)

    def f(a, b):
        return a * srcjax.pure_callback(cosine, _like(b), b, vmap_method="sequential")

    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    np.testing.assert_allclose(srcjax.jit(srcjax.vmap(srcjax.vmap(lambda a: f(a, a))))(x), x * np.cos(x), rtol=1e-6)
    assert seen == [()] * 6
    seen.clear()
    out = srcjax.vmap(lambda a: f(a, a), in_axes=1)(x)
    np.testing.assert_allclose(out, (x * np.cos(x)).T, rtol=1e-6)
    assert seen == [(2,)] * 3
    doubled = srcjax.vmap(srcjax.vmap(lambda a: srcjax.pure_callback(lambda v: v * 2, _like(a), a,
                                                                      vmap_method="expand_dims")))
    np.testing.assert_array_equal(doubled(x), 2 * x)


def test_no_derivative_but_zero_tangents_pass():
    def f(a, b):
        return a * srcjax.pure_callback(np.cos, _like(b), b)

    x = np.linspace(0.0, 1.0, 4, dtype=np.float32)
    np.testing.assert_allclose(srcjax.grad(lambda a, b: f(a, b).sum())(x, x), np.cos(x), rtol=1e-6)
    with pytest.raises(ValueError, match="Pure callbacks do not support JVP. Please use `jax.custom_jvp`"):
        srcjax.grad(lambda a, b: f(a, b).sum(), argnums=1)(x, x)


def test_in_loops_and_branches_each_time_the_program_reaches_it():
    x = jnp.arange(3.0)
    count = []

    def step(a):
        count.append(1)
        return a + 1

    loop = srcjax.jit(lambda x: lax.fori_loop(0, 3, lambda i, c: srcjax.pure_callback(step, _like(c), c), x))
    np.testing.assert_array_equal(loop(x), [3.0, 4.0, 5.0])
    assert len(count) == 3
    branch = srcjax.jit(lambda x: lax.cond(x.sum() > 5, lambda b: srcjax.pure_callback(step, _like(b), b),
                                           lambda b: b * 0, x))
    np.testing.assert_array_equal(branch(x), [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(branch(x + 1), [2.0, 3.0, 4.0])


def test_over_pmap_devices_each_calls_it(four_devices):
    """Over pmap's devices (run batched here) the callback runs once per device, whatever vmap_method says; a vmap
    inside the pmap keeps its own method (JAX: 4 calls of shape (2,), then 4 of shape (1, 2))."""
    seen = []

    def double(a):
        seen.append(a.shape)
        return np.asarray(a) * 2

    x = np.arange(8.0, dtype=np.float32).reshape(4, 2)
    out = srcjax.pmap(lambda v: srcjax.pure_callback(double, _like(v), v) + 1)(x)
    np.testing.assert_array_equal(out, 2 * x + 1)
    assert seen == [(2,)] * 4
    seen.clear()
    inner = srcjax.vmap(lambda v: srcjax.pure_callback(double, _like(v), v, vmap_method="expand_dims"))
    np.testing.assert_array_equal(srcjax.pmap(inner)(x[:, None, :]), 2 * x[:, None, :])
    assert seen == [(1, 2)] * 4


def test_64_bit_results_need_x64():
    with pytest.raises(ValueError, match="result_shape_dtypes cannot specify 64-bit types when `jax_enable_x64` is "
                                         "disabled"):
        srcjax.pure_callback(lambda a: a, srcjax.ShapeDtypeStruct((2,), np.float64), jnp.ones(2))


def test_io_callback_runs_each_time_the_program_says():
    """``jax.experimental.io_callback`` (the External callbacks tutorial, numbers from JAX 0.10.2): a callback with
    a side effect. Unlike a pure one it runs though its result is unused and is never merged with an equal call;
    batched it runs once per example, an ordered one refuses to be batched, and a nonzero tangent is refused."""
    from srcjax.experimental import io_callback

    log = []

    def record(x):
        log.append(np.asarray(x).tolist())
        return np.asarray(x, np.float32) * 2

    scalar = srcjax.ShapeDtypeStruct((), np.float32)

    @srcjax.jit
    def f(x):
        io_callback(record, scalar, x)  # (unused result)
        io_callback(record, scalar, x)  # (the same call again)
        return x + 1

    assert float(f(1.0)) == 2.0 and float(f(2.0)) == 3.0 and log == [1.0, 1.0, 2.0, 2.0]
    log.clear()
    out = srcjax.jit(lambda x: lax.while_loop(lambda c: c < 20.0, lambda c: c + io_callback(record, scalar, c), x))
    assert float(out(1.0)) == 27.0 and log == [1.0, 3.0, 9.0]
    log.clear()
    batched = srcjax.vmap(lambda x, y: io_callback(record, scalar, x + y), in_axes=(0, None))(jnp.arange(3.0), 1.0)
    assert np.asarray(batched).tolist() == [2.0, 4.0, 6.0] and log == [1.0, 2.0, 3.0]
    assert float(srcjax.grad(lambda w, x: w * io_callback(record, scalar, x))(2.0, 5.0)) == 10.0

    rng = np.random.default_rng(0)  # the tutorial's host-side random numbers, in order
    draw = srcjax.jit(lambda x: io_callback(lambda x: rng.uniform(size=x.shape).astype(x.dtype), x, x))
    np.testing.assert_allclose(draw(jnp.zeros(5)), [0.6369617, 0.26978672, 0.04097353, 0.01652764, 0.8132702],
                               rtol=1e-6)
    with pytest.raises(ValueError, match="Cannot `vmap` ordered IO callback"):
        srcjax.vmap(lambda x: io_callback(record, scalar, x, ordered=True))(jnp.zeros(3))
    with pytest.raises(ValueError, match="IO callbacks do not support JVP"):
        srcjax.jacfwd(lambda x: io_callback(record, scalar, x))(1.0)
