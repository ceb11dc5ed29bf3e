"""Python's own meaning kept where srcjax reads source instead of tracing: a ``functools.wraps`` wrapper runs its
own body, each of several lambdas on a line is itself, static arguments that compare equal but differ in type
are traced apart, a module edited and reloaded is read anew, and a short loop over a static range that computes
with Python numbers, grows a list or leaves its variable behind behaves as the Python JAX runs. Expected values:
plain Python, and JAX 0.10.2 where JAX is involved."""

import functools
import types
import warnings
import importlib
import sys

import numpy as np
import pytest

import srcjax
import srcjax.numpy as jnp
from srcjax.transpiler.frontend import TranspileError


def add_100(fn):
    @functools.wraps(fn)
    def wrapper(x):
        return fn(x) + 100.0

    return wrapper


def times_3(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs) * 3.0

    return wrapper


@add_100
def doubled(x):
    return x * 2.0


@times_3
def squared(x):
    return x * x


def test_a_wraps_wrapper_runs_its_own_body():
    assert float(srcjax.jit(doubled)(1.0)) == 102.0
    np.testing.assert_array_equal(np.asarray(srcjax.vmap(doubled)(jnp.ones(2))), [102.0, 102.0])
    assert float(srcjax.grad(squared)(1.0)) == 6.0
    assert float(srcjax.jit(lambda x: doubled(x) + squared(x))(1.0)) == 105.0  # (called from compiled code)
    assert float(srcjax.jit(add_100(srcjax.jit(squared)))(2.0)) == 112.0


def test_each_lambda_of_a_line_is_itself():
    loss, score = srcjax.jit(lambda p: jnp.sum(p * 2.0)), srcjax.jit(lambda p: jnp.sum(
        p * 3.0))
    assert float(loss(jnp.ones(3))) == 6.0 and float(score(jnp.ones(3))) == 9.0
    first, second = lambda x: x + 1.0 if x > 0 else x, lambda x: x - 1.0 if x > 0 else x
    assert float(srcjax.jit(second)(2.0)) == 1.0 and float(srcjax.grad(first)(1.0)) == 1.0
    folded_a, folded_b = lambda x: "a" and x * 2.0, lambda x: "a" and x * 3.0  # (CPython drops the "a")
    assert float(srcjax.jit(folded_b)(1.0)) == 3.0 and float(srcjax.jit(folded_a)(1.0)) == 2.0


def test_static_arguments_equal_in_value_but_not_in_type_trace_apart():
    f = srcjax.jit(lambda x, n: x * (jnp.asarray(n) + jnp.asarray(n)), static_argnums=1)
    assert [float(f(10.0, n)) for n in (1, True, 1, True, 1.0)] == [20.0, 10.0, 20.0, 10.0, 20.0]
    g = srcjax.jit(lambda x, n=1: jnp.asarray(n), static_argnames="n")
    assert g(0.0, n=1).dtype == np.int32 and g(0.0, n=1.0).dtype == np.float32


