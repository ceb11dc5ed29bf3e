# srcjax fuzzer regression case: check 'compose' of jax stack checkpoint(main) failed.
# Found from generator seed 7239 (tests/fuzz/generator.py), inputs from seed 7239;
# shrunk by the fuzzer, then by hand. Run by tests/fuzz/test_regressions.py.
# Failure when found:
#   [compose] AttributeError: 'numpy.ndarray' object has no attribute 'at'
# ruff: noqa: E501, F401, F841, B007
try:
    jnp = __fuzz_numpy__  # noqa: F821 - the NumPy reference run injects NumPy here
    REFERENCE = True
except NameError:
    import srcjax.numpy as jnp

    REFERENCE = False


A = 2


def at_update(y, i, v, how):
    if REFERENCE:  # NumPy: update a copy in place
        y = y.copy()
        if how == "set":
            y[i] = v
        elif how == "add":
            y[i] += v
        else:
            y[i] *= v
        return y
    if how == "set":
        return y.at[i].set(v)
    if how == "add":
        return y.at[i].add(v)
    return y.at[i].multiply(v, unique_indices=True)  # (as in JAX, the only scatter_mul with a derivative)


def main(x):
    x = at_update(x, 0, 0.5, "set")
    return x


FUZZ = {'group': 'compose', 'stack': ['checkpoint'], 'seed': 7239, 'signature': ['compose', 'AttributeError', "'numpy.ndarray' object has no attribute 'at'"], 'args': [('A',)], 'dims': {'A': 2}, 'compiled_only': False}
