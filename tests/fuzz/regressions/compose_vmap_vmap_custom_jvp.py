# srcjax fuzzer regression case: check 'compose' of jax stack vmap(vmap(custom_jvp(main))) failed.
# Found from generator seed 121 (tests/fuzz/generator.py), inputs from seed 0;
# shrunk by the fuzzer, then by hand. Run by tests/fuzz/test_regressions.py.
# Failure when found:
#   [compose] TypeError: nested vmap of a custom_jvp/custom_vjp function is not supported
# ruff: noqa: E501, F401, F841, B007
try:
    jnp = __fuzz_numpy__  # noqa: F821 - the NumPy reference run injects NumPy here
    REFERENCE = True
except NameError:
    import srcjax.numpy as jnp

    REFERENCE = False


A = 2


def main(x):
    return x * x


FUZZ = {'group': 'compose', 'stack': ['vmap', 'vmap', 'custom_jvp'], 'seed': 0, 'signature': ['compose', 'TypeError', 'nested vmap of a custom_jvp/custom_vjp function is not supported'], 'args': [('A',)], 'dims': {'A': 2}, 'compiled_only': False}
