"""JAX's tracing semantics that users meet, where srcjax reads the source instead of tracing it.

JAX runs the function's Python while it traces: under ``grad``, ``jvp`` or ``vmap`` outside ``jit`` the values
it does not transform are ordinary Python values and arrays, and the ones it differentiates are tracers over
concrete primals (``assert``, ``bool()`` and ``print`` see numbers, and only the branch taken runs); under
``jit`` everything is abstract. Every expected number here is what JAX 0.10.2 gives for the same program.
"""

import numpy as np
import pytest

import srcjax as jax
import srcjax.numpy as jnp
from srcjax.transpiler.frontend import TranspileError
from tests.runtime import tracing_programs as programs

FLOAT0 = jax.dtypes.float0


def iterpower(x, n):
    r = 1.0
    for _ in range(n):
        r = r * x
    return r


# -- 1. arguments that are not differentiated stay concrete ---------------------------------------------------
def test_grad_keeps_the_other_arguments_concrete():
    def f(a, b, c, i):
        x = a, b, c
        return x[i]  # (a Python index: i is the int 1, as in JAX)

    g = jax.grad(f, argnums=(0, 1, 2))(1.0, 2.0, 3.0, 1)
    assert [float(v) for v in g] == [0.0, 1.0, 0.0]


def test_reverse_over_reverse_through_a_range_of_a_concrete_count():
    # range(n) with n the int 2 is a Python loop, not a loop on a traced count (JAX: 2.0 and 6.6000004)
    assert float(jax.grad(jax.grad(iterpower))(1.1, 2)) == pytest.approx(2.0)
    assert float(jax.grad(jax.grad(iterpower))(1.1, 3)) == pytest.approx(6.6000004)
    assert float(jax.grad(iterpower)(1.1, 3)) == pytest.approx(3.63)


def test_every_transformation_keeps_integer_and_other_arguments_concrete():
    value, g = jax.value_and_grad(iterpower)(1.1, 3)
    assert (float(value), float(g)) == pytest.approx((1.3310001, 3.63))
    assert float(jax.jacfwd(iterpower)(1.1, 3)) == pytest.approx(3.63)
    assert float(jax.jacrev(iterpower)(1.1, 3)) == pytest.approx(3.63)
    assert float(jax.hessian(iterpower)(1.1, 3)) == pytest.approx(6.6000004)
    # an integer primal has a float0 tangent: JAX does not trace it, under jvp, vjp and linearize alike
    out, tangent = jax.jvp(iterpower, (1.1, 3), (1.0, np.zeros((), FLOAT0)))
    assert (float(out), float(tangent)) == pytest.approx((1.3310001, 3.63))
    out, f_vjp = jax.vjp(iterpower, 1.1, 3)
    dx, dn = f_vjp(1.0)
    assert float(dx) == pytest.approx(3.63) and dn.dtype == FLOAT0 and dn.shape == ()
    out, f_jvp = jax.linearize(iterpower, 1.1, 3)
    assert float(f_jvp(1.0, np.zeros((), FLOAT0))) == pytest.approx(3.63)


def test_keyword_arguments_and_unmapped_vmap_arguments_stay_concrete():
    def f(x, *, n):
        return iterpower(x, n)

    assert float(jax.grad(f)(1.1, n=3)) == pytest.approx(3.63)
    np.testing.assert_allclose(jax.vmap(iterpower, in_axes=(0, None))(jnp.ones(3), 3), [1.0, 1.0, 1.0])


def test_a_concrete_array_argument_is_concrete_where_its_value_is_needed():
    def pick(x, idx):
        return [1.0, 2.0, 3.0][idx[0]] * x

    assert float(jax.grad(pick)(2.0, np.array([2, 0]))) == 3.0
    assert float(jax.grad(pick)(2.0, np.array([1, 0]))) == 2.0


def test_concrete_arguments_are_told_apart_by_type_and_value():
    def f(x, n):
        return x * (10.0 if isinstance(n, bool) else 1.0) * (2.0 if str(n) == "-0.0" else 1.0)

    grad = jax.grad(f)
    assert [float(grad(1.0, n)) for n in (True, 1, 1.0, 0.0, -0.0)] == [10.0, 1.0, 1.0, 1.0, 2.0]
    assert float(grad(1.1, 2)) == 1.0 and float(jax.grad(iterpower)(1.1, 2)) == pytest.approx(2.2)


