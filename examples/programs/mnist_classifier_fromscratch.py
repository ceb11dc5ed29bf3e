"""An MNIST classifier written from scratch, the way a JAX user writes one: an MLP as a list of (W, b)
tuples, a log-softmax through logsumexp, SGD by ``grad`` inside a jitted ``update``, minibatches from a
Python generator. Runs unchanged on JAX or srcjax; only the imports below the backend switch differ.

Run: python mnist_classifier_fromscratch.py --backend srcjax --epochs 3 --num-train 60000
"""

# ruff: noqa: E402 - the program proper imports after the backend switch
import sys

from datasets import backend

if backend(sys.argv) == "jax":
    import jax
    import jax.numpy as jnp
    from jax import grad, jit, random
    from jax.scipy.special import logsumexp
else:
    import srcjax as jax
    import srcjax.numpy as jnp
    from srcjax import grad, jit, random
    from srcjax.scipy.special import logsumexp

# ---- from here on: a plain JAX program ----
import argparse
import time

import numpy.random as npr

import datasets


def init_random_params(scale, layer_sizes, rng):
    keys = random.split(rng, len(layer_sizes) - 1)
    return [(scale * random.normal(k1, (m, n)), scale * random.normal(k2, (n,)))
            for (m, n), k in zip(zip(layer_sizes[:-1], layer_sizes[1:]), keys)
            for k1, k2 in [random.split(k)]]


def predict(params, inputs):
    activations = inputs
    for w, b in params[:-1]:
        outputs = jnp.dot(activations, w) + b
        activations = jax.nn.relu(outputs)
    final_w, final_b = params[-1]
    logits = jnp.dot(activations, final_w) + final_b
    return logits - logsumexp(logits, axis=1, keepdims=True)


def loss(params, batch):
    inputs, targets = batch
    preds = predict(params, inputs)
    return -jnp.mean(jnp.sum(preds * targets, axis=1))


def accuracy(params, batch):
    inputs, targets = batch
    target_class = jnp.argmax(targets, axis=1)
    predicted_class = jnp.argmax(predict(params, inputs), axis=1)
    return jnp.mean(predicted_class == target_class)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="srcjax", choices=["jax", "srcjax"])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--num-train", type=int, default=60000)
    parser.add_argument("--num-test", type=int, default=2000)
    parser.add_argument("--hidden", type=int, default=1024)
    parser.add_argument("--step-size", type=float, default=0.05)
    args = parser.parse_args(argv)

    layer_sizes = [784, args.hidden, args.hidden, 10]
    param_scale = 0.03
    step_size = args.step_size
    batch_size = args.batch_size

    train_images, train_labels, test_images, test_labels = datasets.mnist(args.num_train, args.num_test)
    num_train = train_images.shape[0]
    num_complete_batches, leftover = divmod(num_train, batch_size)
    num_batches = num_complete_batches + bool(leftover)

    def data_stream():
        rng = npr.RandomState(0)
        while True:
            perm = rng.permutation(num_train)
            for i in range(num_batches):
                batch_idx = perm[i * batch_size:(i + 1) * batch_size]
                yield train_images[batch_idx], train_labels[batch_idx]

    batches = data_stream()

    @jit
    def update(params, batch):
        grads = grad(loss)(params, batch)
        return [(w - step_size * dw, b - step_size * db) for (w, b), (dw, db) in zip(params, grads)]

    params = init_random_params(param_scale, layer_sizes, random.PRNGKey(0))
    print(f"backend {jax.__name__}  train {num_train}  batch {batch_size}  batches/epoch {num_batches}")
    test_batch = (jnp.asarray(test_images), jnp.asarray(test_labels))
    print(f"epoch 0  test loss {float(loss(params, test_batch)):.4f}  "
          f"test acc {float(accuracy(params, test_batch)):.4f}")
    for epoch in range(1, args.epochs + 1):
        start_time = time.time()
        for _ in range(num_batches):
            params = update(params, next(batches))
        jax.block_until_ready(params)
        epoch_time = time.time() - start_time

        test_loss = float(loss(params, test_batch))
        test_acc = float(accuracy(params, test_batch))
        print(f"epoch {epoch}  time {epoch_time:.3f}s  test loss {test_loss:.4f}  test acc {test_acc:.4f}")


if __name__ == "__main__":
    main(sys.argv[1:])
