"""srcjax.numpy creation functions against NumPy (float64 oracle, exact for integers and bools), with the
dtypes and weak types JAX 0.10.2 gives (recorded with jax, written here as literals), and bad inputs."""

import numpy as np
import pytest

import srcjax
import srcjax.numpy as jnp

F32, I32, I8, F16, C64, B = "float32", "int32", "int8", "float16", "complex64", "bool"


def check(out, expected, dtype, weak=False):
    """``out`` has JAX's dtype and weak bit and NumPy's values (to float32 precision for inexact dtypes)."""
    assert str(out.dtype) == dtype, (out.dtype, dtype)
    assert out.weak_type == weak, (out.weak_type, weak)
    actual, expected = np.asarray(out), np.asarray(expected)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if actual.dtype.kind in "fc":
        np.testing.assert_allclose(actual.astype(np.complex128), expected.astype(np.complex128), rtol=2e-6,
                                   atol=2e-6)
    else:
        np.testing.assert_array_equal(actual, expected)


# (label, srcjax call, NumPy float64 oracle, JAX's dtype, JAX's weak bit)
FILLED = [
    ("zeros int", lambda: jnp.zeros(3), np.zeros(3), F32, False),
    ("zeros tuple int dtype", lambda: jnp.zeros((2, 3), int), np.zeros((2, 3)), I32, False),
    ("zeros list shape", lambda: jnp.zeros([2, 0]), np.zeros((2, 0)), F32, False),
    ("zeros 0-d array shape", lambda: jnp.zeros(jnp.array(3)), np.zeros(3), F32, False),
    ("zeros float64 narrows", lambda: jnp.zeros(3, jnp.float64), np.zeros(3), F32, False),
    ("zeros scalar shape", lambda: jnp.zeros(()), np.zeros(()), F32, False),
    ("ones bool", lambda: jnp.ones((2,), bool), np.ones(2, bool), B, False),
    ("empty is zeros", lambda: jnp.empty((2, 2), jnp.int8), np.zeros((2, 2)), I8, False),
    ("full python int", lambda: jnp.full(3, 2), np.full(3, 2), I32, True),
    ("full python float", lambda: jnp.full((2, 2), 2.5), np.full((2, 2), 2.5), F32, True),
    ("full bool", lambda: jnp.full(3, True), np.full(3, True), B, False),
    ("full numpy int8", lambda: jnp.full(3, np.int8(2)), np.full(3, 2), I8, False),
    ("full dtype", lambda: jnp.full(3, 2, dtype=jnp.float16), np.full(3, 2.0), F16, False),
    ("full array value broadcasts", lambda: jnp.full((2, 3), jnp.arange(3.0)), np.tile(np.arange(3.0), (2, 1)),
     F32, False),
    ("full complex", lambda: jnp.full(2, 1 + 2j), np.full(2, 1 + 2j), C64, True),
    ("full_like int array, float fill", lambda: jnp.full_like(jnp.arange(3), 2.5), np.full(3, 2), I32, False),
    ("full_like weak", lambda: jnp.full_like(jnp.asarray(2.0), 2), np.full((), 2.0), F32, True),
    ("full_like dtype and shape", lambda: jnp.full_like(jnp.zeros(3), 7, dtype=int, shape=(2, 1)),
     np.full((2, 1), 7), I32, False),
    ("zeros_like python float", lambda: jnp.zeros_like(2.0), np.zeros(()), F32, True),
    ("zeros_like python int", lambda: jnp.zeros_like(2), np.zeros((), int), I32, True),
    ("ones_like shape", lambda: jnp.ones_like(jnp.zeros(3), shape=(2, 2)), np.ones((2, 2)), F32, False),
    ("empty_like dtype", lambda: jnp.empty_like(jnp.zeros(3), dtype=int), np.zeros(3), I32, False),
    ("ones_like numpy array", lambda: jnp.ones_like(np.zeros(2, np.uint8)), np.ones(2), "uint8", False),
]

