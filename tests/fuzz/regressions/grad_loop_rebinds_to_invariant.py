# srcjax fuzzer regression case: check 'derivatives' failed.
# Found from generator seed 5060 (tests/fuzz/generator.py), inputs from seed 5060;
# shrunk by the fuzzer, then by hand. Run by tests/fuzz/test_regressions.py.
# Failure when found:
#   [grad] mismatch: leaf 0: got array(0.), expected array(-0.57154259)
# ruff: noqa: E501, F401, F841, B007
try:
    jnp = __fuzz_numpy__  # noqa: F821 - the NumPy reference run injects NumPy here
    REFERENCE = True
except NameError:
    import srcjax.numpy as jnp

    REFERENCE = False


A = 2


def main(x):
    v = x
    for i in range(2):
        x = v
    return x


FUZZ = {'group': 'derivatives', 'stack': [], 'seed': 5060, 'signature': ['grad', 'mismatch', ''], 'args': [('A',)], 'dims': {'A': 2}, 'compiled_only': False}