def test_under_jit_the_other_arguments_are_traced_as_in_jax():
    f = jax.grad(lambda a, b, c, i: (a, b, c)[i], argnums=(0, 1, 2))
    with pytest.raises(TypeError, match="as a Python index"):  # (JAX: TracerIntegerConversionError, a TypeError)
        jax.jit(f)(1.0, 2.0, 3.0, 1)
    assert [float(v) for v in jax.jit(f, static_argnums=3)(1.0, 2.0, 3.0, 1)] == [0.0, 1.0, 0.0]


# -- 2. assert and bool() on traced values ----------------------------------------------------------------------
def test_assert_on_a_differentiated_value_checks_the_primal():
    """Under grad outside jit an assertion is checked on the values (JAX's tracers hold concrete primals): one
    that holds passes, one that fails raises AssertionError with its message. srcjax computes the asserted value
    from the arguments while it reads the function; such a trace holds for those arguments only, so the function
    is read again on the next call, as JAX traces it on every call. (``programs.check``: two assertions.)"""
    check = programs.check
    np.testing.assert_allclose(jax.grad(check)(jnp.arange(3.0)), [0.0, 2.0, 4.0])
    np.testing.assert_allclose(jax.grad(check)(jnp.arange(1.0, 4.0)), [2.0, 4.0, 6.0])
    with pytest.raises(AssertionError, match="negative input"):
        jax.grad(check)(jnp.array([1.0, -1.0]))
    np.testing.assert_allclose(jax.grad(check)(jnp.arange(3.0)), [0.0, 2.0, 4.0])  # (read again: checked again)


def test_assert_inside_an_if_runs_where_its_branch_is_taken():
    mixed = programs.mixed
    np.testing.assert_allclose(jax.grad(mixed)(jnp.array([1.0, 2.0]), 3.0), [3.0, 3.0])
    np.testing.assert_allclose(jax.grad(mixed)(jnp.array([-1.0, -2.0]), 3.0), [2.0, 2.0])
    with pytest.raises(AssertionError, match="first"):
        jax.grad(mixed)(jnp.array([-1.0, 2.0]), 3.0)


def test_assert_after_an_early_return_on_a_traced_condition():
    f = programs.early_return
    assert float(jax.grad(f)(1.0)) == 1.0 and float(jax.grad(f)(-1.0)) == -1.0


def test_bool_of_a_traced_value_and_assert_under_vmap():
    assert float(jax.grad(lambda x: x * (3 if bool(x > 1) else 4))(2.0)) == 3.0
    scaled = programs.scaled
    np.testing.assert_allclose(jax.vmap(scaled, in_axes=(0, None))(jnp.arange(3.0), 2.0), [0.0, 2.0, 4.0])
    with pytest.raises(AssertionError):
        jax.vmap(scaled, in_axes=(0, None))(jnp.arange(3.0), jnp.float32(-2.0))
    with pytest.raises(TranspileError, match="cannot assert on a value"):  # (a mapped value: JAX refuses too)
        jax.vmap(scaled, in_axes=(None, 0))(1.0, jnp.arange(1.0, 3.0))


def test_assert_on_a_traced_value_under_jit_is_refused_at_the_assert():
    f = programs.positive
    with pytest.raises(TranspileError, match="cannot assert on a value") as info:
        jax.jit(f)(1.0)
    assert info.value.loc.file == programs.__file__
    assert (info.value.line, info.value.column) == (f.__code__.co_firstlineno + 1, 12)


# -- 3. try / except ------------------------------------------------------------------------------------------------
TABLE = {"a": 2.0}


class Missing(Exception):
    pass


def _lookup(key):
    if key not in TABLE:
        raise Missing(key)
    return TABLE[key]


def test_try_except_else_finally_run_as_written():
    def f(x, key):
        try:
            s = TABLE[key]
        except KeyError as e:
            s = 10.0 + len(e.args)
        else:
            s = s + 1.0
        finally:
            x = x * 2.0
        try:
            h = _lookup(key)
        except Missing:
            h = -1.0
        return x * s + h

    assert float(jax.grad(f)(1.0, "a")) == 6.0 and float(jax.grad(f)(1.0, "b")) == 22.0
    assert float(jax.jit(f, static_argnums=1)(1.0, "a")) == 8.0
    assert float(jax.jit(f, static_argnums=1)(1.0, "b")) == 21.0


