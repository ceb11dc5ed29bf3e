# srcjax fuzzer regression case: check 'transformed-ir' failed.
# Found from generator seed 300200 (tests/fuzz/generator.py), inputs from seed 300200;
# shrunk from 1834 to 617 characters. Run by tests/fuzz/test_regressions.py.
# Failure when found:
#   [emitted-grad] mismatch: result 0: emitted Python array(-0.02329961), interpreter array(-0.02329961) (largest
#   difference 3.469446951953614e-18)
# ruff: noqa: E501, F401, F841, B007
try:
    jnp = __fuzz_numpy__  # noqa: F821 - the NumPy reference run injects NumPy here
    REFERENCE = True
except NameError:
    import srcjax.numpy as jnp

    REFERENCE = False


A = 4
B = 4
C = 1


def main(x, y):
    v1 = ((x * jnp.ones((B+A,))) @ jnp.full((B+A, A), 0.5))
    for i2 in range(0, 2):
        v1 = (jnp.add(v1, y[0]) / (1.0 + jnp.abs(jnp.add(v1, y[0]))))
        x = jnp.vdot(jnp.reciprocal(1.0 + jnp.square(v1)), y[0])
        x = jnp.sin(jnp.multiply(jnp.add(x, (x * jnp.ones((B,))))[..., 0], jnp.asarray(0.5)))
    return (jnp.sinh(jnp.tanh(x)), jnp.tanh((x * jnp.ones((C, 2, B)))[0])[:, 3])


FUZZ = {'group': 'transformed-ir', 'stack': [], 'seed': 300200, 'signature': ['emitted-grad', 'mismatch', ''], 'args': [(), [('A',), ('A',)]], 'dims': {'A': 4, 'B': 4, 'C': 1}, 'compiled_only': False}
