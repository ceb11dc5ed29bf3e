"""``lax.scan`` and ``lax.map`` compiled: one ``for`` op whatever the length, not the body unrolled.

Oracles: the eager definition (a Python loop), and the same definition traced (``control._eager_scan`` under a
transform unrolls the loop, as every scan did before); central finite differences in float64 for the
derivatives. The structure tests count the ops of the traced IR at two lengths: compiling costs what the
IR holds, so equal counts mean a compile time that does not grow with the trip count.
"""

import functools
import re

import numpy as np
import pytest

import srcjax
import srcjax.numpy as jnp
from srcjax import lax
from srcjax.runtime.lax import control
from srcjax.test_util import check_grads


class Loop:
    """What the library does: a loop op when compiled."""

    scan = staticmethod(lax.scan)
    map = staticmethod(lax.map)


class Unrolled:
    """The eager definition, unrolled when traced (the body read by the front end, as the loop's is)."""

    @staticmethod
    def scan(f, init, xs=None, length=None, reverse=False, unroll=1):
        return control._eager_scan(lambda c, x: control._call(f, c, x), init, xs, length, reverse, unroll)

    @staticmethod
    def map(f, xs, batch_size=None):
        return control._eager_scan(lambda c, x: ((), control._call(f, x)), (), xs)[1]


# -- programs of (w: [3,3], h: [3], xs: [4,3]) ---------------------------------------------------------------
def rnn_pytrees(L, w, h, xs):  # pytree carry (a weak 0.0 the body promotes), xs and ys; a closure over w
    def step(carry, x):
        c, total = carry
        c = jnp.tanh(w @ c + x["u"] * x["s"])
        return (c, total + jnp.sum(c)), {"c": c * 2.0, "n": (jnp.sum(c * c), None)}

    return L.scan(step, (h, 0.0), {"u": xs, "s": jnp.cos(xs[:, 0])})


def reverse(L, w, h, xs):
    return L.scan(lambda c, x: (jnp.sin(c) * x + w[0], c * x), h, xs, reverse=True)


def no_xs(L, w, h, xs):  # xs=None with length
    return L.scan(lambda c, _: (w @ jnp.tanh(c) + h, jnp.sum(c)), h, None, length=5)


def no_ys(L, w, h, xs):  # y is None: no stacked output
    return L.scan(lambda c, x: (c * jnp.cos(x) + w[1], None), h, xs)


def zero_length(L, w, h, xs):
    return L.scan(lambda c, x: (c * x + w[0], c + x), h, xs[:0])


def length_one(L, w, h, xs):
    return L.scan(lambda c, x: (jnp.sin(c * x), c + x), h, xs[:1])


def concrete_xs(L, w, h, xs):  # NumPy xs, traced carry
    return L.scan(lambda c, x: (jnp.tanh(w @ c + x), c * x), h, np.linspace(0.0, 1.0, 12).reshape(4, 3))


def concrete_init(L, w, h, xs):  # NumPy carry (and an integer counter), traced xs
    def step(carry, x):
        c, i = carry
        return (jnp.tanh(c + x * h) * w[2], i + 1), c * i

    return L.scan(step, (np.ones(3), 0), xs)


def nested_with_python_if(L, w, h, xs):  # a scan in the body, and a Python `if` on a traced value
    def step(c, x):
        if jnp.max(jnp.abs(c)) > 10.0:
            c = c * 0.5
        else:
            c = jnp.tanh(w @ c + x)
        inner, zs = L.scan(lambda a, b: (a + b * jnp.sum(c), a * b), 0.0, x)
        return c + 0.1 * inner, (zs, jnp.sum(c))

    return L.scan(step, h, xs)


def mapped(L, w, h, xs):
    return L.map(lambda x: (jnp.sin(x) * h + w @ x, jnp.sum(x)), xs)


def batched(batch_size):
    def mapped_in_batches(L, w, h, xs):
        if L is Loop:
            return L.map(lambda x: jnp.sin(x) * h + w @ x, xs, batch_size=batch_size)
        return L.map(lambda x: jnp.sin(x) * h + w @ x, xs)

    mapped_in_batches.__name__ = f"map_batch_size_{batch_size}"
    return mapped_in_batches


