# srcjax fuzzer regression case: check 'derivatives' failed.
# Found from generator seed 7090 (tests/fuzz/generator.py), inputs from seed 7090;
# shrunk by the fuzzer, then by hand. Run by tests/fuzz/test_regressions.py.
# Failure when found:
#   [jit-grad] mismatch: leaf 0: got array([0.00015039, 0.00015039]), expected array([-0.00752928, -0.00752928])
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
        k = 0
        while k < 2 and jnp.sum(x) < 1.0:
            k = k + 1
            x = jnp.sum(x) * x
    return jnp.mean(x)


FUZZ = {'group': 'derivatives', 'stack': [], 'seed': 7090, 'signature': ['jit-grad', 'mismatch', ''], 'args': [('A',)], 'dims': {'A': 2}, 'compiled_only': False}
