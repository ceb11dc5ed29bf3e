"""The transformations as source: the printed gradient of the seeds' logistic regression loss is a golden
file, and every transform flag of `srcjax transpile` prints a module that runs and agrees with the
in-process transformation."""

import os
import pathlib

import numpy as np
import pytest

import srcjax
from srcjax.__main__ import main as cli

ROOT = pathlib.Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden" / "transforms"
PROGRAMS = str(ROOT / "tests" / "corpus" / "programs.py")


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

    source = transpile(capsys, f"{PROGRAMS}:tanh_slides", "--args", "f32[]", "--jvp")
    out, tangent = load(source, "jvp_tanh_slides")(np.float32(0.5))
    np.testing.assert_allclose(tangent, 0.5 * (1 - np.tanh(0.5) ** 2), rtol=1e-5)
    source = transpile(capsys, f"{PROGRAMS}:tanh_slides", "--args", "f32[]", "--vjp")
    out, ct = load(source, "vjp_tanh_slides")(np.float32(0.5))  # the module returns the flat leaves
    np.testing.assert_allclose(ct, np.tanh(0.5) * (1 - np.tanh(0.5) ** 2), rtol=1e-5)
