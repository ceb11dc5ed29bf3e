"""Edges of the API where srcjax once differed from JAX: out-of-bounds indexes clamp (eager, compiled natively
and interpreted, batched, differentiated), the weak type of a complex gradient, eager float32 sums pairwise on
any axis, the argument checks of ``jit`` and ``vmap``, a traced value used after its trace, and NumPy
behaviours JAX keeps (2-d polynomial coefficients, ``delete`` with a 2-d index array, ``ix_`` of floats,
``roll`` by a float, ``lexsort`` of a 1-d array, ``frompyfunc``). Expected values were recorded with jax 0.10.2."""

import operator

import numpy as np
import pytest

import srcjax
import srcjax.numpy as jnp
from srcjax import lax

X10 = jnp.arange(10)
Y = jnp.arange(12.0).reshape(3, 4)


def same(got, want, dtype=None):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6, atol=1e-6)
    if dtype is not None:
        assert str(got.dtype) == dtype


# -- out-of-bounds indexes clamp ---------------------------------------------------------------------------
@pytest.mark.parametrize("index, want", [
    (11, 9), (-12, 0), (-11, 0), (2**20, 9), (np.int64(11), 9), (jnp.asarray(11), 9),
])
def test_static_and_array_int_indexes_out_of_bounds_clamp(index, want):
    assert int(X10[index]) == want
    assert int(X10.at[index].get()) == want


@pytest.mark.parametrize("index, want", [
    (5, [8.0, 9.0, 10.0, 11.0]), ((1, 7), 7.0), ((-5, 2), 2.0), ((slice(None), 9), [3.0, 7.0, 11.0]),
    ((5, slice(1, 3)), [9.0, 10.0]), ((7, jnp.asarray([0, 1])), [8.0, 9.0]), ((Ellipsis, 9), [3.0, 7.0, 11.0]),
    ((None, 9), [[8.0, 9.0, 10.0, 11.0]]), (jnp.asarray([11, -12]), [[8.0, 9, 10, 11], [0, 1, 2, 3]]),
])
def test_out_of_bounds_indexes_of_a_matrix_recorded_from_jax(index, want):
    same(Y[index], want)


def test_out_of_bounds_updates_are_dropped():
    assert X10.at[11].set(5).tolist() == list(range(10))
    assert X10.at[-12].set(100).tolist() == list(range(10))  # -12 + 10 is still out of bounds
    assert X10.at[11].add(3).tolist() == list(range(10))
    assert X10.at[jnp.asarray([11, -12, 3])].set(100).tolist() == [0, 1, 2, 100, 4, 5, 6, 7, 8, 9]
    assert srcjax.jit(lambda x: x.at[11].set(0))(X10).tolist() == list(range(10))


def test_indexes_that_cannot_clamp():
    with pytest.raises(IndexError, match="out of bounds for axis 0 with size 0"):
        jnp.zeros(0)[0]
    assert jnp.zeros((2, 0))[5].shape == (0,)  # axis 0 has rows to clamp to
    with pytest.raises(OverflowError, match="too large to convert to int32"):
        X10[2**40]


@pytest.mark.parametrize("native", ["1", "0"])
def test_out_of_bounds_indexes_clamp_in_compiled_code(native, monkeypatch):
    monkeypatch.setenv("SRCJAX_NATIVE", native)
    assert int(srcjax.jit(lambda x: x[11])(X10)) == 9
    assert float(srcjax.jit(lambda y: y[-5, 7])(Y)) == 3.0
    assert int(srcjax.jit(lambda x: x.at[11].get())(X10)) == 9
    same(srcjax.jit(srcjax.vmap(lambda v: v[7]))(Y), [3.0, 7.0, 11.0])
    g = srcjax.jit(srcjax.grad(lambda y: y[5, -7]))(Y)
    assert np.asarray(g).tolist() == [[0.0] * 4, [0.0] * 4, [1.0, 0.0, 0.0, 0.0]]


def test_out_of_bounds_indexes_clamp_under_vmap_and_grad():
    same(srcjax.vmap(lambda v: v[7])(Y), [3.0, 7.0, 11.0])
    same(srcjax.vmap(lambda v: v[-9])(Y), [0.0, 4.0, 8.0])
    # the cotangent goes to the clamped element, as JAX's gather transposes
    assert np.asarray(srcjax.grad(lambda x: x[11])(jnp.arange(10.0))).tolist() == [0.0] * 9 + [1.0]
    assert np.asarray(srcjax.grad(lambda x: x[-12])(jnp.arange(10.0))).tolist() == [1.0] + [0.0] * 9
    g = srcjax.grad(lambda y: srcjax.vmap(lambda v: v[7])(y).sum())(Y)
    assert np.asarray(g).tolist() == [[0.0, 0.0, 0.0, 1.0]] * 3


# -- the weak type of gradients --------------------------------------------------------------------------------
def test_gradient_weak_types_recorded_from_jax():
    assert repr(srcjax.grad(lambda z: z**2)(3.0)) == "Array(6., dtype=float32, weak_type=True)"
    assert repr(srcjax.grad(lambda z: z**2)(jnp.float32(3.0))) == "Array(6., dtype=float32)"
    assert repr(srcjax.grad(lambda z: z**2, holomorphic=True)(3.0 + 4j)) == \
        "Array(6.+8.j, dtype=complex64, weak_type=True)"


def test_gradient_of_a_real_function_of_a_complex_number_is_strongly_typed():
    g = srcjax.grad(lambda z: jnp.real(z) ** 2 + jnp.imag(z) ** 2)(3.0 + 4j)
    assert repr(g) == "Array(6.-8.j, dtype=complex64)"