def test_finally_runs_on_return_and_bare_raise_reraises():
    seen = []

    def f(x):
        try:
            return x * 2.0
        finally:
            seen.append("finally")

    assert float(jax.grad(f)(1.0)) == 2.0 and seen == ["finally"]

    def g(x):
        try:
            y = x[0]
        except IndexError:
            raise
        return y

    with pytest.raises(IndexError):
        jax.jit(g)(1.0)


def test_an_exception_raised_on_a_traced_condition():
    def f(x):
        try:
            if x < 0:
                raise ValueError("negative")
            y = x
        except ValueError:
            y = -x
        return y * 3.0

    # outside jit the condition is known, as in JAX: the raise happens, or its branch does not run
    assert float(jax.grad(f)(2.0)) == 3.0 and float(jax.grad(f)(-2.0)) == -3.0

    def g(x):
        if x < 0:
            raise ValueError("negative")
        return x * 2.0

    assert float(jax.grad(g)(1.0)) == 2.0
    with pytest.raises(ValueError, match="negative"):
        jax.grad(g)(-1.0)
    # under jit whether it is raised is only known at run time: catching it is refused, at the `except`
    with pytest.raises(TranspileError, match="cannot catch ValueError here") as info:
        jax.jit(f)(1.0)
    assert info.value.line == f.__code__.co_firstlineno + 5
    assert "note: ValueError is raised here" in str(info.value)


def test_a_raise_on_a_traced_condition_under_jit_is_refused_not_raised():
    def g(x):
        if x < 0:
            raise ValueError("negative")
        return x * 2.0

    # JAX refuses the `if` (TracerBoolConversionError); srcjax reads both branches, so the raise would happen
    # for every x: it is refused at the raise, as the ConcretizationTypeError JAX's is, for either value
    for x in (1.0, -1.0):
        with pytest.raises(jax.errors.ConcretizationTypeError, match="cannot raise ValueError inside an `if`") as info:
            jax.jit(g)(x)
        assert (info.value.line, info.value.column) == (g.__code__.co_firstlineno + 2, 13)
        assert "it says: negative" in str(info.value)

    def h(x):  # (caught inside the same branch: raised whenever the branch runs, so allowed)
        if x < 0:
            try:
                raise ValueError("negative")
            except ValueError:
                x = -x
        return x * 2.0

    assert float(jax.jit(h)(-1.5)) == 3.0 and float(jax.jit(h)(1.5)) == 3.0


class _ProgramError(Exception):
    def __init__(self, code):
        super().__init__(f"code {code}")
        self.code = code


def test_the_program_s_own_exception_types_reach_the_caller():
    def f(x):
        raise _ProgramError(7)

    with pytest.raises(_ProgramError) as info:  # (JAX's tracing lets the program's exception through)
        jax.jit(f)(1.0)
    assert info.value.code == 7 and str(info.value).startswith(f"{__file__}:")

    def g(x, table):
        return x * table["missing"]

    with pytest.raises(KeyError) as info:  # (printed as the located message, not as KeyError's quoted repr)
        jax.jit(g)(1.0, {"a": 1.0})
    assert str(info.value).splitlines()[0].endswith("error: 'missing'")


def test_nonlocal_assignment_to_a_closure_of_a_function_not_read():
    traces = 0

    def f(x):
        nonlocal traces
        traces += 1  # (JAX's way to count traces: runs once per compilation)
        return x * 2.0

    g = jax.jit(f)
    assert float(g(1.0)) == 2.0 and float(g(2.0)) == 4.0 and traces == 1
    g(jnp.ones(2))
    assert traces == 2


@pytest.mark.filterwarnings("ignore::srcjax.transpiler.frontend.errors.MissingSourceWarning")
def test_python_conversions_in_code_without_source_see_grad_s_primal():
    namespace = {}
    exec("def f(x):\n    while x < 10:\n        x = x * 2\n    return x * 3\n"
         "def k(x):\n    return x * float(x)\n", namespace)
    f, k = namespace["f"], namespace["k"]
    assert float(jax.grad(f)(1.5)) == 24.0  # (JAX: 24.0; bool() of the primal, as JAX's tracer has it)
    assert float(jax.grad(f)(3.0)) == 12.0
    with pytest.raises(jax.errors.ConcretizationTypeError):
        jax.grad(k)(3.0)  # (float() would drop the derivative: JAX refuses it too)
    with pytest.raises(jax.errors.ConcretizationTypeError):
        jax.jit(f)(1.5)


