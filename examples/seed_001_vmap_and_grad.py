"""Seed 001 (automatic vectorisation, gradients): a 1-D convolution batched by hand, logistic regression.

Run: python examples/seed_001_vmap_and_grad.py [--small]
Transpile: srcjax transpile examples/seed_001_vmap_and_grad.py:loss --args 'f32[3], f32[]'
"""

import srcjax as jax
import srcjax.numpy as jnp


def convolve(x, w):
    output = []
    for i in range(1, len(x) - 1):
        output.append(jnp.dot(x[i - 1 : i + 2], w))
    return jnp.array(output)


def manually_batched_convolve(xs, ws):
    output = []
    for i in range(xs.shape[0]):
        output.append(convolve(xs[i], ws[i]))
    return jnp.stack(output)


def manually_vectorized_convolve(xs, ws):
    output = []
    for i in range(1, xs.shape[-1] - 1):
        output.append(jnp.sum(xs[:, i - 1 : i + 2] * ws, axis=1))
    return jnp.stack(output, axis=1)


# Logistic regression: the model and its loss
def sigmoid(x):
    return 0.5 * (jnp.tanh(x / 2) + 1)


def predict(W, b, inputs):
    return sigmoid(jnp.dot(inputs, W) + b)


inputs = jnp.array([[0.52, 1.12, 0.77], [0.88, -1.08, 0.15], [0.52, 0.06, -1.30], [0.74, -2.49, 1.39]])
targets = jnp.array([True, True, False, True])


def loss(W, b):
    preds = predict(W, b, inputs)
    label_probs = preds * targets + (1 - preds) * (1 - targets)
    return -jnp.sum(jnp.log(label_probs))


def main():
    x = jnp.arange(5)
    w = jnp.array([2.0, 3.0, 4.0])
    print(convolve(x, w))  # [11. 20. 29.]
    xs = jnp.stack([x, x])
    ws = jnp.stack([w, w])
    print(manually_batched_convolve(xs, ws))  # [[11. 20. 29.] [11. 20. 29.]]
    print(manually_vectorized_convolve(xs, ws))  # [[11. 20. 29.] [11. 20. 29.]]
    print(jax.jit(convolve)(x, w))  # [11. 20. 29.]
    print(jax.vmap(convolve)(xs, ws))  # [[11. 20. 29.] [11. 20. 29.]]
    print(jax.vmap(convolve, in_axes=[0, None])(xs, w))

    # Higher derivatives
    print(jax.grad(jnp.tanh)(2.0), jax.grad(jax.grad(jnp.tanh))(2.0))  # 0.070650816 -0.13621868

    key = jax.random.key(0)
    key, W_key, b_key = jax.random.split(key, 3)
    W = jax.random.normal(W_key, (3,))
    b = jax.random.normal(b_key, ())
    print("loss", loss(W, b))  # 3.0519385
    W_grad, b_grad = jax.grad(loss, (0, 1))(W, b)
    print("W_grad", W_grad)  # [-0.16965583 -0.8774644  -1.4901346 ]
    print("b_grad", b_grad)  # -0.29227245
    loss_value, _ = jax.value_and_grad(loss, (0, 1))(W, b)
    print("loss value", loss_value)

    # Finite differences (the tutorial checks jax.grad against them)
    eps = 1e-4
    b_grad_numerical = (loss(W, b + eps / 2.0) - loss(W, b - eps / 2.0)) / eps
    print("b_grad_numerical", b_grad_numerical)  # about -0.29325485
    key, subkey = jax.random.split(key)
    vec = jax.random.normal(subkey, W.shape)
    unitvec = vec / jnp.sqrt(jnp.vdot(vec, vec))
    W_grad_numerical = (loss(W + eps / 2.0 * unitvec, b) - loss(W - eps / 2.0 * unitvec, b)) / eps
    print("W_dirderiv_numerical", W_grad_numerical)  # about -0.2002716
    print("W_dirderiv_autodiff", jnp.vdot(jax.grad(loss)(W, b), unitvec))  # -0.19909117
    from srcjax.test_util import check_grads

    check_grads(loss, (W, b), order=2)
    print("check_grads: order 2 passed")


if __name__ == "__main__":
    main()