# -- eager sums of float32 are accurate -------------------------------------------------------------------------
def _ulps(got, want64):
    """The error of float32 ``got`` against the float64 ``want64``, in units of the last place of the result."""
    got = np.asarray(got)
    assert got.dtype == np.float32
    return np.max(np.abs(got.astype(np.float64) - want64) / np.spacing(np.abs(want64).astype(np.float32)))


@pytest.mark.parametrize("name, fn, oracle", [
    ("sum", lambda x: x.sum(0), lambda x: x.sum(0)),
    ("mean", lambda x: x.mean(0), lambda x: x.mean(0)),
    ("var", lambda x: x.var(0), lambda x: x.var(0)),
    ("std", lambda x: x.std(0), lambda x: x.std(0)),
    ("sum all", lambda x: x.sum(), lambda x: x.sum()),
])
def test_eager_float32_reductions_sum_pairwise(name, fn, oracle):
    data = (np.random.default_rng(0).random((10000, 10), dtype=np.float32) + np.float32(1))
    # a running sum down 10,000 rows errs by ~n eps (24 to 29 ulps here, as NumPy's own x.sum(0) does); a
    # pairwise one by ~log n eps
    assert _ulps(fn(jnp.asarray(data)), oracle(data.astype(np.float64))) <= 3.0


def test_eager_cumsum_rounds_each_prefix_once():
    # float32 running sums accumulate in float64, as the compiled code's do: each prefix is rounded once
    data = np.random.default_rng(0).random((10000, 10), dtype=np.float32)
    want = np.cumsum(data.astype(np.float64), 0).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(jnp.cumsum(jnp.asarray(data), 0)), want)
    np.testing.assert_array_equal(np.asarray(srcjax.jit(lambda v: jnp.cumsum(v, 0))(data)), want)


def test_accurate_sums_keep_dtypes_recorded_from_jax():
    assert repr(jnp.sum(jnp.ones(3, jnp.complex64))) == "Array(3.+0.j, dtype=complex64)"
    assert repr(jnp.cumsum(jnp.ones(2, jnp.float16))) == "Array([1., 2.], dtype=float16)"
    assert repr(jnp.cumsum(jnp.arange(3))) == "Array([0, 1, 3], dtype=int32)"
    assert repr(jnp.sum(3.0)) == "Array(3., dtype=float32)"


# -- checks jit and vmap make ----------------------------------------------------------------------------------
@pytest.mark.parametrize("out_axes, rank", [(5, 2), (2, 2), (-3, 2)])
def test_vmap_out_axes_beyond_the_result_rank(out_axes, rank):
    with pytest.raises(ValueError, match=f"axis {out_axes} is out of bounds for array of dimension {rank}"):
        srcjax.vmap(lambda x: x * 2, out_axes=out_axes)(jnp.ones((3, 4)))


def test_vmap_out_axes_checked_per_result():
    with pytest.raises(ValueError, match="axis 1 is out of bounds for array of dimension 1"):
        srcjax.vmap(lambda x: x.sum(), out_axes=1)(jnp.ones((3, 4)))
    with pytest.raises(ValueError, match="axis 1 is out of bounds for array of dimension 1"):
        srcjax.vmap(lambda x: (x, x.sum()), out_axes=(1, 1))(jnp.ones((3, 4)))
    assert srcjax.vmap(lambda x: x * 2, out_axes=-2)(jnp.ones((3, 4))).shape == (3, 4)


def test_jit_checks_static_argnums_and_argnames_when_applied():
    with pytest.raises(ValueError, match=r"static_argnums=\(3,\), but only accepts 1 positional arguments"):
        srcjax.jit(lambda x: x, static_argnums=3)
    with pytest.raises(ValueError, match=r"static_argnums=\(-3,\), but only accepts 1 positional arguments"):
        srcjax.jit(lambda x: x, static_argnums=-3)
    with pytest.raises(ValueError, match=r"invalid argnames \{'y'\} in static_argnames. Function does not take"):
        srcjax.jit(lambda x: x, static_argnames="y")
    with pytest.raises(ValueError, match="only accepts 1 positional"):
        srcjax.jit(static_argnums=1)(lambda x: x)
    assert float(srcjax.jit(lambda x, y=2: x * y, static_argnums=1)(1.0)) == 2.0
    srcjax.jit(lambda *a: a[0], static_argnums=5)  # any position is one of *args
    srcjax.jit(lambda **kw: 0, static_argnames="anything")


def test_a_call_with_the_wrong_arguments_names_the_function():
    def f(x, y):
        return x + y

    for transform in (srcjax.jit, srcjax.grad, srcjax.vmap):  # (JAX: Python's "f() missing 1 required ...")
        with pytest.raises(TypeError, match=r"^f\(\): missing a required argument: 'y'"):
            transform(f)(jnp.ones(2))
    with pytest.raises(TypeError, match=r"^f\(\): got an unexpected keyword argument 'z'"):
        srcjax.jit(f)(1.0, 2.0, z=3.0)


def test_a_custom_vjp_fwd_rule_that_returns_no_pair():
    @srcjax.custom_vjp
    def f(x):
        return x * 2

    f.defvjp(lambda x: x * 2, lambda res, g: (g * 2,))
    with pytest.raises(TypeError, match="fwd rule <lambda> for function f must produce a pair.*type was an array"):
        srcjax.grad(f)(1.0)


