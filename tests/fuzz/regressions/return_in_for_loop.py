# srcjax fuzzer regression case: check 'ir' failed.
# Found from generator seed 100 (tests/fuzz/generator.py), inputs from seed 0;
# shrunk by the fuzzer, then by hand. Run by tests/fuzz/test_regressions.py.
# Failure when found:
#   [ir] VerificationError: @main: 1 problem |   - %0, %1, %2 = while (fuzz_19761_0.py:15): %6 is never defined
# ruff: noqa: E501, F401, F841, B007
try:
    jnp = __fuzz_numpy__  # noqa: F821 - the NumPy reference run injects NumPy here
    REFERENCE = True
except NameError:
    import srcjax.numpy as jnp

    REFERENCE = False


A = 2


def main(x):
    for i in range(2):
        if jnp.sum(x) > 0.0:
            return x
    return x


FUZZ = {'group': 'ir', 'stack': [], 'seed': 0, 'signature': ['ir', 'VerificationError', '@main: # problem'], 'args': [('A',)], 'dims': {'A': 2}, 'compiled_only': False}
