# srcjax fuzzer regression case: check 'derivatives' failed.
# Found from generator seed 5022 (tests/fuzz/generator.py), inputs from seed 5022;
# shrunk by the fuzzer, then by hand. Run by tests/fuzz/test_regressions.py.
# Failure when found:
#   [grad] TypeError: dtype object is not a valid array dtype (srcjax supports bool, ints, floats, complex)
# ruff: noqa: E501, F401, F841, B007
try:
    jnp = __fuzz_numpy__  # noqa: F821 - the NumPy reference run injects NumPy here
    REFERENCE = True
except NameError:
    import srcjax.numpy as jnp

    REFERENCE = False


A = 2


def main(y):
    if jnp.sum(y) < -5.0:
        return y
    while jnp.sum(y * y) > 1.0:
        y = y * 0.5
    return y


FUZZ = {'group': 'derivatives', 'stack': [], 'seed': 5022, 'signature': ['grad', 'TypeError', 'dtype object is not a valid array dtype (srcjax supports bool, ints, floats, complex)'], 'args': [('A',)], 'dims': {'A': 2}, 'compiled_only': False}
