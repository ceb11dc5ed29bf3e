"""example_libraries.optimizers: each optimizer's first steps against a NumPy re-derivation of its update,
schedules, a convex problem solved by every optimizer, and the pytree plumbing."""

import pickle

import numpy as np
import pytest

from srcjax.runtime import numpy as jnp
from srcjax.runtime import tree_util
from srcjax.runtime.example_libraries import optimizers as opt

RS = np.random.RandomState(0)
PARAMS = {"w": RS.randn(2, 3).astype(np.float32), "b": RS.randn(3).astype(np.float32)}
GRADS = [{"w": RS.randn(2, 3).astype(np.float32), "b": RS.randn(3).astype(np.float32)} for _ in range(3)]


def _np_run(update, init, steps=3):
    """Apply a NumPy per-array update rule to every leaf for ``steps`` steps (float64)."""
    out = {}
    for name, x0 in PARAMS.items():
        state = init(x0.astype(np.float64))
        for i in range(steps):
            state = update(i, GRADS[i][name].astype(np.float64), state)
        out[name] = state[0]
    return out


def _np_adagrad(lr, momentum=0.9):
    def update(i, g, s):
        x, g_sq, m = s
        g_sq = g_sq + g * g
        m = (1 - momentum) * g / np.sqrt(g_sq) + momentum * m
        return x - lr * m, g_sq, m

    return update, lambda x: (x, np.zeros_like(x), np.zeros_like(x))


def _np_rmsprop_momentum(lr, gamma=0.9, eps=1e-8, momentum=0.9):
    def update(i, g, s):
        x, a, m = s
        a = gamma * a + (1 - gamma) * g * g
        m = momentum * m + lr * g / np.sqrt(a + eps)
        return x - m, a, m

    return update, lambda x: (x, np.zeros_like(x), np.zeros_like(x))


def _np_adam(lr, b1=0.9, b2=0.999, eps=1e-8):
    def update(i, g, s):
        x, m, v = s
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * g * g + b2 * v
        m_hat, v_hat = m / (1 - b1 ** (i + 1)), v / (1 - b2 ** (i + 1))
        return x - lr * m_hat / (np.sqrt(v_hat) + eps), m, v

    return update, lambda x: (x, np.zeros_like(x), np.zeros_like(x))


def _np_adamax(lr, b1=0.9, b2=0.999, eps=1e-8):
    def update(i, g, s):
        x, m, u = s
        m = (1 - b1) * g + b1 * m
        u = np.maximum(b2 * u, np.abs(g))
        return x - lr / (1 - b1 ** (i + 1)) * m / (u + eps), m, u

    return update, lambda x: (x, np.zeros_like(x), np.zeros_like(x))


def _np_sm3(lr, momentum=0.9):
    def update(i, g, s):
        x, m, v_rows, v_cols = s
        if x.ndim == 1:
            accum = v_rows + g * g
            v_rows = accum
        else:
            accum = np.minimum(v_rows[:, None], v_cols[None, :]) + g * g
            v_rows, v_cols = accum.max(1), accum.max(0)
        m = (1 - momentum) * g / np.sqrt(accum) + momentum * m
        return x - lr * m, m, v_rows, v_cols

    def init(x):
        cols = np.zeros(x.shape[1]) if x.ndim == 2 else None
        return x, np.zeros_like(x), np.zeros(x.shape[0]), cols

    return update, init


CASES = [
    ("sgd", opt.sgd(0.1), (lambda i, g, s: (s[0] - 0.1 * g,), lambda x: (x,))),
    ("momentum", opt.momentum(0.1, 0.9),
     (lambda i, g, s: (s[0] - 0.1 * (0.9 * s[1] + g), 0.9 * s[1] + g), lambda x: (x, np.zeros_like(x)))),
    ("nesterov", opt.nesterov(0.1, 0.9),
     (lambda i, g, s: (s[0] - 0.1 * (0.9 * (0.9 * s[1] + g) + g), 0.9 * s[1] + g), lambda x: (x, np.zeros_like(x)))),
    ("adagrad", opt.adagrad(0.1), _np_adagrad(0.1)),
    ("rmsprop", opt.rmsprop(0.1, gamma=0.8),
     (lambda i, g, s: (s[0] - 0.1 * g / np.sqrt(0.8 * s[1] + 0.2 * g * g + 1e-8), 0.8 * s[1] + 0.2 * g * g),
      lambda x: (x, np.zeros_like(x)))),
    ("rmsprop_momentum", opt.rmsprop_momentum(0.1), _np_rmsprop_momentum(0.1)),
    ("adam", opt.adam(0.1), _np_adam(0.1)),
    ("adamax", opt.adamax(0.1), _np_adamax(0.1)),
    ("sm3", opt.sm3(0.1), _np_sm3(0.1)),
]


