"""checkpoint (remat) recomputes instead of storing (issue 17).

A checkpointed function is a ``checkpoint`` op; reverse mode keeps its inputs and computes it again in the
backward pass. A ``lax.scan`` or ``fori_loop`` with a checkpointed body runs as nested checkpointed segments,
so the carries kept for n steps are about sqrt(n) + n**(1/4) + ... instead of n. Memory is measured (peak
resident size of a subprocess running the compiled gradient, compiled before the measurement starts).
"""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import srcjax
import srcjax.numpy as jnp
from srcjax import lax
from srcjax.transpiler.ir import walk


@pytest.fixture(autouse=True)
def _x64(x64):
    yield


def _layer(w, x):
    return jnp.sin(jnp.tanh(w @ x) * 2.0)


def _net(w, x, ck):
    layer = srcjax.checkpoint(_layer) if ck else _layer
    return jnp.sum(layer(w, layer(w, x)) ** 2)


RNG = np.random.default_rng(0)
W, XV = RNG.standard_normal((4, 4)), RNG.standard_normal(4)


def test_checkpointed_function_is_an_op_with_the_same_derivatives():
    assert any(op.name == "checkpoint" for op in walk(srcjax.make_jaxpr(_net, static_argnums=2)(W, XV, True).ir.body))
    for transform in (srcjax.grad, lambda f: srcjax.jit(srcjax.grad(f), static_argnums=2), srcjax.hessian,
                      srcjax.jacfwd):
        want = transform(_net)(W, XV, False)
        np.testing.assert_allclose(transform(_net)(W, XV, True), want, rtol=1e-12)
    xs = np.stack([XV, 2 * XV])
    batched = srcjax.vmap(srcjax.grad(_net), (None, 0, None))
    np.testing.assert_allclose(batched(W, xs, True), batched(W, xs, False), rtol=1e-12)


_POLICIES = srcjax.checkpoint_policies


@pytest.mark.parametrize("policy", ["everything_saveable", "nothing_saveable", "dots_saveable",
                                    "dots_with_no_batch_dims_saveable", "checkpoint_dots",
                                    "offload_dot_with_no_batch_dims", "save_and_offload_only_these_names"])
def test_policies_keep_the_derivative(policy):
    chosen = getattr(_POLICIES, policy)
    if policy == "offload_dot_with_no_batch_dims":  # (offloading: to the host, which the CPU's memory is)
        chosen = chosen("device", "pinned_host")
    elif policy == "save_and_offload_only_these_names":
        chosen = chosen(names_which_can_be_saved=["a"], names_which_can_be_offloaded=["b"], offload_src="device",
                        offload_dst="pinned_host")

    def net(w, x):
        layer = srcjax.checkpoint(_layer, policy=chosen)
        return jnp.sum(layer(w, layer(w, x)) ** 2)

    np.testing.assert_allclose(srcjax.jit(srcjax.grad(net))(W, XV), srcjax.grad(_net)(W, XV, False), rtol=1e-12)


def test_policy_of_a_checkpoint_compiled_without_a_derivative():
    # the checkpoint op reaches the compiler (and the printed IR) with its policy: printed by its name
    layer = srcjax.checkpoint(_layer, policy=_POLICIES.dots_saveable)
    jitted = srcjax.jit(lambda w, x: layer(w, layer(w, x)))
    np.testing.assert_allclose(jitted(W, XV), _layer(W, _layer(W, XV)), rtol=1e-12)
    assert "policy=_Policy(name='dots_saveable')" in jitted.lower(W, XV).as_text()
    custom = srcjax.checkpoint(_layer, policy=lambda prim, *avals, **params: False)
    np.testing.assert_allclose(srcjax.jit(custom)(W, XV), _layer(W, XV), rtol=1e-12)


def test_dots_saveable_keeps_the_products_out_of_the_recomputation():
    def loss(w, xs, policy):
        step = srcjax.checkpoint(lambda h, x: (jnp.tanh(w @ h + x), None), policy=policy)
        return jnp.sum(lax.scan(step, xs[0], xs)[0] ** 2)

    xs = RNG.standard_normal((5, 4))

    def products(policy):
        ir = srcjax.make_jaxpr(srcjax.grad(loss), static_argnums=2)(W, xs, policy)
        return sum(op.name == "dot_general" for op in walk(ir.ir.body))

    # forward product, the two of its derivative, and the recomputed one unless it is saved
    assert products(srcjax.checkpoint_policies.nothing_saveable) == 4
    assert products(srcjax.checkpoint_policies.dots_saveable) == 3
    want = srcjax.grad(loss)(W, xs, srcjax.checkpoint_policies.everything_saveable)
    np.testing.assert_allclose(srcjax.grad(loss)(W, xs, srcjax.checkpoint_policies.dots_saveable), want, rtol=1e-12)


