# srcjax fuzzer regression case: check 'ir' failed.
# Found from generator seed 116 (tests/fuzz/generator.py), inputs from seed 0;
# shrunk by the fuzzer, then by hand. Run by tests/fuzz/test_regressions.py.
# Failure when found:
#   [ir] TranspileError: /tmp/srcjax_fuzz_3bkhv1w9/fuzz_19761_5.py:16:12: error: a value's structure differs between the
#   paths of control flow on a symbolic value |             if jnp.sum(x) > 0.0: |                ^~~~~~~~~~~~~~~~ |
#   'acc' is a list of 1 in the then-branch (line 17) and Undefined in the else-branch (line ?)
# ruff: noqa: E501, F401, F841, B007
try:
    jnp = __fuzz_numpy__  # noqa: F821 - the NumPy reference run injects NumPy here
    REFERENCE = True
except NameError:
    import srcjax.numpy as jnp

    REFERENCE = False


A = 2


def main(x):
    for i in range(3):
        if jnp.sum(x) > 0.0:
            acc = []
            acc.append(x)
    return x


FUZZ = {'group': 'ir', 'stack': [], 'seed': 0, 'signature': ['ir', 'TranspileError', "a value's structure differs between the paths of control flow on a symbolic value"], 'args': [('A',)], 'dims': {'A': 2}, 'compiled_only': False}