RANGES = [
    ("arange stop", lambda: jnp.arange(10), np.arange(10), I32, False),
    ("arange float stop", lambda: jnp.arange(3.0), np.arange(3.0), F32, False),
    ("arange start stop step", lambda: jnp.arange(1, 10, 2), np.arange(1, 10, 2), I32, False),
    ("arange negative step", lambda: jnp.arange(10, 0, -3), np.arange(10, 0, -3), I32, False),
    ("arange float step", lambda: jnp.arange(0, 1, 0.1), np.arange(0, 1, 0.1), F32, False),
    ("arange numpy int8", lambda: jnp.arange(np.int8(5)), np.arange(5), I8, False),
    ("arange concrete array", lambda: jnp.arange(jnp.array(5)), np.arange(5), I32, False),
    ("arange dtype", lambda: jnp.arange(5, dtype=float), np.arange(5.0), F32, False),
    ("arange empty", lambda: jnp.arange(5, 2), np.arange(5, 2), I32, False),
    ("arange step keyword", lambda: jnp.arange(5, step=2), np.arange(0, 5, 2), I32, False),
    ("arange float bounds", lambda: jnp.arange(-1.5, 2.25, 0.75), np.arange(-1.5, 2.25, 0.75), F32, False),
    # a complex dtype counts in the real parts (JAX accepts it; srcjax had refused it)
    ("arange complex dtype", lambda: jnp.arange(1.5, 4, 0.5, dtype=jnp.complex64),
     np.arange(1.5, 4, 0.5).astype(np.complex64), np.dtype(np.complex64), False),
    ("linspace", lambda: jnp.linspace(0, 1, 5), np.linspace(0, 1, 5), F32, False),
    ("linspace no endpoint", lambda: jnp.linspace(0, 1, 4, endpoint=False), np.linspace(0, 1, 4, endpoint=False),
     F32, False),
    ("linspace int dtype floors", lambda: jnp.linspace(-5, 5, 4, dtype=int), np.linspace(-5, 5, 4, dtype=int),
     I32, False),
    ("linspace int arrays", lambda: jnp.linspace(jnp.int32(0), jnp.int32(1), 3), np.linspace(0, 1, 3), F32, False),
    ("linspace float16", lambda: jnp.linspace(np.float16(0), 1, 3), np.linspace(0, 1, 3), F16, False),
    ("linspace one sample", lambda: jnp.linspace(2, 3, 1), np.linspace(2, 3, 1), F32, False),
    ("linspace no samples", lambda: jnp.linspace(2, 3, 0), np.linspace(2, 3, 0), F32, False),
    ("linspace arrays on axis 1", lambda: jnp.linspace(jnp.array([0.0, 1]), jnp.array([1.0, 3]), 3, axis=1),
     np.linspace([0.0, 1], [1.0, 3], 3, axis=1), F32, False),
    ("linspace arrays on axis -1", lambda: jnp.linspace(jnp.zeros((2, 1)), jnp.ones(3), 4, axis=-1),
     np.linspace(np.zeros((2, 1)), np.ones(3), 4, axis=-1), F32, False),
    ("linspace complex", lambda: jnp.linspace(0, 1j, 3), np.linspace(0, 1j, 3), C64, False),
    ("logspace", lambda: jnp.logspace(0, 2, 3), np.logspace(0, 2, 3), F32, False),
    ("logspace base 2", lambda: jnp.logspace(1, 4, 4, base=2.0, endpoint=False),
     np.logspace(1, 4, 4, base=2.0, endpoint=False), F32, False),
    ("geomspace", lambda: jnp.geomspace(1, 1000, 4), np.geomspace(1, 1000, 4), F32, False),
    ("geomspace negative", lambda: jnp.geomspace(-1, -16, 5), np.geomspace(-1, -16, 5), F32, False),
    ("geomspace no endpoint", lambda: jnp.geomspace(2, 32, 4, endpoint=False),
     np.geomspace(2, 32, 4, endpoint=False), F32, False),
    ("geomspace axis", lambda: jnp.geomspace(jnp.array([1.0, 2]), jnp.array([8.0, 32]), 3, axis=1),
     np.geomspace([1.0, 2], [8.0, 32], 3, axis=1), F32, False),
]

