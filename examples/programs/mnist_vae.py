"""A variational autoencoder on binarised MNIST, written as JAX users write it with stax: a Gaussian
encoder with two heads (mean and variance, through FanOut and parallel), a Bernoulli decoder that returns
logits, the reparameterisation trick with a fresh key per step, Adam, and a jitted update. Runs unchanged
on JAX or srcjax; only the imports below the backend switch differ.

Run: python mnist_vae.py --backend srcjax --epochs 3 --num-train 60000
"""

# ruff: noqa: E402 - the program proper imports after the backend switch
import sys

from datasets import backend

if backend(sys.argv) == "jax":
    import jax
    import jax.numpy as jnp
    from jax import jit, random, value_and_grad
    from jax.example_libraries import optimizers, stax
    from jax.example_libraries.stax import Dense, FanOut, Relu, Softplus
else:
    import srcjax as jax
    import srcjax.numpy as jnp
    from srcjax import jit, random, value_and_grad
    from srcjax.example_libraries import optimizers, stax
    from srcjax.example_libraries.stax import Dense, FanOut, Relu, Softplus

# ---- from here on: a plain JAX program ----
import argparse
import time

import numpy as np

import datasets


def gaussian_kl(mu, sigmasq):
    """KL(N(mu, sigmasq) || N(0, 1)), summed over the batch and the latent dimensions."""
    return -0.5 * jnp.sum(1. + jnp.log(sigmasq) - mu ** 2. - sigmasq)


def gaussian_sample(rng, mu, sigmasq):
    """One reparameterised draw: mu + sigma * eps, so gradients flow to mu and sigma."""
    return mu + jnp.sqrt(sigmasq) * random.normal(rng, mu.shape)


def bernoulli_logpdf(logits, x):
    """log p(x | logits) for binary x: -softplus(-logits) where x = 1, -softplus(logits) where x = 0."""
    return -jnp.sum(jnp.logaddexp(0., jnp.where(x, -1., 1.) * logits))


def elbo(rng, params, images):
    enc_params, dec_params = params
    mu_z, sigmasq_z = encode(enc_params, images)
    logits_x = decode(dec_params, gaussian_sample(rng, mu_z, sigmasq_z))
    return bernoulli_logpdf(logits_x, images) - gaussian_kl(mu_z, sigmasq_z)


def image_sample(rng, params, nrow, ncol):
    _, dec_params = params
    code_rng, img_rng = random.split(rng)
    logits = decode(dec_params, random.normal(code_rng, (nrow * ncol, 10)))
    sampled_images = random.bernoulli(img_rng, jax.nn.sigmoid(logits))
    return sampled_images.reshape(nrow, ncol, 28, 28)


encoder_init, encode = stax.serial(
    Dense(512), Relu,
    Dense(512), Relu,
    FanOut(2),
    stax.parallel(Dense(10), stax.serial(Dense(10), Softplus)),
)

decoder_init, decode = stax.serial(
    Dense(512), Relu,
    Dense(512), Relu,
    Dense(28 * 28),
)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="srcjax", choices=["jax", "srcjax"])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--num-train", type=int, default=60000)
    parser.add_argument("--num-test", type=int, default=1000)
    parser.add_argument("--step-size", type=float, default=0.001)
    args = parser.parse_args(argv)

    step_size = args.step_size
    num_epochs = args.epochs
    batch_size = args.batch_size

    train_images, _, test_images, _ = datasets.mnist(args.num_train, args.num_test)
    num_complete_batches, leftover = divmod(train_images.shape[0], batch_size)
    num_batches = num_complete_batches + bool(leftover)

    enc_init_rng, dec_init_rng = random.split(random.PRNGKey(2))
    _, init_encoder_params = encoder_init(enc_init_rng, (batch_size, 28 * 28))
    _, init_decoder_params = decoder_init(dec_init_rng, (batch_size, 10))
    init_params = init_encoder_params, init_decoder_params

    opt_init, opt_update, get_params = optimizers.adam(step_size)

    def binarize_batch(rng, images):
        return random.bernoulli(rng, images)

    @jit
    def update(i, rng, opt_state, images):
        elbo_rng, data_rng = random.split(rng)
        batch = binarize_batch(data_rng, images)
        loss = lambda params: -elbo(elbo_rng, params, batch) / images.shape[0]
        value, g = value_and_grad(loss)(get_params(opt_state))
        return value, opt_update(i, g, opt_state)

    @jit
    def evaluate(rng, params, images):
        elbo_rng, data_rng = random.split(rng)
        binarized = binarize_batch(data_rng, images)
        return elbo(elbo_rng, params, binarized) / images.shape[0]

    opt_state = opt_init(init_params)
    test_rng = random.PRNGKey(1)
    rng = random.PRNGKey(0)
    perm_rng = np.random.RandomState(0)
    step = 0
    test_elbo = float(evaluate(test_rng, get_params(opt_state), test_images))
    print(f"backend {jax.__name__}  train {train_images.shape[0]}  batch {batch_size}  batches/epoch {num_batches}")
    print(f"epoch 0  test elbo {test_elbo:.3f}")
    for epoch in range(1, num_epochs + 1):
        perm = perm_rng.permutation(train_images.shape[0])
        start_time = time.time()
        losses = []
        for i in range(num_batches):
            rng, step_rng = random.split(rng)
            images = train_images[perm[i * batch_size:(i + 1) * batch_size]]
            value, opt_state = update(step, step_rng, opt_state, images)
            losses.append(value)
            step += 1
        jax.block_until_ready(opt_state)
        epoch_time = time.time() - start_time

        train_loss = float(np.mean([float(v) for v in losses]))
        test_elbo = float(evaluate(test_rng, get_params(opt_state), test_images))
        print(f"epoch {epoch}  time {epoch_time:.3f}s  train loss {train_loss:.3f}  test elbo {test_elbo:.3f}")
    samples = image_sample(random.PRNGKey(3), get_params(opt_state), 2, 2)
    print(f"sampled images {samples.shape}, mean {float(jnp.mean(samples)):.3f}")


if __name__ == "__main__":
    main(sys.argv[1:])
