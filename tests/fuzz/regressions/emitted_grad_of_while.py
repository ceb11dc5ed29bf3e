# srcjax fuzzer regression case: check 'transformed-ir' failed.
# Found from generator seed 1 (tests/fuzz/generator.py), inputs from seed 1;
# shrunk by the fuzzer, then by hand. Run by tests/fuzz/test_regressions.py.
# Failure when found:
#   [emitted-grad] TypeError: 'stack_new' ops are built with regions by the front end, not through bind
# ruff: noqa: E501, F401, F841, B007
try:
    jnp = __fuzz_numpy__  # noqa: F821 - the NumPy reference run injects NumPy here
    REFERENCE = True
except NameError:
    import srcjax.numpy as jnp

    REFERENCE = False


A = 2


def main(x):
    while jnp.sum(x * x) > 1.0:
        x = x * 0.5
    return x


FUZZ = {'group': 'transformed-ir', 'stack': [], 'seed': 1, 'signature': ['emitted-grad', 'TypeError', "'stack_new' ops are built with regions by the front end, not through bind"], 'args': [('A',)], 'dims': {'A': 2}, 'compiled_only': False}
