"""An MNIST classifier built with stax and trained with momentum from ``jax.example_libraries``, the way
the JAX examples do it. Runs unchanged on JAX or srcjax; only the imports below the backend switch differ.

Run: python mnist_classifier.py --backend srcjax --epochs 3 --num-train 60000
"""

# ruff: noqa: E402 - the program proper imports after the backend switch
import sys

from datasets import backend

if backend(sys.argv) == "jax":
    import jax
    import jax.numpy as jnp
    from jax import grad, jit, random
    from jax.example_libraries import optimizers, stax
    from jax.example_libraries.stax import Dense, LogSoftmax, Relu
else:
    import srcjax as jax
    import srcjax.numpy as jnp
    from srcjax import grad, jit, random
    from srcjax.example_libraries import optimizers, stax
    from srcjax.example_libraries.stax import Dense, LogSoftmax, Relu

# ---- from here on: a plain JAX program ----
import argparse
import itertools
import time

import numpy.random as npr

import datasets


def loss(params, batch):
    inputs, targets = batch
    preds = predict(params, inputs)
    return -jnp.mean(jnp.sum(preds * targets, axis=1))


def accuracy(params, batch):
    inputs, targets = batch
    target_class = jnp.argmax(targets, axis=1)
    predicted_class = jnp.argmax(predict(params, inputs), axis=1)
    return jnp.mean(predicted_class == target_class)


init_random_params, predict = stax.serial(
    Dense(1024), Relu,
    Dense(1024), Relu,
    Dense(10), LogSoftmax)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="srcjax", choices=["jax", "srcjax"])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--num-train", type=int, default=60000)
    parser.add_argument("--num-test", type=int, default=2000)
    parser.add_argument("--step-size", type=float, default=0.01)
    args = parser.parse_args(argv)

    rng = random.PRNGKey(0)
    step_size = args.step_size
    num_epochs = args.epochs
    batch_size = args.batch_size
    momentum_mass = 0.9

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

    opt_init, opt_update, get_params = optimizers.momentum(step_size, mass=momentum_mass)

    @jit
    def update(i, opt_state, batch):
        params = get_params(opt_state)
        return opt_update(i, grad(loss)(params, batch), opt_state)

    _, init_params = init_random_params(rng, (-1, 28 * 28))
    opt_state = opt_init(init_params)
    itercount = itertools.count()

    print(f"backend {jax.__name__}  train {num_train}  batch {batch_size}  batches/epoch {num_batches}")
    test_batch = (test_images, test_labels)
    print(f"epoch 0  test loss {float(jit(loss)(init_params, test_batch)):.4f}")
    for epoch in range(1, num_epochs + 1):
        start_time = time.time()
        for _ in range(num_batches):
            opt_state = update(next(itercount), opt_state, next(batches))
        jax.block_until_ready(opt_state)
        epoch_time = time.time() - start_time

        params = get_params(opt_state)
        test_loss = float(jit(loss)(params, test_batch))
        train_acc = float(jit(accuracy)(params, (train_images[:10000], train_labels[:10000])))
        test_acc = float(jit(accuracy)(params, test_batch))
        print(f"epoch {epoch}  time {epoch_time:.3f}s  test loss {test_loss:.4f}  "
              f"train acc {train_acc:.4f}  test acc {test_acc:.4f}")


if __name__ == "__main__":
    main(sys.argv[1:])
