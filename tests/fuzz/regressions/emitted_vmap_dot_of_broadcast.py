# srcjax fuzzer regression case: check 'transformed-ir' failed.
# Found from generator seed 12096 (tests/fuzz/generator.py), inputs from seed 12096;
# shrunk from 570 to 370 characters. Run by tests/fuzz/test_regressions.py.
# Failure when found:
#   [emitted-vmap] mismatch: result 0: emitted Python Array([115.2232683 ,  45.02383934], dtype=float64), interpreter
#   Array([115.2232683 ,  45.02383934], dtype=float64)
# ruff: noqa: E501, F401, F841, B007
try:
    jnp = __fuzz_numpy__  # noqa: F821 - the NumPy reference run injects NumPy here
    REFERENCE = True
except NameError:
    import srcjax.numpy as jnp

    REFERENCE = False


A = 1
B = 3
C = 1


def main(x, y, z):
    x = x * 1.0
    x += jnp.dot((y * jnp.ones((B+B,))), jnp.full((B+B,), 1.0))
    z = x
    return (jnp.full((A,), 0.5) @ (z * jnp.ones((A,))))


FUZZ = {'group': 'transformed-ir', 'stack': [], 'seed': 12096, 'signature': ['emitted-vmap', 'mismatch', ''], 'args': [(), (), ()], 'dims': {'A': 1, 'B': 3, 'C': 1}, 'compiled_only': False}
