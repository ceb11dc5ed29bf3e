# srcjax fuzzer regression case: check 'jit' failed.
# Found from generator seed 200172 (tests/fuzz/generator.py), inputs from seed 200172;
# shrunk from 1313 to 615 characters. Run by tests/fuzz/test_regressions.py.
# Failure when found:
#   [jit] NativeFallbackWarning: jit of 'main' (/tmp/srcjax_fuzz_a5bvo3ux/fuzz_14580_2622.py:28) runs in the
#   interpreter, not compiled natively: value Value(?: f32[]) has no buffer
# ruff: noqa: E501, F401, F841, B007
try:
    jnp = __fuzz_numpy__  # noqa: F821 - the NumPy reference run injects NumPy here
    REFERENCE = True
except NameError:
    import srcjax.numpy as jnp

    REFERENCE = False


A = 4


def fori(n, body, init):
    if REFERENCE:  # NumPy: the loop lax.fori_loop stands for
        for i in range(n):
            init = body(i, init)
        return init
    from srcjax import lax

    return lax.fori_loop(0, n, body, init)


def main(x, y):
    y = (jnp.sum((jnp.full((2,), 0.5) > -0.2)) * 0.25)
    def body3(i4, h5):
        return jnp.max(x["b"])
    y = fori(3, body3, y)
    return {"out": y, "aux": y}


FUZZ = {'group': 'jit', 'stack': [], 'seed': 200172, 'signature': ['jit', 'NativeFallbackWarning', "jit of 'main' (/tmp/srcjax_fuzz_a#bvo#ux/fuzz_#_#.py:#) runs in the interpreter, not compiled native"], 'args': [{'w': ('2',), 'b': ('A', 'A')}, ()], 'dims': {'A': 4}, 'compiled_only': False}
