# srcjax fuzzer regression case: check 'transformed-ir' failed.
# Found from generator seed 300755 (tests/fuzz/generator.py), inputs from seed 300755;
# shrunk from 997 to 317 characters. Run by tests/fuzz/test_regressions.py.
# Failure when found:
#   [emitted-grad] mismatch: result 0: emitted Python array([[-2.50504089e-06, -2.75524738e-07,  6.30183495e-07,
#   -2.11204562e-04],        [ 0.00000000e+00,  0.00000000e+00,  0.00000000e+00,          0.00000000e+00],        [
#   0.00000000e+00,  0.00000000e+00,  0.00000000e+00,          0.00000000e+00],        [ 0.00000000e+00,
#   0.00000000e+00,  0.00000000e+00,          0.00000000e+00]]), interpreter array([[-2.50504089e-06, -2.75524738e-07,
#   6.30183495e-07,         -2.11204562e-04],        [ 0.00000000e+00,  0.00000000e+00,  0.00000000e+00,
#   0.00000000e+00],        [ 0.00000000e+00,  0.00000000e+00,  0.00000000e+00,          0.00000000e+00],        [
#   0.00000000e+00,  0.00000000e+00,  0.00000000e+00,          0.00000000e+00]]) (largest difference
#   4.235164736271502e-22)
# ruff: noqa: E501, F401, F841, B007
try:
    jnp = __fuzz_numpy__  # noqa: F821 - the NumPy reference run injects NumPy here
    REFERENCE = True
except NameError:
    import srcjax.numpy as jnp

    REFERENCE = False


A = 4


def main(x, z):
    x = jnp.power(jnp.abs(x) + 1.0, 1.5)
    return {"out": jnp.dot(z["b"], x[-4]), "aux": jnp.asarray(0.5)}


FUZZ = {'group': 'transformed-ir', 'stack': [], 'seed': 300755, 'signature': ['emitted-grad', 'mismatch', ''], 'args': [('A', 'A'), {'w': ('A',), 'b': ('A',)}], 'dims': {'A': 4}, 'compiled_only': False}