def _step(h, x):
    h = jnp.tanh(h * 0.9 + jnp.sin(x) * 0.5)
    return h, jnp.sum(h)


@pytest.mark.parametrize("n", [3, 16, 17, 100, 1000])
@pytest.mark.parametrize("reverse", [False, True])
def test_checkpointed_scan_body_segments_with_the_same_gradient(n, reverse):
    def loss(h0, xs, ck):
        h, ys = lax.scan(srcjax.checkpoint(_step) if ck else _step, h0, xs, reverse=reverse)
        return jnp.sum(h**2) + jnp.sum(ys * jnp.arange(n) * 0.01)

    h0, xs = RNG.standard_normal(6), RNG.standard_normal((n, 6))
    grad = srcjax.jit(srcjax.grad(loss, argnums=(0, 1)), static_argnums=2)
    for got, want in zip(grad(h0, xs, True), srcjax.grad(loss, argnums=(0, 1))(h0, xs, False)):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(srcjax.jit(loss, static_argnums=2)(h0, xs, True), loss(h0, xs, False), rtol=1e-12)
    if n >= 16:  # segments: loops inside checkpoints inside a loop
        ir = srcjax.make_jaxpr(loss, static_argnums=2)(h0, xs, True)
        assert any(op.name == "checkpoint" and any(o.name == "for" for o in walk(op.regions[0]))
                   for op in walk(ir.ir.body))


def test_checkpointed_fori_loop_body_and_vmap():
    def loss(x, ck):
        body = (lambda i, c: c + 0.01 * jnp.sin(c * i))
        return jnp.sum(lax.fori_loop(0, 40, srcjax.checkpoint(body) if ck else body, x) ** 2)

    xs = RNG.standard_normal((3, 5))
    batched = srcjax.jit(srcjax.vmap(srcjax.grad(loss), (0, None)), static_argnums=1)
    np.testing.assert_allclose(batched(xs, True), srcjax.vmap(srcjax.grad(loss), (0, None))(xs, False), rtol=1e-10)


_PEAK = textwrap.dedent("""
    def status(field):
        return int(next(line for line in open("/proc/self/status") if line.startswith(field)).split()[1])

    def reset_peak():  # the peak resident size starts again from the current one (Linux)
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return status("VmRSS:")

    def peak():
        return status("VmHWM:")
""")

_MEASURE = _PEAK + textwrap.dedent("""
    import json, sys
    import numpy as np, srcjax, srcjax.numpy as jnp
    from srcjax import lax
    n, width, ck, c, dtype = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1", float(sys.argv[4]), sys.argv[5]
    srcjax.config.update("jax_enable_x64", dtype == "float64")

    def step(h, _):
        return h + c * (h * h), None

    def loss(h0):
        h, _ = lax.scan(srcjax.checkpoint(step) if ck else step, h0, None, length=n)
        return jnp.sum(h * h)

    h0 = np.tile(np.array([0.25, 0.5, 0.75, 1.0], dtype), width // 4)
    compiled = srcjax.jit(srcjax.grad(loss)).lower(h0).compile()
    before = reset_peak()
    g = np.asarray(compiled(h0))
    print(json.dumps({"peak_kb": peak() - before, "grad": g[:4].tolist()}))
""")


