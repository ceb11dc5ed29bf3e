"""The eager fast path (runtime/eager.py ``fast_path``): a jnp function called again with the same operand
types (and scalar values) applies its one primitive's NumPy implementation directly. Whatever it returns must be
what the function itself returns: values, dtype, weak type, shape; and what it refuses, it must leave to the
function (errors included)."""

import numpy as np
import pytest

import srcjax
import srcjax.numpy as jnp
from srcjax.runtime.config import config
from srcjax.runtime.numpy import ufuncs

RNG = np.random.default_rng(0)
ARRAYS = {
    "f32[5]": jnp.asarray(RNG.standard_normal(5).astype(np.float32)),
    "f32[3,5]": jnp.asarray(RNG.standard_normal((3, 5)).astype(np.float32)),
    "i32[5]": jnp.asarray(RNG.integers(-9, 9, 5).astype(np.int32)),
    "i8[5]": jnp.asarray(RNG.integers(-9, 9, 5).astype(np.int8)),
    "bool[5]": jnp.asarray(RNG.random(5) > 0.5),
    "f32[]": jnp.asarray(np.float32(1.5)),
    "weak f32[]": jnp.asarray(2.5),  # (a weakly typed scalar array)
    "u8[5]": jnp.asarray(np.arange(5, dtype=np.uint8) * 60),
}
SCALARS = [2.0, 3, True, float("nan"), -0.0, 200, 1e30]
# (jnp.power reads a concrete 0-d integer exponent as a Python int first, then takes the fast path of _power)
FUNCTIONS = [jnp.add, jnp.subtract, jnp.multiply, jnp.true_divide, jnp.maximum, jnp.minimum, ufuncs._power, jnp.greater,
             jnp.equal, jnp.logical_and, jnp.bitwise_xor, jnp.arctan2, jnp.nextafter]
UNARY = [jnp.sin, jnp.exp, jnp.sqrt, jnp.negative, jnp.square, jnp.abs]


def unwrapped(f):
    """The function a fast path wraps (a built-in ufunc's is its ``_func``, as JAX's ufunc keeps it)."""
    return f._func if isinstance(f, jnp.ufunc) else f.__wrapped__


def outcome(f, *args):
    try:
        out = f(*args)
    except Exception as e:  # noqa: BLE001 - the same error either way
        return type(e)
    return np.asarray(out).copy(), out.aval


def same(a, b, what):
    if isinstance(a, type) or isinstance(b, type):
        assert a is b, what
        return
    (va, ta), (vb, tb) = a, b
    assert ta == tb, f"{what}: {ta} vs {tb}"
    np.testing.assert_array_equal(va, vb, err_msg=what)


@pytest.mark.parametrize("f", FUNCTIONS, ids=[f.__name__ for f in FUNCTIONS])
def test_binary_functions_agree_with_themselves(f):
    operands = list(ARRAYS.items()) + [(repr(s), s) for s in SCALARS]
    for name1, x in operands:
        for name2, y in operands:
            if not (isinstance(x, srcjax.Array) or isinstance(y, srcjax.Array)):
                continue
            want = outcome(unwrapped(f), x, y)
            for _ in range(2):  # (the first call records, the second takes the fast path)
                same(outcome(f, x, y), want, f"{f.__name__}({name1}, {name2})")


@pytest.mark.parametrize("f", UNARY, ids=[f.__name__ for f in UNARY])
def test_unary_functions_agree_with_themselves(f):
    for name, x in ARRAYS.items():
        want = outcome(unwrapped(f), x)
        for _ in range(2):
            same(outcome(f, x), want, f"{f.__name__}({name})")


def test_where_dot_and_matmul():
    c, a, b = ARRAYS["bool[5]"], ARRAYS["f32[5]"], ARRAYS["i32[5]"]
    m = ARRAYS["f32[3,5]"]
    for f, args in [(jnp.where, (c, a, b)), (jnp.where, (c, a, 1.0)), (jnp.dot, (m, a)), (jnp.matmul, (m, m.T)),
                    (jnp.dot, (m.T, m))]:
        want = outcome(f.__wrapped__, *args)
        for _ in range(2):
            same(outcome(f, *args), want, f.__name__)


def test_flags_are_part_of_the_key():
    x = jnp.asarray(np.arange(3, dtype=np.int32))
    first = jnp.add(x, 2**40 if config.jax_enable_x64 else 7)
    saved = config.jax_enable_x64
    config.update("jax_enable_x64", not saved)
    try:
        again = jnp.add(x, 7)
        assert again.dtype == unwrapped(jnp.add)(x, 7).dtype
    finally:
        config.update("jax_enable_x64", saved)
    assert first.dtype == np.int32


