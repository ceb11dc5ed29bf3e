# srcjax fuzzer regression case: check 'ir' failed.
# Found from generator seed 5059 (tests/fuzz/generator.py), inputs from seed 2;
# shrunk by the fuzzer, then by hand. Run by tests/fuzz/test_regressions.py.
# Failure when found:
#   [ir] TranspileError: /tmp/srcjax_fuzz_l29eir67/fuzz_23798_1.py:16:5: error: a loop on a symbolic value cannot change
#   Python lists or dicts |         while jnp.sum(jnp.abs(x)) > 1.0: |         ^~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~ |   the
#   number of iterations is only known when the compiled function runs; collect results in an array (x = x.at[i].set(v))
#   or use lax.scan
# ruff: noqa: E501, F401, F841, B007
try:
    jnp = __fuzz_numpy__  # noqa: F821 - the NumPy reference run injects NumPy here
    REFERENCE = True
except NameError:
    import srcjax.numpy as jnp

    REFERENCE = False


A = 2


def main(x):
    y = x
    while jnp.sum(jnp.abs(x)) > 1.0:
        x = x * 0.5
        y = y.at[1].add(jnp.mean(x))
    return y


FUZZ = {'group': 'ir', 'stack': [], 'seed': 2, 'signature': ['ir', 'TranspileError', 'a loop on a symbolic value cannot change Python lists or dicts'], 'args': [('A',)], 'dims': {'A': 2}, 'compiled_only': False}
