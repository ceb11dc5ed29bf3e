"""The front end's corpus: small user programs, each run as plain Python on NumPy (the oracle), compiled to
IR and interpreted, and as emitted Python. ``jnp`` is NumPy itself when the reference run loads this file.

Each program is registered with ``@case(argument types...)``; a type is ``"f32[3]"``-like text (random
data of that type), or any other Python value, passed as a static argument.
"""

from collections import namedtuple
from functools import partial

import numpy as np

try:
    jnp = __corpus_numpy__  # noqa: F821 - the NumPy reference run injects NumPy here
    REFERENCE = True
except NameError:
    import srcjax.numpy as jnp

    REFERENCE = False

CASES = {}


def case(*args, positive=False, tol=1e-5, static=(), compiled_only=False):
    """``compiled_only``: NumPy-style item assignment, which compiles but raises on immutable arrays eagerly."""

    def register(fn):
        CASES[fn.__name__] = dict(fn=fn, args=args, positive=positive, tol=tol, static=static,
                                  compiled_only=compiled_only)
        return fn

    return register


def jit(fn):  # the reference run calls functions directly; srcjax's jit is applied by the tests
    if REFERENCE:
        return fn
    import srcjax

    return srcjax.jit(fn)


Point = namedtuple("Point", ["x", "y"])
SCALE = 3.0
TABLE = np.linspace(0.0, 1.0, 5).astype(np.float32)


# -- arithmetic ---------------------------------------------------------------------------------------------
@case("f32[3]", "f32[3]")
def add_mul(x, y):
    return x * y + x - y / 2.0


@case("f32[4]")
def polynomial(x):
    return 3 * x**3 - 2 * x**2 + x - 7


@case("f32[2,3]", "f32[3]")
def broadcast_ops(a, b):
    return a * b - b


@case("f32[5]", positive=True)
def unary_math(x):
    return jnp.exp(-x) + jnp.log(x) + jnp.sqrt(x) + jnp.tanh(x) + jnp.sin(x) * jnp.cos(x)


@case("f32[6]")
def where_select(x):
    return jnp.where(x > 0, x, 0.1 * x)


@case("i32[5]", "i32[5]")
def int_arith(a, b):
    return a * 3 + b // 2 - (a % 4)


@case("f32[3,4]", "f32[4,2]")
def matmul_chain(a, b):
    return jnp.tanh(a @ b).sum()


@case("f32[4]")
def reductions(x):
    return jnp.sum(x), jnp.max(x), jnp.mean(x * x)


@case("f32[3]", "f32[3]")
def comparisons_to_float(x, y):
    return (x < y).astype(jnp.float32) + (x >= 0)


@case("f32[2,3]")
def methods_and_attributes(x):
    return x.T.reshape(3, 2).sum(axis=0) + x.shape[0] * x.ndim


@case("f32[4]")
def chained_assignment(x):
    a = b = x * 2
    return a + b


@case("f32[4]")
def augmented_assignment(x):
    y = x + 0.0  # a copy: with NumPy, `y = x; y += 1` would change x too
    y += 1
    y *= 2
    y -= x
    y /= 3
    return y


@case("f32[]", "f32[]")
def scalar_math(a, b):
    return a * b - a / (1.0 + b * b)


# -- closures and globals ---------------------------------------------------------------------------------------
@case("f32[5]")
def global_constant(x):
    return x * SCALE + TABLE


def make_scaler(k):
    def scale(x):
        return x * k

    return scale


times_four = make_scaler(4.0)


@case("f32[3]")
def closure_over_scalar(x):
    return times_four(x) + 1


W = np.arange(12, dtype=np.float32).reshape(4, 3) / 10


@case("f32[3]")
def closure_over_array(v):
    return jnp.dot(W, v)


@case("f32[3]")
def nested_def_closure(x):
    offset = 2.0

    def shift(v):
        return v + offset

    return shift(shift(x))


@case("f32[3]")
def lambda_local(x):
    square = lambda v: v * v  # noqa: E731
    return square(x) + square(1.0)


@case("f32[3]")
def default_arguments(x, power=2, scale=0.5):
    return scale * x**power


# -- pytrees ------------------------------------------------------------------------------------------------------
@case(("f32[3]", "f32[3]"))
def tuple_argument(pair):
    a, b = pair
    return a - b, a + b


@case({"w": "f32[3]", "b": "f32[]"}, "f32[4,3]")
def dict_params(params, x):
    return jnp.dot(x, params["w"]) + params["b"]


@case(["f32[2]", "f32[2]", "f32[2]"])
def list_of_arrays(xs):
    total = xs[0]
    for x in xs[1:]:
        total = total + x
    return total


