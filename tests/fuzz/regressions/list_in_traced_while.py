# srcjax fuzzer regression case: check 'ir' failed.
# Found from generator seed 6 (tests/fuzz/generator.py), inputs from seed 0;
# shrunk by the fuzzer, then by hand. Run by tests/fuzz/test_regressions.py.
# Failure when found:
#   [ir] TranspileError: /tmp/srcjax_fuzz_3bkhv1w9/fuzz_19761_3.py:15:5: error: a loop on a symbolic value cannot change
#   Python lists or dicts |         while jnp.max(jnp.abs(x)) > 0.25: |         ^~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~ |
#   the number of iterations is only known when the compiled function runs; collect results in an array (x =
#   x.at[i].set(v)) or use lax.scan
# ruff: noqa: E501, F401, F841, B007
try:
    jnp = __fuzz_numpy__  # noqa: F821 - the NumPy reference run injects NumPy here
    REFERENCE = True
except NameError:
    import srcjax.numpy as jnp

    REFERENCE = False


A = 2


def main(x):
    while jnp.max(jnp.abs(x)) > 0.25:
        x = x * 0.5
        acc = []
        acc.append(x)
    return x


FUZZ = {'group': 'ir', 'stack': [], 'seed': 0, 'signature': ['ir', 'TranspileError', 'a loop on a symbolic value cannot change Python lists or dicts'], 'args': [('A',)], 'dims': {'A': 2}, 'compiled_only': False}
