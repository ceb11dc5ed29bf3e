"""Derivatives of collectives under ``vmap(..., axis_name=...)``, against JAX's values.

Every number below was recorded from JAX 0.10.2 (CPU, float32) running the same expression with ``jax`` for
``srcjax``. JAX has no derivative for ``pmax``/``pmin`` (``NotImplementedError: Differentiation rule for 'pmax'
not implemented``); srcjax gives them ``reduce_max``'s rule (ties share the tangent evenly), so they are
checked against JAX's ``jnp.max`` of the gathered values, which is the same function.
"""

import numpy as np
import pytest

import srcjax
import srcjax.numpy as jnp
from srcjax import lax
from srcjax.transpiler.primitives.core import TransformError

# (of the virtual CPU devices and the CPU's native code: the CPU is the default backend, GPU or not)
pytestmark = pytest.mark.usefixtures("cpu_backend")

X = np.array([0.5, -1.0, 2.0], np.float32)
TIES = np.array([1.0, 2.0, 2.0], np.float32)
M = np.arange(6, dtype=np.float32).reshape(3, 2) / 4 - 0.5  # per example: f32[2]
S = np.arange(18, dtype=np.float32).reshape(3, 3, 2) / 7 - 1.0  # per example: f32[3, 2]
T = np.arange(18, dtype=np.float32).reshape(3, 6) / 5 - 1.5  # per example: f32[6]
G = np.arange(12, dtype=np.float32).reshape(2, 3, 2) / 3 - 1.0  # outer axis j: 2, inner axis i: 3


def vg(f):
    return srcjax.vmap(srcjax.grad(f), axis_name="i")


def vjvp(f):
    return srcjax.vmap(lambda x, t: srcjax.jvp(f, (x,), (t,)), axis_name="i")


_SCATTER_GRAD = [[0.41557177901268005, 5.960464477539063e-08], [-0.4155718982219696, -0.7559753060340881],
                 [-0.9596385955810547, -0.9897230267524719]]
_TILED_GRAD = [2.429999351501465, 0.2700001299381256, 0.2699999213218689, 2.429999828338623, 6.75, 13.230002403259277]
_SCATTERED = [[-0.42857134342193604, -5.960464477539063e-08], [0.4285714626312256, 0.8571428060531616],
              [1.2857143878936768, 1.7142857313156128]]

