"""Programs the front end must reject, each with the error it must report.

``BAD[name] = (argument types, message pattern, anchor)``: the error must match the pattern and point at
the first occurrence of ``anchor`` on the line marked ``# <- name``.
"""

import types

import numpy as np

import srcjax.numpy as jnp
from srcjax import lax

BAD = {}
TWO_LAMBDAS = [lambda x: x * x, lambda x: x * x * x]
LOG = []
COUNTER = 0


class Settings:
    scale = 1.0


SETTINGS = Settings()


def bad(*args, match, anchor):
    def register(fn):
        BAD[fn.__name__] = (fn, args, match, anchor)
        return fn

    return register


@bad("f32[3]", match=r"unsupported format string passed to JitTracer.__format__", anchor="x:")
def print_symbolic_with_format_spec(x):
    print(f"{x:.3f}")  # <- print_symbolic_with_format_spec
    return x


@bad("f32[]", match=r"bool\(\) needs a concrete value", anchor="bool(x)")
def bool_of_symbolic(x):
    flag = bool(x)  # <- bool_of_symbolic
    return x if flag else -x


@bad("f32[]", match=r"float\(\) needs a concrete value", anchor="float(x)")
def float_of_symbolic(x):
    return float(x) * 2  # <- float_of_symbolic


@bad("i32[]", match=r"as a Python index", anchor="[10, 20, 30][i]")
def python_index_from_array(i):
    return [10, 20, 30][i]  # <- python_index_from_array


@bad("f32[3]", match=r"truth value of an array of shape \(3,\) is ambiguous", anchor="x > 0")
def if_on_array(x):
    if x > 0:  # <- if_on_array
        x = x + 1
    return x


@bad("f32[3]", match=r"'y' is f32\[2\] here but f32\[3\] in the then-branch; a value's shape cannot differ",
     anchor="y")
def branch_shape_mismatch(x):
    if x.sum() > 0:
        y = x
    else:
        y = x[:2]  # <- branch_shape_mismatch
    return y


@bad("f32[3]", match=r"'y' is f32\[3\] here but a tuple of 2 in the then-branch; a value's structure cannot",
     anchor="y")
def branch_structure_mismatch(x):
    if x[0] > 0:
        y = (x, x)
    else:
        y = x  # <- branch_structure_mismatch
    return y


@bad("f32[]", match=r"'mode' is 'down' here but 'up' in the then-branch; a static value cannot differ", anchor="mode")
def branch_static_mismatch(x):
    if x > 0:
        mode = "up"
    else:
        mode = "down"  # <- branch_static_mismatch
    return x, mode


@bad("f32[]", match=r"'z' may be undefined here", anchor="z")
def undefined_after_branch(x):
    if x > 0:
        z = x * 2
    return z  # <- undefined_after_branch


@bad("f32[2]", match=r"'z' may be undefined here", anchor="z")
def undefined_after_traced_break(x):
    for i, row in enumerate(x):  # (unrolled: the iterable is a Python enumerate)
        if x[0] > 1.0:
            pass
        else:
            if row > 0.3:
                break
            z = row
    return z  # <- undefined_after_traced_break


@bad("f32[3]", match=r"needs a concrete value", anchor="np.sin(x)")
def numpy_on_symbolic(x):
    return np.sin(x)  # <- numpy_on_symbolic


@bad("f32[]", match=r"cannot assign the global variable 'COUNTER' inside an `if`", anchor="COUNTER")
def assign_global_in_symbolic_if(x):
    global COUNTER
    if x > 0:
        COUNTER = 1  # <- assign_global_in_symbolic_if
    return x


@bad("f32[]", match=r"cannot change 'SETTINGS.scale'", anchor="SETTINGS.scale")
def mutate_global_object(x):
    SETTINGS.scale = x  # <- mutate_global_object
    return x


@bad("f32[]", match=r"cannot catch ValueError here", anchor="ValueError")
def catch_error_raised_on_a_traced_condition(x):
    try:
        if x > 0:
            raise ValueError("positive")
        y = x
    except ValueError:  # <- catch_error_raised_on_a_traced_condition
        y = -x
    return y


@bad("f32[]", match=r"a traced value is not a context manager", anchor="x")
def with_statement(x):
    with x:  # <- with_statement
        pass
    return x


@bad("f32[]", match=r"generators cannot be compiled", anchor="yield x")
def generator(x):
    yield x  # <- generator


@bad("f32[]", match=r"unsupported statement .*ClassDef", anchor="class Local")
def local_class(x):
    class Local:  # <- local_class
        pass

    return x


@bad("f32[3]", match=r"cannot change Python lists or dicts", anchor="while")
def list_in_symbolic_while(x):
    out = []
    while x.sum() < 10.0:  # <- list_in_symbolic_while
        out.append(x)
        x = x + 1.0
    return x


@bad("f32[2]", match=r"'s' is f32\[4\] here after an iteration but f32\[2\] before the loop; a value's shape "
                     r"cannot change inside a loop", anchor="s")
def shape_change_in_while(s):
    while s.sum() < 10.0:
        s = jnp.concatenate([s, s])  # <- shape_change_in_while
    return s


@bad("f32[]", match=r"cannot assert on a value", anchor="x > 0")
def assert_symbolic(x):
    assert x > 0  # <- assert_symbolic
    return x


