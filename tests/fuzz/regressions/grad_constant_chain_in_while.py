# srcjax fuzzer regression case: check 'transformed-ir' failed.
# Found from generator seed 600551 (tests/fuzz/generator.py), inputs from seed 600551;
# shrunk from 2618 to 988 characters. Run by tests/fuzz/test_regressions.py.
# Failure when found:
#   [emitted-grad] VerificationError: @loss: 1 problem |   - %199 = mul (fuzz_12850_99.py:28): %88 is defined inside
#   another region and is not visible here
# ruff: noqa: E501, F401, F841, B007
try:
    jnp = __fuzz_numpy__  # noqa: F821 - the NumPy reference run injects NumPy here
    REFERENCE = True
except NameError:
    import srcjax.numpy as jnp

    REFERENCE = False


A = 2
B = 1


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
    v6 = (x * jnp.ones((A,)))
    v9 = (jnp.full((A+B,), 0.5) @ jnp.matmul(jnp.full((A+B, A), 0.5), (x * jnp.ones((A,)))))
    while jnp.linalg.norm(v9) > 0.5:
        v9 = v9 * 0.5
        v6 = at_update(v6, 1, jnp.mean(jnp.full((A,), 0.0)), "multiply")
    return (jnp.full((B, B), 0.5), (v9 * jnp.ones((B,)))[-1])


FUZZ = {'group': 'transformed-ir', 'stack': [], 'seed': 600551, 'signature': ['emitted-grad', 'VerificationError', '@loss: # problem'], 'args': [()], 'dims': {'A': 2, 'B': 1}, 'compiled_only': False}
