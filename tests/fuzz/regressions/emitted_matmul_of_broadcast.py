# srcjax fuzzer regression case: check 'ir' failed.
# Found from generator seed 7029 (tests/fuzz/generator.py), inputs from seed 7029;
# shrunk by the fuzzer, then by hand. Run by tests/fuzz/test_regressions.py.
# Failure when found:
#   [emitted] mismatch: result 0: emitted Python Array([0.37961453, 0.37961453, 0.37961453], dtype=float32), interpreter
#   Array([0.37961453, 0.37961453, 0.3796145 ], dtype=float32)
# ruff: noqa: E501, F401, F841, B007
try:
    jnp = __fuzz_numpy__  # noqa: F821 - the NumPy reference run injects NumPy here
    REFERENCE = True
except NameError:
    import srcjax.numpy as jnp

    REFERENCE = False


A = 3
B = 3


def main(x):
    return jnp.matmul(x * jnp.ones((B, A)), jnp.full((A,), -0.2))


FUZZ = {'group': 'ir', 'stack': [], 'seed': 7029, 'signature': ['emitted', 'mismatch', ''], 'args': [()], 'dims': {'A': 3, 'B': 3}, 'compiled_only': False}