def test_jit_of_async_and_generator_functions():
    async def coroutine(x):
        return x

    def generator(x):
        yield x

    with pytest.raises(TypeError, match="traced for jit returned a value of type <class 'coroutine'>.*async def"):
        srcjax.jit(coroutine)(1.0)
    with pytest.raises(TypeError, match="Expected a function, got a generator function"):
        srcjax.jit(generator)


def _ok(x, y=None, *rest, **named):
    return x


@pytest.mark.parametrize("args, kwargs, kind, path", [
    (("a string",), {}, "str", "x"),
    ((1.0, "s"), {}, "str", "y"),
    ((1.0, {"a": [1.0, "s"]}), {}, "str", r"y\['a'\]\[1\]"),
    ((1.0,), {"y": "s"}, "str", "y"),
    ((1.0, None, 2.0, b"s"), {}, "bytes", r"rest\[1\]"),
    ((1.0,), {"z": object()}, "object", r"named\['z'\]"),
    ((slice(1),), {}, "slice", "x"),
])
def test_jit_names_the_argument_that_is_not_an_array(args, kwargs, kind, path):
    with pytest.raises(TypeError, match=rf"Error interpreting argument to .* as an abstract array. The problematic "
                                        rf"value is of type <class '{kind}'> and was passed to the function at path "
                                        rf"{path}\.\n"):
        srcjax.jit(_ok)(*args, **kwargs)


def test_jit_static_arguments_may_be_anything():
    assert float(srcjax.jit(_ok, static_argnums=1)(1.0, "s")) == 1.0
    assert float(srcjax.jit(_ok, static_argnames="y")(1.0, y="s")) == 1.0


def test_jit_of_the_same_function_again_finds_its_compiled_code():
    """The Sharp Bits and JIT tutorials: ``jit(f)`` applied again to the same ``f`` (``jit(f)(i)`` in a loop) does
    not run ``f``'s Python again for arguments of a type it has seen; a new type, new options or a new function
    do. So a global ``f`` reads is the one of its first trace (JAX 0.10.2 prints 4.0, 5.0 and [14.])."""
    traces = []
    offset = {"g": 0.0}

    def f(x):
        traces.append(1)
        return x + offset["g"]

    assert float(srcjax.jit(f)(4.0)) == 4.0
    offset["g"] = 10.0
    assert float(srcjax.jit(f)(5.0)) == 5.0
    assert len(traces) == 1
    same(srcjax.jit(f)(jnp.array([4.0])), [14.0])
    assert len(traces) == 2
    assert float(srcjax.jit(f, donate_argnums=0)(5.0)) == 15.0  # other options: another cache
    assert len(traces) == 3
    assert float(srcjax.jit(lambda x: f(x))(5.0)) == 15.0  # another function
    assert len(traces) == 4
    kept = srcjax.jit(f)
    srcjax.clear_caches()
    assert float(kept(5.0)) == 15.0
    assert len(traces) == 5
    offset["g"] = 20.0  # (a jit(f) made after clear_caches shares the compilation of one made before: JAX's 15)
    assert float(srcjax.jit(f)(5.0)) == 15.0
    assert len(traces) == 5


# -- a traced value used after its trace ---------------------------------------------------------------------
def _leaky(leak):
    def f(x):
        y = jnp.sin(x) * 2
        leak.append(x)
        leak.append(y)
        return x

    return f


@pytest.mark.parametrize("transform", [srcjax.jit, srcjax.grad, srcjax.vmap])
def test_a_leaked_traced_value_says_where_it_escaped(transform):
    leak = []
    transform(_leaky(leak))(jnp.ones(3) if transform is srcjax.vmap else 1.0)
    x, y = leak
    with pytest.raises(srcjax.errors.UnexpectedTracerError, match=r"add operand 0 is a traced value .* escaped the "
                       r"transformation that made it \(the compilation of f defined at .*test_api_edges.py:\d+\).* "
                       r"The value is an argument of f"):
        x + 1
    with pytest.raises(srcjax.errors.UnexpectedTracerError, match=r"The value was created at "
                       r".*test_api_edges.py:\d+ \(`y = jnp.sin\(x\) \* 2`\)"):
        jnp.sin(y)
    assert isinstance(srcjax.errors.UnexpectedTracerError("m"), TypeError)  # (JAX's is a TypeError too)


def test_a_leaked_traced_value_captured_by_another_trace():
    leak = []
    srcjax.jit(_leaky(leak))(1.0)
    # the front end reports it at the line that uses it, still a TypeError
    with pytest.raises(TypeError, match="unexpected tracer: a value this function uses"):
        srcjax.jit(lambda v: v + leak[0])(1.0)
    with pytest.raises(TypeError, match="unexpected tracer"):
        srcjax.grad(lambda v: v * leak[1])(1.0)


# -- NumPy behaviours JAX keeps -----------------------------------------------------------------------------
P2 = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])


