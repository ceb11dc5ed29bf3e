"""Programs the front end must reject, each with the error it must report.

``BAD[name] = (function, argument types, message pattern, anchor, kind, notes)``: the error must match the
pattern, be an instance of ``kind`` (JAX's exception type, where JAX raises one), point at the first occurrence
of ``anchor`` on the line marked ``# <- name``, and carry a note at each line marked ``# <- <note>`` for the
names in ``notes``, in order (the calls that led to a helper's line, the other lines involved).

``BAD_CALLS[name] = (function, kind, message pattern)``: a call of the API that is wrong (a transform applied
to the wrong types, jit's options, a value that escaped a trace); calling ``function`` raises ``kind``, whose
message matches, at the line marked ``# <- name`` (the error's own location, or the user's frame it is raised
through), never inside the library without the user's line.
"""

import functools
import math
import types

import numpy as np

import srcjax
import srcjax.numpy as jnp
from srcjax import lax

BAD = {}
BAD_CALLS = {}
TWO_LAMBDAS = [lambda x: x * x, lambda x: x * x * x]
LOG = []
COUNTER = 0


class Settings:
    scale = 1.0


SETTINGS = Settings()


def bad(*args, match, anchor, kind=Exception, notes=()):
    def register(fn):
        BAD[fn.__name__] = (fn, args, match, anchor, kind, notes)
        return fn

    return register


def bad_call(kind, match):
    def register(fn):
        BAD_CALLS[fn.__name__] = (fn, kind, match)
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


@bad("f32[]", match=r"'SETTINGS.scale' cannot change inside an `if` on a traced value", anchor="SETTINGS.scale")
def mutate_global_object(x):
    if x > 0:  # (outside such an `if` the module's object changes while the function is read, as under JAX)
        SETTINGS.scale = 2.0  # <- mutate_global_object
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


# -- errors deep inside helpers: the helper's line, then a note per call that led there ----------------------
def _chain_inner(a, b):
    return jnp.dot(a, b)  # <- helper_chain_dot


def _chain_mid(a, b):
    return _chain_inner(a, b) + 1.0  # <- helper_chain_dot:inner


@bad("f32[2,3]", "f32[4]", match=r"dot: shapes \(2, 3\) and \(4,\) are not aligned", anchor="jnp.dot", kind=TypeError,
     notes=("helper_chain_dot:inner", "helper_chain_dot:mid"))
def helper_chain_dot(a, b):
    return _chain_mid(a, b)  # <- helper_chain_dot:mid


class _Dense:
    def __init__(self, rows):
        self.rows = rows

    def __call__(self, w, x):
        return w.reshape(self.rows, -1) @ x  # <- method_reshape_in_layer


@bad("f32[6]", "f32[3]", match=r"reshape: cannot reshape array of size 6 into shape \(4, -1\)", anchor="w.reshape",
     kind=TypeError, notes=("method_reshape_in_layer:call",))
def method_reshape_in_layer(w, x):
    layer = _Dense(4)
    return layer(w, x)  # <- method_reshape_in_layer:call


def _scan_step(carry, x):
    return carry + jnp.dot(x, jnp.ones(4)), None  # <- scan_body_helper


@bad("f32[2,3]", match=r"dot: shapes \(3,\) and \(4,\) are not aligned", anchor="jnp.dot", kind=TypeError,
     notes=("scan_body_helper:scan",))
def scan_body_helper(xs):
    return lax.scan(_scan_step, 0.0, xs)[0]  # <- scan_body_helper:scan


def _normalize(v):
    return v / jnp.linalg.norm(v, axis=2)  # <- vmapped_helper_axis


@bad("f32[2,3]", match=r"axis 2 is out of bounds for an array of dimension 1", anchor="jnp.linalg.norm",
     kind=ValueError, notes=("vmapped_helper_axis:vmap",))
def vmapped_helper_axis(xs):
    return srcjax.vmap(_normalize)(xs)  # <- vmapped_helper_axis:vmap


def _branch(x):
    return x @ jnp.ones(5)  # <- cond_branch_helper_matmul


@bad("bool[]", "f32[3]", match=r"matmul: .*shapes \(3,\) and \(5,\)", anchor="x @", kind=TypeError,
     notes=("cond_branch_helper_matmul:cond",))
