"""``srcjax.example_libraries``: optimizers and stax, as in JAX."""

from srcjax.example_libraries import optimizers, stax  # noqa: F401
