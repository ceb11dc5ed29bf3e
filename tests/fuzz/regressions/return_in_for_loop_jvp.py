# srcjax fuzzer regression case: check 'derivatives' failed.
# Found from generator seed 100 (tests/fuzz/generator.py), inputs from seed 0;
# shrunk by the fuzzer, then by hand. Run by tests/fuzz/test_regressions.py.
# Failure when found:
#   [jvp] KeyError: 139711584671376
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


FUZZ = {'group': 'derivatives', 'stack': [], 'seed': 0, 'signature': ['jvp', 'KeyError', '#'], 'args': [('A',)], 'dims': {'A': 2}, 'compiled_only': False}
