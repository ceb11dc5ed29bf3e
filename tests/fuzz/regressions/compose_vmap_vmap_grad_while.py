# srcjax fuzzer regression case: check 'compose' of jax stack vmap(vmap(grad(main))) failed.
# Found from generator seed 5130 (tests/fuzz/generator.py), inputs from seed 1;
# shrunk by the fuzzer, then by hand. Run by tests/fuzz/test_regressions.py.
# Failure when found:
#   [compose] TypeError: only 0-dimensional arrays can be converted to Python scalars
# ruff: noqa: E501, F401, F841, B007
try:
    jnp = __fuzz_numpy__  # noqa: F821 - the NumPy reference run injects NumPy here
    REFERENCE = True
except NameError:
    import srcjax.numpy as jnp

    REFERENCE = False


A = 2


def main(x):
    k = 0
    while k < 3 and x > -0.2:
        k = k + 1
        x = x * x
    return x


FUZZ = {'group': 'compose', 'stack': ['vmap', 'vmap', 'grad'], 'seed': 1, 'signature': ['compose', 'TypeError', 'only #-dimensional arrays can be converted to Python scalars'], 'args': [()], 'dims': {'A': 2}, 'compiled_only': False}
