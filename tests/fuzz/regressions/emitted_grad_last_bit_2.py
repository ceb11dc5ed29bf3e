# srcjax fuzzer regression case: check 'transformed-ir' failed.
# Found from generator seed 300668 (tests/fuzz/generator.py), inputs from seed 300668;
# shrunk from 2535 to 473 characters. Run by tests/fuzz/test_regressions.py.
# Failure when found:
#   [emitted-grad] mismatch: result 0: emitted Python array([4.87077488, 9.34841916]), interpreter array([4.87077488,
#   9.34841916]) (largest difference 1.7763568394002505e-15)
# ruff: noqa: E501, F401, F841, B007
try:
    jnp = __fuzz_numpy__  # noqa: F821 - the NumPy reference run injects NumPy here
    REFERENCE = True
except NameError:
    import srcjax.numpy as jnp

    REFERENCE = False


A = 2
B = 2


def main(x):
    v3 = jnp.roll((x + x), 1, axis=0)
    if jnp.mean(jnp.full((B, B), 0.5)) > 0.5:
        return jnp.full((B,), 0.5)
    else:
        x = (jnp.subtract(jnp.sum(v3, axis=-1), v3) + (jnp.arange(A) * 0.25))
    return jnp.dot(x, (jnp.max(x) * jnp.ones((A, B))))


FUZZ = {'group': 'transformed-ir', 'stack': [], 'seed': 300668, 'signature': ['emitted-grad', 'mismatch', ''], 'args': [('A',)], 'dims': {'A': 2, 'B': 2}, 'compiled_only': False}
