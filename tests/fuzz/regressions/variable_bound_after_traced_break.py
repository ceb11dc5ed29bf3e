# srcjax fuzzer regression case: check 'ir' failed.
# Found from generator seed 500023 (tests/fuzz/generator.py), inputs from seed 500023;
# shrunk from 2982 to 416 characters. Run by tests/fuzz/test_regressions.py.
# Failure when found:
#   [ir] TranspileError: /tmp/srcjax_fuzz_422u1juz/fuzz_635_347.py:81:13: error: 'v15' is f32[] here but NoneType where
#   an earlier return, break or continue was taken; a value's structure cannot differ between the paths of control flow
#   on a traced value |                 v15 = x["w"] |                 ^~~ |
#   /tmp/srcjax_fuzz_422u1juz/fuzz_635_347.py:79:13: note: the paths split here, on a traced value |                 if
#   jnp.mean(jnp.sqrt(jnp.abs(y["b"]) + 0.1)) > 0.3: |
#   ^~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ruff: noqa: E501, F401, F841, B007
try:
    jnp = __fuzz_numpy__  # noqa: F821 - the NumPy reference run injects NumPy here
    REFERENCE = True
except NameError:
    import srcjax.numpy as jnp

    REFERENCE = False


A = 2


def main(x, y):
    for i14, r13 in enumerate(y["b"]):
        if jnp.sum(x["b"]) > 1.0:
            pass
        else:
            if jnp.mean(y["b"]) > 0.3:
                break
            v15 = x["w"]
    return y["w"]


FUZZ = {'group': 'ir', 'stack': [], 'seed': 500023, 'signature': ['ir', 'TranspileError', "'v#' is f#[] here but NoneType where an earlier return, break or continue was taken; a value's struc"], 'args': [{'w': (), 'b': ('A', 'A')}, {'w': (), 'b': ('A',)}], 'dims': {'A': 2}, 'compiled_only': False}
