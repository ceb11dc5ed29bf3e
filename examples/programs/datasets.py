"""Synthetic stand-ins for MNIST, from a fixed NumPy seed, with NumPy only (so JAX and srcjax see the same data),
and the programs' backend switch.

Images are 28x28 intensities in [0, 1] with structure: a logistic function of a 16-dimensional Gaussian
latent through a fixed random basis, so a VAE has something to model. Labels come from a fixed random linear
teacher on the centred pixels (the argmax of ten scores), so a classifier can learn them and its loss falls.
"""

import numpy as np

LATENT, CLASSES, SIDE = 16, 10, 28


def backend(argv: list[str]) -> str:
    """``--backend jax|srcjax`` (default srcjax): which library the program imports as ``jax``."""
    for i, arg in enumerate(argv):
        if arg.startswith("--backend="):
            return arg.split("=", 1)[1]
        if arg == "--backend" and i + 1 < len(argv):
            return argv[i + 1]
    return "srcjax"


def _teacher(rng: np.random.RandomState) -> tuple[np.ndarray, np.ndarray]:
    basis = rng.randn(LATENT, SIDE * SIDE).astype(np.float32) / np.sqrt(LATENT) * 3.0
    weights = rng.randn(SIDE * SIDE, CLASSES).astype(np.float32)
    return basis, weights


def _draw(rng: np.random.RandomState, n: int, basis: np.ndarray, weights: np.ndarray):
    latent = rng.randn(n, LATENT).astype(np.float32)
    images = 1.0 / (1.0 + np.exp(-(latent @ basis)))
    labels = np.argmax((images - 0.5) @ weights, axis=1)
    return images.astype(np.float32), np.eye(CLASSES, dtype=np.float32)[labels]


def mnist(num_train: int = 60000, num_test: int = 10000, seed: int = 0):
    """``train_images, train_labels, test_images, test_labels`` as float32 arrays: images flattened to 784
    values in [0, 1], labels one-hot over ten classes (the layout of JAX's examples/datasets.py)."""
    rng = np.random.RandomState(seed)
    basis, weights = _teacher(rng)
    train_images, train_labels = _draw(rng, num_train, basis, weights)
    test_images, test_labels = _draw(rng, num_test, basis, weights)
    return train_images, train_labels, test_images, test_labels