MATRICES = [
    ("eye", lambda: jnp.eye(3), np.eye(3), F32, False),
    ("eye rectangular offset", lambda: jnp.eye(3, 4, k=1, dtype=int), np.eye(3, 4, k=1), I32, False),
    ("eye negative offset", lambda: jnp.eye(4, 2, k=-2), np.eye(4, 2, k=-2), F32, False),
    ("eye array offset", lambda: jnp.eye(3, k=jnp.asarray(-1)), np.eye(3, k=-1), F32, False),
    ("eye empty", lambda: jnp.eye(0), np.eye(0), F32, False),
    ("identity", lambda: jnp.identity(2, bool), np.identity(2, bool), B, False),
    ("tri", lambda: jnp.tri(3), np.tri(3), F32, False),
    ("tri rectangular", lambda: jnp.tri(2, 4, k=1, dtype=int), np.tri(2, 4, k=1), I32, False),
    ("tril int", lambda: jnp.tril(jnp.ones((3, 3), int)), np.tril(np.ones((3, 3))), I32, False),
    ("tril bool", lambda: jnp.tril(jnp.ones((2, 3), bool)), np.tril(np.ones((2, 3), bool)), B, False),
    ("tril weak keeps weak", lambda: jnp.tril(jnp.full((3, 3), 2.0)), np.tril(np.full((3, 3), 2.0)), F32, True),
    ("tril offset batched", lambda: jnp.tril(jnp.arange(24.0).reshape(2, 3, 4), -1),
     np.tril(np.arange(24.0).reshape(2, 3, 4), -1), F32, False),
    ("triu", lambda: jnp.triu(jnp.arange(12).reshape(3, 4), 1), np.triu(np.arange(12).reshape(3, 4), 1), I32,
     False),
    ("diag of vector", lambda: jnp.diag(jnp.arange(3.0)), np.diag(np.arange(3.0)), F32, False),
    ("diag of vector above", lambda: jnp.diag(jnp.arange(1, 3), 2), np.diag(np.arange(1, 3), 2), I32, False),
    ("diag of vector below", lambda: jnp.diag(jnp.arange(1, 3), -1), np.diag(np.arange(1, 3), -1), I32, False),
    ("diag of matrix", lambda: jnp.diag(jnp.arange(12).reshape(3, 4), 1), np.diag(np.arange(12).reshape(3, 4), 1),
     I32, False),
    ("diag of matrix below", lambda: jnp.diag(jnp.arange(12).reshape(4, 3), -2),
     np.diag(np.arange(12).reshape(4, 3), -2), I32, False),
    ("diag past the corner", lambda: jnp.diag(jnp.ones((2, 2)), 5), np.diag(np.ones((2, 2)), 5), F32, False),
    ("diag bool", lambda: jnp.diag(jnp.array([True, False])), np.diag([True, False]), B, False),
    ("diag weak keeps weak", lambda: jnp.diag(jnp.atleast_1d(3.0)), np.diag([3.0]), F32, True),
    ("diagflat is never weak", lambda: jnp.diagflat(3.0), np.diagflat(3.0), F32, False),
    ("diagflat", lambda: jnp.diagflat(jnp.array([[1, 2], [3, 4]]), 1), np.diagflat([[1, 2], [3, 4]], 1), I32,
     False),
    ("diagonal axes", lambda: jnp.diagonal(jnp.arange(24.0).reshape(2, 3, 4), 1, 0, 2),
     np.diagonal(np.arange(24.0).reshape(2, 3, 4), 1, 0, 2), F32, False),
    ("diagonal negative offset, swapped axes", lambda: jnp.diagonal(jnp.arange(24).reshape(2, 3, 4), -1, 2, 1),
     np.diagonal(np.arange(24).reshape(2, 3, 4), -1, 2, 1), I32, False),
    ("diagonal method", lambda: jnp.arange(9).reshape(3, 3).diagonal(), np.arange(9).reshape(3, 3).diagonal(), I32,
     False),
]