def cond_branch_helper_matmul(p, x):
    return lax.cond(p, _branch, lambda x: x.sum(), x)  # <- cond_branch_helper_matmul:cond


def _gen_positive(x):
    if x > 0:  # <- generator_helper_traced_if:if
        yield x


@bad("f32[]", match=r"bool\(\) needs a concrete value", anchor="sum(", kind=TypeError,
     notes=("generator_helper_traced_if:if",))
def generator_helper_traced_if(x):
    return sum(_gen_positive(x))  # <- generator_helper_traced_if


def _countdown(x, n):
    return x if n == 0 else _countdown(x * 2, n - 1)  # <- recursion_stopping_on_traced_value


@bad("f32[]", "i32[]", match=r"calls nest deeper than .* levels", anchor="_countdown(x * 2", kind=RecursionError,
     notes=("recursion_stopping_on_traced_value:call",))
def recursion_stopping_on_traced_value(x, n):
    return _countdown(x, n)  # <- recursion_stopping_on_traced_value:call


class _Reshaper:
    def to(self, x, size):
        return x.reshape(size)  # <- partial_of_a_method_with_keywords


@bad("f32[3]", match=r"reshape: cannot reshape array of size 3 into shape \(5,\)", anchor="x.reshape", kind=TypeError,
     notes=("partial_of_a_method_with_keywords:call",))
def partial_of_a_method_with_keywords(x):
    return functools.partial(_Reshaper().to, size=5)(x)  # <- partial_of_a_method_with_keywords:call


# -- dtypes ---------------------------------------------------------------------------------------------------
@bad("f16[3]", "f32[3]", match=r"lax.max requires arguments to have the same dtypes, got float16, float32",
     anchor="lax.max", kind=TypeError)
def lax_max_mixed_floats(x, y):
    return lax.max(x, y)  # <- lax_max_mixed_floats


@bad("f32[3]", "i32[3]", match=r"lax.select_n: .*dtypes|select.*same dtype|must have the same dtype",
     anchor="lax.select", kind=TypeError)
def lax_select_mixed_cases(x, i):
    return lax.select(x > 0, x, i)  # <- lax_select_mixed_cases


@bad("i32[]", match=r"Python int 1099511627776 too large to convert to int32", anchor="x + 2**40",
     kind=OverflowError)
def int_literal_overflows_int32(x):
    return x + 2**40  # <- int_literal_overflows_int32


@bad("u8[]", match=r"Python integer 300 out of bounds for uint8", anchor="jnp.uint8(300)", kind=OverflowError)
def uint8_literal_out_of_range(x):
    return x + jnp.uint8(300)  # <- uint8_literal_out_of_range


# -- pytrees and the structure of control flow ----------------------------------------------------------------
@bad("f32[3]", match=r"the input carry has type float32\[1\] but the corresponding output carry component has "
                     r"type float32\[2\], so the shapes do not match", anchor="lax.scan", kind=TypeError)
def scan_carry_grows(xs):
    return lax.scan(lambda c, x: (jnp.concatenate([c, x[None]]), x), jnp.zeros(1), xs)  # <- scan_carry_grows


@bad("f32[3]", match=r"the input carry\['b'\] has type float32\[\] but the corresponding output carry component has "
                     r"type int32\[\]", anchor="lax.scan", kind=TypeError)
def scan_carry_dtype_at_path(xs):
    def body(c, x):
        return {"a": c["a"] + x, "b": c["b"].astype(jnp.int32)}, x

    return lax.scan(body, {"a": 0.0, "b": 1.0}, xs)  # <- scan_carry_dtype_at_path


@bad("f32[3]", match=r"carry input and carry output must have the same pytree structure", anchor="lax.scan",
     kind=TypeError)
def scan_carry_structure_changes(xs):
    return lax.scan(lambda c, x: ((c, c), x), 0.0, xs)  # <- scan_carry_structure_changes


@bad("f32[3]", match=r"scan body output must be a pair", anchor="lax.scan", kind=TypeError)
def scan_body_not_a_pair(xs):
    return lax.scan(lambda c, x: c + x, 0.0, xs)  # <- scan_body_not_a_pair


