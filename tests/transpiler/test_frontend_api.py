"""The front end's public faces: make_jaxpr, jit on top of the front end, disable_jit, the transpile command."""

import os
import subprocess
import sys

import numpy as np
import pytest

import srcjax
import srcjax.numpy as jnp
from srcjax.__main__ import main as cli
from tests.corpus import loops
from srcjax.transpiler.frontend import trace_function
from srcjax.transpiler.ir import count_ops
from srcjax.transpiler.types import TensorType
from tests.codegen.assembly import packed

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
F32 = TensorType(np.float32, (3,))


def test_loop_ir_size_does_not_grow_with_trip_count():
    small, _ = trace_function(loops.run_10, [F32])
    large, _ = trace_function(loops.run_10000, [F32])
    assert count_ops(small) == count_ops(large)
    assert str(srcjax.make_jaxpr(loops.run_10)(np.ones(3, np.float32))).count("\n") == str(
        srcjax.make_jaxpr(loops.run_10000)(np.ones(3, np.float32))).count("\n")
    x = np.linspace(-1, 1, 3).astype(np.float32)
    want = x.astype(np.float64)
    for i in range(10):
        want = np.sin(want) + i
    np.testing.assert_allclose(srcjax.jit(loops.run_10)(x), want, rtol=1e-5)


def test_make_jaxpr_prints_the_ir():
    text = str(srcjax.make_jaxpr(loops.clipped_sum)(jnp.ones(4), 0.5))
    assert text.startswith("func @clipped_sum(%x: f32[4], %limit: f32[]{weak}) -> f32[]")
    assert "for %k = 0 to 4:i32" in text and "cond" in text


def test_jit_caches_per_signature():
    f = srcjax.jit(loops.clipped_sum)
    a = f(jnp.array([0.1, 0.9, 0.3]), 0.5)
    b = f(jnp.array([0.2, 0.2, 0.2]), 0.5)
    assert len(f._cache) == 1
    f(jnp.ones(5), 0.5)
    assert len(f._cache) == 2
    np.testing.assert_allclose([float(a), float(b)], [0.9, 0.6], rtol=1e-6)


def test_jit_static_argnums_and_lower():
    def power(x, n):
        return x**n

    f = srcjax.jit(power, static_argnums=1)
    np.testing.assert_allclose(f(jnp.arange(3.0), 3), [0.0, 1.0, 8.0])
    assert "integer_pow[y=3]" in f.lower(jnp.arange(3.0), 3).as_text()
    g = srcjax.jit(power, static_argnames="n")
    np.testing.assert_allclose(g(jnp.arange(3.0), n=2), [0.0, 1.0, 4.0])


def test_disable_jit_runs_plain_python():
    calls = []

    def f(x):
        calls.append(type(x))
        return x + 1

    with srcjax.disable_jit():
        srcjax.jit(f)(jnp.ones(2))
    assert calls == [srcjax.Array]


def test_transpile_command_prints_runnable_python(capsys):
    assert cli(["transpile", os.path.join(ROOT, "tests/corpus/loops.py") + ":clipped_sum",
                "--args", "f32[4], f32[]", "--emit", "python"]) == 0
    source = capsys.readouterr().out
    namespace = {}
    exec(compile(source, "<transpiled>", "exec"), namespace)
    out = namespace["clipped_sum"](jnp.array([0.1, 0.9, 0.3, 2.0]), jnp.float32(0.5))
    np.testing.assert_allclose(out, 1.4, rtol=1e-6)


def test_transpile_command_uses_annotations_and_prints_ir(capsys):
    assert cli(["transpile", os.path.join(ROOT, "tests/corpus/loops.py") + ":annotated", "--emit", "ir"]) == 0
    assert capsys.readouterr().out.startswith("func @annotated(%x: f32[3], %y: f32[]) -> f32[]")


def test_transpile_command_reports_errors(capsys):
    assert cli(["transpile", os.path.join(ROOT, "tests/corpus/loops.py") + ":clipped_sum", "--args", "q7[3]"]) == 2
    assert "unknown dtype 'q7'" in capsys.readouterr().err
    assert cli(["transpile", "no/such/file.py:f", "--args", "f32[]"]) == 2


@pytest.mark.parametrize("example, func, args", [
    ("seed_000_quickstart.py", "selu", "f32[100]"),
    ("seed_001_vmap_and_grad.py", "loss", "f32[3], f32[]"),
    ("seed_003_slides.py", "tanh", "f32[]"),
])
def test_transpile_seed_examples(example, func, args):
    result = subprocess.run([sys.executable, "-m", "srcjax", "transpile", f"examples/{example}:{func}",
                             "--args", args], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    namespace = {}
    exec(compile(result.stdout, "<transpiled>", "exec"), namespace)
    assert callable(namespace[func])


def test_transpile_emits_llvm_and_assembly(capsys):
    target = os.path.join(ROOT, "examples/seed_003_slides.py") + ":slow_f"
    assert cli(["transpile", target, "--args", "f32[64,64]", "--emit", "llvm"]) == 0
    llvm_ir = capsys.readouterr().out
    assert "define" in llvm_ir and "fmul" in llvm_ir
    assert cli(["transpile", target, "--args", "f32[64,64]", "--emit", "asm"]) == 0
    assembly = capsys.readouterr().out
    assert packed(assembly, "v?mulps")  # packed arithmetic on the target's full vector registers


def test_transpile_emits_ptx_that_ptxas_assembles(capsys):
    from srcjax.codegen.ptx import target as gpu_target

    source = os.path.join(ROOT, "examples/seed_003_slides.py") + ":slow_f"
    assert cli(["transpile", source, "--args", "f32[64,64]", "--emit", "ptx", "--arch", "sm_90"]) == 0
    ptx = capsys.readouterr().out
    assert ".target sm_90" in ptx and ".entry" in ptx and "map kernel" in ptx
    if gpu_target.ptxas_path() is not None:
        gpu_target.assemble(ptx, "sm_90")