CASES = {
    # the example: each example's loss reads every example's x, so x_j's gradient sums 3 cotangents
    "grad_all_gather": (lambda: vg(lambda x: jnp.sum(lax.all_gather(x, "i") ** 2))(X), [3.0, -6.0, 12.0]),
    "grad_psum": (lambda: vg(lambda x: lax.psum(x**2, "i"))(X), [3.0, -6.0, 12.0]),
    "grad_pmean": (lambda: vg(lambda x: lax.pmean(x**2, "i"))(X), [1.0, -2.0, 4.0]),
    "grad_normalize": (lambda: vg(lambda x: jnp.sin(x / lax.psum(x * x, "i")))(X),
                       [0.1398191899061203, 0.2866188883781433, -0.022354111075401306]),
    "grad_vector_pmean": (lambda: vg(lambda x: jnp.sum(jnp.tanh(x - lax.pmean(x, "i")) ** 2))(M),
                          [[-0.7268619537353516] * 2, [0.0, 0.0], [0.7268619537353516] * 2]),
    "grad_gather_weighted": (lambda: vg(lambda x: jnp.sum(lax.all_gather(x, "i") * jnp.arange(1.0, 4.0)[:, None]
                                                          * x))(M), [[1.0, 3.25], [1.0, 4.0], [1.0, 4.75]]),
    "grad_pmax": (lambda: vg(lambda x: lax.pmax(x, "i") ** 2)(X), [0.0, 0.0, 12.0]),
    "grad_pmax_ties": (lambda: vg(lambda x: 3.0 * lax.pmax(x, "i"))(TIES), [0.0, 4.5, 4.5]),
    "grad_pmin_ties": (lambda: vg(lambda x: x * lax.pmin(x, "i"))(TIES[::-1].copy()), [1.0, 1.0, 6.0]),
    "grad_max_of_gather_ties": (lambda: vg(lambda x: 3.0 * jnp.max(lax.all_gather(x, "i"), axis=0))(TIES),
                                [0.0, 4.5, 4.5]),
    "jvp_pmax_ties": (lambda: vjvp(lambda y: lax.pmax(y, "i"))(TIES, np.array([1.0, 10.0, 100.0], np.float32)),
                      ([2.0, 2.0, 2.0], [55.0, 55.0, 55.0])),
    "psum_scatter": (lambda: srcjax.vmap(lambda x: lax.psum_scatter(x, "i"), axis_name="i")(S), _SCATTERED),
    "psum_scatter_tiled": (lambda: srcjax.vmap(lambda x: lax.psum_scatter(x, "i", tiled=True), axis_name="i")(T),
                           [[-0.8999998569488525, -0.30000007152557373], [0.2999999523162842, 0.8999999761581421],
                            [1.5, 2.1000001430511475]]),
    "psum_scatter_dim1": (lambda: srcjax.vmap(lambda x: lax.psum_scatter(x.T, "i", scatter_dimension=1),
                                              axis_name="i")(S), _SCATTERED),
    "grad_psum_scatter": (lambda: vg(lambda x: jnp.sum(jnp.cos(lax.psum_scatter(x, "i"))))(S), [_SCATTER_GRAD] * 3),
    "grad_psum_scatter_tiled": (lambda: vg(lambda x: jnp.sum(lax.psum_scatter(x, "i", tiled=True) ** 3))(T),
                                [_TILED_GRAD] * 3),
    "grad_axis_index": (lambda: vg(lambda x: x * x * lax.axis_index("i"))(X), [0.0, -2.0, 8.0]),
    "jvp_all_gather": (lambda: vjvp(lambda y: lax.all_gather(y * y, "i"))(X, X + 1),
                       ([[0.25, 1.0, 4.0]] * 3, [[1.5, -0.0, 12.0]] * 3)),
    "jvp_psum": (lambda: vjvp(lambda y: jnp.exp(lax.psum(y, "i")))(X, 2 * X),
                 ([4.481688976287842] * 3, [13.445066452026367] * 3)),
    "jacfwd_pmean": (lambda: srcjax.vmap(srcjax.jacfwd(lambda x: lax.pmean(x**3, "i")), axis_name="i")(M),
                     [[[0.5, 0.0], [0.0, 0.6875]]] * 3),
    "jacrev_all_gather": (lambda: srcjax.vmap(srcjax.jacrev(lambda x: lax.all_gather(jnp.sin(x), "i")),
                                              axis_name="i")(X),
                          [[2.6327476501464844, 0.0, 0.0], [0.0, 1.6209068298339844, 0.0],
                           [-0.0, -0.0, -1.2484405040740967]]),
    "hessian_psum": (lambda: srcjax.vmap(srcjax.hessian(lambda x: lax.psum(jnp.sum(x**3), "i")), axis_name="i")(M),
                     [[[-9.0, -0.0], [-0.0, -4.5]], [[0.0, 0.0], [0.0, 4.5]], [[9.0, 0.0], [0.0, 13.5]]]),
    "nested_outer_axis": (lambda: srcjax.vmap(srcjax.vmap(srcjax.grad(lambda x: lax.psum(x**2, "j") * x),
                                                          axis_name="i"), axis_name="j")(G[:, :, 0]),
                          [[2.0, 2.000000476837158, 7.3333330154418945], [2.0, 7.333334445953369, 18.0]]),
    "nested_both_axes": (lambda: srcjax.vmap(srcjax.vmap(srcjax.grad(lambda x: jnp.sum(lax.psum(x, ("i", "j")) ** 2)),
                                                         axis_name="i"), axis_name="j")(G),
                         [[[48.0, 72.0]] * 3] * 2),
    "grad_inside_jit": (lambda: srcjax.vmap(srcjax.jit(srcjax.grad(lambda x: jnp.sum(lax.all_gather(x, "i")[0] * x))),
                                            axis_name="i")(X), [2.0, 0.5, 0.5]),
    "jit_outside": (lambda: srcjax.jit(vg(lambda x: jnp.sum(lax.all_gather(x, "i") ** 2)))(X), [3.0, -6.0, 12.0]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_jax(name):
    run, want = CASES[name]
    got = run()
    got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w, np.float32), rtol=2e-6, atol=1e-6)


def test_a_primitive_with_no_rule_is_an_error_not_a_zero(monkeypatch):
    """The issue's bug: all_gather had no JVP and the engines read that as a zero derivative."""
    from srcjax.transpiler.primitives.collectives import all_gather_p

    monkeypatch.setattr(all_gather_p, "linear", False)
    monkeypatch.setattr(all_gather_p, "transpose_rule", None)
    with pytest.raises(TransformError, match="no JVP rule for 'all_gather'"):
        vg(lambda x: jnp.sum(lax.all_gather(x, "i") ** 2))(X)


