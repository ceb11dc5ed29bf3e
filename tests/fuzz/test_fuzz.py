"""The fuzzer's bounded run in the test suite: fixed seeds, so the run is the same every time (on a quiet two-core
machine about 40 s with srcjax's disk cache of compiled code warm, about 60 s cold). ``make fuzz`` runs it
open-ended and shrinks what it finds into tests/fuzz/findings/.

- every check on the generated programs of ``PROGRAM_SEEDS``;
- sampled transformation stacks on the one-array programs of ``COMPOSITION_SEEDS``;
- every stack of up to three transformations on two hand-written bases, and on the others every stack of up
  to two and a fixed sample of three;
- ``jit(vmap(jit(...)))`` of lambdas in float32, against NumPy;
- the generator (deterministic, well scoped, broad, its expressions of the types they claim), the shrinker (on
  a failure of our own making) and the checks (they catch a jnp.tanh broken on purpose).

A seed or stack that fails because of a known srcjax bug is expected to fail (strictly: the fix shows up as
an unexpected pass); the bug's shrunk program is in tests/fuzz/regressions/.
"""

import random
import re

import numpy as np
import pytest

import srcjax
import srcjax.numpy as jnp
from tests.fuzz import compose, fuzz, harness, shrink
from tests.fuzz.cases import Case
from tests.fuzz.generator import generate
from tests.fuzz.expressions import ExprGen, Scope
from tests.fuzz.program import Function, Program, Stmt, Ty, leaf, shape_value

PROGRAM_SEEDS = range(0, 40)
COMPOSITION_SEEDS = range(1000, 1012)
DEPTH3_SAMPLE = 40  # stacks of three per base (of 512), fixed by the seed below
EVERY_STACK = {"total", "scalar"}  # bases given all 584 stacks of up to three (the quick ones)

# seed -> the known bug it hits (see the named regression file)
KNOWN_PROGRAM_BUGS: dict[int, str] = {}
KNOWN_COMPOSITION_BUGS: dict[int, str] = {}


def known_stack_bug(base: str, stack: tuple[str, ...]) -> str | None:
    """The known bug a stack of transformations of a hand-written base hits, if any (regressions/ has each)."""
    if base == "control" and stack in {("vmap", "vmap", "grad"), ("vmap", "vmap", "jacrev")}:
        return "vmap(vmap(grad(f))) of a while loop: TypeError (compose_vmap_vmap_grad_while.py)"
    return None


@pytest.fixture(autouse=True)
def _shorter_time_limit():
    """A hang is reported after 8 s per check here (the programs of these seeds run and compile in under 2)."""
    with harness.default_time_limit(8.0):
        yield


def _marked(values, known):
    return [pytest.param(v, marks=pytest.mark.xfail(strict=True, raises=AssertionError, reason=known[v]))
            if v in known else v for v in values]


@pytest.mark.parametrize("seed", _marked(PROGRAM_SEEDS, KNOWN_PROGRAM_BUGS))
def test_generated_program(seed):
    failures = fuzz.program_failures(seed)
    assert not failures, "\n".join(str(m) for _, m in failures)


@pytest.mark.parametrize("seed", _marked(COMPOSITION_SEEDS, KNOWN_COMPOSITION_BUGS))
def test_generated_composition(seed):
    failures = fuzz.composition_failures(seed, fuzz.sampled_stacks(seed))
    assert not failures, "\n".join(f"{'/'.join(c.stack)}: {m}" for c, m in failures)


def _base_cases():
    sample = random.Random(3).sample(compose.stacks(3)[72:], DEPTH3_SAMPLE)
    out = []
    for base in compose.bases.BASES:
        for stack in compose.stacks(3) if base in EVERY_STACK else compose.stacks(2) + sample:
            reason = known_stack_bug(base, stack)
            marks = [pytest.mark.xfail(strict=True, raises=AssertionError, reason=reason)] if reason else []
            out.append(pytest.param(base, stack, id=f"{base}-{'.'.join(stack)}", marks=marks))
    return out


BASES = compose.base_functions()


@pytest.mark.parametrize("base, stack", _base_cases())
def test_composition_of_base(base, stack):
    fn, reference, in_shape, out_shape = BASES[base]
    try:
        compose.check_stack(stack, fn, reference, in_shape, out_shape, seed=len(stack))
    except compose.Mismatch as e:
        raise AssertionError(str(e)) from None


_X = np.arange(21, dtype=np.float32).reshape(7, 3) / 10
NESTED_LAMBDAS = {  # name -> (the call, NumPy's float64 result)
    "sum": (lambda: srcjax.jit(srcjax.vmap(srcjax.jit(lambda b: jnp.sum(b))))(jnp.ones((7, 3))), np.full(7, 3.0)),
    "sum_squares": (lambda: srcjax.jit(srcjax.vmap(srcjax.jit(lambda b: jnp.sum(b * b))))(_X),
                    np.sum(_X.astype(np.float64) ** 2, 1)),
    "vmap_jit_vmap": (lambda: srcjax.vmap(srcjax.jit(srcjax.vmap(lambda v: jnp.tanh(v) * 2.0)))(_X[None]),
                      np.tanh(_X[None].astype(np.float64)) * 2.0),
    "dot": (lambda: srcjax.jit(srcjax.vmap(srcjax.jit(lambda b: b @ b)))(_X), np.einsum("ij,ij->i", _X, _X)),
    "grad": (lambda: srcjax.jit(srcjax.vmap(srcjax.grad(lambda b: jnp.sum(jnp.sin(b)))))(_X), np.cos(_X)),
    "vmap_vmap_jit": (lambda: srcjax.vmap(srcjax.vmap(srcjax.jit(lambda s: s * s + 1.0)))(_X), _X * _X + 1.0),
}
KNOWN_NESTED_BUGS: dict[str, str] = {}


