"""``srcjax.example_libraries``: JAX's small example libraries, ``optimizers`` and ``stax``."""
