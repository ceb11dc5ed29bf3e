"""``srcjax.example_libraries.optimizers``: JAX's first-order optimizers as ``(init, update, get_params)``.

An optimizer is written for one array (``init(x0) -> state``, ``update(i, g, state) -> state``,
``get_params(state) -> x``, where a state is any pytree); the ``@optimizer`` decorator lifts it to
pytrees of parameters by running it on every leaf. The lifted state, ``OptimizerState``, is itself a
pytree, so it can be passed through ``jit`` and ``lax`` loops. Step sizes are numbers or schedules
``i -> step size``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

from srcjax.runtime.tree_util import PyTreeDef, register_pytree_node, tree_flatten, tree_map, tree_unflatten

__all__ = [
    "OptimizerState", "Optimizer", "optimizer", "sgd", "momentum", "nesterov", "adagrad", "rmsprop",
    "rmsprop_momentum", "adam", "adamax", "sm3", "make_schedule", "constant", "exponential_decay",
    "inverse_time_decay", "polynomial_decay", "piecewise_constant", "l2_norm", "clip_grads", "JoinPoint",
    "unpack_optimizer_state", "pack_optimizer_state",
    "Step", "Schedule", "Params", "State", "Updates", "InitFn", "UpdateFn", "ParamsFn",
]

# JAX's type aliases, which programs use in annotations (``opt_state: optimizers.OptimizerState``)
Step = int
Schedule = Callable[[Step], Any]
Params = Any
State = Any
Updates = Params  # gradients have the parameters' structure


def _jnp():
    from srcjax.runtime import numpy as jnp

    return jnp


class OptimizerState(NamedTuple):
    """Per-leaf optimizer states, flattened: ``packed_state[k]`` holds the leaves of leaf k's state."""

    packed_state: tuple[list[Any], ...]
    tree_def: PyTreeDef
    subtree_defs: tuple[PyTreeDef, ...]


# Only the arrays are children; the structures are static, so jit and loops see the state as arrays.
register_pytree_node(
    OptimizerState,
    lambda state: ((state.packed_state,), (state.tree_def, state.subtree_defs)),
    lambda structure, children: OptimizerState(children[0], *structure),
)


InitFn = Callable[[Params], OptimizerState]
UpdateFn = Callable[[Step, Updates, OptimizerState], OptimizerState]
ParamsFn = Callable[[OptimizerState], Params]


class Optimizer(NamedTuple):
    init_fn: Callable[[Any], OptimizerState]
    update_fn: Callable[[Any, Any, OptimizerState], OptimizerState]
    params_fn: Callable[[OptimizerState], Any]


def _flatten_states(states: list[Any]) -> tuple[tuple[list[Any], ...], tuple[PyTreeDef, ...]]:
    """Each state's leaves and structure; a tuple of lists, as JAX's ``unzip2`` gives (the state's pytree
    structure is JAX's, so a state built by either library is a ``lax`` loop carry of the other's shape)."""
    flat = [tree_flatten(s) for s in states]
    return tuple(leaves for leaves, _ in flat), tuple(treedef for _, treedef in flat)


