# srcjax fuzzer regression case: check 'compose' of jax stack grad(grad(main)) failed.
# Found from generator seed 124 (tests/fuzz/generator.py), inputs from seed 1;
# shrunk by the fuzzer, then by hand. Run by tests/fuzz/test_regressions.py.
# Failure when found:
#   [compose] TransformError: reverse mode through the reverse-mode derivative of a while loop is not supported; take
#   the outer derivative in forward mode (jacfwd(grad(f)))
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
    while k < 3 and jnp.sum(x) < 0.0:
        k = k + 1
        x = jnp.sin(x) * x
    return jnp.sum(x * x)


FUZZ = {'group': 'compose', 'stack': ['grad', 'grad'], 'seed': 1, 'signature': ['compose', 'TransformError', 'reverse mode through the reverse-mode derivative of a while loop is not supported; take the outer de'], 'args': [('A',)], 'dims': {'A': 2}, 'compiled_only': False}