PROGRAMS = [rnn_pytrees, reverse, no_xs, no_ys, zero_length, length_one, concrete_xs, concrete_init,
            nested_with_python_if, mapped, batched(2), batched(3), batched(8)]
IDS = [p.__name__ for p in PROGRAMS]


def args(seed=0):
    r = np.random.RandomState(seed)
    return r.standard_normal((3, 3)) * 0.5, r.standard_normal(3), r.standard_normal((4, 3))


def leaves(tree):
    return [np.asarray(x) for x in srcjax.tree_util.tree_leaves(tree)]


def loss(program, L):
    """A scalar of every floating leaf of the program's output."""

    def f(w, h, xs):
        outs = [x for x in srcjax.tree_util.tree_leaves(program(L, w, h, xs)) if jnp.issubdtype(x.dtype, jnp.floating)]
        return sum(jnp.sum(jnp.sin(x) * (k + 1.0)) for k, x in enumerate(outs))

    return f


def vector(program, L):
    """The program's floating outputs as one vector (for jacobians)."""

    def f(w, h, xs):
        outs = [x for x in srcjax.tree_util.tree_leaves(program(L, w, h, xs)) if jnp.issubdtype(x.dtype, jnp.floating)]
        return jnp.concatenate([jnp.ravel(x) for x in outs])

    return f


def close(got, want):
    got, want = leaves(got), leaves(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("program", PROGRAMS, ids=IDS)
def test_values_under_jit_match_the_eager_loop(program, x64):
    a = args()
    eager = program(Loop, *a)  # not compiled: the Python loop
    compiled = srcjax.jit(functools.partial(program, Loop))(*a)
    assert srcjax.tree_util.tree_structure(compiled) == srcjax.tree_util.tree_structure(eager)
    close(compiled, eager)
    assert [x.weak_type for x in srcjax.tree_util.tree_leaves(compiled)] == \
        [x.weak_type for x in srcjax.tree_util.tree_leaves(eager)]


TRANSFORMS = {
    "grad": lambda f: srcjax.grad(f, argnums=(0, 1, 2)),
    "jit_grad": lambda f: srcjax.jit(srcjax.grad(f, argnums=(0, 1, 2))),
    "vmap_xs": lambda f: srcjax.vmap(f, in_axes=(None, None, 0)),
    "vmap_h": lambda f: srcjax.vmap(f, in_axes=(None, 0, None)),
    "vmap_grad": lambda f: srcjax.vmap(srcjax.grad(f, argnums=(0, 1, 2)), in_axes=(None, 0, 0)),
    "jvp": lambda f: lambda w, h, xs: srcjax.jvp(f, (w, h, xs), (w * 0.5, h - 1.0, jnp.cos(xs))),
    "jacfwd": lambda f: srcjax.jacfwd(f, argnums=(0, 1, 2)),
    "jacrev": lambda f: srcjax.jacrev(f, argnums=(0, 1, 2)),
    "hessian": lambda f: srcjax.hessian(f, argnums=(1, 2)),
    "jacfwd_grad": lambda f: srcjax.jacfwd(srcjax.grad(f, argnums=2), argnums=(0, 1)),
}


def batch_args(name):
    w, h, xs = args()
    r = np.random.RandomState(1)
    if name == "vmap_xs":
        xs = r.standard_normal((2, 4, 3))
    if name == "vmap_h":
        h = r.standard_normal((2, 3))
    if name == "vmap_grad":
        h, xs = r.standard_normal((2, 3)), r.standard_normal((2, 4, 3))
    return w, h, xs


@pytest.mark.parametrize("transform", list(TRANSFORMS))
@pytest.mark.parametrize("program", PROGRAMS, ids=IDS)
def test_transforms_match_the_unrolled_loop(program, transform, x64):
    make = vector if transform in ("jacfwd", "jacrev") else loss
    a = batch_args(transform)
    got = TRANSFORMS[transform](make(program, Loop))(*a)
    want = TRANSFORMS[transform](make(program, Unrolled))(*a)
    close(got, want)


@pytest.mark.parametrize("program", PROGRAMS, ids=IDS)
def test_derivatives_match_finite_differences(program, x64):
    check_grads(loss(program, Loop), args(), order=2)


def test_map_in_batches_is_a_loop_over_vmapped_batches(x64):
    r = np.random.RandomState(2)
    w, h, xs = r.standard_normal((3, 3)), r.standard_normal(3), r.standard_normal((7, 3))
    text = str(srcjax.make_jaxpr(lambda w, h, xs: lax.map(lambda x: jnp.sin(x) * h + w @ x, xs, batch_size=3))(
        w, h, xs))
    assert text.count(" = for ") == 1 and "f64[2,3,3]" in text  # two batches of three in the loop, one row after
    want = np.stack([np.sin(x) * h + w @ x for x in xs])
    for size in (1, 3, 7, 10):
        got = srcjax.jit(lambda w, h, xs, size=size: lax.map(lambda x: jnp.sin(x) * h + w @ x, xs,
                                                                batch_size=size))(w, h, xs)
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)


