# srcjax fuzzer regression case: check 'compose' of jax stack checkpoint(main) failed.
# Found from generator seed 200298 (tests/fuzz/generator.py), inputs from seed 200298;
# shrunk from 2109 to 309 characters. Run by tests/fuzz/test_regressions.py.
# Failure when found:
#   [compose] TypeError: 'Array' object does not support item assignment. srcjax arrays are immutable; instead of x[idx]
#   = y, use x = x.at[idx].set(y) (idx was 0)
# ruff: noqa: E501, F401, F841, B007
try:
    jnp = __fuzz_numpy__  # noqa: F821 - the NumPy reference run injects NumPy here
    REFERENCE = True
except NameError:
    import srcjax.numpy as jnp

    REFERENCE = False


A = 1
B = 1


def main(x):
    x = x * 1.0
    x[0] = jnp.full((B+B,), 0.0)
    v10 = jnp.full((B, B+B), 0.5)
    return v10


FUZZ = {'group': 'compose', 'stack': ['checkpoint'], 'seed': 200298, 'signature': ['compose', 'TypeError', "'Array' object does not support item assignment. srcjax arrays are immutable; instead of x[idx] = y,"], 'args': [('B', 'B+B')], 'dims': {'A': 1, 'B': 1}, 'compiled_only': True}