def test_polynomials_with_2d_coefficients_recorded_from_jax():
    same(jnp.polyval(P2, 2.0), [15.0, 22.0], "float32")
    same(jnp.polyval(P2, jnp.asarray([1.0, 2.0])), [9.0, 22.0])
    same(jnp.polyval(P2, jnp.asarray([[1.0, 2.0], [3.0, 4.0]])), [[9.0, 22.0], [23.0, 54.0]])
    same(jnp.polyval(P2, jnp.ones((4, 1))), [[9.0, 12.0]] * 4)
    same(jnp.polyval(jnp.ones((2, 2, 2)), jnp.ones(2)), [[2.0, 2.0], [2.0, 2.0]])
    same(jnp.polyval(jnp.zeros((0, 3)), 2.0), [0.0, 0.0, 0.0])
    same(srcjax.jit(lambda p: jnp.polyval(p, 2.0))(P2), [15.0, 22.0])
    assert repr(srcjax.grad(lambda x: jnp.polyval(P2, x).sum())(2.0)) == "Array(19., dtype=float32, weak_type=True)"
    same(jnp.polyadd(P2, np.array([[1.0, 1.0]])), [[1.0, 2.0], [3.0, 4.0], [6.0, 7.0]])
    same(jnp.polyadd(P2, np.array([1.0, 1.0])), [[1.0, 2.0], [4.0, 5.0], [6.0, 7.0]])
    same(jnp.polyadd(np.array([1.0, 2.0]), np.ones((3, 2))), [[1.0, 1.0], [2.0, 3.0], [2.0, 3.0]])
    same(jnp.polyadd(np.ones((3, 2)), np.ones((2, 1))), [[1.0, 1.0], [2.0, 2.0], [2.0, 2.0]])
    same(jnp.polysub(P2, np.array([[1.0, 1.0]])), [[1.0, 2.0], [3.0, 4.0], [4.0, 5.0]])
    same(jnp.polysub(np.ones((2,)), np.ones((3, 2))), [[-1.0, -1.0], [0.0, 0.0], [0.0, 0.0]])
    same(jnp.polyadd(jnp.asarray([1, 2]), jnp.asarray([1, 2, 3])), [1, 3, 5], "int32")


@pytest.mark.parametrize("call, error", [
    (lambda: jnp.polyval(jnp.asarray(3.0), 2.0), IndexError),
    (lambda: jnp.polyval(P2, jnp.ones(3)), ValueError),
    (lambda: jnp.polyadd(jnp.asarray(1.0), jnp.asarray([1.0, 2.0])), IndexError),
    (lambda: jnp.polyadd(jnp.zeros(0), jnp.asarray([1.0, 2.0])), ValueError),
    (lambda: jnp.polyadd(np.ones((2,)), np.ones((2, 2))), ValueError),
    (lambda: jnp.polyadd(P2, np.ones((2, 2, 2))), ValueError),
    (lambda: jnp.polysub(jnp.asarray([True]), jnp.asarray([True])), TypeError),
    (lambda: jnp.polydiv(P2, np.array([[1.0, 1.0]])), ValueError),
    (lambda: jnp.polydiv(np.array([1.0, 2.0, 3.0]), P2), ValueError),
    (lambda: jnp.polydiv(np.ones((3, 1)), np.array([1.0, 1.0])), ValueError),
    (lambda: jnp.polydiv(jnp.asarray(1.0), jnp.asarray([1.0])), TypeError),
    (lambda: jnp.polydiv(jnp.asarray([1.0]), jnp.zeros(0)), IndexError),
    (lambda: jnp.polymul(P2, np.array([1.0, 1.0])), ValueError),
])
def test_polynomial_errors_have_jax_types(call, error):
    with pytest.raises(error):
        call()


def test_polydiv_recorded_from_jax():
    q, r = jnp.polydiv(jnp.asarray([1.0, 2.0, 3.0]), jnp.asarray([1.0, 1.0]))
    same(q, [1.0, 1.0], "float32"), same(r, [0.0, 0.0, 2.0], "float32")
    q, r = jnp.polydiv(jnp.asarray([1, 2, 3]), jnp.asarray([2, 1]))
    same(q, [0.5, 0.75], "float32"), same(r, [0.0, 0.0, 2.25])
    q, r = jnp.polydiv(jnp.asarray([1.0, 2.0]), jnp.asarray([1.0, 1.0, 1.0]))
    same(q, [0.0]), same(r, [1.0, 2.0])
    # trim_leading_zeros trims the remainder (to nothing when it is all zeros), not the divisor
    q, r = jnp.polydiv(jnp.asarray([1.0, 3.0, 2.0]), jnp.asarray([1.0, 1.0]), trim_leading_zeros=True)
    same(q, [1.0, 2.0]), same(r, np.zeros(0))
    with np.errstate(all="ignore"):
        q, r = jnp.polydiv(jnp.asarray([1.0, 2.0, 3.0]), jnp.asarray([0.0, 1.0, 1.0]), trim_leading_zeros=True)
    assert np.asarray(q).tolist() == [np.inf] and np.isnan(np.asarray(r)[0])


def test_delete_with_a_2d_index_array_recorded_from_jax():
    assert jnp.delete(jnp.arange(10), np.array([[1, 2], [3, 4]])).tolist() == [0, 5, 6, 7, 8, 9]
    assert jnp.delete(jnp.arange(10), jnp.asarray([[1, 1], [3, 4]])).tolist() == [0, 2, 5, 6, 7, 8, 9]
    assert jnp.delete(jnp.arange(12).reshape(3, 4), np.array([[0], [2]]), axis=1).tolist() == \
        [[1, 3], [5, 7], [9, 11]]
    with pytest.raises(ValueError):
        jnp.delete(jnp.arange(4), np.array([[True, False], [False, True]]))
    with pytest.raises(TypeError):
        jnp.delete(jnp.arange(10), [[1, 2], [3, 4]])


