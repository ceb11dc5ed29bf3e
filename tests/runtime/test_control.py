"""lax control flow, run eagerly: cond, switch, while_loop, fori_loop, scan, map, associative_scan.

Oracles: plain Python/NumPy loops; dtypes, weak types and the values of associative_scan with a
non-associative function are JAX's (recorded from jax 0.10).
"""

import numpy as np
import pytest

from srcjax.runtime import lax
from srcjax.runtime import numpy as jnp
from srcjax.runtime.config import config


def typ(x):
    """'f32', 'f32~' (weak), ... of an array result."""
    short = {"float32": "f32", "int32": "i32", "bool": "bool", "float16": "f16"}[x.dtype.name]
    return short + ("~" if x.weak_type else "")


# -- cond ---------------------------------------------------------------------------------------------------------
# (pred, true_fun, false_fun, operands, expected value, expected type)
COND_CASES = [
    (True, lambda x: x, lambda x: 2.0 * x, (1.0,), 1.0, "f32~"),
    (False, lambda x: x, lambda x: 2.0 * x, (1.0,), 2.0, "f32~"),
    # a weak and a strong float32 branch join to strong float32
    (True, lambda: 1.0, lambda: jnp.float32(2), (), 1.0, "f32"),
    (1, lambda: 1.0, lambda: 2.0, (), 1.0, "f32~"),  # numbers are predicates too
    (2.5, lambda: 1.0, lambda: 2.0, (), 1.0, "f32~"),
    (jnp.array(0), lambda: 1.0, lambda: 2.0, (), 2.0, "f32~"),
    (False, lambda x, y: x + y, lambda x, y: x - y, (1, 2), -1, "i32~"),
]


@pytest.mark.parametrize("pred, true_fun, false_fun, operands, value, kind", COND_CASES)
def test_cond_picks_a_branch_with_jax_types(pred, true_fun, false_fun, operands, value, kind):
    out = lax.cond(pred, true_fun, false_fun, *operands)
    assert out.item() == value and typ(out) == kind


def test_cond_operand_keyword_pytrees_and_none():
    assert lax.cond(True, lambda x: x + 1, lambda x: x - 1, operand=1.0).item() == 2.0
    out = lax.cond(False, lambda t: {"a": t[0] * 2, "b": t[1]}, lambda t: {"a": t[0] + 1, "b": -t[1]},
                   (jnp.arange(3.0), jnp.float32(5)))
    assert out["a"].tolist() == [1.0, 2.0, 3.0] and out["b"].item() == -5.0
    assert lax.cond(True, lambda: None, lambda: None) is None
    with pytest.raises(TypeError, match="not both"):
        lax.cond(True, lambda x: x, lambda x: x, 1.0, operand=2.0)


def test_cond_runs_the_untaken_branch_for_its_types_without_nan_checks():
    config.update("jax_debug_nans", True)
    try:
        out = lax.cond(True, lambda x: x, lambda x: jnp.log(-x), 1.0)  # the false branch makes a NaN
    finally:
        config.update("jax_debug_nans", False)
    assert out.item() == 1.0
    with pytest.raises(TypeError, match="the shapes do not match"):
        lax.cond(True, lambda: jnp.zeros(3), lambda: jnp.zeros(4))  # the untaken branch is checked too


