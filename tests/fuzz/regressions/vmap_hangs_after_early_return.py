# srcjax fuzzer regression case: check 'vmap' failed.
# Found from generator seed 2 (tests/fuzz/generator.py), inputs from seed 0;
# shrunk by the fuzzer, then by hand. Run by tests/fuzz/test_regressions.py.
# Failure when found:
#   [vmap] Hang: still running after 5 s
# ruff: noqa: E501, F401, F841, B007
try:
    jnp = __fuzz_numpy__  # noqa: F821 - the NumPy reference run injects NumPy here
    REFERENCE = True
except NameError:
    import srcjax.numpy as jnp

    REFERENCE = False


A = 2


def main(x):
    if x < 0:
        return x
    k = 0
    while True:
        k = k + 1
        if k > 1:
            break
        x = x * 0.5
    return x


FUZZ = {'group': 'vmap', 'stack': [], 'seed': 0, 'signature': ['vmap', 'Hang', 'still running after # s'], 'args': [()], 'dims': {'A': 2}, 'compiled_only': False, 'time_limit': 3.0}