def test_ix_of_floats_recorded_from_jax():
    rows, cols = jnp.ix_(jnp.asarray([0.0, 1.0]), jnp.asarray([1.0, 2.0]))
    assert repr(rows) == "Array([[0.],\n       [1.]], dtype=float32)"
    # past the line width JAX 0.10.2 pads the dtype with spaces on the last line (recorded)
    assert repr(jnp.arange(5.0) / 8) == "Array([0.   , 0.125, 0.25 , 0.375, 0.5  ], dtype=float32)"
    assert repr(jnp.asarray([0.0, 0.14285715, 0.2857143, 0.42857146, 0.5714286], jnp.float32)) == (
        "Array([0.        , 0.14285715, 0.2857143 , 0.42857146, 0.5714286 ],      dtype=float32)")
    assert repr(cols) == "Array([[1., 2.]], dtype=float32)"
    (empty,) = jnp.ix_(jnp.asarray([], jnp.float32))
    assert empty.dtype == np.int32 and empty.shape == (0,)
    with pytest.raises(ValueError, match="must be 1-dimensional, got shape"):
        jnp.ix_(jnp.asarray([[0, 1]]))


@pytest.mark.parametrize("shift, want", [
    (1.5, [4, 0, 1, 2, 3]), (2.0, [3, 4, 0, 1, 2]), (-1.5, [1, 2, 3, 4, 0]), (jnp.asarray(2.0), [3, 4, 0, 1, 2]),
    (np.float32(2.7), [3, 4, 0, 1, 2]),
])
def test_roll_by_a_float_truncates_it_recorded_from_jax(shift, want):
    assert jnp.roll(jnp.arange(5), shift).tolist() == want


def test_roll_by_floats_per_axis_and_traced():
    assert jnp.roll(jnp.arange(6).reshape(2, 3), (1.0, 2.0), axis=(0, 1)).tolist() == [[4, 5, 3], [1, 2, 0]]
    assert srcjax.jit(lambda x, s: jnp.roll(x, s))(jnp.arange(5), 2.7).tolist() == [3, 4, 0, 1, 2]


def test_lexsort_of_a_1d_array_recorded_from_jax():
    # a 1-d array is a sequence of 0-d keys: one element to sort, at index 0
    for keys in (jnp.asarray([3, 1, 2]), jnp.asarray([3.0, 1.0, 2.0]), np.array([3, 1, 2]), [3, 1, 2]):
        assert repr(jnp.lexsort(keys)) == "Array(0, dtype=int32)"
    assert repr(jnp.lexsort(jnp.asarray([3, 1, 2]), axis=0)) == "Array(0, dtype=int32)"
    assert jnp.lexsort((jnp.asarray([3, 1, 2]),)).tolist() == [1, 2, 0]
    with pytest.raises(TypeError):
        jnp.lexsort(jnp.asarray(3))


# -- frompyfunc ------------------------------------------------------------------------------------------------
def _hypot(x, y):
    return jnp.sqrt(x * x + y * y)