# -- structure: one loop op, however long ----------------------------------------------------------------------
def _ops(text: str) -> int:
    return sum(1 for line in text.splitlines() if " = " in line or line.strip().startswith("yield"))


def _rnn(w, h, xs):
    def step(c, x):
        c = jnp.tanh(w @ c + x)
        return c, (c * 2.0, jnp.sum(c))

    c, (ys, s) = lax.scan(step, h, xs)
    return jnp.sum(c) + jnp.sum(ys * ys) + jnp.sum(s)


def _rnn_reversed(w, h, xs):
    c, ys = lax.scan(lambda c, x: (jnp.tanh(w @ c + x), c), h, xs, reverse=True)
    return jnp.sum(c) + jnp.sum(jnp.sin(ys))


def _map(w, h, xs):
    return jnp.sum(lax.map(lambda x: jnp.tanh(w @ x + h), xs))


def _map_batches(w, h, xs):
    return jnp.sum(lax.map(lambda x: jnp.tanh(w @ x + h), xs, batch_size=3))


def _traced(fn, n, *, batch=False):
    w, h, xs = np.ones((8, 8), np.float32), np.ones(8, np.float32), np.ones((n, 8), np.float32)
    if batch:
        h = np.ones((2, 8), np.float32)
    return str(srcjax.make_jaxpr(fn)(w, h, xs))


def test_a_scan_is_one_for_op_that_does_not_grow():
    short, long = _traced(_rnn, 10), _traced(_rnn, 1000)
    assert short.count(" = for ") == 1 and long.count(" = for ") == 1
    assert "dynamic_slice" in long and "dynamic_update_slice" in long  # xs[i] read, ys[i] written per trip
    assert "tanh" in long and long.count("tanh") == 1  # the body once
    assert _ops(short) == _ops(long)


@pytest.mark.parametrize("fn", [_rnn, _rnn_reversed, _map], ids=lambda f: f.__name__.strip("_"))
def test_reverse_mode_saves_rows_not_the_stacked_outputs(fn):
    """The forward loop of a gradient saves per trip what the backward loop reads, each into a buffer of a row per
    trip; the stacked outputs' buffer (1000 rows) is carried, never saved whole per trip (1000 x 1000 rows)."""
    text = _traced(srcjax.grad(fn, argnums=(0, 1, 2)), 1000)
    assert text.count(" = for ") == 2  # the forward loop and the backward one
    assert "[1000,1000" not in text
    saved = {t for t in re.findall(r"\[([0-9,]*)\]", text) if t.startswith("1000")}
    assert saved <= {"1000", "1000,8"}, saved