COND_ERRORS = [
    (lambda: lax.cond(jnp.array([True, False]), lambda: 1.0, lambda: 2.0), TypeError,
     r"Pred must be a scalar, got \[ True False\] of shape \(2,\)"),
    (lambda: lax.cond("a", lambda: 1.0, lambda: 2.0), TypeError, "Pred must be a scalar, got 'a'"),
    (lambda: lax.cond(jnp.complex64(1), lambda: 1.0, lambda: 2.0), TypeError, "boolean or number, got complex64"),
    (lambda: lax.cond(True, 1.0, lambda: 2.0), TypeError, "should be callable"),
    (lambda: lax.cond(True, lambda: (1.0, 2.0), lambda: 2.0), TypeError,
     r"same pytree structure.*PyTreeDef\(\(\*, \*\)\) but the output of false_fun is PyTreeDef\(\*\) \(true_fun is"),
    (lambda: lax.cond(True, lambda: {"a": 1.0}, lambda: {"b": 1.0}), TypeError, "same pytree structure"),
    (lambda: lax.cond(True, lambda: 1, lambda: jnp.float32(2)), TypeError,
     r"has type int32\[\] but the corresponding output of false_fun has type float32\[\], so the dtypes do not"),
    (lambda: lax.cond(True, lambda: (1.0, jnp.zeros(3)), lambda: (1.0, jnp.zeros((3, 1)))), TypeError,
     r"output of true_fun at \[1\] has type float32\[3\] .* float32\[3,1\], so the shapes do not match"),
    (lambda: lax.cond(True, lambda: "a", lambda: "b"), TypeError, "str is not a valid JAX type"),
    (lambda: lax.cond(True, lambda x: x, lambda x: x, "a"), TypeError, "cond operands: .*str is not a valid JAX"),
]


@pytest.mark.parametrize("call, error, message", COND_ERRORS)
def test_cond_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


# -- switch -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("index, expected", [(0, 1.0), (1, -1.0), (2, 10.0), (5, 10.0), (-5, 1.0),
                                             (jnp.array(1, jnp.uint8), -1.0)])
def test_switch_clamps_the_index(index, expected):
    out = lax.switch(index, [lambda x: x, lambda x: -x, lambda x: 10.0 * x], 1.0)
    assert out.item() == expected and typ(out) == "f32~"


SWITCH_ERRORS = [
    (lambda: lax.switch(1.0, [lambda: 1.0, lambda: 2.0]), TypeError,
     "Index type must be an integer, got 1.0 as float32"),
    (lambda: lax.switch(1, []), ValueError, "Empty branch sequence"),
    (lambda: lax.switch(jnp.array([1]), [lambda: 1.0]), TypeError, r"Branch index must be scalar.*\(1,\)"),
    (lambda: lax.switch(0, [lambda x: x, lambda x: 2], 1.0), TypeError,
     r"output of branch 0 has type float32\[\] but the corresponding output of branch 1 has type int32\[\]"),
]


@pytest.mark.parametrize("call, error, message", SWITCH_ERRORS)
def test_switch_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_compiled_cond_takes_a_number_as_its_predicate_and_switch_refuses_no_branches():
    import srcjax

    f = srcjax.jit(lambda p, x: lax.cond(p, lambda v: v, lambda v: -v, x))
    # a float predicate is true where it is not 0, NaN included (JAX 0.10: ne(p, 0.0), then cond)
    assert [f(p, 2.0).item() for p in (1.5, 0.0, -0.5, float("nan"))] == [2.0, -2.0, 2.0, 2.0]
    assert srcjax.grad(lambda x: lax.cond(x, lambda v: v * v, lambda v: -v, x))(1.5).item() == 3.0
    with pytest.raises(ValueError, match="Empty branch sequence"):
        srcjax.jit(lambda i, x: lax.switch(i, [], x))(0, 1.0)


# -- while_loop and fori_loop -------------------------------------------------------------------------------------
def test_while_loop_counts_and_carries_pytrees():
    assert lax.while_loop(lambda x: x < 10, lambda x: x + 3, 0).item() == 12
    i, total = lax.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] + c[0]), (0, jnp.float32(0)))
    assert (i.item(), total.item()) == (5, 10.0)
    out = lax.while_loop(lambda x: False, lambda x: x, 7)  # the body never runs
    assert out.item() == 7 and typ(out) == "i32~"


# (init, body, expected value, expected type): a weakly typed initial carry takes the body's type, as in JAX
PROMOTIONS = [
    (0.0, lambda x: x + jnp.float32(1), 10.0, "f32"),
    (0, lambda x: x + 1.5, 10.5, "f32"),
    (0.0, lambda x: x + 1.0, 10.0, "f32~"),
]


@pytest.mark.parametrize("init, body, value, kind", PROMOTIONS)
def test_while_loop_promotes_weak_initial_carries(init, body, value, kind):
    out = lax.while_loop(lambda x: x < 10, body, init)
    assert out.item() == value and typ(out) == kind


