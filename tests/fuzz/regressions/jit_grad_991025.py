# srcjax fuzzer regression case: check 'derivatives' failed.
# Found from generator seed 991025 (tests/fuzz/generator.py), inputs from seed 991025;
# shrunk from 1609 to 452 characters. Run by tests/fuzz/test_regressions.py.
# Failure when found (an LLVM 22 miscompile on AVX-512; see codegen_worker.BACKEND_OPTIONS):
#   [jit-grad] mismatch: leaf 0: got array(2.28684822), expected array(2.64097138)
# ruff: noqa: E501, F401, F841, B007
try:
    jnp = __fuzz_numpy__  # noqa: F821 - the NumPy reference run injects NumPy here
    REFERENCE = True
except NameError:
    import srcjax.numpy as jnp

    REFERENCE = False


A = 1
B = 1
C = 1


def main(x, y):
    v1 = x
    for i15 in range(0, 6):
        v1 = x
    return ((jnp.outer((v1 * jnp.ones((C+C,))), jnp.full((C,), 0.5)) + jnp.minimum((v1 - (x * jnp.ones((C+C,)))), (x * jnp.ones((C+C,))))[:, None]), jnp.full((A, C), 0.5), y[0])


FUZZ = {'group': 'derivatives', 'stack': [], 'seed': 991025, 'signature': ['jit-grad', 'mismatch', ''], 'args': [(), [('C', 'A'), ('B',)]], 'dims': {'A': 1, 'B': 1, 'C': 1}, 'compiled_only': False}
