# srcjax fuzzer regression case: check 'compose' of jax stack grad(custom_jvp(main)) failed.
# Found from generator seed 1000 (tests/fuzz/generator.py), inputs from seed 0;
# shrunk by the fuzzer, then by hand. Run by tests/fuzz/test_regressions.py.
# Failure when found:
#   [compose] ConcretizationError: bool() needs a concrete value, but bool[] is only known when the compiled function
#   runs
# ruff: noqa: E501, F401, F841, B007
try:
    jnp = __fuzz_numpy__  # noqa: F821 - the NumPy reference run injects NumPy here
    REFERENCE = True
except NameError:
    import srcjax.numpy as jnp

    REFERENCE = False


A = 2


def main(x):
    if jnp.sum(x) > 0.0:
        x = x * 2.0
    return jnp.sin(x)


FUZZ = {'group': 'compose', 'stack': ['grad', 'custom_jvp'], 'seed': 0, 'signature': ['compose', 'ConcretizationError', 'bool() needs a concrete value, but bool[] is only known when the compiled function runs'], 'args': [('A',)], 'dims': {'A': 2}, 'compiled_only': False}