def test_psum_scatter_checks_its_axis():
    with pytest.raises(ValueError, match="must have the axis size 3"):
        srcjax.vmap(lambda x: lax.psum_scatter(x, "i"), axis_name="i")(T)
    with pytest.raises(NameError, match="unbound axis name"):
        lax.psum_scatter(X, "i")


# -- the same under pmap: as one batched call, and as replicas on threads (codegen/llvm/replicas.py) -----------------
@pytest.fixture
def three_devices():
    saved = srcjax.config.jax_num_cpu_devices
    srcjax.config.update("jax_num_cpu_devices", 3)
    yield
    srcjax.config.update("jax_num_cpu_devices", saved)


PMAPPED = {
    "grad_all_gather": (lambda x: srcjax.grad(lambda v: jnp.sum(lax.all_gather(v, "i") ** 2))(x), X, True),
    "grad_pmax": (srcjax.grad(lambda v: lax.pmax(v, "i") ** 2), X, True),
    "psum_scatter": (lambda x: lax.psum_scatter(x, "i"), S, True),
    "psum_scatter_tiled": (lambda x: lax.psum_scatter(x, "i", tiled=True), T, True),
    "grad_psum_scatter": (srcjax.grad(lambda x: jnp.sum(jnp.cos(lax.psum_scatter(x, "i")))), S, True),
    "psum_scatter_dim1": (lambda x: lax.psum_scatter(x.T, "i", scatter_dimension=1), S, False),  # (batched only)
}


@pytest.mark.parametrize("name", sorted(PMAPPED))
def test_pmap_matches_jax(name, three_devices, monkeypatch):
    f, x, native = PMAPPED[name]
    want = CASES[name][1]
    for mode in ("batched", "replicas"):
        monkeypatch.setenv("SRCJAX_PMAP", mode)
        pmapped = srcjax.pmap(f, axis_name="i")
        np.testing.assert_allclose(np.asarray(pmapped(x)), np.asarray(want, np.float32), rtol=2e-6, atol=1e-6)
        if mode == "replicas":
            assert any(s is not None for s in pmapped._spmd.values()) == native


def test_custom_rules_with_collectives_differentiated_outside_the_vmap():
    # the rules of a custom function batched by a named vmap run under that axis name (they were mapped
    # unnamed: "unbound axis name"); JAX 0.10.2 gives these numbers
    x = np.arange(8, dtype=np.float32).reshape(4, 2) / 8
    perm = [(k, (k + 1) % 4) for k in range(4)]
    back = [(b, a) for a, b in perm]

    def shift(v):
        return lax.ppermute(jnp.sin(v), "i", perm)

    by_jvp = srcjax.custom_jvp(shift)
    by_jvp.defjvp(lambda p, t: (by_jvp(p[0]), lax.ppermute(jnp.cos(p[0]) * t[0], "i", perm) * 1.5))
    by_vjp = srcjax.custom_vjp(shift)
    by_vjp.defvjp(lambda v: (by_vjp(v), v), lambda v, g: (lax.ppermute(g, "i", back) * jnp.cos(v) * 0.5,))
    cos = np.cos(x.ravel())
    got = srcjax.grad(lambda x: jnp.sum(srcjax.vmap(by_jvp, axis_name="i")(x)))(x)
    np.testing.assert_allclose(np.asarray(got).ravel(), 1.5 * cos, rtol=1e-6)
    got = srcjax.grad(lambda x: jnp.sum(srcjax.vmap(by_vjp, axis_name="i")(x)))(x)
    np.testing.assert_allclose(np.asarray(got).ravel(), 0.5 * cos, rtol=1e-6)
    got = srcjax.jvp(srcjax.vmap(by_jvp, axis_name="i"), (x,), (np.ones_like(x),))[1]
    np.testing.assert_allclose(np.asarray(got), 1.5 * np.roll(np.cos(x), 1, axis=0), rtol=1e-6)


def test_a_cached_derivative_is_not_reused_over_an_axis_of_another_size():
    """grad keeps its trace per argument types; a trace of collectives holds its axis's size, so it is kept per
    named axes too (the second call reused the first's: axis_size 3, all_gather's 3 rows). JAX 0.10.2's values."""
    def f(v):
        return lax.psum(v, "i").sum() * lax.axis_size("i") + (lax.all_gather(v, "i") ** 2).sum()

    g = srcjax.grad(f)
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    np.testing.assert_allclose(np.asarray(srcjax.vmap(g, axis_name="i")(x)), 9 + 6 * x, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(srcjax.vmap(g, axis_name="i")(x[:2])), 4 + 4 * x[:2], rtol=1e-6)
