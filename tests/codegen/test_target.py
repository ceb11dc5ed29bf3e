"""SRCJAX_CPU: compiling for an x86-64 level instead of the host CPU (each case in a fresh process, since the
target is chosen once per process)."""

import os
import platform
import re
import subprocess
import sys

import pytest

from srcjax.codegen.llvm import engine

x86_only = pytest.mark.skipif(platform.machine() != "x86_64", reason="the levels are x86-64's")

PROGRAM = """
import numpy as np
import srcjax, srcjax.numpy as jnp
from srcjax.codegen.llvm import engine
f = srcjax.jit(lambda x: jnp.exp(x) * jnp.tanh(x))
x = np.linspace(-3, 3, 1000).astype(np.float32)
np.testing.assert_allclose(np.asarray(f(x)), np.exp(x) * np.tanh(x), rtol=2e-6)
assert f.lower(x).compile().native is not None
print(engine.target().cpu, engine.has_fma(), engine.host_description())
"""


def _run(cpu: str | None, tmp_path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "SRCJAX_CPU"}
    env["SRCJAX_CACHE"] = "0"
    if cpu is not None:
        env["SRCJAX_CPU"] = cpu
    return subprocess.run([sys.executable, "-c", PROGRAM], env=env, cwd=tmp_path, capture_output=True, text=True)


@x86_only
@pytest.mark.parametrize("cpu, fma", [("x86-64-v2", False), ("x86-64-v3", True)])
def test_a_level_is_compiled_for_and_keys_the_cache(cpu, fma, tmp_path):
    run = _run(cpu, tmp_path)
    assert run.returncode == 0, run.stderr
    name, has_fma, description = run.stdout.strip().split(" ", 2)
    assert name == cpu and has_fma == str(fma)
    assert cpu in description  # (the disk cache's key holds the description)
    host = _run(None, tmp_path)
    assert host.returncode == 0, host.stderr
    assert host.stdout.split(" ", 2)[2] != description


def test_an_unknown_or_unrunnable_target_is_a_clear_error(tmp_path):
    run = _run("pentium-pro", tmp_path)
    assert run.returncode != 0
    assert "TargetError: SRCJAX_CPU='pentium-pro': expected 'host' or one of x86-64, x86-64-v2" in run.stderr
    assert "InternalCompilerError" not in run.stderr
    if platform.machine() == "x86_64" and not engine.llvm.get_host_cpu_features().get("avx512f"):
        run = _run("x86-64-v4", tmp_path)
        assert "needs avx512" in run.stderr and "which this CPU lacks" in run.stderr


def test_the_suites_target_is_the_one_compiled_for():
    chosen = os.environ.get("SRCJAX_CPU", "host")
    assert engine.target().cpu == (chosen if chosen != "host" else engine.llvm.get_host_cpu_name())


# select(m, shuffle(select(m, A, B)), C): the inner select becomes a masked load of A over B, the outer a masked
# permute under the same mask; lane 0 of the result depends on m's lane 1
MASKED_PERMUTE = """
define void @f(ptr %a, ptr %b, ptr %out) {
  %va = load <2 x float>, ptr %a
  %vb = load <2 x float>, ptr %b
  %m = fcmp oeq <2 x float> %va, %vb
  %s1 = select <2 x i1> %m, <2 x float> <float -5.0e-01, float 5.0e-01>, <2 x float> <float -1.0, float 1.0>
  %sh = shufflevector <2 x float> %s1, <2 x float> poison, <2 x i32> <i32 1, i32 0>
  %s2 = select <2 x i1> %m, <2 x float> %sh, <2 x float> <float 0.0, float -0.0>
  store <2 x float> %s2, ptr %out
  ret void
}
"""


@x86_only
def test_a_masked_load_is_not_folded_into_a_permute_under_the_same_mask():
    """LLVM 22's peephole pass folded the masked load into the masked permute as a plain load, dropping its mask
    (codegen_worker.BACKEND_OPTIONS): a jit(grad) through a minimum took a tie where there was none. The assembly
    is checked for an AVX-512 CPU whatever the host; the code is run where the host has AVX-512."""
    import ctypes

    import numpy as np

    from srcjax.codegen.llvm import codegen_worker

    engine.target()  # (LLVM initialised, the backend options set)
    machine = codegen_worker.MachineSpec("skylake-avx512", "", pic=False).create()
    module = engine.llvm.parse_assembly(MASKED_PERMUTE)
    assembly = machine.emit_assembly(module)
    assert re.search(r"vpermilps\s+\$\w+, \(", assembly) is None, assembly  # (no permute of memory)

    compiled = engine.compile_module(MASKED_PERMUTE, ["f"])
    fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)(compiled.code.addresses["f"])
    a, b, out = np.array([1.0, 2.0], np.float32), np.array([5.0, 2.0], np.float32), np.zeros(2, np.float32)
    fn(a.ctypes.data, b.ctypes.data, out.ctypes.data)
    # m = [False, True]: the inner select is [-1, 0.5], swapped [0.5, -1], the outer keeps lane 1 of it
    np.testing.assert_array_equal(out, np.array([0.0, -1.0], np.float32))