@bad("f32[]", match=r"cannot assert on a value inside an `if` or loop", anchor="s < 10")
def assert_in_symbolic_while(x):
    s = x
    while s < 10.0:
        assert s < 10.0  # <- assert_in_symbolic_while
        s = s * 2
    return s


@bad("f32[]", match=r"name 'undefined_helper' is not defined", anchor="undefined_helper")
def undefined_name(x):
    return undefined_helper(x)  # <- undefined_name  # noqa: F821


def _two_args(a, b):
    return a + b


@bad("f32[]", match=r"_two_args\(\): missing a required argument", anchor="_two_args(x)")
def wrong_arity(x):
    return _two_args(x)  # <- wrong_arity


@bad("f32[3]", match=r"cannot unpack 3 values into 2 targets", anchor="a, b")
def unpack_mismatch(x):
    a, b = x  # <- unpack_mismatch
    return a + b


@bad("f32[4]", match=r"cannot filter on a value", anchor="v > 0")
def comprehension_symbolic_filter(x):
    return sum([v for v in x if v > 0])  # <- comprehension_symbolic_filter


@bad("f32[3]", "i32[3]", match=r"lax.add requires arguments to have the same dtypes, got float32, int32", anchor="lax.add(x, i)")
def lax_dtype_mismatch(x, i):
    return lax.add(x, i)  # <- lax_dtype_mismatch


@bad("f32[3]", match=r"incompatible shapes", anchor="x + jnp.ones(4)")
def broadcast_mismatch(x):
    return x + jnp.ones(4)  # <- broadcast_mismatch


@bad("f32[]", match=r"cannot assign the nonlocal variable 'total' inside an `if`", anchor="total")
def nonlocal_in_symbolic_if(x):
    total = x

    def add():
        nonlocal total
        total = total + 1  # <- nonlocal_in_symbolic_if

    if x > 0:
        add()
    return total


@bad("f32[]", match=r"cannot raise ValueError inside an `if` or loop on a traced value", anchor="raise")
def raise_on_symbolic_condition(x):
    if x > 0:
        raise ValueError("positive")  # <- raise_on_symbolic_condition
    return x


@bad("f32[]", match=r"'z' may be undefined here", anchor="z")
def first_assigned_in_symbolic_while(x):
    while x < 10.0:
        z = x
        x = x * 2.0
    return z  # <- first_assigned_in_symbolic_while


@bad("f32[]", "i32[]", match=r"range\(\) with a bound that is a traced value can only be the iterable of a `for`",
     anchor="range(n)")
def comprehension_over_symbolic_range(x, n):
    return sum([x * i for i in range(n)])  # <- comprehension_over_symbolic_range


@bad("f32[]", match=r"the returned value is f32\[4\] here but f32\[3\] where an earlier return", anchor="return")
def return_shapes_differ(x):
    if x > 0:
        return jnp.ones(3)
    return jnp.ones(4)  # <- return_shapes_differ


@bad("f32[]", match=r"match on a traced value", anchor="x")
def match_on_symbolic(x):
    match x:  # <- match_on_symbolic
        case 1.0:
            return x
        case _:
            return -x


def _forever(x):
    return _forever(x) + 1  # <- unbounded_recursion (reported where the nesting passes the limit)


@bad("f32[]", match=r"calls nest deeper than", anchor="_forever(x)")
def unbounded_recursion(x):
    return _forever(x)


@bad("f32[3]", match=r"has no attribute 'nonexistent'", anchor="x.nonexistent")
def missing_attribute(x):
    return x.nonexistent  # <- missing_attribute


@bad("f32[]", match=r"iteration over a 0-d array", anchor="s")
def iterate_scalar(s):
    total = 0.0
    for v in s:  # <- iterate_scalar
        total = total + v
    return total


@bad("f32[]", "i32[]", match=r"step must be a static number", anchor="range(0, 10, k)")
def symbolic_range_step(x, k):
    for i in range(0, 10, k):  # <- symbolic_range_step
        x = x + 1.0
    return x


@bad("f32[]", match=r"a list \(its .append\) cannot change inside an `if` on a traced value", anchor="out.append")
def list_in_symbolic_if(x):
    out = []
    if x > 0:
        out.append(x)  # <- list_in_symbolic_if
    return x


@bad("f32[]", match=r"'state.v' cannot change inside an `if` on a traced value", anchor="state.v")
def attribute_in_symbolic_if(x):
    state = types.SimpleNamespace(v=0.0)
    if x > 0:
        state.v = 5.0  # <- attribute_in_symbolic_if
    return x + state.v


@bad("f32[]", match=r"an item of a container cannot change inside an `if`", anchor="table[0][0]")
def nested_item_in_symbolic_if(x):
    table = [[0.0]]
    if x > 0:
        table[0][0] = 5.0  # <- nested_item_in_symbolic_if
    return x + table[0][0]


@bad("f32[]", match=r"'state.v' cannot change inside an `if` on a traced value or a compiled loop", anchor="state.v")
def attribute_in_symbolic_loop(x):
    state = types.SimpleNamespace(v=x)
    while x < 10.0:
        x = x * 2.0
        state.v = x  # <- attribute_in_symbolic_loop
    return state.v


@bad("f32[3]", match=r"returned a value of type str", anchor="def returns_string")
def returns_string(x):  # <- returns_string
    return "done"