GRIDS = [
    ("indices", lambda: jnp.indices((2, 3)), np.indices((2, 3)), I32, False),
    ("indices float", lambda: jnp.indices((2,), dtype=float), np.indices((2,), dtype=float), F32, False),
    ("mgrid", lambda: jnp.mgrid[0:3, 0:2], np.mgrid[0:3, 0:2], I32, False),
    ("mgrid points", lambda: jnp.mgrid[0:1:5j], np.mgrid[0:1:5j], F32, False),
    ("mgrid float step", lambda: jnp.mgrid[0:3:0.5], np.mgrid[0:3:0.5], F32, False),
    ("mgrid mixed", lambda: jnp.mgrid[-1:1:3j, 0:4:2], np.mgrid[-1:1:3j, 0:4:2], F32, False),
    ("fromfunction", lambda: jnp.fromfunction(lambda i, j: i + 2 * j, (2, 3)),
     np.fromfunction(lambda i, j: i + 2 * j, (2, 3)), F32, False),
    ("fromfunction int", lambda: jnp.fromfunction(lambda i, j: i * j, (3, 3), dtype=int),
     np.fromfunction(lambda i, j: i * j, (3, 3), dtype=int), I32, False),
    ("copy keeps weak", lambda: jnp.copy(2.0), np.array(2.0), F32, True),
    ("copy", lambda: jnp.copy(jnp.arange(2)), np.array([0, 1]), I32, False),
    ("bartlett", lambda: jnp.bartlett(5), np.bartlett(5), F32, False),
    ("hanning", lambda: jnp.hanning(4), np.hanning(4), F32, False),
    ("hamming", lambda: jnp.hamming(6), np.hamming(6), F32, False),
    ("blackman", lambda: jnp.blackman(5), np.blackman(5), F32, False),
    ("hanning of one", lambda: jnp.hanning(1), np.hanning(1), F32, False),
    ("hamming of none", lambda: jnp.hamming(0), np.hamming(0), F32, False),
]


@pytest.mark.parametrize("label, call, expected, dtype, weak", FILLED + RANGES + MATRICES + GRIDS,
                         ids=[c[0] for c in FILLED + RANGES + MATRICES + GRIDS])
def test_matches_numpy_with_jax_dtypes(label, call, expected, dtype, weak):
    check(call(), expected, dtype, weak)


def test_kaiser_window_recorded_from_jax():
    # jnp.kaiser(4, 2.0), jax 0.10.2
    check(jnp.kaiser(4, 2.0), [0.4386763870716095, 0.9243138432502747, 0.9243138432502747, 0.4386763870716095], F32)


def test_linspace_retstep():
    samples, step = jnp.linspace(0, 1, 5, retstep=True)
    check(step, 0.25, F32)
    check(samples, np.linspace(0, 1, 5), F32)
    _, step = jnp.linspace(2, 3, 1, retstep=True)
    assert np.isnan(np.asarray(step))  # no interval: JAX and NumPy both report NaN
    _, steps = jnp.linspace(jnp.zeros(2), jnp.array([1.0, 2.0]), 3, retstep=True)
    check(steps, [0.5, 1.0], F32)


def test_linspace_endpoint_is_exact():
    out = np.asarray(jnp.linspace(0.1, 0.7, 7))
    assert out[0] == np.float32(0.1) and out[-1] == np.float32(0.7)


def test_linspace_takes_jax_formula():
    # start (1 - t) + stop t, t = i / intervals, in the requested dtype's float, as JAX computes it (NumPy adds
    # i steps to start). Recorded with jax 0.10.2: linspace(f16(-2.137), f16(2.293), 4) and linspace(1, -2, 4,
    # dtype=int), where NumPy gives [..., -0.66, 0.8164, ...] and [1, 0, -1, -2]
    out = jnp.linspace(np.float16(-2.137), np.float16(2.293), 4)
    assert out.dtype == np.float16
    assert np.asarray(out).tolist() == np.array([-2.137, -0.6606, 0.816, 2.293], np.float16).tolist()
    check(jnp.linspace(1, -2, 4, dtype=int), [1, -1, -1, -2], I32)
    compiled = srcjax.jit(lambda a, b: jnp.linspace(a, b, 4))(np.float16(-2.137), np.float16(2.293))
    assert np.asarray(compiled).tolist() == np.asarray(out).tolist()


def test_arange_with_x64_gives_64_bit_types():
    srcjax.config.update("jax_enable_x64", True)
    try:
        assert jnp.arange(3).dtype == np.int64
        assert jnp.arange(3.0).dtype == np.float64
        assert jnp.zeros(2, jnp.float64).dtype == np.float64
    finally:
        srcjax.config.update("jax_enable_x64", False)


@pytest.mark.parametrize("sparse, indexing", [(False, "xy"), (False, "ij"), (True, "xy"), (True, "ij")])
def test_meshgrid(sparse, indexing):
    x, y, z = np.arange(3), np.arange(2.0), np.arange(4.0) * 2
    ours = jnp.meshgrid(jnp.asarray(x), jnp.asarray(y), jnp.asarray(z), sparse=sparse, indexing=indexing)
    theirs = np.meshgrid(x, y, z, sparse=sparse, indexing=indexing)
    assert len(ours) == 3
    for out, expected, dtype in zip(ours, theirs, (I32, F32, F32), strict=True):
        check(out, expected, dtype)


