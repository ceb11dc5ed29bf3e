# srcjax fuzzer regression case: check 'compose' of jax stack jit(vmap(custom_jvp(main))) failed.
# Found from generator seed 221 (tests/fuzz/generator.py), inputs from seed 0;
# shrunk by the fuzzer, then by hand. Run by tests/fuzz/test_regressions.py.
# Failure when found:
#   [compose] InternalCompilerError: srcjax's native compiler failed on 'same': TypeError: cannot print a parameter
#   value batched(same) of type _Batched | This is a bug in srcjax; SRCJAX_NATIVE=0 runs jitted functions in the
#   interpreter meanwhile.
# ruff: noqa: E501, F401, F841, B007
try:
    jnp = __fuzz_numpy__  # noqa: F821 - the NumPy reference run injects NumPy here
    REFERENCE = True
except NameError:
    import srcjax.numpy as jnp

    REFERENCE = False


A = 2


def main(x):
    return x * x


FUZZ = {'group': 'compose', 'stack': ['jit', 'vmap', 'custom_jvp'], 'seed': 0, 'signature': ['compose', 'InternalCompilerError', "srcjax's native compiler failed on 'same': TypeError: cannot print a parameter value batched(same) o"], 'args': [('A',)], 'dims': {'A': 2}, 'compiled_only': False}
