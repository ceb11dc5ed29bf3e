"""A multilayer perceptron trained with grad, jit and the example optimizers, on synthetic data.

Run: python examples/mlp.py [--small]
"""

import numpy as np
from _common import size

import srcjax as jax
import srcjax.numpy as jnp
from srcjax.example_libraries import optimizers


def init_params(key, sizes):
    params = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        key, w_key = jax.random.split(key)
        params.append((jax.random.normal(w_key, (n_in, n_out)) / np.sqrt(n_in), jnp.zeros(n_out)))
    return params


def predict(params, x):
    for w, b in params[:-1]:
        x = jnp.tanh(jnp.dot(x, w) + b)
    w, b = params[-1]
    return jax.nn.log_softmax(jnp.dot(x, w) + b)


def loss(params, batch):
    x, labels = batch
    return -jnp.mean(jnp.sum(predict(params, x) * labels, axis=1))


def accuracy(params, batch):
    x, labels = batch
    return jnp.mean(jnp.argmax(predict(params, x), axis=1) == jnp.argmax(labels, axis=1))


def main():
    n, dim, classes = size(2048, 256), 32, 4
    rng = np.random.default_rng(0)
    centers = rng.normal(size=(classes, dim)) * 2
    y = rng.integers(0, classes, n)
    x = (centers[y] + rng.normal(size=(n, dim))).astype(np.float32)
    labels = np.eye(classes, dtype=np.float32)[y]
    opt_init, opt_update, get_params = optimizers.adam(1e-2)

    @jax.jit
    def update(i, opt_state, batch):
        params = get_params(opt_state)
        return opt_update(i, jax.grad(loss)(params, batch), opt_state)

    opt_state = opt_init(init_params(jax.random.PRNGKey(0), [dim, 64, 64, classes]))
    batch = (jnp.asarray(x), jnp.asarray(labels))
    for i in range(size(200, 30)):
        opt_state = update(i, opt_state, batch)
    params = get_params(opt_state)
    print(f"loss {float(loss(params, batch)):.4f} accuracy {float(accuracy(params, batch)):.3f}")


if __name__ == "__main__":
    main()