STRUCTURE = {
    "jit": lambda f: srcjax.jit(f),
    "grad": lambda f: srcjax.grad(f, argnums=(0, 1, 2)),
    "jit_grad": lambda f: srcjax.jit(srcjax.grad(f, argnums=(0, 1, 2))),
    "vmap": lambda f: srcjax.vmap(f, in_axes=(None, 0, None)),
    "vmap_grad": lambda f: srcjax.vmap(srcjax.grad(f, argnums=(0, 1)), in_axes=(None, 0, None)),
    "grad_vmap": lambda f: srcjax.grad(lambda w, h, xs: jnp.sum(srcjax.vmap(f, in_axes=(None, 0, None))(w, h, xs))),
    "jvp": lambda f: lambda w, h, xs: srcjax.jvp(f, (w, h, xs), (w, h, xs)),
    "hessian_vector": lambda f: lambda w, h, xs: srcjax.jvp(srcjax.grad(f, argnums=1), (w, h, xs), (w, h, xs)),
}


@pytest.mark.parametrize("fn", [_rnn, _rnn_reversed, _map, _map_batches], ids=lambda f: f.__name__.strip("_"))
@pytest.mark.parametrize("transform", list(STRUCTURE))
def test_transformed_scans_do_not_grow_with_the_length(fn, transform):
    batch = transform in ("vmap", "vmap_grad", "grad_vmap")
    short = _traced(STRUCTURE[transform](fn), 10, batch=batch)
    long = _traced(STRUCTURE[transform](fn), 10_000, batch=batch)
    assert " = for " in long
    assert _ops(short) == _ops(long), (short, long)


# -- errors and checks under jit: those of the eager definition -------------------------------------------------
@pytest.mark.parametrize("call, error, message", [
    (lambda x: lax.scan(lambda c, x: (jnp.zeros(2), c), 0.0, x), TypeError,
     r"scan body function carry input and carry output must have equal types.*float32\[2\]"),
    (lambda x: lax.scan(lambda c, x: ((c, c), c), 0.0, x), TypeError, "must have the same pytree structure"),
    (lambda x: lax.scan(lambda c, x: c + 1, 0.0, x), TypeError, r"must be a pair \(carry, y\), got float32"),
    (lambda x: lax.scan(lambda c, x: (c, c), 0.0, x, unroll=0), ValueError, "unroll"),
    (lambda x: lax.scan(lambda c, x: (c, c), 0.0, x, length=4), ValueError, "disagrees with leading axis sizes"),
    (lambda x: lax.scan(lambda c, x: (c, c), 0.0, None), ValueError, "no values to scan over"),
    (lambda x: lax.map(lambda r: r, x, batch_size=-1), ValueError, "batch_size must be a non-negative int"),
])
def test_errors_under_jit(call, error, message):
    with pytest.raises(error, match=message):
        srcjax.jit(call)(np.zeros(3, np.float32))


def test_map_batch_size_zero_is_one_full_batch():
    """JAX's ``batch_size=0`` maps the whole axis as one batch (one vmap); the values are those of any batching."""
    x = np.arange(5.0, dtype=np.float32)
    for batch_size in (0, 2, None):
        np.testing.assert_array_equal(lax.map(lambda r: r * 2, x, batch_size=batch_size), x * 2)
        mapped = srcjax.jit(lambda v, b=batch_size: lax.map(lambda r: r * 2, v, batch_size=b))
        np.testing.assert_array_equal(mapped(x), x * 2)


def test_unroll_is_accepted_and_ignored_when_compiled():
    f = lambda x: lax.scan(lambda c, x: (c + x, c * x), 0.0, x, unroll=4)  # noqa: E731
    x = np.arange(1.0, 7.0, dtype=np.float32)
    text = str(srcjax.make_jaxpr(f)(x))
    assert text.count(" = for ") == 1
    close(srcjax.jit(f)(x), f(x))


@pytest.mark.parametrize("loop", [
    lambda x: lax.fori_loop(3, 1, lambda i, c: jnp.sin(c) * c, x),
    lambda x: lax.fori_loop(0, 0, lambda i, c: c * c, x),
    lambda x: lax.scan(lambda c, x: (jnp.sin(c) * x, None), x, np.zeros(0))[0],
])
def test_loops_of_no_trips_differentiate(loop):
    """A loop that runs no trips is the identity, in every derivative (JAX: 1.0)."""
    assert float(srcjax.grad(loop)(1.0)) == 1.0
    assert float(srcjax.jit(srcjax.grad(loop))(1.0)) == 1.0
    assert float(srcjax.hessian(loop)(1.0)) == 0.0
