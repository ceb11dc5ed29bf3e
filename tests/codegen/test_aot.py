"""Ahead-of-time modules (codegen/aot.py, srcjax/aot.py, ``python -m srcjax compile``): a file's jitted functions
compile into a shared library and a loader; the loader runs in a process that cannot import srcjax, llvmlite
or libcst and gives what ``srcjax.jit`` gives; bad files, functions and arguments get clear errors."""

import io
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import srcjax
from srcjax.codegen.aot import AotError, find_c_compiler
from srcjax.codegen.ptx import target as gpu_target
from srcjax import aot

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(find_c_compiler() is None, reason="no C compiler to link shared libraries")

SOURCE = """
import numpy as np
import srcjax.numpy as jnp
from srcjax import aot, jit, lax

TABLE = np.linspace(0.5, 2.0, 40).astype(np.float32)


@aot.signatures("f32[1000], f32[]", "f64[7], f64[]")
@jit
def scale_exp(x, a):
    return a * jnp.exp(x) + 1.0


@aot.signatures("f32[50,40]")
@jit
def weighted_norms(x):
    return jnp.sqrt(jnp.sum(x * x * TABLE, axis=1))


@aot.signatures("f32[64,32], f32[32,16], f32[16]")
@jit
def layer(w, x, b):
    h = jnp.tanh(w @ x + b)
    return {"h": h, "stats": (h.sum(), [h.max(axis=0)]), "none": None}


@aot.signatures("f32[24,40], f32[40]")
@jit
def matvec(a, x):  # matrix-vector products: BLAS's ?gemv, bound by the loader like ?gemm
    return a @ x, (a @ x) @ a


@aot.signatures("f64[20,30]")
@jit
def gram(x):
    return x @ x.T


@aot.signatures("f32[16], 300")
@jit
def iterate(x, n):
    for i in range(n):
        x = 0.99 * x + 0.01 * jnp.sin(x)
    return x


@aot.signatures("f64[5]")
@aot.signatures("f32[5]")
@jit
def newton_sqrt(x):
    y = x
    while jnp.max(jnp.abs(y * y - x)) > 1e-5 * jnp.max(x):
        y = 0.5 * (y + x / y)
    return y, jnp.int32(3)


@aot.signatures("f32[6,5], i32[4]")
@jit
def indexing(x, idx):  # gathers, scatters, arg-reductions and scans are native: no host call in the library
    picked = x[idx]
    return x.at[idx].add(picked * 2.0), jnp.argmax(x, axis=1), jnp.cumsum(x, axis=0)


@aot.signatures("f32[2,9,8,3], f32[3,3,3,4]")
@jit
def conv(x, w):
    return lax.conv_general_dilated(x, w, (2, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))


@jit
def not_declared(x):
    return x
"""

# what each function is called with, here (srcjax.jit) and in the loading process
rng = np.random.default_rng(0)
CALLS = {
    "scale_exp": [(rng.uniform(-2, 2, 1000).astype(np.float32), np.float32(1.5)), (rng.normal(size=7), 0.25)],
    "weighted_norms": [(rng.normal(size=(50, 40)).astype(np.float32),)],
    "layer": [tuple(rng.normal(size=s).astype(np.float32) / 4 for s in [(64, 32), (32, 16), (16,)])],
    "matvec": [(rng.normal(size=(24, 40)).astype(np.float32), rng.normal(size=40).astype(np.float32))],
    "gram": [(rng.normal(size=(20, 30)),)],
    "iterate": [(rng.normal(size=16).astype(np.float32), 300)],
    "newton_sqrt": [(rng.uniform(1, 9, 5),), (rng.uniform(1, 9, 5).astype(np.float32),)],
    "indexing": [(rng.normal(size=(6, 5)).astype(np.float32), np.array([5, 0, 5, -2], np.int32))],
    "conv": [(rng.normal(size=(2, 9, 8, 3)).astype(np.float32), rng.normal(size=(3, 3, 3, 4)).astype(np.float32))],
}