@pytest.mark.parametrize("body, init, x64_on, kinds", [
    (lambda c, x: (c + x, c * 2), 0.0, False, ("float32", "float32~")),
    (lambda c, x: (c + x.astype(int), c), 1, True, ("int64", "int64~")),
    (lambda c, x: (c + x, c * 2), 0.0, True, ("float32", "float32")),  # (f64 against f32: traced again)
])
def test_a_carry_made_strong_in_its_own_dtype_stays_weak_inside_the_loop(body, init, x64_on, kinds):
    # JAX traces the body once when only the weak bit changes (its type match ignores it): ys made from the carry
    # stay weak and the final carry is strong (recorded from JAX 0.10.2, eagerly and under jit); srcjax traced the
    # body again with a strong carry, so the ys came out strong
    import srcjax

    kind = lambda a: a.dtype.name + ("~" if a.weak_type else "")
    saved = config.jax_enable_x64
    config.update("jax_enable_x64", x64_on)
    try:
        xs = np.arange(3.0, dtype=np.float32)
        for fn in (lambda v: lax.scan(body, init, v), srcjax.jit(lambda v: lax.scan(body, init, v))):
            carry, ys = fn(xs)
            assert (kind(carry), kind(ys)) == kinds
        assert kind(srcjax.jit(lambda v: lax.fori_loop(0, 3, lambda i, c: c + v[i], 0.0))(xs)) == "float32"
    finally:
        config.update("jax_enable_x64", saved)


WHILE_ERRORS = [
    (lambda: lax.while_loop(lambda x: x, lambda x: x + 1.5, 0.0), TypeError,
     r"cond_fun must return a boolean scalar, but got output type\(s\) \[float32\[\]\]"),
    (lambda: lax.while_loop(lambda x: jnp.array([True]), lambda x: x, 0.0), TypeError, r"\[bool\[1\]\]"),
    (lambda: lax.while_loop(lambda x: x[0] < 3, lambda x: (x[0] + 1,), (0, 1)), TypeError,
     r"same pytree structure.*PyTreeDef\(\(\*, \*\)\) but the carry output is PyTreeDef\(\(\*,\)\)"),
    (lambda: lax.while_loop(lambda x: x < 3, lambda x: jnp.zeros(2), 0.0), TypeError,
     r"input carry has type float32\[\] but the corresponding output carry component has type float32\[2\]"),
    (lambda: lax.while_loop(lambda x: x < 3, lambda x: 5, 1.0), TypeError, "so the dtypes do not match"),
    (lambda: lax.while_loop(lambda c: c[1] < 3, lambda c: (c[0], jnp.zeros(2)), (1.0, 0.0)), TypeError,
     r"input carry\[1\] has type"),
    (lambda: lax.while_loop(lambda x: x < 3, lambda x: x, "s"), TypeError, "str is not a valid JAX type"),
]


@pytest.mark.parametrize("call, error, message", WHILE_ERRORS)
def test_while_loop_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_fori_loop():
    seen = []

    def body(i, x):
        seen.append(typ(i))
        return x + i

    out = lax.fori_loop(2, 6, body, 0.0)
    assert out.item() == 2 + 3 + 4 + 5 and typ(out) == "f32~"
    assert seen == ["i32~"] * 4  # like JAX, the index is a weakly typed int32 when the bounds are concrete
    assert lax.fori_loop(jnp.int8(0), 3, lambda i, x: x * 2, 1).item() == 8
    assert lax.fori_loop(0, 3, lambda i, x: x + 1, 0, unroll=2).item() == 3
    out = lax.fori_loop(5, 2, lambda i, x: x + 1, 0)  # an empty range leaves the value alone
    assert out.item() == 0 and typ(out) == "i32~"
    assert typ(lax.fori_loop(0, 2, lambda i, x: x + 1.0, 0)) == "f32"  # JAX promotes the weak int carry
    v, acc = lax.fori_loop(0, 3, lambda i, c: (c[0] * 2, c[1] + i), (1, jnp.zeros(2, jnp.int32)))
    assert v.item() == 8 and acc.tolist() == [3, 3]


