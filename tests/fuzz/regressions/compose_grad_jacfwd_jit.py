# srcjax fuzzer regression case: check 'compose' of jax stack grad(jacfwd(jit(main))) failed.
# Found from generator seed 117 (tests/fuzz/generator.py), inputs from seed 0;
# shrunk by the fuzzer, then by hand. Run by tests/fuzz/test_regressions.py.
# Failure when found:
#   [compose] mismatch: grad(jacfwd(jit(f))): leaf 0: got array(0.11829676), expected array(-0.04259066)
# ruff: noqa: E501, F401, F841, B007
try:
    jnp = __fuzz_numpy__  # noqa: F821 - the NumPy reference run injects NumPy here
    REFERENCE = True
except NameError:
    import srcjax.numpy as jnp

    REFERENCE = False


A = 3


def main(x):
    return jnp.sin(x)


FUZZ = {'group': 'compose', 'stack': ['grad', 'jacfwd', 'jit'], 'seed': 0, 'signature': ['compose', 'mismatch', ''], 'args': [()], 'dims': {'A': 3}, 'compiled_only': False}