@case({"layer": {"w": "f32[2,2]", "b": "f32[2]"}}, "f32[2]")
def nested_dicts(params, x):
    layer = params["layer"]
    return jnp.tanh(layer["w"] @ x + layer["b"])


@case("f32[3]", "f32[3]")
def namedtuple_result(x, y):
    p = Point(x + y, x - y)
    return Point(p.y, p.x)


@case("f32[3]")
def return_dict(x):
    return {"double": 2 * x, "square": x * x}


@case("f32[4]")
def starred_unpack(x):
    first, *rest = [x[0], x[1], x[2], x[3]]
    return first + sum(rest)


@case("f32[3]", "f32[3]")
def swap_values(a, b):
    a, b = b, a
    return a - b


# -- static if ------------------------------------------------------------------------------------------------------
@case("f32[2,3]")
def static_if_on_shape(x):
    if x.ndim == 2:
        return x.sum(axis=1)
    return x


@case("f32[3]", True, static=(1,))
def static_if_on_flag(x, flag):
    if flag:
        y = x + 1
    else:
        y = x - 1
    return y


@case("f32[3]")
def static_none_check(x, bias=None):
    if bias is None:
        bias = 0.5
    return x + bias


@case("f32[4]")
def static_elif_chain(x):
    n = x.shape[0]
    if n < 2:
        return x
    elif n < 5:
        return x * 2
    else:
        return x * 3


@case("f32[3]")
def static_isinstance(x, scale=2):
    if isinstance(scale, int):
        return x * scale
    return x


# -- data-dependent if ---------------------------------------------------------------------------------------------
@case("f32[]")
def if_on_scalar(x):
    if x > 0:
        y = x * 2
    else:
        y = -x
    return y


@case("f32[4]")
def if_on_sum(x):
    if x.sum() > 0:
        x = x - 1.0
    return x


@case("f32[]")
def if_elif_else(x):
    if x > 1.0:
        r = x * x
    elif x > -1.0:
        r = x
    else:
        r = -x * 3.0
    return r


@case("f32[]", "f32[]")
def nested_ifs(a, b):
    if a > 0:
        if b > 0:
            out = a + b
        else:
            out = a - b
    else:
        out = a * b
    return out


@case("f32[3]")
def if_promotes_int_to_float(x):
    n = 0
    if x[0] > 0:
        n = x[1]
    return n + x


@case("f32[2]", "f32[2]")
def if_with_tuple_state(a, b):
    state = (a, b)
    if a[0] > b[0]:
        state = (b, a)
    lo, hi = state
    return hi - lo


@case("f32[]")
def if_static_count(x):
    count = 0
    if x > 0:
        count = count + 1
    return x * count


def _absolute(v):
    if v < 0:
        return -v
    return v


@case("f32[]")
def if_in_called_function(x):
    return _absolute(x) + _absolute(x - 1.0)


@case("f32[4]", compiled_only=True)
def if_with_item_update(x):
    y = x * 1.0
    if x[0] > 0:
        y[1] = 100.0
    return y


@case("f32[]", "f32[]")
def conditional_expression(a, b):
    return a if a > b else b


@case("f32[]", "f32[]")
def boolean_operators(a, b):
    if a > 0 and b > 0:
        return a + b
    if a > 0 or b > 0:
        return a - b
    return a * b


@case("f32[]")
def not_operator(x):
    if not x > 0:
        x = x * -2.0
    return x


@case("f32[]")
def chained_comparison(x):
    if -0.5 < x < 0.5:
        return x * 10.0
    return x


# -- for loops ------------------------------------------------------------------------------------------------------
@case("f32[5]")
def for_range_sum(x):
    total = 0.0
    for i in range(10):
        total = total + x * i
    return total


@case("f32[6]")
def for_over_rows(x):
    acc = 0.0
    for v in x:
        acc = acc + v * v
    return acc


@case("f32[3,4]")
def for_over_matrix_rows(m):
    acc = jnp.zeros(4)
    for row in m:
        acc = acc + jnp.tanh(row)
    return acc


@case("f32[3]")
def nested_for(x):
    s = x * 0.0
    for i in range(3):
        for j in range(4):
            s = s + x * (i - j)
    return s


@case(["f32[2]", "f32[2]", "f32[2]"])
def for_enumerate_list(xs):
    out = 0.0
    for i, v in enumerate(xs):
        out = out + i * v
    return out


@case("f32[5]")
def for_append_then_stack(x):
    outs = []
    for i in range(3):
        outs.append(x * i)
    return jnp.stack(outs)


@case("f32[5]", "f32[3]")
def convolve(x, w):
    output = []
    for i in range(1, len(x) - 1):
        output.append(jnp.dot(x[i - 1 : i + 2], w))
    return jnp.array(output)