# The loading process: srcjax, llvmlite, libcst and the repository's packages cannot be imported there.
LOADER = r"""
import importlib.abc, pickle, sys
BLOCKED = {"srcjax", "llvmlite", "libcst", "codegen", "runtime", "transpiler"}

class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"the loader imported {name}")

sys.meta_path.insert(0, Block())
import os
sys.path = [p for p in sys.path if p not in ("", ".") and os.path.realpath(p) != sys.argv[4]] + [sys.argv[1]]
import numpy as np
import srcjax_demo_aot as m

calls = pickle.load(open(sys.argv[2], "rb"))
results = {name: [getattr(m, name)(*args) for args in arg_lists] for name, arg_lists in calls.items()}
errors = []
for bad in [lambda: m.scale_exp(np.zeros(1000), 1.0), lambda: m.iterate(np.zeros(16, np.float32), 5),
            lambda: m.gram(np.zeros((30, 20))), lambda: m.scale_exp(np.zeros(7))]:
    try:
        bad()
        errors.append(None)
    except TypeError as e:
        errors.append(str(e))
loaded = sorted(k for k in sys.modules if k.split(".")[0] in BLOCKED)
pickle.dump({"results": results, "errors": errors, "loaded": loaded, "doc": m.__doc__}, open(sys.argv[3], "wb"))
"""


def _run(args, env=None, **kw):
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, env={**os.environ, **(env or {})}, **kw)


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """The demo file compiled by the command line (every nest on threads, so the thread runtime is linked)."""
    work = tmp_path_factory.mktemp("aot")
    source = work / "srcjax_demo.py"
    source.write_text(SOURCE)
    out = work / "out"
    result = _run(
        [sys.executable, "-m", "srcjax", "compile", str(source), "-o", str(out)],
        env={"SRCJAX_PARALLEL_MIN_WORK": "1", "SRCJAX_NUM_THREADS": "3"},
    )
    assert result.returncode == 0, result.stderr
    return source, out, result


@pytest.fixture(scope="module")
def loaded(compiled, tmp_path_factory):
    source, out, _ = compiled
    work = tmp_path_factory.mktemp("load")
    (work / "calls.pkl").write_bytes(pickle.dumps(CALLS))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    args = [
        sys.executable,
        "-I",
        "-c",
        LOADER,
        str(out),
        str(work / "calls.pkl"),
        str(work / "out.pkl"),
        os.path.realpath(ROOT),
    ]
    result = subprocess.run(args, cwd=work, capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    return pickle.loads((work / "out.pkl").read_bytes())


def test_command_writes_library_and_loader(compiled):
    _, out, result = compiled
    assert sorted(p.name for p in out.iterdir()) == [
        "libsrcjax_demo_aot.so",
        "srcjax_demo_aot.npz",
        "srcjax_demo_aot.py",
    ]
    assert result.stdout.strip() == str(out / "srcjax_demo_aot.py")
    assert "skipping not_declared: no signatures" in result.stderr


def test_loader_imports_no_compiler(loaded):
    assert loaded["loaded"] == []
    assert "newton_sqrt(f32[5])" in loaded["doc"] and "iterate(f32[16], 300)" in loaded["doc"]


def _same_structure(a, b):
    if isinstance(a, (tuple, list, dict)) or a is None:
        assert type(a) is type(b), (a, b)
        if isinstance(a, dict):
            assert list(a) == list(b)
            a, b = list(a.values()), list(b.values())
        if a is not None:
            assert len(a) == len(b)
            for x, y in zip(a, b):
                _same_structure(x, y)
        return
    assert isinstance(b, np.ndarray), type(b)
    a = np.asarray(a)
    assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, a.shape, b.dtype, b.shape)
    tolerance = 1e-5 if a.dtype == np.float32 else 1e-12
    np.testing.assert_allclose(b, a, rtol=tolerance, atol=tolerance)


@pytest.fixture(scope="module")
def jitted(compiled):
    """The demo file's functions, run by this process's srcjax.jit."""
    import runpy

    return runpy.run_path(str(compiled[0]))


@pytest.mark.parametrize("name", sorted(CALLS))
def test_results_match_jit(jitted, loaded, name):
    for args, got in zip(CALLS[name], loaded["results"][name]):
        _same_structure(_to_numpy(jitted[name](*args)), got)


def _to_numpy(tree):
    if isinstance(tree, dict):
        return {k: _to_numpy(v) for k, v in tree.items()}
    if isinstance(tree, (tuple, list)):
        return type(tree)(map(_to_numpy, tree))
    return None if tree is None else np.asarray(tree)