def optimizer(opt_maker: Callable[..., tuple[Callable, Callable, Callable]]) -> Callable[..., Optimizer]:
    """Lift an optimizer of one array to pytrees of parameters (a decorator on the optimizer's maker)."""

    @functools.wraps(opt_maker)
    def make(*args: Any, **kwargs: Any) -> Optimizer:
        init, update, get_params = opt_maker(*args, **kwargs)

        @functools.wraps(init)
        def tree_init(x0_tree: Any) -> OptimizerState:
            x0_leaves, tree_def = tree_flatten(x0_tree)
            packed, subtree_defs = _flatten_states([init(x0) for x0 in x0_leaves])
            return OptimizerState(packed, tree_def, subtree_defs)

        @functools.wraps(update)
        def tree_update(i: Any, grad_tree: Any, opt_state: OptimizerState) -> OptimizerState:
            packed, tree_def, subtree_defs = opt_state
            grads, grad_def = tree_flatten(grad_tree)
            if grad_def != tree_def:
                raise TypeError(
                    "optimizer update function was passed a gradient tree that did not match the parameter tree "
                    f"structure with which it was initialized: parameter tree {tree_def} and grad tree {grad_def}.")
            states = [tree_unflatten(d, leaves) for d, leaves in zip(subtree_defs, packed, strict=True)]
            new_packed, new_defs = _flatten_states([update(i, g, s) for g, s in zip(grads, states, strict=True)])
            for old, new in zip(subtree_defs, new_defs, strict=True):
                if old != new:
                    raise TypeError("optimizer update function produced an output structure that did not match "
                                    f"its input structure: input {old} and output {new}.")
            return OptimizerState(new_packed, tree_def, subtree_defs)

        @functools.wraps(get_params)
        def tree_get_params(opt_state: OptimizerState) -> Any:
            packed, tree_def, subtree_defs = opt_state
            states = [tree_unflatten(d, leaves) for d, leaves in zip(subtree_defs, packed, strict=True)]
            return tree_unflatten(tree_def, [get_params(s) for s in states])

        return Optimizer(tree_init, tree_update, tree_get_params)

    return make


# -- schedules -------------------------------------------------------------------------------------------------
def constant(step_size: Any) -> Schedule:
    def schedule(i):
        return step_size

    return schedule


def exponential_decay(step_size: Any, decay_steps: Any, decay_rate: Any) -> Schedule:
    """step_size * decay_rate^(i / decay_steps)"""

    def schedule(i):
        return step_size * decay_rate ** (i / decay_steps)

    return schedule


def inverse_time_decay(step_size: Any, decay_steps: Any, decay_rate: Any, staircase: bool = False) -> Schedule:
    """step_size / (1 + decay_rate * i / decay_steps), with i / decay_steps floored when ``staircase``."""
    if staircase:

        def schedule(i):
            return step_size / (1 + decay_rate * _jnp().floor(i / decay_steps))
    else:

        def schedule(i):
            return step_size / (1 + decay_rate * i / decay_steps)

    return schedule


def polynomial_decay(step_size: Any, decay_steps: Any, final_step_size: Any, power: float = 1.0) -> Schedule:
    """From step_size down to final_step_size along (1 - i / decay_steps)^power, then constant."""

    def schedule(step_num):
        step_num = _jnp().minimum(step_num, decay_steps)
        step_mult = (1 - step_num / decay_steps) ** power
        return step_mult * (step_size - final_step_size) + final_step_size

    return schedule


def piecewise_constant(boundaries: Any, values: Any) -> Schedule:
    """values[k] for boundaries[k-1] < i <= boundaries[k] (values has one more entry than boundaries)."""
    jnp = _jnp()
    boundaries, values = jnp.array(boundaries), jnp.array(values)
    if not boundaries.ndim == values.ndim == 1:
        raise ValueError("boundaries and values must be sequences")
    if not boundaries.shape[0] == values.shape[0] - 1:
        raise ValueError("boundaries length must be one shorter than values length")

    def schedule(i):
        return values[jnp.sum(i > boundaries)]

    return schedule


def make_schedule(scalar_or_schedule: Any) -> Schedule:
    if callable(scalar_or_schedule):
        return scalar_or_schedule
    if _jnp().ndim(scalar_or_schedule) == 0:
        return constant(scalar_or_schedule)
    raise TypeError(type(scalar_or_schedule))


# -- optimizers ------------------------------------------------------------------------------------------------
@optimizer
def sgd(step_size: Any):
    """x <- x - step_size(i) * g"""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0

    def update(i, g, x):
        return x - step_size(i) * g

    def get_params(x):
        return x

    return init, update, get_params


@optimizer
def momentum(step_size: Any, mass: float):
    """v <- mass * v + g;  x <- x - step_size(i) * v"""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, _jnp().zeros_like(x0)

    def update(i, g, state):
        x, velocity = state
        velocity = mass * velocity + g
        return x - step_size(i) * velocity, velocity

    def get_params(state):
        return state[0]

    return init, update, get_params


