# srcjax fuzzer regression case: check 'compose' of jax stack jit(vmap(jit(main))) failed.
# Found from generator seed 1005 (tests/fuzz/generator.py), inputs from seed 0;
# shrunk by the fuzzer, then by hand. Run by tests/fuzz/test_regressions.py.
# Failure when found:
#   [compose] mismatch: jit(vmap(jit(f))): leaf 0: shape () != (2,)
# ruff: noqa: E501, F401, F841, B007
try:
    jnp = __fuzz_numpy__  # noqa: F821 - the NumPy reference run injects NumPy here
    REFERENCE = True
except NameError:
    import srcjax.numpy as jnp

    REFERENCE = False


A = 3


def main(x):
    return jnp.sum(x * x)


FUZZ = {'group': 'compose', 'stack': ['jit', 'vmap', 'jit'], 'seed': 0, 'signature': ['compose', 'mismatch', ''], 'args': [('A',)], 'dims': {'A': 3}, 'compiled_only': False}