@bad("f32[3]", "f32[4]", match=r"scan got values with different leading axis sizes: 3, 4", anchor="lax.scan",
     kind=ValueError)
def scan_xs_lengths_differ(a, b):
    return lax.scan(lambda c, x: (c + x[0] + x[1], None), 0.0, (a, b))  # <- scan_xs_lengths_differ


@bad("f32[3]", match=r"scan got `length` argument of 5 which disagrees with leading axis sizes \[3\]",
     anchor="lax.scan", kind=ValueError)
def scan_length_disagrees(xs):
    return lax.scan(lambda c, x: (c + x, None), 0.0, xs, length=5)  # <- scan_length_disagrees


@bad("bool[]", "f32[]", match=r"cond branch outputs must have the same pytree structure", anchor="lax.cond",
     kind=TypeError)
def cond_branch_structures_differ(p, x):
    return lax.cond(p, lambda x: (x, x), lambda x: x, x)  # <- cond_branch_structures_differ


@bad("bool[]", "i32[]", match=r"cond branches must have equal output types but they differ: the output of true_fun "
                              r"has type float32\[\] but the corresponding output of false_fun has type int32\[\]",
     anchor="lax.cond", kind=TypeError)
def cond_literal_branch_against_int(p, x):  # (a Python float is not promoted to meet the other branch, as in JAX)
    return lax.cond(p, lambda x: 1.5, lambda x: x, x)  # <- cond_literal_branch_against_int


@bad("i32[]", "f32[3]", match=r"switch branches must have equal output types .* so the shapes do not match",
     anchor="lax.switch", kind=TypeError)
def switch_branch_shapes_differ(i, x):
    return lax.switch(i, [lambda x: x, lambda x: x[:2]], x)  # <- switch_branch_shapes_differ


@bad("bool[2]", "f32[]", match=r"Pred must be a scalar", anchor="lax.cond", kind=TypeError)
def cond_on_a_vector(p, x):
    return lax.cond(p, lambda x: x, lambda x: -x, x)  # <- cond_on_a_vector


@bad("f32[]", "f32[]", match=r"Index must be an integer", anchor="lax.switch", kind=TypeError)
def switch_on_a_float(i, x):
    return lax.switch(i, [lambda x: x, lambda x: -x], x)  # <- switch_on_a_float


@bad("f32[1]", match=r"while_loop body function carry input and carry output must have equal types.*shapes do not",
     anchor="lax.while_loop", kind=TypeError)
def while_loop_carry_grows(x):
    return lax.while_loop(lambda c: c.sum() < 10, lambda c: jnp.concatenate([c, c]), x)  # <- while_loop_carry_grows


@bad("f32[3]", match=r"cond_fun must return a boolean scalar", anchor="lax.while_loop", kind=TypeError)
def while_loop_vector_condition(x):
    return lax.while_loop(lambda c: c < 10, lambda c: c * 2, x)  # <- while_loop_vector_condition


@bad("f32[]", match=r"while_loop body function carry input and carry output must have the same pytree structure",
     anchor="lax.while_loop", kind=TypeError)
def while_loop_carry_structure(x):
    return lax.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 1,), (x, x))  # <- while_loop_carry_structure


@bad("f32[]", match=r"lax.while_loop: body_fun and cond_fun arguments should be callable", anchor="lax.while_loop",
     kind=TypeError)
def while_loop_condition_not_callable(x):
    return lax.while_loop(x < 1, lambda c: c, x)  # <- while_loop_condition_not_callable


@bad("f32[]", "f32[]", match=r"lower and upper arguments to fori_loop must have equal types, got int32 and float32",
     anchor="lax.fori_loop", kind=TypeError)
def fori_loop_float_upper_bound(x, n):
    return lax.fori_loop(0, n, lambda i, c: c + i, x)  # <- fori_loop_float_upper_bound


@bad("f32[]", match=r"<lambda>\(\): too many positional arguments", anchor="lax.fori_loop", kind=TypeError)
def fori_loop_body_takes_one_argument(x):
    return lax.fori_loop(0, 3, lambda c: c + 0.5, x)  # <- fori_loop_body_takes_one_argument