def test_results_match_numpy(loaded):
    (x, a), _ = CALLS["scale_exp"]
    np.testing.assert_allclose(loaded["results"]["scale_exp"][0], 1.5 * np.exp(x.astype(np.float64)) + 1, rtol=1e-6)
    (x,) = CALLS["gram"][0]
    np.testing.assert_allclose(loaded["results"]["gram"][0], x @ x.T, rtol=1e-5, atol=1e-4)  # (f32: x64 is off)
    a, v = (y.astype(np.float64) for y in CALLS["matvec"][0])
    for got, want in zip(loaded["results"]["matvec"][0], (a @ v, (a @ v) @ a), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    (x,) = CALLS["newton_sqrt"][0]
    root, three = loaded["results"]["newton_sqrt"][0]
    np.testing.assert_allclose(root, np.sqrt(x), rtol=1e-5)
    assert three.dtype == np.int32 and three == 3


def test_wrong_arguments_list_the_signatures(loaded):
    wrong_dtype, wrong_static, wrong_shape, too_few = loaded["errors"]
    assert "scale_exp() got arguments (f64[1000], 1.0)" in wrong_dtype
    assert "scale_exp(f32[1000], f32[])" in wrong_dtype and "scale_exp(f64[7], f64[])" in wrong_dtype
    assert "(f32[16], 5)" in wrong_static and "iterate(f32[16], 300)" in wrong_static
    assert "gram(f64[20,30])" in wrong_shape
    assert too_few is not None and "(f64[7])" in too_few


def test_loader_refuses_a_cpu_without_an_extension_the_code_may_use(monkeypatch):
    """A library compiled for an AVX-512 host may hold vpopcntd (AVX512_VPOPCNTDQ), vpermb (AVX512_VBMI), extrq
    (AMD's SSE4A): a CPU with AVX-512F but not those must get the loader's ImportError, not SIGILL."""
    from srcjax.codegen import aot_loader
    from srcjax.codegen import aot as codegen_aot
    from srcjax.codegen.llvm import engine

    extensions = {"avx512f", "avx512bw", "avx512vpopcntdq", "avx512vbmi", "sse4a", "shstk", "crc32"}
    monkeypatch.setattr(engine, "target", lambda: engine.Target("znver4", "", frozenset(extensions)))
    features = codegen_aot._cpu_features()
    assert {"avx512vpopcntdq", "avx512vbmi", "sse4a"} <= set(features)
    assert not {"shstk", "crc32"} & set(features)  # (no instruction LLVM emits unasked)
    skylake_x = "flags\t\t: fpu sse sse2 pni ssse3 sse4_1 sse4_2 avx avx2 avx512f avx512bw avx512cd avx512dq avx512vl\n"
    monkeypatch.setattr(aot_loader, "open", lambda *_: io.StringIO(skylake_x), raising=False)
    meta = {"triple": f"{os.uname().machine}-unknown-linux-gnu", "library": "libm_aot.so", "cpu_features": features}
    with pytest.raises(ImportError, match="with sse4a, avx512vbmi, avx512vpopcntdq, which this one lacks"):
        aot_loader._check_machine(meta)
    aot_loader._check_machine({**meta, "cpu_features": ["avx512f", "avx512bw"]})


def test_python_ints_too_large_for_the_compiled_dtype_overflow(monkeypatch):
    """jit(f)(x, 2**33) raises OverflowError (x64 off); the loader must too, never wrap the int to int32."""
    from srcjax.codegen import aot_loader

    def signature(text, dtype):
        spec = aot_loader._Specialisation.__new__(aot_loader._Specialisation)
        spec.text, spec.params = text, [("array", np.dtype(dtype), (2,), np.dtype(dtype))]
        return spec

    specs = [signature("u8[2]", "uint8"), signature("i32[2]", "int32")]
    monkeypatch.setitem(aot_loader._functions, "f", specs)
    monkeypatch.setattr(aot_loader._Specialisation, "__call__", lambda self, buffers: (self.text, buffers))
    text, (buffer,) = aot_loader._call("f", ([300, -1],))  # (the signature that holds it)
    assert text == "i32[2]" and buffer.tolist() == [300, -1]
    with pytest.raises(OverflowError, match=r"f\(\): Python int 8589934592 too large to convert to int32"):
        aot_loader._call("f", ([2**33, 0],))
    for wrong in ([0.5, 0], [[1, 2], [3]]):  # (a float for ints, a ragged list: NumPy's ValueError)
        with pytest.raises(TypeError, match="compiled ahead of time for"):
            aot_loader._call("f", (wrong,))


def test_a_rebuild_is_never_called_through_the_loader_of_another_build(tmp_path):
    """A build in the same second as the one before, with a loader of the same size (``f32[3]`` -> ``f32[8]``),
    would be imported from the earlier loader's ``__pycache__`` and pass 3 floats to code reading 8: the bytecode
    goes with the rebuild, and a loader refuses a library of another build."""
    import importlib.util
    import py_compile
    import shutil

    source, out = tmp_path / "rebuilt.py", tmp_path / "out"
    text = "from srcjax import aot, jit\n@aot.signatures('f32[{}]')\n@jit\ndef f(x):\n    return x * 2.0\n"
    source.write_text(text.format(3))
    loader = aot.compile_file(source, out, log=open(os.devnull, "w"))
    cached = Path(importlib.util.cache_from_source(str(loader)))
    py_compile.compile(str(loader), str(cached), invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP)
    shutil.copy(loader, tmp_path / "earlier_loader.py")
    source.write_text(text.format(8))
    assert aot.compile_file(source, out, log=open(os.devnull, "w")) == loader
    assert not cached.exists()
    shutil.copy(tmp_path / "earlier_loader.py", loader)
    check = "import numpy as np, rebuilt_aot as m; m.f(np.ones(3, np.float32))"
    result = subprocess.run([sys.executable, "-c", check], cwd=out, capture_output=True, text=True)
    assert result.returncode != 0 and "ImportError: librebuilt_aot.so is not the library this loader" in result.stderr


# -- errors at compile time --------------------------------------------------------------------------------
def _compile(tmp_path, text):
    source = tmp_path / "bad.py"
    source.write_text(textwrap.dedent(text))
    return aot.compile_file(source, tmp_path / "out", log=open(os.devnull, "w"))


def test_a_module_of_a_package_compiles_with_its_relative_imports(tmp_path):
    """``srcjax compile pkg/model.py`` runs the file as ``pkg.model`` (as ``python -m`` does), so ``from .helpers
    import g`` works; ``transpile`` reads it the same way."""
    package = tmp_path / "shapes_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "helpers.py").write_text("import srcjax.numpy as jnp\n\ndef g(x):\n    return jnp.sin(x) * 2\n")
    (package / "model.py").write_text(
        "from srcjax import aot, jit\nfrom .helpers import g\n\n"
        "@aot.signatures('f32[3]')\n@jit\ndef f(x):\n    return g(x) + 1\n"
    )
    out = tmp_path / "out"
    result = _run([sys.executable, "-m", "srcjax", "compile", str(package / "model.py"), "-o", str(out)])
    assert result.returncode == 0, result.stderr
    check = "import numpy as np, model_aot as m; print(m.f(np.arange(3, dtype=np.float32)).tolist())"
    loaded = subprocess.run([sys.executable, "-c", check], cwd=out, capture_output=True, text=True)
    assert loaded.returncode == 0, loaded.stderr
    assert np.allclose(eval(loaded.stdout), 2 * np.sin(np.arange(3)) + 1, rtol=1e-6)
    result = _run([sys.executable, "-m", "srcjax", "transpile", f"{package / 'model.py'}:f", "--args", "f32[3]"])
    assert result.returncode == 0 and "def f(" in result.stdout, result.stderr


def test_file_without_signatures_is_an_error(tmp_path):
    with pytest.raises(AotError, match="has no @jit function with declared signatures"):
        _compile(
            tmp_path,
            """
            from srcjax import jit
            @jit
            def f(x):
                return x
        """,
        )


def test_function_needing_python_at_run_time_is_an_error(tmp_path):
    with pytest.raises(AotError, match=r"sorted\(f32\[8\]\): cannot be compiled ahead of time: 'sort'"):
        _compile(
            tmp_path,
            """
            import srcjax.numpy as jnp
            from srcjax import aot, jit
            @aot.signatures("f32[8]")
            @jit
            def sorted(x):
                return jnp.sort(x) * 2
        """,
        )


def test_exotic_output_pytree_is_an_error(tmp_path):
    with pytest.raises(AotError, match=r"pair\(f32\[2\]\): returns a Pair"):
        _compile(
            tmp_path,
            """
            from collections import namedtuple
            from srcjax import aot, jit
            Pair = namedtuple("Pair", "a b")
            @aot.signatures("f32[2]")
            @jit
            def pair(x):
                return Pair(x, x)
        """,
        )


def test_bad_signature_in_the_file_is_an_error(tmp_path):
    with pytest.raises(AotError, match=r"f\(f32\[3\], f32\[3\]\)"):
        _compile(
            tmp_path,
            """
            from srcjax import aot, jit
            @aot.signatures("f32[3], f32[3]")
            @jit
            def f(x):
                return x
        """,
        )


def test_a_type_for_an_argument_static_by_name_is_an_error(tmp_path):
    with pytest.raises(AotError, match=r"g\(f32\[3\], f32\[3\]\): argument 1 is static"):
        _compile(
            tmp_path,
            """
            from functools import partial
            from srcjax import aot, jit
            @aot.signatures("f32[3], f32[3]")
            @partial(jit, static_argnames="n")
            def g(x, n):
                return x * n
        """,
        )


def test_signatures_decorator_checks_its_input():
    with pytest.raises(ValueError, match="unknown dtype 'f33'"):
        aot.signatures("f33[3]")
    with pytest.raises(TypeError, match="goes above @jit"):
        aot.signatures("f32[3]")(lambda x: x)
    f = aot.signatures("f64[2]")(aot.signatures("f32[3]")(srcjax.jit(lambda x: x)))
    assert f.__srcjax_signatures__ == ("f32[3]", "f64[2]")


def test_no_c_compiler_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(AotError, match="no C compiler found"):
        _compile(
            tmp_path,
            """
            from srcjax import aot, jit
            @aot.signatures("f32[3]")
            @jit
            def f(x):
                return x + 1
        """,
        )


def test_command_reports_errors(tmp_path):
    source = tmp_path / "empty.py"
    source.write_text("x = 1\n")
    result = _run([sys.executable, "-m", "srcjax", "compile", str(source), "-o", str(tmp_path)])
    assert result.returncode == 2
    assert "has no @jit function with declared signatures" in result.stderr and "Traceback" not in result.stderr


def test_command_reports_a_bad_output_folder_gpu_arch_and_cpu(tmp_path):
    source = tmp_path / "one.py"
    source.write_text("from srcjax import aot, jit\n@aot.signatures('f32[3]')\n@jit\ndef f(x):\n    return x * 2\n")
    (tmp_path / "a_file").write_text("")
    for options, env, message in [
        (["-o", str(tmp_path / "a_file")], {}, "cannot make the output folder"),
        (["-o", str(tmp_path / "out"), "--ptx", "sm_xx"], {}, "'sm_xx': expected GPU compute"),
        (["-o", str(tmp_path / "out")], {"SRCJAX_CPU": "pentium4"}, "SRCJAX_CPU='pentium4': expected 'host' or"),
    ]:
        result = _run([sys.executable, "-m", "srcjax", "compile", str(source), *options], env=env)
        assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr, result.stderr


def test_compile_writes_gpu_kernels_beside_the_library(tmp_path):
    """``--ptx sm_80,sm_90``: PTX (and, with CUDA's toolkit, cubins) per specialisation the GPU backend compiles,
    and a manifest of the steps that run them; the CPU library and loader are as without it."""
    import json

    source = tmp_path / "srcjax_demo.py"
    source.write_text(SOURCE)
    out = tmp_path / "out"
    result = _run([sys.executable, "-m", "srcjax", "compile", str(source), "-o", str(out), "--ptx", "sm_80,sm_90"])
    assert result.returncode == 0, result.stderr
    names = sorted(p.name for p in out.iterdir())
    assert "libsrcjax_demo_aot.so" in names and "srcjax_demo_aot.py" in names
    manifest = json.loads((out / "srcjax_demo_aot_gpu.json").read_text())
    on_gpu = [symbol for symbol, entry in manifest.items() if "steps" in entry]
    assert on_gpu, manifest
    for symbol in on_gpu:
        for arch in ("sm_80", "sm_90"):
            ptx = (out / f"srcjax_demo_aot.{symbol}.{arch}.ptx").read_text()
            assert f".target {arch}" in ptx
            if gpu_target.ptxas_path() is not None:
                assert (out / f"srcjax_demo_aot.{symbol}.{arch}.cubin").stat().st_size > 0
