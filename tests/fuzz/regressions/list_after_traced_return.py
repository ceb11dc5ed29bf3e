# srcjax fuzzer regression case: check 'ir' failed.
# Found from generator seed 163 (tests/fuzz/generator.py), inputs from seed 0;
# shrunk by the fuzzer, then by hand. Run by tests/fuzz/test_regressions.py.
# Failure when found:
#   [ir] TranspileError: /tmp/srcjax_fuzz_3bkhv1w9/fuzz_19761_4.py:17:5: error: a Python list or dict was changed inside
#   an `if` on a symbolic value |         acc = [] |         ^~~~~~~~ |   the branch taken is only known when the
#   compiled function runs; build the container outside the `if` and select array values with jnp.where
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
        return x
    acc = []
    acc.append(x)
    return jnp.stack(acc)[0]


FUZZ = {'group': 'ir', 'stack': [], 'seed': 0, 'signature': ['ir', 'TranspileError', 'a Python list or dict was changed inside an `if` on a symbolic value'], 'args': [('A',)], 'dims': {'A': 2}, 'compiled_only': False}