def test_a_boolean_mask_of_a_differentiated_value_is_concrete_under_grad():
    def f(x):
        return (x[x > 0] ** 2).sum()

    # JAX 0.10: the mask is the primal's, the gradient is 2x where x > 0 (each call its own mask)
    np.testing.assert_allclose(jax.grad(f)(jnp.array([1.0, -1.0, 2.0])), [2.0, 0.0, 4.0])
    np.testing.assert_allclose(jax.grad(f)(jnp.array([-1.0, 3.0, -2.0])), [0.0, 6.0, 0.0])
    with pytest.raises(jax.errors.NonConcreteBooleanIndexError, match="a boolean mask index must be concrete"):
        jax.jit(f)(jnp.array([1.0, -1.0, 2.0]))


def test_shape_dependent_errors_under_jit_are_jax_error_classes():
    """The classes JAX 0.10.2 raises, importable from ``jax.errors``: a traced boolean index is a
    NonConcreteBooleanIndexError (an IndexError, not a TypeError), a traced slice bound an IndexError, and a
    traced value where a function needs a static one (nonzero, unique, arange, split, repeat, an axis) a
    ConcretizationTypeError."""
    from srcjax.errors import JAXIndexError, JAXTypeError, NonConcreteBooleanIndexError

    x = jnp.array([1.0, -2.0, 3.0])
    for f in [lambda x: x[x < 0], lambda x: x[x.sum() > 0], lambda x: x.at[x < 0].set(0.0)]:
        with pytest.raises(NonConcreteBooleanIndexError) as info:
            jax.jit(f)(x)
        assert isinstance(info.value, JAXIndexError) and not isinstance(info.value, TypeError)
    with pytest.raises(IndexError, match="slice entries must be static integers"):
        jax.jit(lambda x, i: x[i:i + 2])(x, 1)
    n = jnp.array([1, 2, 3])
    for f in [jnp.nonzero, jnp.unique, lambda n: jnp.arange(n[0]), lambda n: jnp.split(n, n[:1]),
              lambda n: jnp.repeat(n, n), lambda n: jnp.sum(n, axis=n[0])]:
        with pytest.raises(jax.errors.ConcretizationTypeError) as info:
            jax.jit(f)(n)
        assert isinstance(info.value, JAXTypeError)
    with pytest.raises(TypeError) as info:  # (a non-integer axis that is not traced is a plain TypeError)
        jnp.sum(n, axis=1.5)
    assert not isinstance(info.value, jax.errors.ConcretizationTypeError)


def test_recursion_deeper_than_a_few_levels_with_a_static_base_case():
    def r(x, n):
        if n == 0:
            return x
        return r(x * 1.01, n - 1)

    assert float(jax.jit(r, static_argnums=1)(1.0, 150)) == pytest.approx(1.01**150, rel=1e-5)

    def fact(n):
        if n <= 0:
            return 1.0
        return n * fact(n - 1)

    # under grad the base case's `if` is on a known value: the branch not taken is not read (JAX: 274.0)
    assert float(jax.grad(fact)(5.0)) == 274.0


# -- 4. global ------------------------------------------------------------------------------------------------------
RESULT = None
COUNT = 0


def test_global_assignment_runs_while_tracing():
    def f(x):
        global RESULT
        RESULT = x * 2.0
        return RESULT + 1.0

    assert float(jax.jit(f)(1.0)) == 3.0
    assert RESULT is not None and RESULT.shape == ()  # (the traced value, as JAX's global gets a tracer)
    assert float(f(2.0)) == 5.0 and float(RESULT) == 4.0

    def count(x):
        global COUNT
        for _ in range(3):
            COUNT = COUNT + 1
            x = x * 2.0
        return x

    before = COUNT
    assert float(jax.jit(count)(1.0)) == 8.0 and COUNT == before + 3  # (the loop runs as Python's does)


def test_global_assignment_on_a_traced_condition_is_refused_at_the_assignment():
    def f(x):
        global RESULT
        if x > 0:
            RESULT = x
        return x

    with pytest.raises(TranspileError, match="cannot assign the global variable 'RESULT'") as info:
        jax.jit(f)(1.0)
    start = f.__code__.co_firstlineno
    assert (info.value.line, info.value.column) == (start + 3, 13)
    assert f"{__file__}:{start + 1}:9: note: 'RESULT' is declared global here" in str(info.value)


class _Stats:
    calls = 0