@pytest.mark.parametrize("lower, upper, names", [(jnp.int32(0), jnp.int16(2), "int32 and int16"),
                                                 (0, 2.0, "int32 and float32"), (True, 2, "bool and int32")])
def test_fori_loop_bound_types_must_agree(lower, upper, names):
    with pytest.raises(TypeError, match=f"lower and upper arguments to fori_loop must have equal types, got {names}"):
        lax.fori_loop(lower, upper, lambda i, x: x, 0.0)


# -- scan and map -------------------------------------------------------------------------------------------------
def test_scan_cumulative_sum_against_numpy():
    xs = np.arange(1.0, 7.0, dtype=np.float32).reshape(3, 2)
    carry, ys = lax.scan(lambda c, x: (c + x, c * x), jnp.zeros(2), jnp.asarray(xs))
    expected_carry, expected_ys = np.zeros(2), []
    for x in xs.astype(np.float64):
        expected_ys.append(expected_carry * x)
        expected_carry = expected_carry + x
    np.testing.assert_allclose(np.asarray(carry), expected_carry)
    np.testing.assert_allclose(np.asarray(ys), np.stack(expected_ys))
    assert ys.shape == (3, 2) and ys.dtype == np.float32


def test_scan_reverse_pytrees_and_none_outputs():
    carry, (ys, nothing) = lax.scan(lambda c, x: (c + x, (c, None)), 0, jnp.arange(4), reverse=True)
    assert carry.item() == 6 and nothing is None
    assert ys.tolist() == [6, 5, 3, 0]  # ys line up with xs: ys[i] is the carry before x[i] was added
    xs = {"a": jnp.arange(3.0), "b": (jnp.ones((3, 2)),)}
    carry, ys = lax.scan(lambda c, x: ({"s": c["s"] + x["a"]}, x["b"][0] * x["a"]), {"s": 0.0}, xs)
    assert carry["s"].item() == 3.0
    assert ys.tolist() == [[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]]


def test_scan_without_xs_and_zero_length():
    carry, ys = lax.scan(lambda c, x: (c + 1, c), 0.0, None, length=3)
    assert carry.item() == 3.0 and ys.tolist() == [0.0, 1.0, 2.0] and typ(ys) == "f32~"
    carry, ys = lax.scan(lambda c, x: (c + 1, c), 0.0, jnp.zeros(0))
    assert carry.item() == 0.0 and ys.shape == (0,) and typ(ys) == "f32~"
    carry, ys = lax.scan(lambda c, x: (c + 1, 2.0 * x), 0.0, jnp.zeros((0, 2)))
    assert ys.shape == (0, 2) and typ(ys) == "f32"
    carry, ys = lax.scan(lambda c, x: (c + x, c), 0, jnp.arange(3.0))
    assert carry.item() == 3.0 and typ(carry) == "f32" and ys.tolist() == [0.0, 0.0, 1.0]


SCAN_ERRORS = [
    (lambda: lax.scan(lambda c, x: (c, c), 0.0, None), ValueError,
     "scan got no values to scan over and `length` not provided"),
    (lambda: lax.scan(lambda c, x: (c, c), 0.0, (jnp.zeros(3), jnp.zeros(4))), ValueError,
     "scan got values with different leading axis sizes: 3, 4"),
    (lambda: lax.scan(lambda c, x: (c, c), 0.0, jnp.zeros(3), length=4), ValueError,
     r"scan got `length` argument of 4 which disagrees with leading axis sizes \[3\]"),
    (lambda: lax.scan(lambda c, x: (c, c), 0.0, 3.0), ValueError, "no leading axis to scan over"),
    (lambda: lax.scan(lambda c, x: c + 1, 0.0, jnp.zeros(3)), TypeError, r"must be a pair \(carry, y\), got float32"),
    (lambda: lax.scan(lambda c, x: (jnp.zeros(2), c), 0.0, jnp.zeros(3)), TypeError,
     r"scan body function carry input and carry output must have equal types.*float32\[2\]"),
    (lambda: lax.scan(lambda c, x: (c, c), 0.0, jnp.zeros(3), unroll=0), ValueError, "unroll"),
]