@pytest.mark.parametrize("name, optimizer, reference", CASES, ids=[c[0] for c in CASES])
def test_first_steps_match_the_update_formula(name, optimizer, reference):
    opt_init, opt_update, get_params = optimizer
    state = opt_init(tree_util.tree_map(jnp.asarray, PARAMS))
    for i in range(3):
        state = opt_update(i, tree_util.tree_map(jnp.asarray, GRADS[i]), state)
    got = get_params(state)
    expected = _np_run(*reference)
    assert sorted(got) == ["b", "w"]
    for key in ("w", "b"):
        assert got[key].shape == PARAMS[key].shape and got[key].dtype == np.float32
        np.testing.assert_allclose(np.asarray(got[key]), expected[key], rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("name, optimizer", [
    ("sgd", opt.sgd(0.3)), ("momentum", opt.momentum(0.1, 0.7)), ("nesterov", opt.nesterov(0.1, 0.7)),
    ("adagrad", opt.adagrad(0.5)), ("rmsprop", opt.rmsprop(0.05)), ("rmsprop_momentum", opt.rmsprop_momentum(0.01)),
    ("adam", opt.adam(0.2)), ("adamax", opt.adamax(0.2)), ("sm3", opt.sm3(0.5)),
    ("sgd_schedule", opt.sgd(opt.exponential_decay(0.4, 100, 0.5))),
])
def test_every_optimizer_solves_a_convex_quadratic(name, optimizer):
    # f(x) = 1/2 sum a (x - c)^2 with its minimum at c; the gradient is a (x - c)
    a, c = jnp.asarray([[2.0, 0.5], [1.0, 1.5]]), jnp.asarray([[0.5, 0.0], [-1.0, 2.0]])
    opt_init, opt_update, get_params = optimizer
    state = opt_init({"v": jnp.zeros((2, 2))})
    for i in range(100):
        state = opt_update(i, {"v": a * (get_params(state)["v"] - c)}, state)
    np.testing.assert_allclose(np.asarray(get_params(state)["v"]), np.asarray(c), atol=0.01)


def test_scalar_parameters_and_traced_step_index():
    opt_init, opt_update, get_params = opt.sm3(0.1)
    state = opt_update(jnp.asarray(0), jnp.float32(2.0), opt_init(jnp.float32(1.0)))
    assert get_params(state).shape == () and get_params(state).item() == pytest.approx(1 - 0.1 * 0.1)
    opt_init, opt_update, get_params = opt.adam(0.1)
    state = opt_update(jnp.asarray(0), jnp.float32(2.0), opt_init(jnp.float32(1.0)))
    assert get_params(state).item() == pytest.approx(0.9, rel=1e-6)  # Adam's first step is lr * sign(g)


# -- schedules ------------------------------------------------------------------------------------------------
SCHEDULES = [
    (opt.constant(0.3), [0, 5, 100], [0.3, 0.3, 0.3]),
    (opt.exponential_decay(1.0, 10, 0.5), [0, 10, 25], [1.0, 0.5, 0.5**2.5]),
    (opt.inverse_time_decay(1.0, 10, 2.0), [0, 5, 20], [1.0, 0.5, 0.2]),
    (opt.inverse_time_decay(1.0, 10, 2.0, staircase=True), [0, 5, 15], [1.0, 1.0, 1 / 3]),
    (opt.polynomial_decay(1.0, 10, 0.1, power=2.0), [0, 5, 10, 50], [1.0, 0.325, 0.1, 0.1]),
    (opt.piecewise_constant([10, 20], [1.0, 0.5, 0.25]), [0, 10, 11, 20, 21, 99], [1.0, 1.0, 0.5, 0.5, 0.25, 0.25]),
]


@pytest.mark.parametrize("schedule, steps, expected", SCHEDULES)
def test_schedules(schedule, steps, expected):
    got = [float(schedule(i)) for i in steps]
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    got = [float(schedule(jnp.asarray(i))) for i in steps]
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_make_schedule_and_piecewise_constant_errors():
    assert opt.make_schedule(0.5)(7) == 0.5
    fn = lambda i: i  # noqa: E731
    assert opt.make_schedule(fn) is fn
    with pytest.raises(TypeError):
        opt.make_schedule([0.1, 0.2])
    with pytest.raises(ValueError, match="must be sequences"):
        opt.piecewise_constant(1, [1.0, 2.0])
    with pytest.raises(ValueError, match="one shorter"):
        opt.piecewise_constant([1, 2], [1.0, 2.0])


# -- utilities and plumbing ----------------------------------------------------------------------------------
def test_l2_norm_and_clip_grads():
    tree = {"a": jnp.asarray([3.0, 0.0]), "b": (jnp.asarray([[4.0]]),)}
    assert opt.l2_norm(tree).item() == pytest.approx(5.0)
    clipped = opt.clip_grads(tree, 1.0)
    np.testing.assert_allclose(np.asarray(clipped["a"]), [0.6, 0.0], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(clipped["b"][0]), [[0.8]], rtol=1e-6)
    unclipped = opt.clip_grads(tree, 10.0)
    assert unclipped["a"].tolist() == [3.0, 0.0]


def test_state_is_a_pytree_and_packs():
    opt_init, opt_update, get_params = opt.momentum(0.1, 0.9)
    state = opt_init({"x": jnp.ones(2), "y": [jnp.zeros(3)]})
    assert isinstance(state, opt.OptimizerState)
    leaves, treedef = tree_util.tree_flatten(state)
    assert len(leaves) == 4  # (x, velocity) for each of the two parameters
    rebuilt = tree_util.tree_unflatten(treedef, [leaf + 1 for leaf in leaves])
    assert get_params(rebuilt)["x"].tolist() == [2.0, 2.0]
    marked = opt.unpack_optimizer_state(state)
    assert isinstance(marked["x"], opt.JoinPoint)
    restored = opt.pack_optimizer_state(pickle.loads(pickle.dumps(marked)))
    assert restored.tree_def == state.tree_def and restored.subtree_defs == state.subtree_defs
    assert get_params(restored)["y"][0].tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(TypeError, match="JoinPoint"):
        opt.pack_optimizer_state({"x": 1.0})


def test_state_structure_is_jaxs():
    # JAX builds packed_state with unzip2: a tuple of one list of leaves per parameter, so a state's
    # structure prints as [([*, *], [*, *])] and a state made by hand as JAX's is a loop carry of the same
    # structure as update's result (srcjax gave a list of lists)
    opt_init, opt_update, _ = opt.momentum(0.1, 0.9)
    for state in (opt_init({"x": jnp.ones(2), "y": jnp.zeros(3)}),
                  opt_update(0, {"x": jnp.ones(2), "y": jnp.ones(3)}, opt_init({"x": jnp.ones(2), "y": jnp.zeros(3)})),
                  opt.pack_optimizer_state(opt.unpack_optimizer_state(opt_init({"x": jnp.ones(2), "y": jnp.ones(3)})))):
        assert type(state.packed_state) is tuple and all(type(p) is list for p in state.packed_state)
        assert "[([*, *], [*, *])]" in str(tree_util.tree_structure(state))


def test_type_aliases_are_exported():
    # JAX's optimizers module defines these aliases; programs annotate with them (srcjax had none public)
    from srcjax.example_libraries import optimizers as public

    assert public.Step is int and public.Params is public.State is public.Updates
    for name in ("Schedule", "InitFn", "UpdateFn", "ParamsFn"):
        assert callable(getattr(public, name)) or hasattr(getattr(public, name), "__args__")


def test_gradient_tree_must_match_parameters():
    opt_init, opt_update, _ = opt.sgd(0.1)
    state = opt_init({"x": jnp.ones(2)})
    with pytest.raises(TypeError, match="did not match the parameter tree structure"):
        opt_update(0, {"y": jnp.ones(2)}, state)


def test_optimizer_decorator_lifts_a_custom_rule():
    @opt.optimizer
    def sign_sgd(step_size):
        def init(x0):
            return (x0,)

        def update(i, g, state):
            return (state[0] - step_size * jnp.sign(g),)

        def get_params(state):
            return state[0]

        return init, update, get_params

    opt_init, opt_update, get_params = sign_sgd(0.5)
    state = opt_update(0, [jnp.asarray([2.0, -3.0])], opt_init([jnp.zeros(2)]))
    assert get_params(state)[0].tolist() == [-0.5, 0.5]
    assert sign_sgd.__name__ == "sign_sgd"

    @opt.optimizer
    def broken(step_size):
        return (lambda x0: (x0,)), (lambda i, g, s: (s[0], s[0])), (lambda s: s[0])

    opt_init, opt_update, _ = broken(0.1)
    with pytest.raises(TypeError, match="produced an output structure that did not match"):
        opt_update(0, jnp.ones(1), opt_init(jnp.ones(1)))