@pytest.mark.parametrize("name", _marked(NESTED_LAMBDAS, KNOWN_NESTED_BUGS))
def test_jit_inside_vmap_inside_jit(name):
    """``jit(vmap(jit(f)))`` and its relatives on lambdas (whose source the front end must find in the line)."""
    call, want = NESTED_LAMBDAS[name]
    try:
        got = np.asarray(call())
    except Exception as e:  # noqa: BLE001 - a crash is this test's failure
        raise AssertionError(f"{type(e).__name__}: {e}") from None
    assert got.shape == want.shape, f"shape {got.shape} != {want.shape}"
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_generator_is_deterministic_and_well_scoped():
    for seed in range(50):
        program = generate(seed)
        assert program.render() == generate(seed).render()
        assert shrink.well_scoped(program), seed
        assert shrink.well_scoped(generate(seed, single=True)), seed


def test_generator_is_broad():
    """Over a few hundred seeds the generator writes every construct it claims to."""
    text = "\n".join(generate(seed).render() for seed in range(300))
    constructs = {
        "traced if": r"\n\s+if jnp\.", "else": r"\n\s+else:", "for range": r"for i\d+ in range\(",
        "for rows": r"for r\d+ in ", "enumerate": r"in enumerate\(", "while halving": r"while jnp\.",
        "while counter": r"while k\d+ < \d", "while True": r"while True:", "break": r"\n\s+break\n",
        "continue": r"\n\s+continue\n", "early return": r"\n\s+if .*:\n\s+return ", "at set": r'"set"\)',
        "at add": r'"add"\)', "at multiply": r'"multiply"\)', "item assignment": r"\n\s+\w+\[[^\]]+\] \+?= ",
        "augmented": r"\n\s+\w+ [-+*]= ", "helper call": r"helper\d\(", "tuple unpacking": r"u\d+, u\d+ = ",
        "list append": r"\.append\(", "stack": r"jnp\.stack\(", "dict argument": r'\["w"\]',
        "dict result": r'return \{"out"', "matmul": r" @ ", "reshape": r"\.reshape\(", "transpose": r"\.T\b",
        "concatenate": r"jnp\.concatenate\(", "slice": r"\[1:\]", "dynamic index": r"\[jnp\.argmax\(",
        "where": r"jnp\.where\(", "reduction axis": r"axis=-?\d", "einsum": r"jnp\.einsum\(",
    }
    missing = [name for name, pattern in constructs.items() if not re.search(pattern, text)]
    assert not missing, missing


def test_shrinker_reaches_a_small_program():
    """A failure of our own making (the program calls ``jnp.cos`` and has a ``for`` loop): shrunk, it keeps
    both and little else."""
    def fails(program):
        text = "\n".join(f.render() for f in program.functions)
        return shrink.well_scoped(program) and "jnp.cos(" in text and "for " in text

    seed = next(s for s in range(200) if fails(generate(s)) and len(generate(s).render()) > 1500)
    small = shrink.shrink(generate(seed), fails, seconds=60)
    assert fails(small)
    assert len(small.render()) < len(generate(seed).render()) / 2
    assert sum(len(f.body) for f in small.functions) <= 4, small.render()


def test_checks_catch_a_wrong_result(monkeypatch):
    """With ``jnp.tanh`` broken on purpose, the checks that compare values fail, each naming itself."""
    body = [Stmt("v1 = jnp.tanh({0}) * 2.0", [leaf("x", Ty("f", ("A",)))]), Stmt("return v1 + 1.0")]
    program = Program({"A": 3}, [Function("main", ["x"], body)], [("A",)])
    assert Case(program, 0, "eager").run() == [] and Case(program, 0, "vmap").run() == []
    monkeypatch.setattr(srcjax.numpy, "tanh", srcjax.numpy.sin)
    for group in ("eager", "eager-x64", "jit-x64", "vmap", "derivatives"):  # (each against NumPy)
        failures = Case(program, 0, group).run()
        assert [m.kind for m in failures] == ["mismatch"], (group, failures)


def test_expressions_have_their_types():
    """Each generated expression, evaluated by NumPy on arrays of its names' types, has the type it claims."""
    rng = random.Random(0)
    dims = {"A": 2, "B": 3, "C": 4}
    scope = Scope()
    names = {"x": ("A",), "y": ("B", "A"), "z": (), "w": ("A+B",), "u": ("C", "B", "A")}
    for name, shape in names.items():
        scope.bind(name, Ty("f", shape))
    scope.bind("i", Ty("i", ("B",)))
    gen = ExprGen(rng, dims, scope, {})
    data = np.random.default_rng(0)
    namespace = {n: data.standard_normal(shape_value(s, dims)) for n, s in names.items()}
    namespace.update(jnp=np, i=1, **dims)
    for _ in range(3000):
        shape = gen.random_shape(max_rank=3)
        expr = gen.float(shape, rng.randint(1, 4))
        with np.errstate(all="ignore"):
            value = eval(expr.render(), namespace)
        assert np.shape(value) == shape_value(shape, dims), (expr.render(), shape)
        cond = gen.condition(2)
        assert np.shape(eval(cond.render(), namespace)) == (), cond.render()