@bad("f32[3]", "f32[3]", match=r"tree_map: tree 1 vs the first tree: pytree structure mismatch",
     anchor="srcjax.tree_util", kind=ValueError)
def tree_map_structures_differ(x, y):
    return srcjax.tree_util.tree_map(lambda a, b: a + b, {"a": x}, {"b": y})  # <- tree_map_structures_differ


# -- Python that needs a traced value's number ----------------------------------------------------------------
@bad("f32[]", match=r"int\(\) needs a concrete value", anchor="int(x)", kind=TypeError)
def int_of_traced(x):
    return jnp.zeros(3)[int(x)]  # <- int_of_traced


@bad("f32[]", match=r"item\(\) needs a concrete value", anchor="x.item()", kind=TypeError)
def item_of_traced(x):
    return x.item() * 2  # <- item_of_traced


@bad("f32[]", match=r"float\(\) needs a concrete value", anchor="math.sin(x)", kind=TypeError)
def math_function_of_traced(x):
    return math.sin(x)  # <- math_function_of_traced


@bad("f32[3]", match=r"conversion to a NumPy array needs a concrete value", anchor="np.asarray(x)", kind=TypeError)
def numpy_array_of_traced(x):
    return jnp.asarray(np.asarray(x)) + 1  # <- numpy_array_of_traced


@bad("f32[3]", match=r"bool\(\) needs a concrete value", anchor="2.0 in x", kind=TypeError)
def membership_in_traced(x):
    return 2.0 in x  # <- membership_in_traced


@bad("f32[3]", match=r"bool\(\) needs a concrete value", anchor="sorted(x)", kind=TypeError)
def sorted_of_traced(x):
    return jnp.stack(sorted(x))  # <- sorted_of_traced


@bad("f32[]", match=r"unhashable type: a traced value \(f32\[\]\) cannot be hashed", anchor="x:", kind=TypeError)
def traced_dict_key(x):
    table = {x: 1.0}  # <- traced_dict_key
    return table[x]


@bad("f32[]", match=r"unhashable type: a traced value", anchor="hash(x)", kind=TypeError)
def hash_of_traced(x):
    return hash(x)  # <- hash_of_traced


@bad("f32[]", match=r"unhashable type: a traced value", anchor="{x, 1.0}", kind=TypeError)
def traced_set_item(x):
    return len({x, 1.0})  # <- traced_set_item


TABLE = {0: 1.0, 1: 2.0}


@bad("i32[]", match=r"unhashable type: a traced value \(i32\[\]\)", anchor="TABLE.get", kind=TypeError)
def dict_get_with_a_traced_key(i):  # (a lookup by identity would silently give the default)
    return TABLE.get(i, 5.0)  # <- dict_get_with_a_traced_key


@bad("i32[]", match=r"unhashable type: a traced value", anchor="TABLE[i]", kind=TypeError)
def dict_item_with_a_traced_key(i):
    return TABLE[i]  # <- dict_item_with_a_traced_key


@bad("i32[]", match=r"unhashable type: a traced value", anchor="i in {0, 1}", kind=TypeError)
def traced_in_a_set(i):  # (a lookup by identity would silently be False)
    return jnp.float32(i in {0, 1})  # <- traced_in_a_set


@bad("f32[]", match=r"'y' is f32\[\] here but NoneType in the else-branch", anchor="y")
def none_or_array_after_traced_if(x):
    y = None
    if x > 0:
        y = x  # <- none_or_array_after_traced_if
    return y


@bad("f32[2]", "i32[]", match=r"'x' is f32\[3\] here after an iteration but f32\[2\] before the loop", anchor="x")
def traced_range_loop_grows_carry(x, n):
    for _ in range(n):
        x = jnp.append(x, 1.0)  # <- traced_range_loop_grows_carry
    return x


@bad("f32[3]", match=r"g\(\): too many positional arguments", anchor="g(*x)", kind=TypeError)
def star_args_of_traced_too_many(x):
    def g(a, b):
        return a + b

    return g(*x)  # <- star_args_of_traced_too_many


