"""The transformations as source: the printed gradient of the seeds' logistic regression loss is a golden
file, and every transform flag of `srcjax transpile` prints a module that runs and agrees with the
in-process transformation."""

import os
import pathlib
import runpy
import subprocess
import sys

import numpy as np
import pytest

import srcjax
from srcjax.__main__ import main as cli

ROOT = pathlib.Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden" / "transforms"
PROGRAMS = str(ROOT / "tests" / "corpus" / "programs.py")
LOOPS = str(ROOT / "tests" / "corpus" / "loops.py")


def transpile(capsys, *argv):
    assert cli(["transpile", *argv]) == 0
    return capsys.readouterr().out


def load(source, name):
    namespace = {}
    exec(compile(source, "<transpiled>", "exec"), namespace)
    return namespace[name]


def test_logistic_regression_gradient_source_is_golden(capsys):
    source = transpile(capsys, f"{PROGRAMS}:logistic_loss", "--args", "f32[3], f32[]", "--grad")
    path = GOLDEN / "grad_logistic_loss.py"
    if os.environ.get("SRCJAX_UPDATE_GOLDEN") == "1" or not path.exists():
        path.write_text(source)
    assert source == path.read_text(), "the emitted gradient changed (SRCJAX_UPDATE_GOLDEN=1 renews the file)"
    assert "W_bar = " in source and "label_probs_bar = " in source
    assert " 0.0 *" not in source and "* 0.0" not in source


# (program, its argument types, flags): the emitted source of each is a golden file transform_program.py
GOLDEN_TRANSFORMS = [
    ("logistic_loss", "f32[3], f32[]", ["--jvp"]),
    ("logistic_loss", "f32[4,3], f32[]", ["--vmap", "--in-axes", "0,None"]),
    ("newton_sqrt", "f32[]", ["--grad"]),
    ("newton_sqrt", "f32[]", ["--jvp"]),
    ("newton_sqrt", "f32[4]", ["--vmap"]),
    ("clipped_sum", "f32[4], f32[]", ["--grad", "--argnums", "0,1"]),
    ("while_tuple_carry", "f32[2]", ["--jvp"]),
    ("if_on_scalar", "f32[4]", ["--vmap"]),
]


@pytest.mark.parametrize("program, types, flags", GOLDEN_TRANSFORMS,
                         ids=[f"{f[0][2:]}-{p}" for p, _, f in GOLDEN_TRANSFORMS])
def test_transform_sources_are_golden(capsys, program, types, flags):
    """Byte for byte, so that a change to a transform or the emitter shows what it changed (regenerate with
    SRCJAX_UPDATE_GOLDEN=1 and read the diff)."""
    file = LOOPS if program == "clipped_sum" else PROGRAMS
    source = transpile(capsys, f"{file}:{program}", "--args", types, *flags)
    path = GOLDEN / f"{flags[0][2:]}_{program}.py"
    if os.environ.get("SRCJAX_UPDATE_GOLDEN") == "1" or not path.exists():
        path.write_text(source)
    assert source == path.read_text(), f"{path.name} changed (SRCJAX_UPDATE_GOLDEN=1 renews the file)"
    assert "srcjax.transpiler" not in source and ".bind(" not in source


@pytest.mark.parametrize("flags, name, reference", [
    (["--grad"], "grad_logistic_loss", lambda f, W, b: srcjax.grad(f)(W, b)),
    (["--grad", "--argnums", "0,1"], "grad_logistic_loss", lambda f, W, b: srcjax.grad(f, (0, 1))(W, b)),
    (["--value-and-grad"], "value_and_grad_logistic_loss", lambda f, W, b: srcjax.value_and_grad(f)(W, b)),
    (["--jacfwd"], "jacfwd_logistic_loss", lambda f, W, b: srcjax.jacfwd(f)(W, b)),
    (["--jacrev"], "jacrev_logistic_loss", lambda f, W, b: srcjax.jacrev(f)(W, b)),
    (["--hessian"], "hessian_logistic_loss", lambda f, W, b: srcjax.hessian(f)(W, b)),
])
def test_transform_flags_print_runnable_modules(capsys, flags, name, reference):
    from tests.corpus import programs

    source = transpile(capsys, f"{PROGRAMS}:logistic_loss", "--args", "f32[3], f32[]", *flags)
    fn = load(source, name)
    W, b = np.array([0.3, -0.2, 0.5], np.float32), np.float32(0.1)
    got, want = fn(W, b), reference(programs.logistic_loss, W, b)
    for g, w in zip(np.atleast_1d(np.asarray(got, dtype=object)), np.atleast_1d(np.asarray(want, dtype=object))):
        np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(w, np.float64), rtol=1e-5, atol=1e-6)


