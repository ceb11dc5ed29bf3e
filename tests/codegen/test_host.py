"""Host calls: ops without a native lowering run through their NumPy implementation from inside native code,
so a function that uses them still compiles (straight-line, in loops, with complex values), agrees with the
eager runtime, and a Python exception raised by such an op reaches the caller."""

import threading

import numpy as np
import pytest

import srcjax
import srcjax.numpy as jnp
from srcjax import lax
from srcjax.transpiler.primitives import reduce

RNG = np.random.default_rng(0)
X = RNG.normal(size=(6, 5)).astype(np.float32)
IDX = np.array([4, 0, 2, 2], np.int32)


def gather_sort_argmax(x, idx):
    y = jnp.tanh(x) * 2.0
    rows = y[idx]
    return jnp.sort(rows, axis=1) * 3.0, jnp.argmax(x, axis=0), jnp.cumsum(x, axis=1)


def complex_values(x):
    spectrum = jnp.fft.rfft(x, axis=1)
    return jnp.abs(spectrum) + 1.0, jnp.fft.irfft(spectrum * 2.0, n=x.shape[1], axis=1)


def several_results(x):
    w, v = jnp.linalg.eigh(x @ x.T + jnp.eye(6))
    q, r = jnp.linalg.qr(x)
    return w * 2.0, jnp.abs(v), q @ r


def sort_in_loops(x):
    for _ in range(3):
        x = jnp.sort(-x * 1.5, axis=0)
    i = 0
    while jnp.max(x) < 100.0:
        x = jnp.cumsum(jnp.abs(x), axis=1) + 1.0
        i += 1
    return x, i


def sort_in_cond(x, idx):
    if jnp.sum(x) > 0:
        y = jnp.sort(x.at[idx].add(1.0), axis=0)
    else:
        y = jnp.sort(x, axis=1).at[idx].set(-1.0)
    return y


CASES = [
    (gather_sort_argmax, (X, IDX)),
    (gather_sort_argmax, (-X, IDX[::-1].copy())),
    (complex_values, (X,)),
    (several_results, (X,)),
    (sort_in_loops, (X,)),
    (sort_in_cond, (X, IDX)),
    (sort_in_cond, (-np.abs(X), IDX)),
]


@pytest.mark.parametrize("fn,args", CASES, ids=[f"{f.__name__}{i}" for i, (f, _) in enumerate(CASES)])
def test_native_with_host_calls_agrees_with_eager(fn, args):
    jitted = srcjax.jit(fn)
    got = jitted(*args)
    (compiled,) = jitted._cache.values()
    assert compiled.native is not None, compiled.native_error
    assert compiled.native.plan.host_ops, "expected some ops to run as host calls"
    want = fn(*[jnp.asarray(a) for a in args])
    for g, w in zip(srcjax.tree_util.tree_leaves(got), srcjax.tree_util.tree_leaves(want)):
        assert not hasattr(w, "dtype") or g.dtype == w.dtype  # (eager loops count in Python ints)
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-5)


def test_custom_jvp_functions_are_inlined_not_host_calls():
    f = srcjax.jit(lambda x: srcjax.nn.relu(x) + srcjax.nn.gelu(x) + srcjax.nn.silu(x))
    np.testing.assert_allclose(f(X), srcjax.nn.relu(X) + srcjax.nn.gelu(X) + srcjax.nn.silu(X), rtol=1e-6,
                               atol=1e-6)
    (compiled,) = f._cache.values()
    assert compiled.native is not None and not compiled.native.plan.host_ops


def test_host_call_exception_reaches_the_caller(monkeypatch):
    f = srcjax.jit(lambda x, i: jnp.sort(jnp.exp(x), axis=1)[i] + 1.0)
    want = np.sort(np.exp(X), axis=1)[IDX] + 1.0
    np.testing.assert_allclose(f(X, IDX), want, rtol=1e-6)

    def broken(*args, **params):
        raise FloatingPointError("sort failed on purpose")

    monkeypatch.setattr(reduce.sort_p, "impl", broken)
    with pytest.raises(FloatingPointError, match="on purpose"):
        f(X, IDX)
    monkeypatch.undo()
    np.testing.assert_allclose(f(X, IDX), want, rtol=1e-6)  # the next call is clean


def test_host_calls_from_several_threads():
    """Several threads call one function for the first time at once: each traces with its own interpreter
    stack, none sees another's compilation."""
    f = srcjax.jit(lambda x: jnp.sort(x * 2.0, axis=1).sum(axis=1))
    inputs = [RNG.normal(size=(64, 300)).astype(np.float32) for _ in range(8)]
    results = [None] * len(inputs)

    errors = []

    def work(i):
        try:
            for _ in range(20):
                results[i] = np.asarray(f(inputs[i]))
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for x, r in zip(inputs, results):
        np.testing.assert_allclose(r, np.sort(x * 2.0, axis=1).sum(axis=1), rtol=1e-5, atol=1e-4)


def test_lax_sort_multiple_operands():
    keys = np.array([3, 1, 2, 0], np.int32)
    vals = np.array([0.5, 1.5, 2.5, 3.5], np.float32)
    f = srcjax.jit(lambda k, v: lax.sort((k, v * 2.0), num_keys=1))
    k, v = f(keys, vals)
    np.testing.assert_array_equal(k, [0, 1, 2, 3])
    np.testing.assert_array_equal(v, [7.0, 3.0, 5.0, 1.0])