@bad("f32[]", match=r"generators cannot be compiled", anchor="yield v")
def generator_defined_inside(x):
    def gen(v):
        yield v  # <- generator_defined_inside

    return sum(gen(x))


@bad("f32[3]", match=r"not: does not accept float32 operands; they must be bool or integer", anchor="~x",
     kind=TypeError)
def invert_a_float(x):
    return ~x  # <- invert_a_float


@bad("f32[]", match=r"unsupported operand type\(s\) for \+: 'JitTracer' and 'NoneType'", anchor="x + None",
     kind=TypeError)
def add_none_to_traced(x):
    return x + None  # <- add_none_to_traced


@bad("f32[]", match=r"'JitTracer' object has no attribute 'block_until_ready'", anchor="x.block_until_ready",
     kind=AttributeError)
def method_of_concrete_arrays_only(x):
    return x.block_until_ready()  # <- method_of_concrete_arrays_only


# -- shapes, axes, indices ------------------------------------------------------------------------------------
@bad("f32[3]", match=r"Indexer must have integer or boolean type, got indexer with type float", anchor="x[1.0]",
     kind=TypeError)
def index_with_a_float(x):
    return x[1.0]  # <- index_with_a_float


@bad("f32[3]", "f32[]", match=r"Indexer must have integer or boolean type, got indexer with type float32",
     anchor="x[i]", kind=TypeError)
def index_with_a_traced_float(x, i):
    return x[i]  # <- index_with_a_traced_float


@bad("f32[3]", match=r"a boolean mask index must be concrete", anchor="x[x > 0]", kind=IndexError)
def boolean_mask_of_traced(x):
    return x[x > 0]  # <- boolean_mask_of_traced


@bad("f32[3]", match=r"Too many indices: array is 1-dimensional, but 2 were indexed", anchor="x[0, 0]",
     kind=IndexError)
def too_many_indices(x):
    return x[0, 0]  # <- too_many_indices


@bad("f32[2,3]", match=r"reshape: cannot reshape array of size 6 into shape \(4, 2\)", anchor="x.reshape",
     kind=TypeError)
def reshape_to_another_size(x):
    return x.reshape(4, 2)  # <- reshape_to_another_size


@bad("f32[2,3]", match=r"reshape: new sizes must all be positive", anchor="jnp.reshape", kind=TypeError)
def reshape_to_negative_sizes(x):
    return jnp.reshape(x, (-2, -3))  # <- reshape_to_negative_sizes


@bad("f32[]", match=r"negative dimensions are not allowed", anchor="jnp.zeros", kind=TypeError)
def zeros_with_a_negative_dimension(x):
    return jnp.zeros((2, -1)) + x  # <- zeros_with_a_negative_dimension


@bad("f32[]", match=r"each dimension of the shape must be an integer, got 1.5", anchor="jnp.ones", kind=TypeError)
def ones_with_a_float_dimension(x):
    return jnp.ones((2, 1.5)) + x  # <- ones_with_a_float_dimension


@bad("i32[]", match=r"each dimension of the shape must be static", anchor="jnp.zeros", kind=TypeError)
def zeros_of_a_traced_size(n):
    return jnp.zeros(n)  # <- zeros_of_a_traced_size


@bad("f32[]", match=r"jnp.array: the nested sequence is ragged", anchor="jnp.array", kind=TypeError)
def ragged_list_of_traced(x):
    return jnp.array([[x, x], [x]])  # <- ragged_list_of_traced


@bad("f32[]", match=r"None is not a valid value for jnp.array", anchor="jnp.array", kind=ValueError)
def array_with_none(x):
    return jnp.array([x, None])  # <- array_with_none


@bad("f32[2,3]", match=r"jnp.sum: axis 2 is out of bounds for array of dimension 2", anchor="jnp.sum",
     kind=ValueError)
def sum_over_a_missing_axis(x):
    return jnp.sum(x, axis=2)  # <- sum_over_a_missing_axis


@bad("f32[2,3]", match=r"duplicate value in 'axis'", anchor="jnp.sum", kind=ValueError)
def sum_over_a_repeated_axis(x):
    return jnp.sum(x, axis=(0, 0))  # <- sum_over_a_repeated_axis