@optimizer
def nesterov(step_size: Any, mass: float):
    """v <- mass * v + g;  x <- x - step_size(i) * (mass * v + g): the step looks ahead along v."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, _jnp().zeros_like(x0)

    def update(i, g, state):
        x, velocity = state
        velocity = mass * velocity + g
        return x - step_size(i) * (mass * velocity + g), velocity

    def get_params(state):
        return state[0]

    return init, update, get_params


@optimizer
def adagrad(step_size: Any, momentum: float = 0.9):
    """s <- s + g^2;  m <- (1 - momentum) g / sqrt(s) + momentum * m;  x <- x - step_size(i) * m"""
    step_size = make_schedule(step_size)

    def init(x0):
        jnp = _jnp()
        return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

    def update(i, g, state):
        jnp = _jnp()
        x, g_sq, m = state
        g_sq = g_sq + jnp.square(g)
        g_sq_inv_sqrt = jnp.where(g_sq > 0, 1.0 / jnp.sqrt(g_sq), 0.0)  # no step where no gradient came yet
        m = (1.0 - momentum) * (g * g_sq_inv_sqrt) + momentum * m
        return x - step_size(i) * m, g_sq, m

    def get_params(state):
        return state[0]

    return init, update, get_params


@optimizer
def rmsprop(step_size: Any, gamma: float = 0.9, eps: float = 1e-8):
    """a <- gamma * a + (1 - gamma) g^2;  x <- x - step_size(i) * g / sqrt(a + eps)"""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, _jnp().zeros_like(x0)

    def update(i, g, state):
        jnp = _jnp()
        x, avg_sq_grad = state
        avg_sq_grad = avg_sq_grad * gamma + jnp.square(g) * (1.0 - gamma)
        return x - step_size(i) * g / jnp.sqrt(avg_sq_grad + eps), avg_sq_grad

    def get_params(state):
        return state[0]

    return init, update, get_params


@optimizer
def rmsprop_momentum(step_size: Any, gamma: float = 0.9, eps: float = 1e-8, momentum: float = 0.9):
    """a <- gamma * a + (1 - gamma) g^2;  m <- momentum * m + step_size(i) * g / sqrt(a + eps);  x <- x - m"""
    step_size = make_schedule(step_size)

    def init(x0):
        jnp = _jnp()
        return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

    def update(i, g, state):
        jnp = _jnp()
        x, avg_sq_grad, mom = state
        avg_sq_grad = avg_sq_grad * gamma + jnp.square(g) * (1.0 - gamma)
        mom = momentum * mom + step_size(i) * g / jnp.sqrt(avg_sq_grad + eps)
        return x - mom, avg_sq_grad, mom

    def get_params(state):
        return state[0]

    return init, update, get_params


@optimizer
def adam(step_size: Any, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8):
    """Adam (Kingma and Ba, 2015): moment estimates m, v with bias correction 1 - b^(i+1)."""
    step_size = make_schedule(step_size)

    def init(x0):
        jnp = _jnp()
        return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

    def update(i, g, state):
        jnp = _jnp()
        x, m, v = state
        m = (1 - b1) * g + b1 * m  # first moment
        v = (1 - b2) * jnp.square(g) + b2 * v  # second moment
        m_hat = m / (1 - jnp.asarray(b1, m.dtype) ** (i + 1))
        v_hat = v / (1 - jnp.asarray(b2, m.dtype) ** (i + 1))
        return x - step_size(i) * m_hat / (jnp.sqrt(v_hat) + eps), m, v

    def get_params(state):
        return state[0]

    return init, update, get_params


@optimizer
def adamax(step_size: Any, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8):
    """Adamax: Adam with the second moment replaced by a decaying infinity norm u <- max(b2 u, |g|)."""
    step_size = make_schedule(step_size)

    def init(x0):
        jnp = _jnp()
        return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

    def update(i, g, state):
        jnp = _jnp()
        x, m, u = state
        m = (1 - b1) * g + b1 * m
        u = jnp.maximum(b2 * u, jnp.abs(g))
        x = x - (step_size(i) / (1 - jnp.asarray(b1, m.dtype) ** (i + 1))) * m / (u + eps)
        return x, m, u

    def get_params(state):
        return state[0]

    return init, update, get_params


@optimizer
def sm3(step_size: Any, momentum: float = 0.9):
    """SM3 (Anil et al., 2019): adagrad whose accumulator is kept as one vector per axis.

    The accumulator of an element is the min over axes of its row maxima, plus g^2; each axis vector then
    stores the max of the accumulator over the other axes.
    """
    step_size = make_schedule(step_size)

    def along(ndim: int, v: Any, axis: int) -> Any:
        """A vector of axis ``axis`` reshaped to broadcast against a rank-``ndim`` array."""
        shape = [1] * ndim
        shape[axis] = -1
        return _jnp().reshape(v, shape)

    def init(x0):
        jnp = _jnp()
        x_shape = jnp.shape(x0)
        x0 = jnp.atleast_1d(x0)
        vs = [jnp.zeros(size, dtype=x0.dtype) for size in x0.shape]
        return x0, jnp.zeros_like(x0), vs, x_shape

    def update(i, g, state):
        jnp = _jnp()
        x, m, vs, x_shape = state
        g = jnp.reshape(g, x.shape)
        accum = functools.reduce(jnp.minimum, [along(x.ndim, v, k) for k, v in enumerate(vs)]) + jnp.square(g)
        accum_inv_sqrt = jnp.where(accum > 0, 1.0 / jnp.sqrt(accum), 0)
        m = (1.0 - momentum) * (g * accum_inv_sqrt) + momentum * m
        x = x - step_size(i) * m
        vs = [jnp.max(accum, axis=tuple(a for a in range(x.ndim) if a != k)) for k in range(x.ndim)]
        return x, m, vs, x_shape

    def get_params(state):
        x, _, _, x_shape = state
        return _jnp().reshape(x, x_shape)

    return init, update, get_params


# -- utilities -------------------------------------------------------------------------------------------------
def l2_norm(tree: Any) -> Any:
    """sqrt of the sum of squares of every element of every leaf."""
    jnp = _jnp()
    leaves, _ = tree_flatten(tree)
    return jnp.sqrt(sum(jnp.vdot(x, x) for x in leaves))


def clip_grads(grad_tree: Any, max_norm: Any) -> Any:
    """Scale the whole gradient tree down so its l2 norm is at most ``max_norm``."""
    jnp = _jnp()
    norm = l2_norm(grad_tree)
    return tree_map(lambda g: jnp.where(norm < max_norm, g, g * (max_norm / norm)), grad_tree)


class JoinPoint:
    """Marks where a parameter's optimizer state hangs in the tree ``unpack_optimizer_state`` builds."""

    def __init__(self, subtree: Any):
        self.subtree = subtree

    def __iter__(self):
        yield self.subtree  # looks like a container, as pytrees of arrays do


def unpack_optimizer_state(opt_state: OptimizerState) -> Any:
    """The state as a pytree of the parameters' structure with a ``JoinPoint`` per leaf (picklable)."""
    packed, tree_def, subtree_defs = opt_state
    subtrees = [tree_unflatten(d, leaves) for d, leaves in zip(subtree_defs, packed, strict=True)]
    return tree_unflatten(tree_def, [JoinPoint(s) for s in subtrees])


def pack_optimizer_state(marked_pytree: Any) -> OptimizerState:
    """The inverse of ``unpack_optimizer_state``."""
    sentinels, tree_def = tree_flatten(marked_pytree)
    if not all(isinstance(s, JoinPoint) for s in sentinels):
        raise TypeError("pack_optimizer_state expects the tree that unpack_optimizer_state returns (JoinPoint leaves)")
    packed, subtree_defs = _flatten_states([s.subtree for s in sentinels])
    return OptimizerState(packed, tree_def, subtree_defs)
