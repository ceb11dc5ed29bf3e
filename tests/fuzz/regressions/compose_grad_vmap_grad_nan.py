# srcjax fuzzer regression case: check 'compose' of jax stack grad(vmap(grad(main))) failed.
# Found from generator seed 5086 (tests/fuzz/generator.py), inputs from seed 5086;
# shrunk by the fuzzer, then by hand. Run by tests/fuzz/test_regressions.py.
# Failure when found:
#   [compose] mismatch: grad(vmap(grad(f))): leaf 0: not finite: array([[nan, nan],        [nan, nan]]), expected
#   array([[-2.22044605e-11,  0.00000000e+00],        [-2.96059473e-12,  5.03301104e-12]])
# ruff: noqa: E501, F401, F841, B007
try:
    jnp = __fuzz_numpy__  # noqa: F821 - the NumPy reference run injects NumPy here
    REFERENCE = True
except NameError:
    import srcjax.numpy as jnp

    REFERENCE = False


A = 2


def main(x):
    if jnp.mean(x) > 1.0:
        x = x * jnp.max(x)
    return jnp.mean(x)


FUZZ = {'group': 'compose', 'stack': ['grad', 'vmap', 'grad'], 'seed': 5086, 'signature': ['compose', 'mismatch', ''], 'args': [('A',)], 'dims': {'A': 2}, 'compiled_only': False}
