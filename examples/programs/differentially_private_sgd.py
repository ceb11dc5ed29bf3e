"""Differentially private SGD (Abadi et al., 2016) on MNIST, as JAX users write it: a small stax conv net,
per-example gradients by ``vmap`` of ``grad`` over an added batch axis, each example's gradient clipped to
an L2 norm bound across all its leaves, Gaussian noise added to the sum, all inside one jitted update.
Runs unchanged on JAX or srcjax; only the imports below the backend switch differ.

Run: python differentially_private_sgd.py --backend srcjax --epochs 2 --num-train 60000
"""

# ruff: noqa: E402 - the program proper imports after the backend switch
import sys

from datasets import backend

if backend(sys.argv) == "jax":
    import jax
    import jax.numpy as jnp
    from jax import grad, jit, random, vmap
    from jax.example_libraries import optimizers, stax
    from jax.tree_util import tree_flatten, tree_unflatten
else:
    import srcjax as jax
    import srcjax.numpy as jnp
    from srcjax import grad, jit, random, vmap
    from srcjax.example_libraries import optimizers, stax
    from srcjax.tree_util import tree_flatten, tree_unflatten

# ---- from here on: a plain JAX program ----
import argparse
import itertools
import time

import numpy.random as npr

import datasets

init_random_params, predict = stax.serial(
    stax.Conv(16, (8, 8), padding="SAME", strides=(2, 2)),
    stax.Relu,
    stax.MaxPool((2, 2), (1, 1)),
    stax.Conv(32, (4, 4), padding="VALID", strides=(2, 2)),
    stax.Relu,
    stax.MaxPool((2, 2), (1, 1)),
    stax.Flatten,
    stax.Dense(32),
    stax.Relu,
    stax.Dense(10),
)


def loss(params, inputs, targets):
    logits = predict(params, inputs)
    logits = stax.logsoftmax(logits)
    return -jnp.mean(jnp.sum(logits * targets, axis=1))


def accuracy(params, batch):
    inputs, targets = batch
    target_class = jnp.argmax(targets, axis=1)
    predicted_class = jnp.argmax(predict(params, inputs), axis=1)
    return jnp.mean(predicted_class == target_class)


def clip_example_grads(grads, l2_norm_clip):
    """Scales one example's gradient (every leaf together) to L2 norm at most ``l2_norm_clip``."""
    leaves, treedef = tree_flatten(grads)
    total_norm = jnp.sqrt(sum(jnp.sum(g ** 2) for g in leaves))
    divisor = jnp.maximum(total_norm / l2_norm_clip, 1.)
    return tree_unflatten(treedef, [g / divisor for g in leaves])


def private_grad(params, batch, rng, l2_norm_clip, noise_multiplier, batch_size):
    """The clipped per-example gradients, summed, noised with N(0, (clip * multiplier)^2) and averaged."""
    inputs, targets = batch
    # one example at a time, each with a batch axis of one: [batch, 1, 28, 28, 1]
    inputs, targets = jnp.expand_dims(inputs, 1), jnp.expand_dims(targets, 1)
    per_example_grads = vmap(grad(loss), in_axes=(None, 0, 0))(params, inputs, targets)
    clipped = vmap(clip_example_grads, in_axes=(0, None))(per_example_grads, l2_norm_clip)
    leaves, treedef = tree_flatten(clipped)
    summed = [g.sum(0) for g in leaves]
    rngs = random.split(rng, len(summed))
    noised = [g + l2_norm_clip * noise_multiplier * random.normal(r, g.shape) for r, g in zip(rngs, summed)]
    return tree_unflatten(treedef, [g / batch_size for g in noised])


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="srcjax", choices=["jax", "srcjax"])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--num-train", type=int, default=60000)
    parser.add_argument("--num-test", type=int, default=2000)
    parser.add_argument("--learning-rate", type=float, default=0.15)
    parser.add_argument("--noise-multiplier", type=float, default=1.1)
    parser.add_argument("--l2-norm-clip", type=float, default=1.0)
    args = parser.parse_args(argv)

    batch_size = args.batch_size
    train_images, train_labels, test_images, test_labels = datasets.mnist(args.num_train, args.num_test)
    train_images = train_images.reshape(-1, 28, 28, 1)
    test_images = test_images.reshape(-1, 28, 28, 1)
    num_train = train_images.shape[0]
    num_batches = num_train // batch_size  # the last, partial batch is dropped: every step sees batch_size

    def data_stream():
        rng = npr.RandomState(0)
        while True:
            perm = rng.permutation(num_train)
            for i in range(num_batches):
                batch_idx = perm[i * batch_size:(i + 1) * batch_size]
                yield train_images[batch_idx], train_labels[batch_idx]

    batches = data_stream()

    opt_init, opt_update, get_params = optimizers.sgd(args.learning_rate)

    @jit
    def private_update(rng, i, opt_state, batch):
        params = get_params(opt_state)
        rng = random.fold_in(rng, i)  # a fresh noise key per step
        return opt_update(
            i, private_grad(params, batch, rng, args.l2_norm_clip, args.noise_multiplier, batch_size), opt_state)

    @jit
    def test_loss(params, batch):
        return loss(params, *batch)

    _, init_params = init_random_params(random.PRNGKey(1), (-1, 28, 28, 1))
    opt_state = opt_init(init_params)
    itercount = itertools.count()
    key = random.PRNGKey(42)
    test_batch = (test_images, test_labels)

    print(f"backend {jax.__name__}  train {num_train}  batch {batch_size}  batches/epoch {num_batches}")
    print(f"epoch 0  test loss {float(test_loss(get_params(opt_state), test_batch)):.4f}")
    for epoch in range(1, args.epochs + 1):
        start_time = time.time()
        for _ in range(num_batches):
            opt_state = private_update(key, next(itercount), opt_state, next(batches))
        jax.block_until_ready(opt_state)
        epoch_time = time.time() - start_time

        params = get_params(opt_state)
        tl = float(test_loss(params, test_batch))
        test_acc = float(jit(accuracy)(params, test_batch))
        print(f"epoch {epoch}  time {epoch_time:.3f}s  test loss {tl:.4f}  test acc {test_acc:.4f}")


if __name__ == "__main__":
    main(sys.argv[1:])
