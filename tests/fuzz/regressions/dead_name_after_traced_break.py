# srcjax fuzzer regression case: check 'ir' failed.
# Found from generator seed 9 (tests/fuzz/generator.py), inputs from seed 0;
# shrunk by the fuzzer, then by hand. Run by tests/fuzz/test_regressions.py.
# Failure when found:
#   [ir] TranspileError: /tmp/srcjax_fuzz_3bkhv1w9/fuzz_19761_2.py:18:9: error: a static value differs between the paths
#   of control flow on a symbolic value |             if k > 1 or jnp.sum(x) > 0.3: |
#   ^~~~~~~~~~~~~~~~~~~~~~~~~~~~~ |   'v' is 0.5 where the code after line 18 runs (line 20) and
#   <srcjax.transpiler.frontend.frame.Undefined object at 0x7f11235db090> where an earlier return, break or continue was
#   taken (line ?)
# ruff: noqa: E501, F401, F841, B007
try:
    jnp = __fuzz_numpy__  # noqa: F821 - the NumPy reference run injects NumPy here
    REFERENCE = True
except NameError:
    import srcjax.numpy as jnp

    REFERENCE = False


A = 2


def main(x):
    k = 0
    while True:
        k = k + 1
        if k > 1 or jnp.sum(x) > 0.3:
            break
        v = 0.5
    return x


FUZZ = {'group': 'ir', 'stack': [], 'seed': 0, 'signature': ['ir', 'TranspileError', 'a static value differs between the paths of control flow on a symbolic value'], 'args': [('A',)], 'dims': {'A': 2}, 'compiled_only': False}