STATS = _Stats()
SEEN: list = []


def test_an_object_of_the_module_changes_while_tracing():
    """Setting an attribute of a module-level object runs while the function is read, as JAX's tracing runs it:
    once per trace (JAX 0.10.2: 2 after two calls with one type and one with another; the grad's trace adds 1)."""
    def f(x):
        STATS.calls += 1
        return jnp.sin(x) * STATS.calls

    STATS.calls = 0
    g = jax.jit(f)
    np.testing.assert_allclose(g(jnp.ones(3)), np.sin(1.0), rtol=1e-6)
    g(jnp.ones(3))
    np.testing.assert_allclose(g(jnp.ones(2)), 2 * np.sin(1.0), rtol=1e-6)
    assert STATS.calls == 2
    np.testing.assert_allclose(jax.grad(f)(1.0), 3 * np.cos(1.0), rtol=1e-6)
    assert STATS.calls == 3


def test_a_module_level_object_cannot_change_on_a_traced_condition():
    """Both branches of an ``if`` on a traced value are read, so a change to a list or object of the module (or of
    a closure) there would happen whatever the data: refused, as for the function's own objects."""
    def appends(x):
        if x.sum() > 100.0:
            SEEN.append(1)
        return x

    def sets(x):
        if x.sum() > 100.0:
            STATS.calls = 10
        return x

    cell = []

    def closed(x):
        if x.sum() > 100.0:
            cell.append(x)
        return x

    for fn, what in ((appends, "a list"), (sets, "'STATS.calls'"), (closed, "a list")):
        with pytest.raises(TranspileError, match=f"{what}.* cannot change inside an `if` on a traced value"):
            jax.jit(fn)(jnp.ones(3))
    assert SEEN == [] and cell == [] and STATS.calls != 10


# -- 5. closures made in comprehensions -----------------------------------------------------------------------------
def test_lambdas_made_in_a_comprehension_see_its_variable():
    def f(x):
        fs = [lambda: x * i for i in range(3)]  # noqa: B023 - the late binding is what is tested
        return fs[2]() + fs[0]()  # (late binding: both see i == 2)

    assert float(jax.jit(f)(1.0)) == 4.0
    assert float(jax.grad(f)(1.0)) == 4.0

    def g(x):
        scale = 2.0

        def outer():
            def inner():
                return x * scale

            return inner()

        scale = 3.0  # (seen by the call below: Python's late binding)
        return outer()

    assert float(jax.jit(g)(1.0)) == 3.0


# -- 6. printing traced values --------------------------------------------------------------------------------------
def _show(x):
    print(x)
    print(f"value {x!r}")
    return jnp.sum(x * 2.0)


def test_print_of_a_traced_value_shows_the_tracer(capsys):
    jax.jit(_show)(jnp.ones(3))
    assert capsys.readouterr().out == "JitTracer(float32[3])\nvalue JitTracer(float32[3])\n"
    jax.grad(_show)(jnp.ones(3))
    expected = "GradTracer(primal=[1. 1. 1.], typeof(tangent)=f32[3])"
    assert capsys.readouterr().out == f"{expected}\nvalue {expected}\n"
    jax.grad(_show)(jnp.ones(3))  # (JAX traces grad on every call, and prints again)
    assert capsys.readouterr().out == f"{expected}\nvalue {expected}\n"
    jax.vmap(_show)(jnp.ones((2, 3)))
    expected = "VmapTracer(aval=float32[3], batched=float32[2,3])"
    assert capsys.readouterr().out == f"{expected}\nvalue {expected}\n"
    jax.jit(lambda x: print(x, str(x), "%s" % x, "{}".format(x)))(3.0)
    assert capsys.readouterr().out == " ".join(["JitTracer(~float32[])"] * 4) + "\n"


def test_print_of_nested_transformations_and_untraced_values(capsys):
    jax.grad(jax.grad(lambda x: _show(x)))(1.0)
    assert capsys.readouterr().out.splitlines()[0] == (
        "GradTracer(primal=GradTracer(primal=1.0, typeof(tangent)=f32[]), typeof(tangent)=f32[])")
    jax.jit(jax.grad(_show))(jnp.ones(2))
    assert capsys.readouterr().out.splitlines()[0] == "GradTracer(primal=JitTracer(float32[2]), typeof(tangent)=f32[2])"
    jax.grad(lambda x, y: (print(y, jnp.arange(3)), x)[1])(1.0, np.ones(2))
    assert capsys.readouterr().out == "[1. 1.] [0 1 2]\n"


