# srcjax fuzzer regression case: check 'compose' of jax stack jvp(vmap(jacrev(main))) failed.
# Found from generator seed 9160 (tests/fuzz/generator.py), inputs from seed 9160;
# shrunk by the fuzzer, then by hand. Run by tests/fuzz/test_regressions.py.
# Failure when found:
#   [compose] TypeError: only size-1 arrays can be converted to Python ints, got shape (2,)
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
    while k < 4 and x < 0.5:
        k = k + 1
        return jnp.cos(x)
    return 0.5 * x


FUZZ = {'group': 'compose', 'stack': ['jvp', 'vmap', 'jacrev'], 'seed': 9160, 'signature': ['compose', 'TypeError', 'only size-# arrays can be converted to Python ints, got shape (#,)'], 'args': [()], 'dims': {'A': 2}, 'compiled_only': False}