def test_debug_nans_still_raises():
    x = jnp.asarray(np.array([1.0, -1.0], np.float32))
    jnp.sqrt(x), jnp.sqrt(x)  # (recorded, then fast)
    config.update("jax_debug_nans", True)
    try:
        with pytest.raises(FloatingPointError):
            jnp.sqrt(x)
    finally:
        config.update("jax_debug_nans", False)


def test_inside_jit_and_grad_the_function_itself_runs():
    f = srcjax.jit(lambda x: jnp.add(x, 1.0) * 2.0)
    x = jnp.asarray(np.arange(3.0, dtype=np.float32))
    jnp.add(x, 1.0), jnp.add(x, 1.0)
    np.testing.assert_array_equal(np.asarray(f(x)), (np.arange(3.0) + 1) * 2)
    assert float(srcjax.grad(lambda x: jnp.sum(jnp.multiply(x, 3.0)))(x)[0]) == 3.0


def test_results_are_immutable_arrays():
    x = ARRAYS["f32[5]"]
    jnp.multiply(x, 2.0)
    y = jnp.multiply(x, 2.0)
    assert type(y) is srcjax.Array and not np.asarray(y).flags.writeable
    with pytest.raises(TypeError):
        y[0] = 1.0


def test_an_operand_passed_twice_is_not_confused_with_two():
    x, y = ARRAYS["f32[5]"], jnp.asarray(np.arange(5, dtype=np.float32))
    jnp.multiply(x, x)  # (recorded with one array in both places)
    np.testing.assert_array_equal(np.asarray(jnp.multiply(x, y)), np.asarray(x) * np.arange(5, dtype=np.float32))
    np.testing.assert_array_equal(np.asarray(jnp.multiply(y, y)), np.arange(5, dtype=np.float32) ** 2)


def test_negative_zero_is_its_own_scalar():
    x = jnp.asarray(np.ones(3, np.float32))
    assert np.all(np.asarray(jnp.true_divide(x, 0.0)) == np.inf)
    assert np.all(np.asarray(jnp.true_divide(x, -0.0)) == -np.inf)


def test_a_nan_scalar_keeps_its_sign_from_call_to_call():
    # (float.hex() writes "nan" for both signs: a key made of it replayed the first NaN's sign)
    x = jnp.asarray(np.ones(3, np.float32))
    for scalar in (-np.nan, np.nan, -np.nan):
        assert np.all(np.signbit(np.asarray(jnp.add(x, scalar))) == np.signbit(scalar))
        assert np.all(np.signbit(np.asarray(jnp.sum(x, initial=scalar))) == np.signbit(scalar))


def test_three_operands_one_of_them_twice():
    c, a = ARRAYS["bool[5]"], ARRAYS["f32[5]"]
    b = jnp.asarray(np.arange(5, dtype=np.float32))
    jnp.where(c, a, a), jnp.where(c, a, a)  # (recorded with one array in two places)
    np.testing.assert_array_equal(np.asarray(jnp.where(c, a, b)), np.where(np.asarray(c), np.asarray(a), np.asarray(b)))
    np.testing.assert_array_equal(np.asarray(jnp.where(c, b, b)), np.asarray(b))


REDUCTIONS = [jnp.sum, jnp.prod, jnp.max, jnp.min, jnp.all, jnp.any, jnp.mean, jnp.var, jnp.std, jnp.argmax,
              jnp.argmin]
OPTIONS = [{}, {"axis": 0}, {"axis": -1, "keepdims": True}, {"axis": (0, 1)}, {"dtype": jnp.float32},
           {"axis": None, "keepdims": True}, {"ddof": 1}, {"initial": 2.0}, {"axis": 5}, {"keepdims": False}]


@pytest.mark.parametrize("f", REDUCTIONS, ids=[f.__name__ for f in REDUCTIONS])
def test_reductions_replay_several_primitives_and_keyword_options(f):
    # (mean binds a sum and a division, var several more: the chain is replayed; options are part of the key)
    for name, x in ARRAYS.items():
        for options in OPTIONS:
            want = outcome(lambda a, o=options: f.__wrapped__(a, **o), x)
            for _ in range(2):
                same(outcome(lambda a, o=options: f(a, **o), x), want, f"{f.__name__}({name}, **{options})")


def test_an_array_among_the_options_takes_the_function_itself():
    x = ARRAYS["f32[3,5]"]
    mask = jnp.asarray(RNG.random((3, 5)) > 0.3)
    for where in (mask, ~mask, mask):  # (values differ with the same type: never served from a recording)
        np.testing.assert_allclose(jnp.sum(x, where=where), np.sum(np.asarray(x), where=np.asarray(where)), rtol=1e-6)
    np.testing.assert_allclose(jnp.var(x, axis=0, ddof=1), np.var(np.asarray(x), axis=0, ddof=1), rtol=1e-5)