ADD = jnp.frompyfunc(operator.add, nin=2, nout=1, identity=0)
HYPOT = jnp.frompyfunc(_hypot, 2, 1)
SQUARE = jnp.frompyfunc(lambda x: x * x, 1, 1)
DIVMOD = jnp.frompyfunc(lambda x, y: (x // y, x % y), 2, 2)
M = jnp.arange(6.0).reshape(2, 3)


def test_frompyfunc_attributes_recorded_from_jax():
    assert (repr(ADD), ADD.nin, ADD.nout, ADD.nargs, ADD.identity) == ("<jnp.ufunc 'add'>", 2, 1, 2, 0)
    assert HYPOT.identity is None and HYPOT.__name__ == "_hypot"
    assert isinstance(ADD, jnp.ufunc)
    assert ADD == jnp.frompyfunc(operator.add, 2, 1, identity=0)
    assert hash(ADD) == hash(jnp.frompyfunc(operator.add, 2, 1, identity=0))


def test_frompyfunc_call_recorded_from_jax():
    assert repr(ADD(X10[:4], 10)) == "Array([10, 11, 12, 13], dtype=int32)"
    same(ADD(M, jnp.asarray([1.0, 2.0, 3.0])), [[1.0, 3.0, 5.0], [4.0, 6.0, 8.0]], "float32")
    assert repr(ADD(1, 2)) == "Array(3, dtype=int32, weak_type=True)"
    assert repr(ADD(1.5, 2)) == "Array(3.5, dtype=float32, weak_type=True)"
    same(HYPOT(M, 1.0), np.hypot(np.arange(6.0).reshape(2, 3), 1.0))
    same(SQUARE(M), np.arange(6.0).reshape(2, 3) ** 2)
    q, r = DIVMOD(jnp.arange(5), 2)
    assert q.tolist() == [0, 0, 1, 1, 2] and r.tolist() == [0, 1, 0, 1, 0]
    same(srcjax.jit(lambda a: ADD(a, 1))(X10[:4]), [1, 2, 3, 4])


def test_frompyfunc_outer_recorded_from_jax():
    x = X10[:4]
    assert ADD.outer(x, x).tolist() == [[i + j for j in range(4)] for i in range(4)]
    assert HYPOT.outer(M, jnp.ones(2)).shape == (2, 3, 2)
    same(HYPOT.outer(jnp.asarray([3.0, 5.0]), jnp.asarray([4.0, 12.0])), [[5.0, 12.369317], [6.4031243, 13.0]])
    assert repr(ADD.outer(1.0, 2.0)) == "Array(3., dtype=float32, weak_type=True)"


def test_frompyfunc_reduce_recorded_from_jax():
    assert repr(ADD.reduce(X10[:4])) == "Array(6, dtype=int32)"
    same(ADD.reduce(M), [3.0, 5.0, 7.0])
    same(ADD.reduce(M, axis=1), [3.0, 12.0])
    same(ADD.reduce(M, axis=None), 15.0)
    same(ADD.reduce(M, axis=1, keepdims=True), [[3.0], [12.0]])
    assert ADD.reduce(M, axis=None, keepdims=True).shape == (1, 1)
    same(ADD.reduce(M, axis=1, initial=10.0), [13.0, 22.0])
    same(ADD.reduce(M, axis=1, where=M > 1), [2.0, 12.0])
    same(HYPOT.reduce(M, axis=1, where=M > 1, initial=0.0), [2.0, 7.071068])
    same(HYPOT.reduce(jnp.asarray([3.0, 4.0, 12.0])), 13.0)
    same(ADD.reduce(jnp.zeros((0, 2))), [0.0, 0.0])
    assert repr(ADD.reduce(X10[:4], dtype=jnp.float32)) == "Array(6., dtype=float32)"
    assert repr(HYPOT.reduce(jnp.asarray([3, 4]))) == "Array(5., dtype=float32)"
    same(srcjax.jit(HYPOT.reduce)(jnp.asarray([3.0, 4.0, 12.0])), 13.0)
    same(srcjax.grad(HYPOT.reduce)(jnp.asarray([3.0, 4.0, 12.0])), [0.23076925, 0.30769232, 0.923077])
    same(srcjax.vmap(ADD.reduce)(M), [3.0, 12.0])


def test_frompyfunc_accumulate_recorded_from_jax():
    assert ADD.accumulate(X10[:4]).tolist() == [0, 1, 3, 6]
    same(ADD.accumulate(M, axis=1), [[0.0, 1.0, 3.0], [3.0, 7.0, 12.0]])
    same(HYPOT.accumulate(jnp.asarray([3, 4, 12])), [3.0, 5.0, 13.0], "float32")
    assert repr(ADD.accumulate(X10[:4], dtype=jnp.float32)) == "Array([0., 1., 3., 6.], dtype=float32)"
    assert repr(ADD.accumulate(jnp.zeros((0,)))) == "Array([], shape=(0,), dtype=float32)"


def test_frompyfunc_at_and_reduceat_recorded_from_jax():
    x = X10[:4]
    assert ADD.at(x, 1, 10, inplace=False).tolist() == [0, 11, 2, 3]
    assert ADD.at(x, jnp.asarray([0, 0, 2]), 5, inplace=False).tolist() == [10, 1, 7, 3]
    assert ADD.at(x, jnp.asarray([0, 0, 2]), jnp.asarray([1, 2, 3]), inplace=False).tolist() == [3, 1, 5, 3]
    assert SQUARE.at(x, jnp.asarray([2, 2]), inplace=False).tolist() == [0, 1, 16, 3]
    same(ADD.at(M, (jnp.asarray([0, 1]), jnp.asarray([2, 2])), 1.0, inplace=False), [[0, 1, 3], [3, 4, 6]])
    assert repr(HYPOT.at(jnp.asarray([3, 1]), 0, 4, inplace=False)) == "Array([5., 1.], dtype=float32)"
    assert ADD.reduceat(jnp.arange(8), jnp.asarray([0, 2, 5])).tolist() == [1, 9, 18]
    same(HYPOT.reduceat(jnp.asarray([3.0, 4.0, 5.0, 12.0]), jnp.asarray([0, 2])), [5.0, 13.0])


@pytest.mark.parametrize("call, error, message", [
    (lambda: ADD(X10), TypeError, "add expected 2 arguments, got 1"),
    (lambda: ADD([1, 2], 1), TypeError, "requires ndarray or scalar arguments"),
    (lambda: ADD(X10, 1, out=X10), NotImplementedError, "out argument"),
    (lambda: ADD(X10, 1, where=X10 > 1), NotImplementedError, "where argument"),
    (lambda: SQUARE.outer(X10, X10), ValueError, "outer only supported for binary ufuncs"),
    (lambda: DIVMOD.outer(X10, X10), ValueError, "outer only supported for functions returning a single value"),
    (lambda: SQUARE.reduce(X10), ValueError, "reduce only supported for binary ufuncs"),
    (lambda: DIVMOD.reduce(X10), ValueError, "reduce only supported for functions returning a single value"),
    (lambda: HYPOT.reduce(M, axis=1, where=M > 1), ValueError, "does not have an identity"),
    (lambda: HYPOT.reduce(jnp.zeros((0, 2))), ValueError, "zero-size array to reduction operation _hypot"),
    (lambda: ADD.reduce(M, axis=(0, 1)), NotImplementedError, "tuple of axes"),
    (lambda: ADD.reduce(M, where=M), ValueError, "where argument must have dtype=bool"),
    (lambda: ADD.accumulate(M, axis=None), ValueError, "accumulate does not allow multiple axes"),
    (lambda: SQUARE.accumulate(X10), ValueError, "accumulate only supported for binary ufuncs"),
    (lambda: ADD.at(X10, 1, 10), NotImplementedError, "inplace=False"),
    (lambda: ADD.at(X10, slice(1, 3), 10, inplace=False), TypeError, "slice"),
])
def test_frompyfunc_errors_recorded_from_jax(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_frompyfunc_in_a_loop_body():
    # the ufunc's own loops nest in the user's
    total = lax.fori_loop(0, 2, lambda i, acc: acc + ADD.reduce(M[i]), 0.0)
    same(total, 15.0)


def test_shape_dtype_structs_are_abstract_arguments():
    """eval_shape and jit(...).lower take ShapeDtypeStructs as JAX does (flax's init through eval_shape, ahead-of-time
    lowering): the function sees an abstract array, float64 narrowed with x64 off."""
    spec = srcjax.ShapeDtypeStruct((2, 3), jnp.float32)
    assert srcjax.eval_shape(lambda x: x @ x.T, spec) == srcjax.ShapeDtypeStruct((2, 2), jnp.float32)
    assert srcjax.eval_shape(lambda x: x.reshape(-1)[0], spec).shape == ()
    params = {"w": srcjax.ShapeDtypeStruct((3, 4), jnp.float32)}
    assert srcjax.eval_shape(lambda p, x: {"y": p["w"] @ x}, params, jnp.ones(4))["y"].shape == (3,)
    grad_spec = srcjax.eval_shape(srcjax.grad(lambda x: (x**2).sum()), srcjax.ShapeDtypeStruct((5,), "float64"))
    assert grad_spec == srcjax.ShapeDtypeStruct((5,), jnp.float32)
    compiled = srcjax.jit(lambda x: x * 2).lower(spec).compile()
    np.testing.assert_array_equal(np.asarray(compiled(jnp.ones((2, 3)))), np.full((2, 3), 2.0))


def test_ahead_of_time_compiled_functions_check_their_arguments():
    """The AOT tutorial: a compiled function takes the lowered call's non-static arguments (pytrees too) and
    refuses others with JAX 0.10.2's TypeError, rather than reading their buffers as the compiled types."""

    def f(x, y):
        return 2 * x + y

    i32 = srcjax.ShapeDtypeStruct((), jnp.dtype("int32"))
    compiled = srcjax.jit(f).lower(i32, i32).compile()
    assert int(compiled(3, 4)) == 10
    with pytest.raises(TypeError, match=r"compiled with int32\[\] and called with int32\[3\]\nArgument 'y'"):
        compiled(jnp.arange(3), jnp.arange(3))
    with pytest.raises(TypeError, match=r"Argument 'x' compiled with int32\[\] and called with float32\[\]"):
        compiled(jnp.float32(72.0), 1)
    with pytest.raises(TypeError, match="Function compiled with input pytree does not match the input pytree"):
        compiled(1, 2, 3)
    assert int(srcjax.jit(f, static_argnums=0).lower(7, 8).compile()(5)) == 19
    assert int(srcjax.jit(f, static_argnums=0).lower(10, i32).compile()(5)) == 25
    tree = srcjax.jit(lambda d: d["a"] * d["b"]).lower({"b": 2.0, "a": jnp.ones(2)}).compile()
    same(tree({"a": jnp.arange(2.0), "b": 3.0}), [0.0, 3.0])
    with pytest.raises(TypeError, match=r"Argument 'd\['a'\]' compiled with float32\[2\] and called with float32\[3\]"):
        tree({"a": jnp.arange(3.0), "b": 3.0})
    assert str(tree.in_tree) == "PyTreeDef((({'a': *, 'b': *},), {}))"  # (JAX 0.10.2's)
    g_aot = srcjax.jit(lambda x: x @ jnp.ones(2)).lower(jnp.ones((3, 2))).compile()
    for transformed, x in ((srcjax.vmap(g_aot), jnp.ones((4, 3, 2))), (srcjax.jit(g_aot), jnp.ones((3, 2)))):
        with pytest.raises(TypeError, match="Cannot apply JAX transformations to a function lowered and compiled"):
            transformed(x)


def test_linear_transpose_typeof_and_compile_time_eval():
    """Values recorded from JAX 0.10.2."""
    f = lambda x, y: (x * 2.0 + y.sum(0), 3.0 * x)  # noqa: E731
    x_ct, y_ct = srcjax.linear_transpose(f, jnp.ones(3), jnp.ones((2, 3)))((jnp.arange(3.0), jnp.ones(3)))
    np.testing.assert_array_equal(np.asarray(x_ct), [3.0, 5.0, 7.0])
    np.testing.assert_array_equal(np.asarray(y_ct), [[0.0, 1.0, 2.0]] * 2)
    (ct,) = srcjax.linear_transpose(lambda x: x @ jnp.ones((3, 2)), srcjax.ShapeDtypeStruct((4, 3), jnp.float32))(
        jnp.ones((4, 2)))
    np.testing.assert_array_equal(np.asarray(ct), np.full((4, 3), 2.0))
    (cumsum_t,) = srcjax.jit(srcjax.linear_transpose(jnp.cumsum, jnp.ones(4)))(jnp.arange(4.0))
    np.testing.assert_array_equal(np.asarray(cumsum_t), [6.0, 6.0, 5.0, 3.0])
    typ = srcjax.typeof(jnp.ones(3))
    assert typ.shape == (3,) and typ.dtype == np.float32 and srcjax.typeof(1.0).weak_type
    with srcjax.ensure_compile_time_eval():
        np.testing.assert_allclose(float(jnp.sin(1.0)), 0.84147096, rtol=1e-6)


def test_linear_transpose_of_a_function_that_is_not_linear_is_an_error():
    """JAX 0.10.2 raises (NotImplementedError or AssertionError) where the function is not linear in its inputs;
    srcjax returned its pullback at zero (``x ** 2``: 0, ``sin``: the cotangent). Linear functions still transpose
    (values from JAX 0.10.2)."""
    x3 = jnp.arange(3.0)
    for f in (lambda x: x**2, jnp.sin, jnp.abs, lambda x: x * x, lambda x: x * jnp.sum(x), jnp.round,
              lambda x: jnp.where(x > 0, x, 0.0), lambda x: jnp.maximum(x, 0.0), lambda x: srcjax.lax.stop_gradient(x),
              lambda x: srcjax.lax.cond(x[1] > 0, lambda y: 2 * y, lambda y: -y, x)):
        with pytest.raises(NotImplementedError, match="cannot transpose"):
            srcjax.linear_transpose(f, x3)(x3)
    for f, want in [(lambda x: x.at[0].set(x[1]), [0.0, 3.0, 3.0]), (lambda x: x + 1.0, [1.0, 2.0, 3.0]),
                    (lambda x: jnp.where(jnp.array([True, False, True]), x, 0.0), [1.0, 0.0, 3.0]),
                    (lambda x: srcjax.lax.cond(True, lambda y: 2 * y, lambda y: -y, x), [2.0, 4.0, 6.0]),
                    (lambda x: jnp.real(x * (1 + 2j)), [1.0, 2.0, 3.0])]:
        (ct,) = srcjax.linear_transpose(f, x3)(x3 + 1)
        np.testing.assert_array_equal(np.asarray(ct), want)
    # a cotangent of the wrong type is JAX's TypeError (it was vjp's ValueError)
    for ct in (jnp.ones(2), jnp.ones(3, jnp.int32), (jnp.ones(3),)):
        with pytest.raises(TypeError, match="cotangent type does not match function output"):
            srcjax.linear_transpose(lambda x: x * 2, x3)(ct)
    (ct,) = srcjax.linear_transpose(lambda x: x * 2, 1.0)(3.0)
    assert float(ct) == 6.0


def test_traced_values_have_the_array_attributes():
    sizes = []

    def f(x):
        sizes.append((x.itemsize, x.nbytes))
        return (x.copy() ** 2).sum()

    np.testing.assert_array_equal(np.asarray(srcjax.grad(f)(jnp.arange(3.0))), [0.0, 2.0, 4.0])
    assert sizes == [(4, 12)]
    with pytest.raises(Exception, match=r"item\(\) needs a concrete value"):
        srcjax.jit(lambda x: x.item())(jnp.ones(1))


def test_bad_input_raises_what_jax_and_numpy_code_catch():
    """Where JAX raises TypeError and NumPy ValueError (incompatible shapes, a negative dimension, a zero arange
    step: ZeroDivisionError in JAX), srcjax's error is both, eagerly and under jit."""
    calls = [lambda: jnp.ones(3) + jnp.ones(4), lambda: srcjax.jit(lambda a, b: a + b)(jnp.ones(3), jnp.ones(4)),
             lambda: jnp.ones((2, 3)) @ jnp.ones((2, 3)), lambda: srcjax.jit(jnp.matmul)(jnp.ones((2, 3)), jnp.ones(4)),
             lambda: jnp.ones(-1), lambda: jnp.array(None),
             lambda: srcjax.jit(lambda x, s: x, static_argnums=1)(1.0, [1, 2])]
    for call in calls:
        for kind in (TypeError, ValueError):
            with pytest.raises(kind):
                call()
    for kind in (ZeroDivisionError, ValueError):
        with pytest.raises(kind, match="step must not be zero"):
            jnp.arange(0, 10, 0)


def test_typing_custom_derivatives_and_float0_modules():
    # the names user code imports for annotations and custom rules, where JAX has them
    from srcjax import custom_derivatives
    from srcjax.typing import ArrayLike, DTypeLike  # noqa: F401

    assert custom_derivatives.custom_vjp is srcjax.custom_vjp and custom_derivatives.custom_jvp is srcjax.custom_jvp
    assert srcjax.float0 == srcjax.dtypes.float0
    grads = srcjax.grad(lambda x, n: x * n, argnums=(0, 1), allow_int=True)(2.0, 3)
    assert grads[1].dtype == srcjax.float0 and float(grads[0]) == 3.0

    def annotated(x: ArrayLike) -> srcjax.Array:
        return x * 2

    assert float(srcjax.jit(annotated)(1.5)) == 3.0


def test_make_jaxpr_types_and_equations():
    """``make_jaxpr``'s ``in_avals``, ``out_avals`` (JAX 0.10.2: float32[3,4], float32[4] -> float32[3]; a Python
    float is weakly typed) and ``eqns``, a list as JAX's property is, not a method."""
    closed = srcjax.make_jaxpr(lambda x, y: jnp.dot(x + 1, y + 1))(jnp.ones((3, 4)), jnp.ones(4))
    assert [(a.shape, a.dtype) for a in closed.in_avals] == [((3, 4), np.float32), ((4,), np.float32)]
    assert [(a.shape, a.dtype) for a in closed.out_avals] == [((3,), np.float32)]
    assert isinstance(closed.eqns, list) and closed.eqns[-1].name == "dot_general"
    weak = srcjax.make_jaxpr(lambda x: jnp.sin(x) * 2.0)(1.0)
    assert [a.weak_type for a in weak.in_avals + weak.out_avals] == [True, True]


def test_make_jaxpr_eval_shape_and_vmap_refuse_non_array_arguments():
    """As ``jit`` does, ``make_jaxpr`` and ``eval_shape`` refuse a string or an object where an array goes (the
    Sharp Bits' ``make_jaxpr(func11)(iter(range(16)), 5.)``), with JAX's TypeError; ``vmap`` asked to map over
    one raises JAX 0.10.2's TypeError too, not a rank error."""
    def f(arr, extra):
        return jnp.ones(arr.shape) * extra

    for arg in (iter(range(16)), "str", object()):
        for call in (srcjax.make_jaxpr(f), lambda a, b: srcjax.eval_shape(f, a, b)):
            with pytest.raises(TypeError, match="Error interpreting argument to .* as an abstract array"):
                call(arg, 5.0)
        with pytest.raises(TypeError, match="is not a valid JAX type"):
            srcjax.vmap(f)(arg, jnp.ones(2))
    assert srcjax.vmap(lambda s, x: x * len(s), in_axes=(None, 0))("ab", jnp.ones(2)).tolist() == [2.0, 2.0]
