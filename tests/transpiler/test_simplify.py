"""The simplifier the Python emitter runs: each step, on small programs, and that the simplified IR is valid
and computes what the function computes, bit for bit (the corpus's transforms check the same through the
emitted modules: tests/transpiler/test_emitted_transforms.py)."""

from __future__ import annotations

import numpy as np
import pytest

import srcjax.numpy as jnp
from srcjax.transpile import transformed
from srcjax.transpiler.emit_python import emit_module
from srcjax.transpiler.interpret import eval_function
from srcjax.transpiler.ir import walk
from srcjax.transpiler.printer import print_function
from srcjax.transpiler.simplify import simplify
from srcjax.transpiler.types import TensorType
from srcjax.transpiler.verifier import verify
from tests.corpus import programs
from tests.transpiler.test_corpus import abstract

F32 = np.float32
TARGETS = np.array([1.0, 0.0, 1.0], F32)


def names(fn):
    return [op.prim.name for op in walk(fn.body)]


def same_bits(fn, simplified, *args):
    for a, b in zip(eval_function(fn, *args), eval_function(simplified, *args)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def scaled_targets(x):
    return x * (1.0 - TARGETS) + jnp.sum(x)


def halves(x):
    for _ in range(6):
        x = x / 2.0
    return jnp.sum(x)


def halves_while(x):
    while jnp.sum(x) > 1.0:
        x = x / 2.0
    return jnp.sum(x)


def test_constants_fold_into_a_constant_no_larger_than_the_ones_read():
    ir = transformed(scaled_targets, [TensorType(F32, (3,))], [])
    simplified = simplify(ir)
    verify(simplified)
    assert [data.tolist() for _, data in simplified.consts] == [[0.0, 1.0, 0.0]]  # 1 - TARGETS, computed once
    assert "sub" not in names(simplified)
    same_bits(ir, simplified, np.array([0.5, -1.0, 2.0], F32))


def test_the_function_itself_is_not_changed():
    ir = transformed(scaled_targets, [TensorType(F32, (3,))], [])
    before = print_function(ir)
    simplify(ir)
    assert print_function(ir) == before


@pytest.mark.parametrize("program", [halves, halves_while])
def test_a_gradient_saves_no_residual_that_is_the_same_every_iteration(program):
    """Reverse mode saves what the backward loop reads each iteration, a buffer (``for``) or stack
    (``while``); ``x / 2.0``'s derivative reads only the constant 2.0, which the backward loop makes again
    (control_vjp.py, ``_constants``): nothing is saved, by the transform or after simplifying."""
    ir = transformed(program, [TensorType(F32, (3,))], ["grad"])
    assert not {"dynamic_update_slice", "stack_push"} & set(names(ir))
    simplified = simplify(ir)
    verify(simplified)
    assert not {"dynamic_update_slice", "stack_push", "stack_new", "dynamic_slice"} & set(names(simplified))
    same_bits(ir, simplified, np.array([3.0, 1.5, -0.25], F32))


def grows(x, a):
    while jnp.sum(x) < 10.0:
        x = x * jnp.exp(a) + 1.0
    return x


def test_loop_invariants_leave_the_loop():
    ir = transformed(grows, [TensorType(F32, (2,)), TensorType(F32, ())], [])
    (loop,) = [op for op in ir.body.ops if op.prim.name == "while"]
    assert "exp" in names(ir) and "exp" in [op.prim.name for op in loop.regions[1].ops]
    simplified = simplify(ir)
    (loop,) = [op for op in simplified.body.ops if op.prim.name == "while"]
    assert "exp" not in [op.prim.name for op in walk(loop.regions[1])]  # exp(a), computed once before it
    same_bits(ir, simplified, np.array([0.5, 1.0], F32), F32(0.3))


def tanh_halves(x):
    h = jnp.tanh(x)
    while jnp.sum(h) > 1.0:
        h = h / 2.0
    return jnp.sum(h)


def test_a_gradients_seed_is_made_where_the_backward_pass_starts():
    """``1 - h * h`` (forward) and the seed ``h_bar`` (backward) share the constant 1.0: written as a Python
    scalar in the first, the seed is its own, made in the backward section and named as a cotangent."""
    source = emit_module(transformed(tanh_halves, [TensorType(F32, (3,))], ["grad"]))
    forward, backward = source.split("    # backward\n")
    assert " = 1.0 - " in forward and "_bar" not in forward
    assert backward.startswith("    h_bar = jnp.ones((3,), np.float32)")


@pytest.mark.parametrize("name", ["newton_sqrt", "while_on_data_with_counter", "for_with_index_update",
                                  "return_in_nested_loop", "logistic_loss", "break_in_for"])
@pytest.mark.parametrize("kind", ["grad", "jvp", "vjp", "vmap"])
def test_simplified_transforms_verify_and_compute_the_same_bits(name, kind):
    entry = programs.CASES[name]
    specs = list(entry["args"])
    nums = tuple(i for i, s in enumerate(specs) if isinstance(s, str) and s.startswith("f32"))
    types = [abstract(s) for s in specs]
    if kind == "vmap":
        types = [t.update(shape=(2, *t.shape)) for t in types]
    try:
        ir = transformed(entry["fn"], types, [kind], argnums=nums)
    except Exception as e:  # noqa: BLE001 - a transformation the program does not take (tested elsewhere)
        pytest.skip(str(e).splitlines()[0])
    simplified = simplify(ir)
    verify(simplified)
    same_bits(ir, simplified, *arrays_for(ir.params, np.random.default_rng(2), entry["positive"]))


def arrays_for(params, rng, positive):
    out = []
    for p in params:
        t = p.aval
        if t.dtype.kind == "f":
            x = rng.normal(size=t.shape)
            x = np.abs(x) + 0.5 if positive else x
        elif t.dtype.kind in "iu":
            x = rng.integers(-5, 6, size=t.shape)
        else:
            x = rng.random(t.shape) > 0.5
        out.append(np.asarray(x, t.dtype))
    return out