def test_print_under_jvp_and_in_a_transformation_that_does_not_run(capsys):
    jax.jvp(_show, (jnp.ones(2),), (jnp.ones(2),))
    assert capsys.readouterr().out.splitlines()[0] == "JVPTracer(primal=[1. 1.], typeof(tangent)=f32[2])"

    def inner(y):
        if y > 100:
            raise ValueError("big")
        print("inner", y)
        return y * y

    def outer(x):
        if x < 0:
            return jax.grad(inner)(x) * 0.0 + 1.0
        return x * 2

    assert float(jax.grad(outer)(1.0)) == 2.0  # (the inner grad is in the branch not taken: it does not run)
    assert capsys.readouterr().out == ""
    assert float(jax.grad(outer)(-1.0)) == 0.0
    assert capsys.readouterr().out == (
        "inner GradTracer(primal=GradTracer(primal=-1.0, typeof(tangent)=f32[]), typeof(tangent)=f32[])\n")


def test_print_in_control_flow(capsys):
    def loop(x):
        for i in range(3):
            print(i, x)
            x = x * 2.0
        return x

    jax.jit(loop)(1.0)  # (a Python loop, as in JAX: the index is an int)
    assert capsys.readouterr().out == "".join(f"{i} JitTracer(~float32[])\n" for i in range(3))

    def branch(x):
        if x > 0:
            print("positive", x)
        else:
            print("negative")
        return x

    jax.grad(branch)(2.0)  # (the branch taken runs, as in JAX)
    assert capsys.readouterr().out == "positive GradTracer(primal=2.0, typeof(tangent)=f32[])\n"
    jax.jit(branch)(2.0)  # (both branches are read once, as JAX traces lax.cond's)
    assert capsys.readouterr().out == "positive JitTracer(~float32[])\nnegative\n"


def test_a_format_spec_on_a_traced_value_is_a_type_error():
    def f(x):
        return print(f"{x:.2f}")

    with pytest.raises(TypeError, match="unsupported format string passed to JitTracer.__format__") as info:
        jax.jit(f)(1.0)
    assert (info.value.line, info.value.column) == (f.__code__.co_firstlineno + 1, 25)


# -- 7. jax.jacobian -------------------------------------------------------------------------------------------------
def test_jacobian_is_jacrev():
    assert "jacobian" in jax.__all__
    x = jnp.array([1.0, 2.0])
    np.testing.assert_allclose(jax.jacobian(lambda v: v**2)(x), [[2.0, 0.0], [0.0, 4.0]])
    jac, aux = jax.jacobian(lambda v: (jnp.sin(v), 7), has_aux=True)(x)
    np.testing.assert_allclose(jac, np.diag(np.cos([1.0, 2.0])), rtol=1e-6)
    assert aux == 7
    assert float(jax.jacobian(iterpower)(1.1, 3)) == pytest.approx(3.63)


# -- 8. Python's scopes ---------------------------------------------------------------------------------------------
OFFSET = 2.0


def test_a_local_read_before_it_is_bound_is_an_unbound_local_error():
    """A name the function binds anywhere is local throughout it: read before it is bound it is an
    ``UnboundLocalError`` (JAX 0.10.2 raises it while tracing), not the module's variable of that name."""
    def assigned_later(x):
        y = x * OFFSET  # noqa: F823 - on purpose
        OFFSET = 3.0  # noqa: F841 - what makes OFFSET local
        return y

    def deleted(x):
        OFFSET = 5.0
        del OFFSET
        return x * OFFSET  # noqa: F821 - on purpose

    def nested(x):
        def inner():
            z = x * OFFSET  # noqa: F823 - on purpose
            for OFFSET in range(2):  # noqa: B007 - a loop variable is local too
                pass
            return z
        return inner()

    for f in (assigned_later, deleted, nested):
        with pytest.raises(UnboundLocalError, match="cannot access local variable 'OFFSET'"):
            jax.jit(f)(1.0)
        with pytest.raises(UnboundLocalError):
            jax.grad(f)(1.0)

    def fine(x):
        total = sum(x * OFFSET for OFFSET in (1.0, 2.0))  # (a comprehension's variable is its own)
        return total + [OFFSET for _ in range(1)][0]

    assert float(jax.jit(fine)(1.0)) == 5.0