def test_a_reloaded_module_is_read_again(tmp_path, monkeypatch):
    path = tmp_path / "srcjax_reloaded_module.py"
    path.write_text("def f(x):\n    if x > 0:\n        return x * 2.0\n    return -x\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("srcjax_reloaded_module")
    try:
        assert float(srcjax.jit(module.f)(3.0)) == 6.0
        path.write_text("def f(x):\n    if x > 0:\n        return x * 5.00\n    return -x\n")  # (another size)
        importlib.reload(module)
        assert float(srcjax.jit(module.f)(3.0)) == 15.0 and float(srcjax.jit(module.f)(-3.0)) == 3.0
    finally:
        sys.modules.pop("srcjax_reloaded_module", None)


def test_the_same_function_in_two_files_is_read_from_its_own(tmp_path, monkeypatch):
    """Code objects compare equal whatever their file: two copies of a module (one with a BOM) each report an error
    at their own file's line."""
    text = "import srcjax.numpy as jnp\n\ndef f(x):\n    return x + jnp.ones(4)\n"
    (tmp_path / "srcjax_copy_a.py").write_text(text)
    (tmp_path / "srcjax_copy_b.py").write_bytes(b"\xef\xbb\xbf" + text.encode())
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        for name in ("srcjax_copy_a", "srcjax_copy_b"):
            module = importlib.import_module(name)
            with pytest.raises(TranspileError, match="incompatible shapes") as info:
                srcjax.jit(module.f)(jnp.ones(3))
            assert (info.value.loc.file, info.value.line) == (str(tmp_path / f"{name}.py"), 4)
    finally:
        sys.modules.pop("srcjax_copy_a", None)
        sys.modules.pop("srcjax_copy_b", None)


def test_round_of_an_array_is_an_int_array():
    f = lambda x: round(x) + abs(x)  # noqa: E731
    np.testing.assert_allclose(float(srcjax.jit(f)(-2.6)), -0.4000001, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(srcjax.vmap(f)(jnp.array([-2.6, 1.4]))), [-0.4000001, 2.4], rtol=1e-6)
    rounded = round(jnp.array(2.5))
    assert rounded.dtype == np.int32 and int(rounded) == 2  # (half to even)
    np.testing.assert_array_equal(np.asarray(round(jnp.array([1.26, 2.5]), 1)), np.float32([1.3000001, 2.5]))


def tenth_sum(x):
    t = 0.0
    for _ in range(10):
        t += 0.1  # Python: 0.9999999999999999
    if t >= 1.0:
        return x * 100.0
    return x


def big_sum(x):
    s = 1e10
    for _ in range(3):
        s = s + 1.0
    return x * (s - 1e10)


def past_int32(x):
    n = 1
    for _ in range(40):
        n = n * 2
    return x * (n // 2**38)


def halved_shape(x):
    n = x.shape[0]
    for _ in range(2):
        n = n // 2
    return x.reshape(n, -1).sum(1)


def loop_variable_after(x):
    for i in range(3):  # noqa: B007 - the point: i after the loop
        x = x * 2.0
    return x[i]


def for_else(x):
    for _ in range(3):
        x = x * 2.0
    else:
        x = x + 100.0
    return x


def growing_list(x):
    ys = []
    for i in range(3):
        ys = ys + [x * i]
    return jnp.stack(ys).sum(0)


@pytest.mark.parametrize("fn, want", [
    (tenth_sum, 1.0), (big_sum, 3.0), (past_int32, 4.0),
    (halved_shape, [6.0, 22.0]), (loop_variable_after, 16.0), (for_else, [100.0, 108.0, 116.0, 124.0]),
    (growing_list, [0.0, 3.0, 6.0, 9.0]),
], ids=lambda v: getattr(v, "__name__", ""))
def test_static_loops_keep_pythons_meaning(fn, want):
    x = jnp.arange(8.0) if fn in (halved_shape, loop_variable_after) else (
        jnp.arange(4.0) if fn in (for_else, growing_list) else jnp.float32(1.0))
    np.testing.assert_allclose(np.asarray(srcjax.jit(fn)(x)), want, rtol=1e-6)
    if np.ndim(x) == 0:  # (each is x times a number)
        np.testing.assert_allclose(float(srcjax.grad(fn)(x)), float(want), rtol=1e-6)


class _Model:
    def __init__(self):
        self.layers = []

    def add(self, value):
        self.layers.append(value)


def attribute_doubled(x):
    state = types.SimpleNamespace(v=x)
    for _ in range(3):
        state.v = state.v * 2.0
    return state.v


def layers_added(x):
    model = _Model()
    for i in range(3):
        model.add(x * (i + 1))
    return sum(model.layers)


@pytest.mark.parametrize("fn, want", [(attribute_doubled, 8.0), (layers_added, 6.0)], ids=["attribute", "method"])
def test_static_loops_that_change_outer_objects_run_unrolled(fn, want):
    """A short static-range loop that changes an object made before it (an attribute, a list through a method)
    runs as JAX runs it, unrolled; inside an `if` on a traced value such a change is refused
    (tests/corpus/bad_programs.py)."""
    assert float(srcjax.jit(fn)(1.0)) == want and float(srcjax.grad(fn)(1.0)) == want


class _Layer:
    def __call__(self, x):
        return x * 2.0


class _Scaled(_Layer):
    def __call__(self, x):
        return super().__call__(x) + 1.0


def test_zero_argument_super():
    layer = _Scaled()
    assert float(srcjax.jit(layer)(1.0)) == 3.0 and float(srcjax.grad(layer)(1.0)) == 2.0


def accumulated(x):
    total = 0.0

    def add(v):
        nonlocal total
        total = total + v

    add(x)
    add(x * x)
    return total


def test_nonlocal_in_a_helper():
    assert float(srcjax.jit(accumulated)(2.0)) == 6.0 and float(srcjax.grad(accumulated)(2.0)) == 5.0


class _Point:
    __match_args__ = ("x", "y")

    def __init__(self, x, y):
        self.x, self.y = x, y


def matched(x, spec):
    match spec:
        case "relu":
            return x * (x > 0)
        case ("scale", factor) if factor > 0:
            return x * factor
        case ["shift", *amounts]:
            return x + sum(amounts)
        case {"power": n, **rest}:
            return x**n + len(rest)
        case _Point(px, y=0):
            return x * px
        case int(n) | float(n):
            return x + n
        case None:
            return -x
        case _:
            return x


@pytest.mark.parametrize("spec", ["relu", ("scale", 3.0), ("scale", -1.0), ["shift", 1.0, 2.0], {"power": 2, "a": 0},
                                  _Point(4.0, 0), _Point(4.0, 1), 7, 2.5, None, "other"],
                         ids=lambda s: repr(s)[:12])
def test_match_statements_on_static_values(spec):
    want = matched(3.0, spec)
    assert float(srcjax.jit(lambda x: matched(x, spec))(3.0)) == want


def test_match_on_a_traced_value_is_refused():
    def f(x):
        match x:
            case 1.0:
                return x
            case _:
                return -x

    with pytest.raises(Exception, match="match on a traced value"):
        srcjax.jit(f)(1.0)


def test_partial_of_library_function_gets_its_arguments_once():
    # a partial over library code (no keywords, nested, keywords inside) is called as it is, not unwrapped
    add_one = functools.partial(jnp.add, 1.0)
    scaled_sum = functools.partial(functools.partial(jnp.sum, axis=0), dtype=jnp.float32)
    nested = functools.partial(functools.partial(jnp.where, True), 5.0)

    def f(x):
        return add_one(x) + scaled_sum(x) + nested(x)

    x = np.arange(3.0, dtype=np.float32)
    want = x + 1.0 + x.sum() + 5.0
    np.testing.assert_allclose(srcjax.jit(f)(x), want)
    np.testing.assert_allclose(srcjax.grad(lambda v: f(v).sum())(x), np.full(3, 4.0))


# -- `while` tests that bind names, and conditional expressions, on traced values -------------------------------
def while_walrus(x):
    y, n = x[0], 0
    while (z := y * 1.5 + 0.1) < 4.0:  # the body and the code after the loop see each trip's z
        y = z
        n += 1
    return y * x[1] + n + z


def while_walrus_break(x):
    y, n = x[0], 0
    while (z := y * 1.5 + 0.1) < 6.0:
        y = z * x[1]
        n += 1
        if y > 2.0:
            break  # (no test after a break: z keeps this trip's value)
    return y + 2.0 * z + n


def _python_walrus(x, break_at=None):
    y, n = x[0], 0
    while (z := y * 1.5 + 0.1) < (4.0 if break_at is None else 6.0):
        y = z if break_at is None else z * x[1]
        n += 1
        if break_at is not None and y > break_at:
            break
    return (y * x[1] + n + z) if break_at is None else (y + 2.0 * z + n)


@pytest.mark.parametrize("x", [[0.5, 2.0], [3.0, 1.5], [0.1, 1.2]])
def test_a_while_test_that_binds_a_name(x):
    # the body read the value z had before the loop: y stayed put and jit never ended
    x = np.asarray(x)
    for fn, want in ((while_walrus, _python_walrus(x)), (while_walrus_break, _python_walrus(x, 2.0))):
        for run in (fn, srcjax.jit(fn)):
            np.testing.assert_allclose(float(run(x)), want, rtol=1e-6)
        diff = [(float(fn(x + e)) - float(fn(x - e))) / 2e-3 for e in np.eye(2) * 1e-3]
        np.testing.assert_allclose(np.asarray(srcjax.grad(fn)(x)), diff, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(np.asarray(srcjax.vmap(while_walrus)(np.array([[0.5, 2.0], [3.0, 1.5]]))),
                               [_python_walrus([0.5, 2.0]), _python_walrus([3.0, 1.5])], rtol=1e-6)


def sqrt_or_zero(x):
    return jnp.sqrt(x) if x > 0 else x * 0.0


def test_a_conditional_expression_runs_only_the_side_it_picks():
    # Python (and JAX) evaluates one side: the gradient at x < 0 is 0. Computed on both sides and selected, the
    # unpicked sqrt's derivative made it NaN
    for grad in (srcjax.grad(sqrt_or_zero), srcjax.jit(srcjax.grad(sqrt_or_zero))):
        assert float(grad(-1.0)) == 0.0 and float(grad(4.0)) == 0.25
    np.testing.assert_array_equal(np.asarray(srcjax.vmap(srcjax.grad(sqrt_or_zero))(jnp.array([-1.0, 4.0]))),
                                  [0.0, 0.25])
    assert float(srcjax.jit(lambda x: 1 if x > 0 else x * 2.5)(-2.0)) == -5.0


# -- Python's built-ins, loop `else`, ranges and truth on traced values (each checked against the same function
# run by plain NumPy in float64, with finite differences for its gradient) -----------------------------------
def builtin_max_min(x):
    return max(x[0], x[1]) * 2.0 + min(x[0], x[1], x[2]) + max([x[2], x[0] * 0.5])


def builtin_max_key(x):
    i, v = max(enumerate(x), key=lambda pair: pair[1])  # (Python's argmax: the first of the largest)
    return v * i + min(x, key=lambda v: v * v)


def builtin_any_all(x):
    return x[0] * any(v > 1.0 for v in x) + x[1] * all([v > -2.0 for v in x]) + max(x[:1], default=3.0)


def loop_else_after_traced_break(x):
    s = x[0]
    for _ in range(5):
        s = s * 1.5
        if s > 4.0:
            break
    else:
        s = s - 100.0
    return s


def while_else_and_else_break(x):
    s, n = x[0], 0
    while s < 10.0:
        s = s * 2.0
        n += 1
        if n > 3:
            break
    else:
        s = s + 1000.0
    for _ in range(3):  # a `break` in an inner loop's `else` leaves the outer loop
        for v in x:
            if v > 2.0:
                break
            s = s + v
        else:
            s = s * 2.0
            break
        s = s + 100.0
    return s


def for_else_returns(x):
    for v in x:
        if v > 2.0:
            return v * 3.0
    else:
        return x[0] - 7.0


def negative_range_from_traced_start(x):
    n = (x[0] * 3.0).astype(int)
    s = x[1]
    for i in range(n, 0, -2):
        s = s + i * x[2]
    for i in range(n, -n, -1):
        s = s + i * 0.5
    return s


def truth_of_one_element_arrays(x):
    y = x[:1]
    while abs(y) < 10.0:
        y = y * 2.0 + 0.5
    z = x[1:2].reshape(1, 1)
    if z > 0:
        z = z * 3.0
    return y * (not x[:1]) + z.reshape(1) + (y if 0.0 < y < 100.0 else -y)


@pytest.mark.parametrize("fn", [builtin_max_min, builtin_max_key, builtin_any_all, loop_else_after_traced_break,
                                while_else_and_else_break, for_else_returns, negative_range_from_traced_start,
                                truth_of_one_element_arrays])
def test_python_built_ins_and_loop_else_on_traced_values(fn):
    # max/min/any/all tested a traced value with bool() (refused under jit, grad and vmap), a loop's `else` was
    # refused, a range with a traced start compared it to 0, and an array of one element had no truth value
    xs = np.array([[1.7, -2.3, 3.1], [0.9, 0.6, 0.1], [2.2, 2.6, 0.15]])
    total = lambda f: lambda v: jnp.sum(jnp.asarray(f(v), jnp.float32))
    for x in xs:
        want = np.asarray(fn(x))  # (NumPy float64 running the same Python)
        for run in (fn, srcjax.jit(fn)):
            np.testing.assert_allclose(np.asarray(run(jnp.asarray(x, jnp.float32))), want, rtol=2e-6, atol=1e-5)
        diff = [(np.sum(fn(x + e)) - np.sum(fn(x - e))) / 2e-4 for e in np.eye(3) * 1e-4]
        for grad in (srcjax.grad(total(fn)), srcjax.jit(srcjax.grad(total(fn)))):
            np.testing.assert_allclose(np.asarray(grad(jnp.asarray(x, jnp.float32))), diff, rtol=1e-3, atol=1e-3)
    want = np.stack([np.asarray(fn(x)) for x in xs])
    for batched in (srcjax.vmap(fn), srcjax.jit(srcjax.vmap(fn))):
        np.testing.assert_allclose(np.asarray(batched(jnp.asarray(xs, jnp.float32))), want, rtol=2e-6, atol=1e-5)


@pytest.mark.parametrize("fn, message", [
    (lambda x: 0.0 < x < 1.0, r"truth value of an array of shape \(3,\) is ambiguous"),
    (lambda x: (x > 0) or x, r"truth value of an array of shape \(3,\) is ambiguous"),
    (lambda x: not x, r"truth value of an array of shape \(3,\) is ambiguous"),
    (lambda x: x[0] > 0 and x, r"the two sides of `and` have shapes \(\) and \(3,\)"),
    (lambda x: max(x[0], x), r"truth value of an array of shape \(3,\) is ambiguous"),
])
def test_truth_of_a_traced_array_is_numpys(fn, message):
    # NumPy (and eager srcjax) refuse the truth of an array of several elements; compiled, `and`, `or`, `not` and
    # chained comparisons computed elementwise, and `a and b` broadcast a scalar against an array
    x = jnp.array([0.5, 2.0, -1.0])
    with pytest.raises(ValueError, match="ambiguous"):
        bool(x)
    with pytest.raises(TranspileError, match=message):
        srcjax.jit(fn)(x)


_M = np.ones((3, 4), np.float32)
LOOP_INDEX_AS_STATIC = [  # body(x, i) with i the index of `for i in range(1, 12)`; the sums JAX 0.10.2 gives
    ("zeros", lambda x, i: jnp.zeros(i).sum(), 0.0),
    ("full", lambda x, i: jnp.full((i, 2), 2.0).sum(), 264.0),
    ("eye", lambda x, i: jnp.eye(i).sum(), 66.0),
    ("reshape", lambda x, i: x.reshape(12 // (1 + i % 3), -1).sum(), 726.0),
    ("split", lambda x, i: jnp.split(x, [i])[0].sum() + jnp.split(x, 1 + i % 2)[0].sum(), 640.0),
    ("tile", lambda x, i: jnp.tile(x, i).sum(), 4356.0),
    ("dynamic_slice", lambda x, i: srcjax.lax.dynamic_slice(x, (0,), (i,)).sum(), 220.0),
    ("pad", lambda x, i: jnp.pad(x, i).sum() + jnp.pad(x, (0, i)).shape[0], 924.0),
    ("linspace", lambda x, i: jnp.linspace(0, 1, i).sum(), 32.5),
    ("expand_dims", lambda x, i: jnp.expand_dims(x, i % 2).sum(), 726.0),
    ("axes", lambda x, i: jnp.cumsum(_M, axis=i % 2).sum() + jnp.moveaxis(_M, i % 2, 0).sum(), 432.0),
    ("arange", lambda x, i: jnp.arange(i).sum() * x[1], 220.0),
    ("slices", lambda x, i: x[i:].sum() + x[::i].sum(), 698.0),
    ("one_hot", lambda x, i: srcjax.nn.one_hot(jnp.asarray(1), i + 1).sum(), 11.0),
    ("random_split", lambda x, i: srcjax.random.split(srcjax.random.key(0), i).shape[0] * 1.0, 66.0),
]


@pytest.mark.parametrize("body, want", [case[1:] for case in LOOP_INDEX_AS_STATIC],
                         ids=[case[0] for case in LOOP_INDEX_AS_STATIC])
def test_a_static_loop_whose_index_is_a_shape_or_axis_runs_unrolled(body, want):
    """JAX runs a Python loop under jit, so its index is a Python int: a shape, a size, an axis or a slice bound
    may be made of it. Such a loop over a static range is unrolled (a traced index there is a
    ConcretizationTypeError, which makes the loop retry unrolled), not refused."""
    def f(x):
        total = 0.0
        for i in range(1, 12):
            total = total + body(x, i)
        return total

    np.testing.assert_allclose(float(srcjax.jit(f)(jnp.arange(12.0))), want, rtol=1e-6)


def test_a_wraps_decorator_applied_inside_a_compiled_function():
    """``@functools.wraps`` over a function defined inside the compiled one copies that function's attributes onto
    the wrapper; the wrapper keeps its own parameters (``*a``) and body (JAX 0.10.2: 6.0 and 2.0)."""
    def f(x):
        @times_3
        def g(y):
            return y + 1.0

        return g(x) * 0.5

    assert float(srcjax.jit(f)(3.0)) == 6.0 and float(srcjax.grad(f)(3.0)) == 1.5


def test_a_walrus_in_a_comprehension_binds_in_the_function():
    """PEP 572: ``(z := ...)`` inside a comprehension assigns the function's ``z`` (JAX 0.10.2: 5.0)."""
    def f(x):
        out = [(z := x * i) for i in range(3)]
        return sum(out) + z

    assert float(srcjax.jit(f)(1.0)) == 5.0 and float(srcjax.grad(f)(1.0)) == 5.0


def _multiples(x):
    for i in range(3):
        yield x * i


def test_a_generator_called_from_a_compiled_function_runs_as_python():
    """A generator function the compiled function calls runs as Python on the traced values, as under JAX's
    tracing (JAX 0.10.2: 6.0, 3.0, [0, 3, 6]); only a generator defined inside it is refused."""
    def f(x):
        return sum(_multiples(x))

    assert float(srcjax.jit(f)(2.0)) == 6.0 and float(srcjax.grad(f)(2.0)) == 3.0
    np.testing.assert_array_equal(srcjax.vmap(f)(jnp.arange(3.0)), [0.0, 3.0, 6.0])


def test_a_traced_value_is_an_array_to_isinstance():
    """JAX's tracers are ``jax.Array``s (and ``jnp.ndarray``s), so a check on the argument's type takes the same
    path under jit, grad and vmap as eagerly (JAX 0.10.2: [1, 1, 0, 1, 0, 1] each time)."""
    def f(x):
        flags = [isinstance(x, srcjax.Array), isinstance(x, jnp.ndarray), isinstance(x, float),
                 isinstance(x, (int, srcjax.Array)), isinstance(x, np.ndarray), isinstance(x, srcjax.Array | None)]
        return jnp.asarray([float(flag) for flag in flags]) * x

    want = [1.0, 1.0, 0.0, 1.0, 0.0, 1.0]
    np.testing.assert_array_equal(srcjax.jit(f)(1.0), want)
    np.testing.assert_array_equal(f(jnp.float32(1.0)), want)
    np.testing.assert_array_equal(srcjax.vmap(f)(jnp.ones(2)), [want, want])
    assert float(srcjax.grad(lambda x: f(x).sum())(1.0)) == 4.0


def test_eval_and_locals_see_the_functions_variables():
    """``eval``, ``exec`` without a namespace, ``locals()`` and ``vars()`` inside a compiled function see its own
    variables (and those it closes over), as Python gives them to JAX's traced function (JAX 0.10.2: 2.0, 2.0, 7.0)."""
    offset = 5.0

    def evaluated(x):
        return eval("x * 2")

    def from_locals(x):
        y = x * 2
        return locals()["y"]

    def closed_over(x):
        scale = offset / 5.0  # (a name the body reads is one of its free variables, as Python's eval sees them)
        return vars()["x"] * scale + eval("offset")

    assert float(srcjax.jit(evaluated)(1.0)) == 2.0 and float(srcjax.grad(evaluated)(1.0)) == 2.0
    assert float(srcjax.jit(from_locals)(1.0)) == 2.0
    assert float(srcjax.jit(closed_over)(2.0)) == 7.0


STEPS = [1.0 + (i % 7 - 3) / 1000 for i in range(600)]


def test_a_long_unrolled_python_loop_compiles():
    """A Python loop over a list runs unrolled, as under JAX's tracing: 600 multiply-adds in one chain of
    elementwise ops compile (no recursion as deep as the chain) and give NumPy's float64 numbers within float32's."""
    def f(x):
        for w in STEPS:
            x = x * w - 0.25
        return x

    x = np.array([0.5, -1.25, 2.0], np.float32)
    want = x.astype(np.float64)
    for w in STEPS:
        want = want * w - 0.25
    np.testing.assert_allclose(srcjax.jit(f)(x), want, rtol=1e-4)
    np.testing.assert_allclose(srcjax.jit(srcjax.grad(lambda x: f(x).sum()))(x), np.full(3, np.prod(STEPS)), rtol=1e-4)


@(
    srcjax.jit
)
def _decorated_over_lines(x):
    if x.sum() > 0:  # (read from the source: a traced condition)
        return x * 2.0
    return -x


def test_a_decorator_whose_expression_starts_below_its_at_sign():
    """Python starts the function's code at the decorator's expression (the line after ``@(``): its source is found
    there, so Python control flow on traced values works in it."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(_decorated_over_lines(jnp.ones(2)), [2.0, 2.0])
        np.testing.assert_array_equal(_decorated_over_lines(-jnp.ones(2)), [1.0, 1.0])


def test_a_long_loop_whose_body_needs_its_index_says_why():
    """A loop over a range longer than the unrolling limit is compiled with a traced index: where its body needs
    the index as a Python int (a shape), the error points at the use and says so at the loop."""
    def f(x):
        acc = 0.0
        for i in range(300):
            acc = acc + jnp.sum(jnp.ones(i % 4 + 1)) * x
        return acc

    with pytest.raises(TranspileError, match="each dimension of the shape must be static") as info:
        srcjax.jit(f)(1.0)
    start = f.__code__.co_firstlineno
    assert info.value.line == start + 3
    assert f"{__file__}:{start + 2}:9: note: this loop makes 300 trips, so it is compiled as a loop" in str(info.value)


def test_the_loop_variable_of_a_loop_over_rows_is_its_last_row_after_it():
    """Python leaves ``for row in x`` bound to the last row, as it leaves a range's variable at the last index
    (JAX runs the loop unrolled; NumPy gives the same numbers)."""
    def f(x):
        for r in x:  # noqa: B007 - the variable is read after the loop
            x = x * 1.1
        for a, b in x[:, :2]:  # noqa: B007
            x = x + a
        return x * r + b

    x = np.arange(6.0, dtype=np.float32).reshape(3, 2) - 2.0
    want = f(x.astype(np.float64))
    np.testing.assert_allclose(srcjax.jit(f)(x), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(srcjax.vmap(f)(np.stack([x, -x]))[1], f(-x.astype(np.float64)), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(srcjax.grad(lambda x: f(x).sum())(x), _numeric_grad(lambda x: f(x).sum(), x), rtol=1e-4)


def _numeric_grad(f, x, eps=1e-6):
    x = x.astype(np.float64)
    out = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = eps
        out[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return out


def test_a_name_first_bound_in_a_static_loop_is_bound_after_it():
    """A loop over a static range (or an array's rows) runs at least once, so what its body binds is bound after
    it, as in the Python JAX runs: an array, the loop's last Python int, a function made in the body (NumPy's
    float64 numbers; JAX 0.10.2 accepts each)."""
    def arrays(x):
        for i in range(40):
            h = jnp.sin(x) + i * 0.01
            x = h * 1.01
        for r in x.reshape(3, 1):
            last = r * 2.0
        return x + h + last

    def ints_and_functions(x):
        for i in range(40):
            k = i * 2
            g = lambda y: y + i * 0.01  # noqa: E731, B023 - what is tested: the last trip's function after the loop
            x = g(x) * 0.99
        return g(x) * k

    def reference(f, x):
        np_f = types.FunctionType(f.__code__, {**f.__globals__, "jnp": np}, closure=f.__closure__)
        return np_f(x.astype(np.float64))

    x = np.array([0.5, -1.25, 2.0], np.float32)
    for f in (arrays, ints_and_functions):
        np.testing.assert_allclose(srcjax.jit(f)(x), reference(f, x), rtol=1e-5)
        np.testing.assert_allclose(srcjax.vmap(f)(np.stack([x, -x]))[1], reference(f, -x), rtol=1e-5)
        np.testing.assert_allclose(srcjax.grad(lambda v, f=f: f(v).sum())(x),
                                   _numeric_grad(lambda v, f=f: reference(f, v).sum(), x), rtol=1e-4, atol=1e-6)
    assert "for" in str(srcjax.make_jaxpr(arrays)(x))  # (still a loop: the first trip unrolled, the rest carried)