def test_ogrid():
    ours, theirs = jnp.ogrid[0:3, 0:2], np.ogrid[0:3, 0:2]
    for out, expected in zip(ours, theirs, strict=True):
        check(out, expected, I32)
    check(jnp.ogrid[0:1:3j], np.ogrid[0:1:3j], F32)


def test_indices_sparse():
    for out, expected in zip(jnp.indices((2, 3), sparse=True), np.indices((2, 3), sparse=True), strict=True):
        check(out, expected, I32)


def test_array_equal_and_equiv():
    assert jnp.array_equal(jnp.arange(3), jnp.arange(3.0)).dtype == np.bool_
    assert bool(jnp.array_equal(jnp.arange(3), jnp.arange(3.0)))
    assert not bool(jnp.array_equal(jnp.arange(3), jnp.arange(4)))
    assert not bool(jnp.array_equal(jnp.array([1.0, np.nan]), jnp.array([1.0, np.nan])))
    assert bool(jnp.array_equal(jnp.array([1.0, np.nan]), jnp.array([1.0, np.nan]), equal_nan=True))
    assert bool(jnp.array_equal([1, 2], (1, 2)))
    assert bool(jnp.array_equiv(jnp.arange(3), jnp.array([[0, 1, 2], [0, 1, 2]])))
    assert not bool(jnp.array_equiv(jnp.arange(3), jnp.arange(2)))
    assert not bool(jnp.array_equiv(jnp.arange(3), jnp.array([[0, 1, 2], [0, 1, 3]])))


def test_from_host_data():
    check(jnp.frombuffer(b"\x01\x02\x03", dtype=jnp.uint8, count=2, offset=1), [2, 3], "uint8")
    check(jnp.frombuffer(np.arange(3.0).tobytes()), [0.0, 1, 2], F32)  # float64 bytes, narrowed as in JAX
    check(jnp.fromstring("1 2 3", dtype=int, sep=" "), [1, 2, 3], I32)
    check(jnp.from_dlpack(np.arange(3.0, dtype=np.float32)), [0.0, 1, 2], F32)
    with pytest.raises(NotImplementedError, match="non-pure"):
        jnp.fromiter(iter(range(3)), int)
    with pytest.raises(NotImplementedError, match="non-pure"):
        jnp.fromfile("anything")


def test_fromfunction_of_a_constant_fills_the_shape():
    check(jnp.fromfunction(lambda i, j: jnp.asarray(1.0), (2, 2)), np.ones((2, 2)), F32, True)


