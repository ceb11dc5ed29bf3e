"""``srcjax.experimental.checkify``: checks turned into error values, under jit, vmap, grad and control flow.

The expected messages are JAX 0.10.2's, recorded from the same programs run with ``jax.experimental.checkify``.
"""

import functools

import numpy as np
import pytest

import srcjax as jax
import srcjax.numpy as jnp
from srcjax import lax
from srcjax.experimental import checkify

f32 = jnp.float32


def _positive(x):
    checkify.check(x > 0, "x must be positive, got {}", x)
    checkify.check(x < 10, "x={x} too big", x=x)
    return jnp.sin(x)


@pytest.mark.parametrize("wrap", ["eager", "jit_of_checkify", "checkify_of_jit"])
def test_user_checks_first_failure_and_message(wrap):
    checked = {"eager": checkify.checkify(_positive), "jit_of_checkify": jax.jit(checkify.checkify(_positive)),
               "checkify_of_jit": checkify.checkify(jax.jit(_positive))}[wrap]
    err, out = checked(f32(1.0))
    assert err.get() is None and np.isclose(out, np.sin(1.0))
    assert checked(f32(-2.0))[0].get() == "x must be positive, got -2.0 (`check` failed)"
    assert checked(f32(20.0))[0].get() == "x=20.0 too big (`check` failed)"
    with pytest.raises(checkify.JaxRuntimeError, match=r"got -2.0 \(`check` failed\)"):
        checked(f32(-2.0))[0].throw()
    assert issubclass(checkify.JaxRuntimeError, ValueError)


def test_vmap_of_checkify_reports_each_failing_example():
    err, out = jax.vmap(checkify.checkify(_positive))(jnp.array([1.0, -2.0, 20.0, -1.0]))
    assert err.get() == ("at mapped index 1: x must be positive, got -2.0 (`check` failed)\n"
                         "at mapped index 2: x=20.0 too big (`check` failed)\n"
                         "at mapped index 3: x must be positive, got -1.0 (`check` failed)")
    np.testing.assert_allclose(out, np.sin([1.0, -2.0, 20.0, -1.0]), rtol=1e-6)


def test_checkify_of_vmap_keeps_the_last_failing_example():
    err, _ = checkify.checkify(jax.vmap(_positive))(jnp.array([1.0, -2.0, 20.0, -1.0]))
    assert err.get() == "x must be positive, got -1.0 (`check` failed)"  # (JAX: argsort(pred)[-1])


def test_check_outside_checkify():
    with pytest.raises(checkify.JaxRuntimeError, match="got -1.0"):
        _positive(f32(-1.0))
    with pytest.raises(checkify.JaxRuntimeError, match="got -2.0"):
        jax.grad(_positive)(f32(-2.0))
    with pytest.raises(ValueError, match="Cannot abstractly evaluate a checkify.check which was not functionalized"):
        jax.jit(_positive)(f32(1.0))
    with pytest.raises(TypeError, match="check takes a scalar pred"):
        checkify.check(jnp.array([True]), "m")
    with pytest.raises(TypeError, match="Formatting arguments to checkify.check need to be PyTrees of arrays"):
        checkify.check(True, "m {}", 3)


def test_checkify_of_grad():
    def g(x):
        checkify.check(x < 3, "x big {}", x)
        return jnp.sin(x) * x

    err, dx = checkify.checkify(jax.grad(g))(f32(5.0))
    assert err.get() == "x big 5.0 (`check` failed)"
    assert np.isclose(dx, np.sin(5.0) + 5.0 * np.cos(5.0), rtol=1e-5)
    err, dx = jax.vmap(checkify.checkify(jax.grad(g)))(jnp.array([1.0, 4.0, 5.0]))
    assert err.get() == ("at mapped index 1: x big 4.0 (`check` failed)\n"
                         "at mapped index 2: x big 5.0 (`check` failed)")


def _cond(x):
    def yes(x):
        checkify.check(x > 1, "cond true {}", x)
        return x + 1

    def no(x):
        checkify.check(x < -1, "cond false {}", x)
        return x - 1

    return lax.cond(x > 0, yes, no, x)


def _while(x):
    def body(c):
        i, s = c
        checkify.check(s < 10, "s too big at i={i}: {s}", i=i, s=s)
        return i + 1, s + x

    return lax.while_loop(lambda c: c[0] < 5, body, (0, f32(0)))


def _scan(xs):
    def body(c, x):
        checkify.check(x >= 0, "neg at carry {}", c)
        return c + 1, x * 2

    return lax.scan(body, 0, xs)


def _fori(x, n):
    def body(i, c):
        checkify.check(c < 8, "fori {} {}", i, c)
        return c * 2

    return lax.fori_loop(0, n, body, x)


def _python_control(x):
    if x > 0:
        checkify.check(x < 5, "pos big {}", x)
    i = jnp.int32(0)
    while i < x:
        checkify.check(i < 3, "loop {}", i)
        i = i + 1
    return i


@pytest.mark.parametrize("transform", [lambda f: f, jax.jit])
def test_checks_inside_control_flow(transform):
    cases = [(_cond, f32(0.5), "cond true 0.5"), (_cond, f32(-0.5), "cond false -0.5"), (_cond, f32(2.0), None),
             (_while, f32(3.0), "s too big at i=4: 12.0"), (_while, f32(1.0), None),
             (_scan, jnp.array([1.0, -1.0, 2.0, -3.0]), "neg at carry 1"),
             (_python_control, f32(6.0), "pos big 6.0"), (_python_control, f32(4.0), "loop 3")]
    cases += [(functools.partial(_fori, n=6), f32(1.0), "fori 3 8.0"), (_fori, (f32(1.0), jnp.int32(6)), "fori 3 8.0")]
    for f, x, message in cases:
        err, _ = transform(checkify.checkify(f))(*(x if isinstance(x, tuple) else (x,)))
        assert err.get() == (None if message is None else message + " (`check` failed)"), (f, x)