def test_vmap_flag(capsys):
    from tests.corpus import programs

    source = transpile(capsys, f"{PROGRAMS}:if_on_scalar", "--args", "f32[4]", "--vmap", "--in-axes", "0")
    fn = load(source, "vmap_if_on_scalar")
    x = np.array([-1.0, 2.0, -3.0, 4.0], np.float32)
    np.testing.assert_allclose(fn(x), [programs.if_on_scalar(v) for v in x])


def test_jvp_and_vjp_flags(capsys):
    """``--jvp`` takes the primals, then a tangent for each (``x_dot``); ``--vjp`` the primals, then the
    outputs' cotangents (``out_bar``): each returns the outputs, then what it computes."""
    source = transpile(capsys, f"{PROGRAMS}:tanh_slides", "--args", "f32[]", "--jvp")
    assert "def jvp_tanh_slides(x, x_dot):" in source
    out, tangent = load(source, "jvp_tanh_slides")(np.float32(0.5), np.float32(2.0))
    np.testing.assert_allclose(tangent, 2.0 * (1 - np.tanh(0.5) ** 2), rtol=1e-5)
    source = transpile(capsys, f"{PROGRAMS}:tanh_slides", "--args", "f32[]", "--vjp")
    assert "def vjp_tanh_slides(x, out_bar):" in source and "x_bar" in source
    out, ct = load(source, "vjp_tanh_slides")(np.float32(0.5), np.float32(3.0))
    np.testing.assert_allclose(ct, 3.0 * (1 - np.tanh(0.5) ** 2), rtol=1e-5)


def test_readme_loss_jvp_names_primals_then_tangents(capsys, tmp_path):
    path = tmp_path / "f.py"
    path.write_text(README_LOSS)
    source = transpile(capsys, f"{path}:loss", "--args", "f32[3,4], f32[4]", "--jvp")
    assert "def jvp_loss(w, x, w_dot, x_dot):" in source
    w, x = np.full((3, 4), 0.1, np.float32), np.arange(4, dtype=np.float32)
    w_dot, x_dot = np.ones((3, 4), np.float32), np.full(4, 0.5, np.float32)
    got = load(source, "jvp_loss")(w, x, w_dot, x_dot)
    want = srcjax.jvp(runpy_loss(path), (w, x), (w_dot, x_dot))
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64), rtol=1e-6)


README_LOSS = (
    "import srcjax.numpy as jnp\n\n"
    "print('loading the module')  # its output is not part of the generated source\n\n\n"
    "def loss(w, x):\n"
    "    h = jnp.tanh(jnp.dot(w, x))\n"
    "    while h.sum() > 1.0:\n"
    "        h = h / 2.0\n"
    "    return jnp.sum(h)\n"
)


def runpy_loss(path):
    import runpy

    return runpy.run_path(str(path))["loss"]


def test_what_the_module_prints_stays_out_of_the_output(capsys, tmp_path):
    path = tmp_path / "f.py"
    path.write_text(README_LOSS)
    assert cli(["transpile", f"{path}:loss", "--args", "f32[3,4], f32[4]", "--grad"]) == 0
    captured = capsys.readouterr()
    assert "loading the module" not in captured.out and "loading the module" in captured.err
    assert captured.out.startswith("# generated by srcjax from ")
    compile(captured.out, "<grad_loss>", "exec")


def test_too_few_or_too_many_args_is_one_line(capsys, tmp_path):
    path = tmp_path / "f.py"
    path.write_text(README_LOSS)
    for spec, count in (("f32[3,4]", 1), ("f32[3,4], f32[4], f32[]", 3)):
        assert cli(["transpile", f"{path}:loss", "--args", spec, "--grad"]) == 2
        err = capsys.readouterr().err.replace("loading the module\n", "")
        assert err == f"srcjax: loss(w, x) takes 2 arguments; --args gives {count}\n"