def _measure(n: int, width: int, ck: bool, c: float, dtype: str = "float32") -> dict:
    env = dict(os.environ, SRCJAX_CACHE="0")
    out = subprocess.run([sys.executable, "-c", _MEASURE, str(n), str(width), "1" if ck else "0", str(c), dtype],
                         capture_output=True, text=True, env=env, timeout=1200, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _exact(n: int, c: float) -> np.ndarray:
    """d/dh0 of sum(h_n**2) for h <- h + c*h*h, per distinct starting value (float64)."""
    h, d = np.array([0.25, 0.5, 0.75, 1.0]), np.ones(4)
    for _ in range(n):
        h, d = h + c * h * h, d * (1 + 2 * c * h)
    return 2 * h * d


@pytest.mark.usefixtures("cpu_backend")  # (it measures the CPU's native code)
def test_checkpointed_scan_keeps_a_hundredth_of_the_memory():
    n, width, c = 10_000, 2048, 1e-5  # 8 KB of state: storing keeps a few per step (about 240 MB)
    stored, checkpointed = _measure(n, width, False, c), _measure(n, width, True, c)
    np.testing.assert_allclose(checkpointed["grad"], _exact(n, c), rtol=1e-3)
    np.testing.assert_allclose(checkpointed["grad"], stored["grad"], rtol=1e-4)
    assert stored["peak_kb"] > 100 * max(checkpointed["peak_kb"], 1024), (stored, checkpointed)


@pytest.mark.slow
@pytest.mark.usefixtures("cpu_backend")  # (it measures the CPU's native code)
def test_binomial_checkpointing_of_twenty_thousand_steps_of_a_quarter_megabyte():
    # (a quarter MB of float64 state: float32 would round the steps' increments; 100,000 steps of 1 MB took 80 s)
    n, width, c = 20_000, 32_768, 1e-6
    short = 100  # the storing version, measured at 100 steps: what it keeps grows with n
    stored = _measure(short, width, False, c, "float64")["peak_kb"] * (n / short)
    checkpointed = _measure(n, width, True, c, "float64")
    np.testing.assert_allclose(checkpointed["grad"], _exact(n, c), rtol=1e-9)
    assert checkpointed["peak_kb"] * 100 <= stored, (checkpointed["peak_kb"], stored)


_STRAIGHT = _PEAK + textwrap.dedent("""
    import json, sys
    import numpy as np, srcjax, srcjax.numpy as jnp
    ck = sys.argv[1] == "1"

    def block(w, x):
        x = jnp.tanh(w @ x)
        x = jnp.tanh(w @ x)
        x = jnp.tanh(w @ x)
        return jnp.tanh(w @ x)

    def loss(w, x):  # sixteen layers, no loop: straight-line code
        layer = srcjax.checkpoint(block) if ck else block
        x = layer(w, layer(w, layer(w, layer(w, x))))
        return jnp.sum(x * x)

    rng = np.random.default_rng(0)
    w = (rng.standard_normal((512, 512)) / 16).astype(np.float32)
    x = rng.standard_normal((512, 512)).astype(np.float32)  # 1 MB, as each layer's values
    compiled = srcjax.jit(srcjax.grad(loss, argnums=1)).lower(w, x).compile()
    before = reset_peak()
    g = np.asarray(compiled(w, x))
    print(json.dumps({"peak_kb": peak() - before, "grad": g.ravel()[:8].tolist()}))
""")


@pytest.mark.usefixtures("cpu_backend")  # (it measures the CPU's native code)
def test_checkpoint_outside_loops_recomputes_and_keeps_less(tmp_path):
    """Checkpointed blocks of straight-line code: the backward pass computes them again (an optimization barrier
    keeps the recomputation from being merged with the forward pass), and the compiled code frees what the
    forward pass no longer needs (temporaries live from first to last use)."""
    script = tmp_path / "straight.py"  # (a file: its source is read)
    script.write_text(_STRAIGHT)
    runs = {}
    for ck in ("0", "1"):
        # (arrays from 64 KB up are mapped and unmapped, so the resident size follows what is alive)
        env = dict(os.environ, SRCJAX_CACHE="0", MALLOC_MMAP_THRESHOLD_="65536")
        out = subprocess.run([sys.executable, str(script), ck], capture_output=True, text=True, timeout=600,
                             check=True, env=env)
        runs[ck] = json.loads(out.stdout.strip().splitlines()[-1])
    np.testing.assert_allclose(runs["1"]["grad"], runs["0"]["grad"], rtol=1e-5, atol=1e-7)
    assert runs["1"]["peak_kb"] < 0.6 * runs["0"]["peak_kb"], runs

    def loss(x):
        return jnp.sum(srcjax.checkpoint(lambda v: jnp.sin(jnp.sin(v)))(x))

    names = [op.name for op in walk(srcjax.make_jaxpr(srcjax.value_and_grad(loss))(np.ones(3)).ir.body)]
    # the forward pass's two, and sin(v) again for the derivative cos(sin(v)) * cos(v)
    assert names.count("sin") == 3 and "optimization_barrier" in names


def test_policies_by_name():
    from srcjax.ad_checkpoint import checkpoint_name

    def block(w, x):
        a = checkpoint_name(jnp.tanh(w @ x), "a")
        return jnp.cos(checkpoint_name(jnp.sin(a * 2.0), "b")) + a

    def loss(w, x, policy):
        layer = srcjax.checkpoint(block, policy=policy)
        return jnp.sum(layer(w, layer(w, x)) ** 2)

    def count(policy, name):
        ir = srcjax.make_jaxpr(srcjax.grad(loss), static_argnums=2)(W, XV, policy).ir
        return [op.name for op in walk(ir.body)].count(name)

    policies = srcjax.checkpoint_policies
    want = srcjax.grad(loss)(W, XV, policies.everything_saveable)
    for policy in (policies.save_only_these_names("a"), policies.save_any_names_but_these("a"),
                   policies.save_anything_except_these_names("b"),
                   policies.save_from_both_policies(policies.dots_saveable, policies.save_only_these_names("b"))):
        np.testing.assert_allclose(srcjax.jit(srcjax.grad(loss), static_argnums=2)(W, XV, policy), want, rtol=1e-12)
    # saving b leaves its sin out of the recomputation; saving everything but b keeps the tanh out of it
    assert count(policies.save_only_these_names("b"), "sin") < count(policies.nothing_saveable, "sin")
    assert count(policies.save_anything_except_these_names("b"), "tanh") < count(policies.nothing_saveable, "tanh")
    with pytest.raises(TypeError, match="name must be a str"):
        checkpoint_name(XV, 3)


def _g(w, x):
    return jnp.sin(jnp.dot(w, x))


def _two_layers(w1, w2, x):
    return _g(w2, _g(w1, x))


def _saved(fun, *args):
    from srcjax.ad_checkpoint import saved_residuals

    return [(str(aval), what.split(" from /")[0].split(" from ")[0]) for aval, what in saved_residuals(fun, *args)]


def test_saved_residuals_as_the_gradient_checkpointing_tutorial_prints_them():
    """JAX 0.10.2's ``saved_residuals`` for the tutorial's programs (the types and what each value is): without
    checkpoint, every sin and cos; with ``checkpoint(g)``, the sin each checkpointed call takes as input."""
    w1, w2, x = jnp.ones((5, 4)), jnp.ones((6, 5)), jnp.ones(4)
    args = [("f64[5,4]", "from the argument w1"), ("f64[6,5]", "from the argument w2"),
            ("f64[4]", "from the argument x")]
    assert _saved(_two_layers, w1, w2, x) == args + [
        ("f64[5]", "output of sin"), ("f64[5]", "output of cos"), ("f64[6]", "output of cos")]
    ck = srcjax.checkpoint(_g)
    assert _saved(lambda w1, w2, x: ck(w2, ck(w1, x)), w1, w2, x) == args + [("f64[5]", "output of sin")]


def test_a_policy_saves_what_it_names_and_no_more():
    """``dots_with_no_batch_dims_saveable`` keeps the dots' results; the sin and cos computed from them are
    computed again in the backward pass, not merged into the forward pass's (JAX 0.10.2 saves the two dots and
    the cos of the sin outside the checkpoint). The gradient is the one without checkpoint."""
    w1, w2, x = jnp.ones((5, 4)), jnp.ones((6, 5)), jnp.ones(4)
    f3 = srcjax.checkpoint(_two_layers, policy=srcjax.checkpoint_policies.dots_with_no_batch_dims_saveable)
    loss = lambda w1, w2, x: jnp.sum(jnp.sin(f3(w1, w2, x)))  # noqa: E731
    assert _saved(loss, w1, w2, x)[3:] == [
        ("f64[5]", "output of dot_general"), ("f64[6]", "output of dot_general"), ("f64[6]", "output of cos")]
    want = srcjax.grad(lambda *a: jnp.sum(jnp.sin(_two_layers(*a))), argnums=(0, 1, 2))(w1, w2, x)
    for got in (srcjax.grad(loss, argnums=(0, 1, 2))(w1, w2, x),
                srcjax.jit(srcjax.grad(loss, argnums=(0, 1, 2)))(w1, w2, x)):
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=1e-12)