@bad("f32[3]", match=r"sum\(\) got an unexpected keyword argument 'axes'", anchor="jnp.sum", kind=TypeError)
def keyword_of_another_library(x):
    return jnp.sum(x, axes=0)  # <- keyword_of_another_library


@bad("f32[3]", match=r"unexpected keyword argument 'a_min'", anchor="jnp.clip", kind=TypeError)
def clip_with_a_removed_keyword(x):
    return jnp.clip(x, a_min=0.0)  # <- clip_with_a_removed_keyword


@bad("f32[3]", match=r"dynamic_slice: slice_sizes \(5,\) must lie between 0 and the operand's shape \(3,\)",
     anchor="lax.dynamic_slice", kind=TypeError)
def dynamic_slice_larger_than_operand(x):
    return lax.dynamic_slice(x, (0,), (5,))  # <- dynamic_slice_larger_than_operand


@bad("f32[3]", match=r"broadcast_dimensions \(0, 1\) must name one output axis per operand axis",
     anchor="lax.broadcast_in_dim", kind=TypeError)
def broadcast_in_dim_too_many_dimensions(x):
    return lax.broadcast_in_dim(x, (3, 4), (0, 1))  # <- broadcast_in_dim_too_many_dimensions


# -- random keys ----------------------------------------------------------------------------------------------
@bad("u32[3]", match=r"invalid PRNG key data: expected a shape ending with \(2,\), got \(3,\)",
     anchor="srcjax.random.normal", kind=TypeError)
def random_key_of_three_words(key):
    return srcjax.random.normal(key, (3,))  # <- random_key_of_three_words


@bad("f32[2]", match=r"invalid PRNG key data: expected dtype uint32, got float32", anchor="srcjax.random.normal",
     kind=TypeError)
def random_key_of_floats(key):
    return srcjax.random.normal(key, (3,))  # <- random_key_of_floats


@bad("u32[4,2]", match=r"normal accepts a single key, but was given a key array of shape \(4, 2\)",
     anchor="srcjax.random.normal", kind=ValueError)
def random_batch_of_keys(keys):
    return srcjax.random.normal(keys, (3,))  # <- random_batch_of_keys


@bad("u32[2]", match=r"uniform: minval/maxval of shape \(4,\) do not broadcast to the shape \(3,\)",
     anchor="srcjax.random.uniform", kind=TypeError)
def random_uniform_bounds_of_another_shape(key):
    return srcjax.random.uniform(key, (3,), minval=jnp.zeros(4))  # <- random_uniform_bounds_of_another_shape


@bad("u32[2]", "i32[]", match=r"shapes must be 1D sequences of concrete values of integer type",
     anchor="srcjax.random.normal", kind=TypeError)
def random_shape_of_a_traced_size(key, n):
    return srcjax.random.normal(key, (n,))  # <- random_shape_of_a_traced_size


@bad("u32[2]", match=r"dtype argument to `normal` must be a float or complex dtype, got int32",
     anchor="srcjax.random.normal", kind=ValueError)
def random_normal_of_integers(key):
    return srcjax.random.normal(key, (3,), dtype=jnp.int32)  # <- random_normal_of_integers


# -- the API applied to the wrong things ----------------------------------------------------------------------
@bad_call(TypeError, r"grad requires real- or complex-valued inputs .* but got int32")
def grad_of_integer_input():
    return srcjax.grad(lambda x: (x * 2).sum())(jnp.arange(3))  # <- grad_of_integer_input


@bad_call(TypeError, r"grad requires real-valued outputs .* but got complex64")
def grad_of_complex_output():
    return srcjax.grad(lambda x: x * (1 + 1j))(1.0)  # <- grad_of_complex_output


@bad_call(TypeError, r"Gradient only defined for scalar-output functions. Output had shape: \(3,\)")
def grad_of_vector_output():
    return srcjax.grad(lambda x: x * 2)(jnp.ones(3))  # <- grad_of_vector_output


@bad_call(TypeError, r"argnums=1 requires at least 2 positional arguments")
def grad_argnums_past_the_arguments():
    return srcjax.grad(lambda x: x * 2, argnums=1)(1.0)  # <- grad_argnums_past_the_arguments