def test_transformations_compose_in_the_order_given(capsys, tmp_path):
    """``--grad --vmap`` is ``vmap(grad(f))``; ``--vmap --grad`` is ``grad(vmap(f))``, which has no scalar
    output to differentiate: it is refused in one line."""
    path = tmp_path / "f.py"
    path.write_text(README_LOSS)
    source = transpile(capsys, f"{path}:loss", "--args", "f32[3,4], f32[5,4]", "--grad", "--vmap", "--in-axes",
                       "None,0")
    w, xs = np.full((3, 4), 0.1, np.float32), np.linspace(-2, 2, 20, dtype=np.float32).reshape(5, 4)
    want = srcjax.vmap(srcjax.grad(runpy_loss(path)), in_axes=(None, 0))(w, xs)
    np.testing.assert_allclose(load(source, "vmap_grad_loss")(w, xs), want, rtol=1e-6)
    assert cli(["transpile", f"{path}:loss", "--args", "f32[3,4], f32[5,4]", "--vmap", "--grad", "--in-axes",
                "None,0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == "srcjax: --vmap --grad of loss: the gradient needs one real scalar output; the function " \
                      "returns f32[5]"


def test_a_reader_that_stops_early_ends_the_command_quietly(tmp_path):
    """``srcjax transpile ... | head`` ends without a BrokenPipeError traceback."""
    path = tmp_path / "big.py"
    path.write_text("import numpy as np\n\nW = np.arange(200000.0, dtype=np.float32)\n\n\n"
                    "def f(x):\n    return x * W\n")
    process = subprocess.Popen([sys.executable, "-m", "srcjax", "transpile", f"{path}:f", "--args", "f32[200000]"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    assert process.stdout.readline().startswith(b"# generated by srcjax")
    process.stdout.close()
    _, err = process.communicate(timeout=120)
    assert process.returncode == 0 and b"Traceback" not in err and b"BrokenPipe" not in err, err.decode()


REPLICA_PROGRAM = '''
import srcjax.numpy as jnp
from srcjax import lax


def loss(w, x):
    return lax.pmean(jnp.mean(jnp.tanh(x @ w) ** 2), "i")


def step(w, x):
    g = jnp.tanh(x @ w)
    total = lax.psum(jnp.sum(g), "i")
    return w - 0.1 * lax.pmean(x.T @ g, "i") / total + lax.axis_index("i")
'''


def load_file(path, source, name):
    path.write_text(source)
    return runpy.run_path(str(path))[name]


@pytest.fixture
def two_devices():
    saved = srcjax.config.jax_num_cpu_devices
    srcjax.config.update("jax_num_cpu_devices", 2)
    yield
    srcjax.config.update("jax_num_cpu_devices", saved)


@pytest.mark.usefixtures("cpu_backend")  # (a pmap over the CPU's virtual devices)
def test_pmap_flag_prints_one_replica_with_its_collectives(capsys, tmp_path, two_devices):
    """``--pmap --axis-name i`` prints the program each device runs (its collectives as ``lax`` calls); pmapped,
    that module gives what pmap of the original gives, and ``--grad --pmap`` what pmap(grad(f)) gives."""
    path = tmp_path / "f.py"
    path.write_text(REPLICA_PROGRAM)
    namespace = runpy.run_path(str(path))
    w = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    ws = np.stack([w, w])
    xs = np.linspace(-2, 2, 2 * 5 * 3, dtype=np.float32).reshape(2, 5, 3)
    source = transpile(capsys, f"{path}:step", "--args", "f32[2,3,4], f32[2,5,3]", "--pmap", "--axis-name", "i")
    assert "lax.psum(" in source and "lax.pmean(" in source and "lax.axis_index('i')" in source
    replica = load_file(tmp_path / "replica_step.py", source, "replica_step")
    want = srcjax.pmap(namespace["step"], axis_name="i")(ws, xs)
    np.testing.assert_allclose(srcjax.pmap(replica, axis_name="i")(ws, xs), want, rtol=1e-6)
    source = transpile(capsys, f"{path}:loss", "--args", "f32[2,3,4], f32[2,5,3]", "--grad", "--pmap",
                       "--axis-name", "i")
    replica = load_file(tmp_path / "replica_grad_loss.py", source, "replica_grad_loss")
    want = srcjax.pmap(srcjax.grad(namespace["loss"]), axis_name="i")(ws, xs)
    np.testing.assert_allclose(srcjax.pmap(replica, axis_name="i")(ws, xs), want, rtol=1e-5, atol=1e-7)
    assert cli(["transpile", f"{path}:loss", "--args", "f32[2,3,4], f32[2,5,3]", "--pmap", "--grad",
                "--axis-name", "i"]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == \
        "srcjax: --pmap prints the program of one replica: give it once, last"