@case("f32[8]")
def for_slices_need_static_index(x):
    total = 0.0
    for i in range(4):
        total = total + x[2 * i : 2 * i + 2].sum()
    return total


@case("f32[]")
def for_long_loop(x):
    y = x
    for i in range(1000):
        y = y * 0.999 + 0.001
    return y


@case("f32[4]")
def for_with_index_update(x):
    y = x * 0.0
    for i in range(4):
        y = y.at[i].set(x[i] * i) if not REFERENCE else _np_set(y, i, x[i] * i)
    return y


def _np_set(y, i, v):
    y = y.copy()
    y[i] = v
    return y


@case("f32[3]")
def for_over_zip(x):
    total = 0.0
    for a, b in zip([1.0, 2.0, 3.0], [x[0], x[1], x[2]]):
        total = total + a * b
    return total


@case("f32[3]", 4, static=(1,))
def for_range_static_arg(x, n):
    acc = x
    for _ in range(n):
        acc = jnp.sin(acc)
    return acc


@case("f32[2]")
def for_dtype_settles(x):
    s = 0
    for i in range(5):
        s = s + x * 0.5
    return s


@case("f32[]", "i32[]")
def for_symbolic_trip_count(x, n):
    acc = x
    for i in range(jnp.abs(n) % 5):
        acc = acc * 1.5
    return acc


# -- while loops ------------------------------------------------------------------------------------------------------
@case("f32[]", positive=True)
def newton_sqrt(a):
    x = a
    while jnp.abs(x * x - a) > 1e-4 * a:
        x = 0.5 * (x + a / x)
    return x


@case("i32[]")
def collatz_steps(n):
    n = jnp.abs(n) + 1
    steps = 0
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps = steps + 1
    return steps


@case("f32[]")
def while_counter(x):
    i = 0
    while i < 5:
        x = x * 2.0
        i += 1
    return x


@case("f32[3]")
def while_on_data_with_counter(x):
    i = 0
    total = x * 0
    while total.sum() < 10.0 and i < 50:
        total = total + jnp.abs(x) + 0.1
        i = i + 1
    return total, i


@case("f32[2]")
def while_tuple_carry(x):
    state = (x, 0.0)
    while state[1] < 3.0:
        v, t = state
        state = (v * 1.1, t + 1.0)
    return state[0]


@case("f32[]")
def nested_while(x):
    i = 0
    acc = x * 0
    while i < 3:
        j = 0
        while j < i + 1:
            acc = acc + x
            j = j + 1
        i = i + 1
    return acc


@case("f32[]", positive=True)
def while_data_dependent_halving(x):
    count = 0.0
    while x > 1.0:
        x = x / 2.0
        count = count + 1.0
    return x, count


# -- break, continue, return ------------------------------------------------------------------------------------------
@case("f32[]")
def early_return(x):
    if x < 0:
        return -x
    y = x * 2
    return y + 1


@case("f32[4]")
def return_inside_loop(x):
    for i in range(4):
        if x[i] > 0.5:
            return x[i]
    return -1.0


@case("f32[6]")
def break_in_for(x):
    total = 0.0
    for v in x:
        if v < -0.5:
            break
        total = total + v
    return total


@case("f32[6]")
def continue_in_for(x):
    total = 0.0
    for v in x:
        if v < 0:
            continue
        total = total + v
    return total


@case("f32[]", positive=True)
def break_in_while(x):
    i = 0.0
    while True:
        x = x * 1.5
        i = i + 1.0
        if x > 10.0:
            break
    return x, i


@case("f32[]")
def continue_in_while(x):
    i = 0
    total = x * 0
    while i < 6:
        i = i + 1
        if i % 2 == 0:
            continue
        total = total + x * i
    return total


@case("f32[]", "f32[]")
def multiple_returns(a, b):
    if a > b:
        if a > 0:
            return a
        return b
    elif b > 0:
        return b * 2
    return a + b


@case("f32[3]")
def static_break(x):
    total = x * 0
    for i in range(10):
        if i == 3:
            break
        total = total + x
    return total


@case("f32[3]")
def static_continue_and_return(x, limit=5):
    total = x * 0
    for i in range(limit):
        if i % 2:
            continue
        total = total + i
    if limit > 3:
        return total + x
    return total


@case("f32[5]")
def return_in_nested_loop(x):
    for i in range(5):
        for j in range(5):
            if x[i] + x[j] > 1.5:
                return x[i] * x[j]
    return 0.0


# -- nested calls -------------------------------------------------------------------------------------------------------
def _sigmoid(x):
    return 0.5 * (jnp.tanh(x / 2) + 1)


def _predict(W, b, inputs):
    return _sigmoid(jnp.dot(inputs, W) + b)


@case("f32[3]", "f32[]", "f32[4,3]")
def nested_calls(W, b, inputs):
    return _predict(W, b, inputs)