@bad_call(TypeError, r"primal and tangent arguments to jvp do not match")
def jvp_tangent_of_another_dtype():
    return srcjax.jvp(lambda x: x * 2, (jnp.ones(3),), (jnp.ones(3, jnp.int32),))  # <- jvp_tangent_of_another_dtype


@bad_call(ValueError, r"got float32\[4\], but expected float32\[3\]")
def vjp_cotangent_of_another_shape():
    _, pullback = srcjax.vjp(lambda x: x * 2, jnp.ones(3))
    return pullback(jnp.ones(4))  # <- vjp_cotangent_of_another_shape


@bad_call(ValueError, r"len\(in_axes\)=3, len\(args\)=2")
def vmap_in_axes_longer_than_arguments():
    return srcjax.vmap(lambda x, y: x + y, in_axes=(0, 0, 0))(jnp.ones((2, 3)), jnp.ones((2, 3)))  # <- vmap_in_axes_longer_than_arguments


@bad_call(ValueError, r"vmap got inconsistent sizes for array axes to be mapped")
def vmap_axes_of_different_sizes():
    return srcjax.vmap(lambda x, y: x + y)(jnp.ones((2, 3)), jnp.ones((3, 3)))  # <- vmap_axes_of_different_sizes


@bad_call(TypeError, r"vmap in_axes must be an int, None, or a tuple .* but got 0.0")
def vmap_in_axes_float():
    return srcjax.vmap(lambda x: x, in_axes=0.0)  # <- vmap_in_axes_float


@bad_call(ValueError, r"hashable")
def jit_unhashable_static_argument():
    return srcjax.jit(lambda x, n: x * len(n), static_argnums=1)(1.0, [1, 2])  # <- jit_unhashable_static_argument


@bad_call(ValueError, r"static_argnums=\(3,\), but only accepts 1 positional arguments")
def jit_static_argnums_out_of_range():
    return srcjax.jit(lambda x: x * 2, static_argnums=3)  # <- jit_static_argnums_out_of_range


@bad_call(ValueError, r"static_argnames and donate_argnames cannot intersect. Argument names \{'n'\}")
def jit_static_and_donated():
    return srcjax.jit(lambda x, n: x * n, static_argnums=1, donate_argnums=1)  # <- jit_static_and_donated


@bad_call(RuntimeError, r"Array has been deleted")
def use_after_donation():
    x = jnp.ones(3)
    srcjax.jit(lambda v: v * 2, donate_argnums=0)(x)
    return x + 1  # <- use_after_donation


@bad_call(TypeError, r"returned a value of type <class 'coroutine'>")
def jit_of_async_function():
    async def f(x):
        return x

    return srcjax.jit(f)(2.0)  # <- jit_of_async_function


@bad_call(srcjax.errors.UnexpectedTracerError, r"escaped the transformation that made it")
def leaked_tracer_used_in_a_later_trace():
    leaked = []

    def saves_its_argument(x):
        leaked.append(x * 2)
        return x

    srcjax.jit(saves_its_argument)(1.0)
    return srcjax.jit(lambda y: y + leaked[0])(1.0)  # <- leaked_tracer_used_in_a_later_trace


@bad_call(srcjax.errors.UnexpectedTracerError, r"escaped the transformation that made it")
def leaked_tracer_used_eagerly():
    leaked = []

    def saves_its_argument(x):
        leaked.append(x * 2)
        return x

    srcjax.jit(saves_its_argument)(1.0)
    return leaked[0] + 1  # <- leaked_tracer_used_eagerly


@bad_call(TypeError, r"Custom VJP bwd rule must produce an output with the same container \(pytree\) structure")
def custom_vjp_bwd_returns_too_few():
    @srcjax.custom_vjp
    def f(x, y):
        return x * y

    f.defvjp(lambda x, y: (x * y, (x, y)), lambda res, g: (g * res[1],))
    return srcjax.grad(f)(2.0, 3.0)  # <- custom_vjp_bwd_returns_too_few


@bad_call(ValueError, r"`jax.device_put` only accepts .* Received invalid value: 'cpu:7'")
def device_put_to_a_device_name():
    return srcjax.device_put(jnp.ones(2), "cpu:7")  # <- device_put_to_a_device_name