def test_while_condition_checks_and_vmap_of_a_data_dependent_loop():
    def counting(x):
        def test(c):
            checkify.check(c < 4, "cond check {}", c)
            return c < 10
        return lax.while_loop(test, lambda c: c + x, f32(0))

    assert checkify.checkify(counting)(f32(3.0))[0].get() == "cond check 6.0 (`check` failed)"
    assert jax.jit(checkify.checkify(counting))(f32(5.0))[0].get() == "cond check 5.0 (`check` failed)"

    def upto(x):
        return lax.while_loop(lambda c: c < x, lambda c: (checkify.check(c < 3, "loop {}", c), c + 1.0)[1], f32(0))

    err, out = jax.vmap(checkify.checkify(upto))(jnp.array([1.0, 5.0, 2.0, 7.0]))
    assert err.get() == "at mapped index 1: loop 3.0 (`check` failed)\nat mapped index 3: loop 3.0 (`check` failed)"
    np.testing.assert_array_equal(out, [1.0, 5.0, 2.0, 7.0])


def test_nan_div_and_index_checks():
    nan = checkify.nan_checks
    assert checkify.checkify(jnp.sin, errors=nan)(jnp.inf)[0].get() == "nan generated by primitive: sin."
    assert checkify.checkify(jnp.log, errors=nan)(f32(-1.0))[0].get() == "nan generated by primitive: log."
    assert checkify.checkify(lambda x: jnp.arccos(2 * x), errors=nan)(f32(1.0))[0].get() == \
        "nan generated by primitive: acos."
    assert checkify.checkify(jnp.log, errors=checkify.user_checks)(f32(-1.0))[0].get() is None
    err, out = checkify.checkify(lambda x, y: x // y, errors=checkify.div_checks)(jnp.array([1, 2]), jnp.array([1, 0]))
    assert err.get() == "division by zero"
    err, _ = jax.jit(checkify.checkify(lambda x, i: x[i, 1], errors=checkify.index_checks))(
        jnp.arange(12.0).reshape(3, 4), 4)
    assert err.get() == ("out-of-bounds indexing for array of shape (3, 4): index 4 is out of bounds for axis 0 with "
                         "size 3. ")
    err, out = checkify.checkify(lambda x, i: x[i], errors=checkify.index_checks)(jnp.arange(3.0), -5)
    assert err.get() == "out-of-bounds indexing for array of shape (3,): index -2 is out of bounds for axis 0 with " \
                        "size 3. "
    assert out == 0.0
    err, out = checkify.checkify(lambda x, i: x.at[i].add(9.0), errors=checkify.index_checks)(
        jnp.arange(3.0), jnp.array([1, 4]))
    assert "index 4 is out of bounds for axis 0 with size 3" in err.get()
    np.testing.assert_array_equal(out, [0.0, 10.0, 2.0])


def test_automatic_checks_order_and_batched_mix():
    def multi(x):
        y = jnp.log(x)
        z = x[jnp.int32(7)]
        checkify.check(x[0] > 0, "multi {}", x[0])
        return y, z, x / x[1]

    x = jnp.array([-1.0, 0.0])
    assert checkify.checkify(multi, errors=checkify.all_checks)(x)[0].get() == "multi -1.0 (`check` failed)"
    assert checkify.checkify(multi, errors=checkify.automatic_checks)(x)[0].get() == "nan generated by primitive: log."
    err, _ = jax.vmap(checkify.checkify(multi, errors=checkify.all_checks))(jnp.array([[-1.0, 1.0], [1.0, 1.0],
                                                                                       [1.0, 0.0]]))
    assert err.get() == (
        "at mapped index 0: multi -1.0 (`check` failed)\n"
        "at mapped index 1: out-of-bounds indexing for array of shape (2,): index 7 is out of bounds for axis 0 with "
        "size 2. \nat mapped index 2: out-of-bounds indexing for array of shape (2,): index 7 is out of bounds for "
        "axis 0 with size 2. ")


def test_check_error_debug_check_and_pytrees():
    def inner(x):
        checkify.check(x > 0, "inner {}", x)
        return x

    def outer(x):
        err, y = checkify.checkify(inner)(x)
        checkify.check_error(err)
        return y

    assert jax.jit(checkify.checkify(outer))(f32(-3.0))[0].get() == "inner -3.0 (`check` failed)"
    with pytest.raises(TypeError, match="check_error takes an Error"):
        checkify.check_error(3)

    def debug(x):
        checkify.debug_check(x > 0, "dbg {}", x)
        return x * 2

    assert debug(f32(-1.0)) == -2.0 and jax.jit(debug)(f32(-1.0)) == -2.0
    assert checkify.checkify(debug)(f32(-1.0))[0].get() == "dbg -1.0 (`check` failed)"

    def tree(d):
        checkify.check(jnp.all(d["a"] > 0), "tree {a} {b}", a=d["a"], b=d["b"])
        return {"z": d["a"] + 1}

    err, out = jax.jit(checkify.checkify(tree))({"b": jnp.int32(3), "a": jnp.array([1.0, -1.0])})
    assert err.get() == "tree [ 1. -1.] 3 (`check` failed)" and str(err) == f"Error({err.get()})"
    assert checkify.all_checks == checkify.automatic_checks | checkify.user_checks
