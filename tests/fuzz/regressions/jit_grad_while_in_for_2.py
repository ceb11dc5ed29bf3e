# srcjax fuzzer regression case: check 'derivatives' failed.
# Found from generator seed 12435 (tests/fuzz/generator.py), inputs from seed 12435;
# shrunk from 1382 to 387 characters. Run by tests/fuzz/test_regressions.py.
# Failure when found:
#   [jit-grad] mismatch: leaf 0: got array([1.74672101, 1.74038056, 1.74633232, 1.74067023, 1.74274657]), expected
#   array([1.908901  , 1.92673599, 1.97701275, 1.93370226, 1.8723017 ])
# ruff: noqa: E501, F401, F841, B007
try:
    jnp = __fuzz_numpy__  # noqa: F821 - the NumPy reference run injects NumPy here
    REFERENCE = True
except NameError:
    import srcjax.numpy as jnp

    REFERENCE = False


A = 2


def main(x):
    v6 = x
    for i7 in range(A):
        k8 = 0
        while k8 < 2 and (jnp.min(x) < -0.2):
            k8 = k8 + 1
            v6 = jnp.sin(v6)
    return jnp.sum(v6, axis=-1)


FUZZ = {'group': 'derivatives', 'stack': [], 'seed': 12435, 'signature': ['jit-grad', 'mismatch', ''], 'args': [('A',)], 'dims': {'A': 2}, 'compiled_only': False}