def _factorial(n):
    return 1 if n <= 1 else n * _factorial(n - 1)


@case("f32[]")
def static_recursion(x):
    return x * _factorial(5)


@jit
def _jitted_square(v):
    return v * v


@case("f32[3]")
def call_jitted_function(x):
    return _jitted_square(x) + 1


def _weighted(x, *, weight=1.0, bias=0.0):
    return x * weight + bias


@case("f32[3]")
def keyword_arguments(x):
    return _weighted(x, weight=2.0) + _weighted(x, bias=1.0)


def _total(*args, **kwargs):
    out = 0.0
    for a in args:
        out = out + a
    for k in sorted(kwargs):
        out = out + kwargs[k]
    return out


@case("f32[2]", "f32[2]")
def star_args_and_kwargs(a, b):
    parts = [a, b]
    extra = {"c": a * b}
    return _total(*parts, **extra)


@case("f32[3]")
def partial_application(x):
    scaled = partial(_weighted, weight=3.0)
    return scaled(x, bias=-1.0)


def _apply_twice(f, x):
    return f(f(x))


@case("f32[3]")
def higher_order(x):
    return _apply_twice(lambda v: v * 2 + 1, x)


# -- comprehensions -------------------------------------------------------------------------------------------------------
@case("f32[4]")
def list_comprehension(x):
    return jnp.stack([x * i for i in range(3)])


@case("f32[3]")
def dict_comprehension(x):
    d = {f"p{i}": x**i for i in range(3)}
    return d["p0"] + d["p1"] + d["p2"]


@case("f32[5]")
def generator_sum(x):
    return sum(x[i] * i for i in range(5))


@case("f32[2,2]")
def nested_comprehension(m):
    return jnp.array([[m[i, j] * (i + j) for j in range(2)] for i in range(2)])


@case("f32[6]")
def comprehension_static_filter(x):
    return sum(x[i] for i in range(6) if i % 2 == 0)


# -- NumPy-style updates ------------------------------------------------------------------------------------------------
@case("f32[5]", compiled_only=True)
def item_assignment(x):
    y = x * 1.0
    y[0] = 10.0
    y[-1] = y[0] + 1
    return y


@case("f32[5]", compiled_only=True)
def item_augmented_assignment(x):
    y = x + 0.0
    y[1] += 5.0
    y[2:4] *= 2.0
    return y


@case("f32[3,4]", compiled_only=True)
def column_assignment(m):
    m = m * 1.0
    m[:, 0] = 0.0
    m[1] = m[1] * 2
    return m


@case("f32[4]", compiled_only=True)
def argument_not_mutated(x):
    y = x
    y = y * 1.0
    y[0] = -1.0
    return y, x


# -- the seed programs ---------------------------------------------------------------------------------------------------
@case("f32[1000]")
def selu(x, alpha=1.67, lmbda=1.05):
    return lmbda * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)


@case("f32[3]")
def sum_logistic(x):
    return jnp.sum(1.0 / (1.0 + jnp.exp(-x)))


INPUTS = np.array([[0.52, 1.12, 0.77], [0.88, -1.08, 0.15], [0.52, 0.06, -1.30], [0.74, -2.49, 1.39]], np.float32)
TARGETS = np.array([True, True, False, True])


@case("f32[3]", "f32[]")
def logistic_loss(W, b):
    preds = _predict(W, b, INPUTS)
    label_probs = preds * TARGETS + (1 - preds) * (1 - TARGETS)
    return -jnp.sum(jnp.log(label_probs))


@case("f32[]")
def tanh_slides(x):
    y = jnp.exp(-2.0 * x)
    return (1.0 - y) / (1.0 + y)


@case("f32[50,50]")
def slow_f(x):
    return x * x + x * 2.0


@case("f32[4]")
def sum_of_squares(x):
    return jnp.sum(x**2)


@case("f32[4]", "f32[4]")
def sum_squared_error(x, y):
    return jnp.sum((x - y) ** 2)


MAT = (np.arange(20, dtype=np.float32).reshape(5, 4) - 10) / 7


@case("f32[4]")
def apply_matrix(v):
    return jnp.dot(MAT, v)


@case("f32[3]")
def half_norm(x):
    return jnp.dot(x.T, x) / 2.0


@case(("f32[]", "f32[]"), "f32[10]")
def linear_model_loss(params, x):
    w, b = params
    return jnp.mean((w * x + b - 3.0 * x) ** 2)


@case("f32[4]")
def for_over_rows_append(x):  # an array's rows are a static count: the loop unrolls, as over a range
    total = x[0]
    partial_products = [total]
    for v in x[1:]:
        total = total * v
        partial_products.append(total)
    return jnp.stack(partial_products)
