# srcjax fuzzer regression case: check 'compose' of jax stack vmap(jacrev(main)) failed.
# Found from generator seed 7089 (tests/fuzz/generator.py), inputs from seed 7089;
# shrunk by the fuzzer, then by hand. Run by tests/fuzz/test_regressions.py.
# Failure when found:
#   [compose] PrimitiveTypeError: select_n: does not accept object operands; they must be any
# ruff: noqa: E501, F401, F841, B007
try:
    jnp = __fuzz_numpy__  # noqa: F821 - the NumPy reference run injects NumPy here
    REFERENCE = True
except NameError:
    import srcjax.numpy as jnp

    REFERENCE = False


A = 2


def main(x):
    if x > -0.2:
        return 0.5
    k = 0
    while k < 2 and x < 0.5:
        k = k + 1
        x = x + 0.5 * jnp.tanh(x)
    return x


FUZZ = {'group': 'compose', 'stack': ['vmap', 'jacrev'], 'seed': 7089, 'signature': ['compose', 'PrimitiveTypeError', 'select_n: does not accept object operands; they must be any'], 'args': [()], 'dims': {'A': 2}, 'compiled_only': False}