# -- bad inputs ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("call, error, message", [
    (lambda: jnp.zeros(-1), ValueError, "negative dimensions"),
    # JAX refuses masked arrays (their mask would be dropped) and bytes not in the machine's order
    (lambda: jnp.asarray(np.ma.array([1.0, 2.0], mask=[0, 1])), ValueError, "masked arrays are not supported"),
    (lambda: jnp.add(np.ma.array([1.0, 2.0], mask=[0, 1]), 1), ValueError, "masked arrays are not supported"),
    (lambda: srcjax.jit(lambda x: x * 2)(np.ma.array([1.0], mask=[1])), ValueError, "masked arrays"),
    (lambda: jnp.asarray(np.arange(3, dtype=">f4")), TypeError, "Dtype >f4 is not a valid JAX array type"),
    (lambda: jnp.sum(np.arange(3, dtype=">i4")), TypeError, "not in this machine's order"),
    (lambda: srcjax.jit(lambda x: x * 2)(np.arange(3, dtype=">f8")), TypeError, "not in this machine's order"),
    (lambda: srcjax.grad(lambda x: x.sum())(np.arange(3, dtype=">f4")), TypeError, "not in this machine's order"),
    (lambda: jnp.zeros((2, 1.5)), TypeError, "must be an integer"),
    (lambda: jnp.zeros("3"), TypeError, "must be an int"),
    (lambda: jnp.full(3, [1, 2]), TypeError, "full requires ndarray or scalar arguments"),
    (lambda: jnp.copy([1, 2]), TypeError, "copy requires ndarray or scalar arguments"),
    (lambda: jnp.zeros(3, dtype="U3"), TypeError, "not a valid array dtype"),
    (lambda: jnp.arange(True), TypeError, "bool"),
    (lambda: jnp.arange(0, 5, 0), ValueError, "step must not be zero"),
    (lambda: jnp.arange(jnp.ones(2)), ValueError, "must be a scalar"),
    (lambda: jnp.arange(1j), TypeError, "complex"),
    (lambda: jnp.linspace(0, 1, -1), ValueError, "must be non-negative"),
    (lambda: jnp.linspace(0, 1, 2.5), TypeError, "num must be an integer"),
    (lambda: jnp.eye(2.5), TypeError, "N must be an integer"),
    (lambda: jnp.eye(-1), ValueError, "negative dimensions"),
    (lambda: jnp.tril(jnp.arange(3)), ValueError, "at least 2D"),
    (lambda: jnp.diag(jnp.zeros((2, 2, 2))), ValueError, "1-d or 2-d"),
    (lambda: jnp.diagonal(jnp.zeros(3)), ValueError, "at least two dimensions"),
    (lambda: jnp.diagonal(jnp.zeros((2, 2)), 0, 1, 1), ValueError, "repeated axis"),
    (lambda: jnp.meshgrid(jnp.ones((2, 2)), jnp.ones(2)), ValueError, "must be 1D"),
    (lambda: jnp.meshgrid(jnp.ones(2), indexing="xx"), ValueError, "indexing"),
    (lambda: jnp.mgrid[0:3, 1], TypeError, "slices"),
    (lambda: jnp.mgrid[0:], ValueError, "needs a stop"),
])
def test_bad_inputs(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_symbolic_bounds_are_refused_with_a_clear_error():
    class Symbolic:  # stands for a value of a function being compiled: it has a type but no data
        aval = jnp.asarray(3).aval

    with pytest.raises(TypeError, match="stop must be static|start must be static"):
        jnp.arange(Symbolic())
    with pytest.raises(TypeError, match="must be static"):
        jnp.zeros(Symbolic())


def test_python_floats_become_integers_as_jax_converts_arrays():
    # JAX 0.10.2 converts a Python float fill value or update through its array conversion, which saturates
    # (NaN: 0); NumPy's conversion of the scalar raises OverflowError or ValueError instead
    np.testing.assert_array_equal(jnp.full(3, 300.7, dtype=jnp.int8), np.full(3, 127, np.int8))
    np.testing.assert_array_equal(jnp.full(2, -1e10, dtype=jnp.uint8), np.zeros(2, np.uint8))
    np.testing.assert_array_equal(jnp.full_like(jnp.zeros(2, jnp.int16), 1e6), np.full(2, 32767, np.int16))
    np.testing.assert_array_equal(jnp.zeros(2, jnp.int32).at[0].set(float("nan")), np.zeros(2, np.int32))
    np.testing.assert_array_equal(jnp.zeros(2, jnp.uint8).at[1].set(float("inf")), np.array([0, 255], np.uint8))
    with pytest.raises(OverflowError):  # a Python int still has to fit
        jnp.array([300], dtype=jnp.int8)


def test_python_int_fill_values_wrap_as_jax_converts_them():
    # JAX 0.10.2 (x64 off) converts a Python int fill value through NumPy's 64-bit integers, so one the dtype
    # cannot hold wraps (jnp.full(3, 2**35, int32) is zeros; with no dtype, int32 too), where arithmetic and
    # jnp.array refuse it with an OverflowError; compiled alike
    for run in (lambda f, x: f(x), lambda f, x: srcjax.jit(f)(x)):
        np.testing.assert_array_equal(run(lambda x: jnp.full(3, 2**35, dtype=jnp.int32) + x, jnp.int32(1)), [1, 1, 1])
        np.testing.assert_array_equal(run(lambda x: jnp.full(3, -2**35 - 5, dtype=jnp.int32) + x, jnp.int32(1)),
                                      [-4, -4, -4])
        np.testing.assert_array_equal(run(lambda x: jnp.full(2, 2**35) + x, jnp.int32(1)), [1, 1])
        np.testing.assert_array_equal(run(lambda x: jnp.full_like(x, 2**35), jnp.int32(1)), 0)
        with pytest.raises(OverflowError):
            run(lambda x: jnp.ones(3, jnp.int32) * 2**35 + x, jnp.int32(1))