@pytest.mark.parametrize("call, error, message", SCAN_ERRORS)
def test_scan_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_map():
    out = lax.map(lambda x: x * 2, jnp.arange(3))
    assert out.tolist() == [0, 2, 4] and typ(out) == "i32"
    pairs = lax.map(lambda p: (p[0] + p[1], p[0] * p[1]), (jnp.arange(3.0), jnp.arange(3.0) + 1))
    assert pairs[0].tolist() == [1.0, 3.0, 5.0] and pairs[1].tolist() == [0.0, 2.0, 6.0]
    assert lax.map(jnp.sum, jnp.ones((4, 2)), batch_size=3).tolist() == [2.0] * 4


# -- associative_scan ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 5, 8, 9, 17])
def test_associative_scan_is_cumsum(n):
    x = np.arange(1, n + 1, dtype=np.float32)
    np.testing.assert_allclose(np.asarray(lax.associative_scan(jnp.add, jnp.asarray(x))), np.cumsum(x))
    np.testing.assert_allclose(np.asarray(lax.associative_scan(jnp.add, jnp.asarray(x), reverse=True)),
                               np.cumsum(x[::-1])[::-1])


def test_associative_scan_axis_pytrees_and_non_commutative_ops():
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    np.testing.assert_allclose(np.asarray(lax.associative_scan(jnp.add, jnp.asarray(x), axis=1)), np.cumsum(x, 1))
    np.testing.assert_allclose(np.asarray(lax.associative_scan(jnp.maximum, jnp.asarray([3.0, 1, 4, 1, 5]))),
                               [3, 3, 4, 4, 5])
    # matrix products are associative but not commutative: the prefix products in order
    mats = np.random.RandomState(0).randn(7, 2, 2).astype(np.float32)
    got = lax.associative_scan(jnp.matmul, jnp.asarray(mats))
    expected = [mats[0].astype(np.float64)]
    for m in mats[1:]:
        expected.append(expected[-1] @ m)
    np.testing.assert_allclose(np.asarray(got), np.stack(expected), rtol=1e-4, atol=1e-5)
    # a pytree of elements: an affine recurrence h <- a h + b as pairs (a, b)
    a, b = jnp.asarray([0.5, 2.0, 1.0, 3.0]), jnp.asarray([1.0, -1.0, 2.0, 0.5])
    ca, cb = lax.associative_scan(lambda l, r: (l[0] * r[0], r[0] * l[1] + r[1]), (a, b))
    h, hs = 0.0, []
    for ai, bi in zip([0.5, 2.0, 1.0, 3.0], [1.0, -1.0, 2.0, 0.5], strict=True):
        h = ai * h + bi
        hs.append(h)
    np.testing.assert_allclose(np.asarray(cb), hs)
    np.testing.assert_allclose(np.asarray(ca), np.cumprod([0.5, 2.0, 1.0, 3.0]))


def test_associative_scan_tree_shape_is_jax_s():
    # with a non-associative function the result shows the combination tree: these are JAX's values
    x = jnp.arange(1.0, 6.0)
    assert lax.associative_scan(lambda a, b: a - b, x).tolist() == [1.0, -1.0, -4.0, 0.0, -5.0]
    assert lax.associative_scan(lambda a, b: a - b, x, reverse=True).tolist() == [-1.0, 0.0, -2.0, 1.0, 5.0]


def test_associative_scan_errors():
    with pytest.raises(ValueError, match="must have the same first dimension"):
        lax.associative_scan(jnp.add, (jnp.arange(3.0), jnp.arange(4.0)))
    with pytest.raises(ValueError, match="axis 2 is out of bounds"):
        lax.associative_scan(jnp.add, jnp.ones((2, 2)), axis=2)
    with pytest.raises(ValueError, match="must return the structure of its inputs"):
        lax.associative_scan(lambda a, b: (a, b), jnp.ones(3))


def test_stop_gradient_is_the_identity_on_values():
    out = lax.stop_gradient((1, {"w": jnp.ones(2)}))
    assert typ(out[0]) == "i32~" and out[0].item() == 1 and out[1]["w"].tolist() == [1.0, 1.0]
