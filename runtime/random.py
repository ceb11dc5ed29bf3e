"""``srcjax.random``: JAX's threefry2x32 keys and samplers, bit-identical to JAX's streams.

A key is two uint32 words: either a raw ``uint32[2]`` array (``PRNGKey``) or a typed ``KeyArray``
(``key``) that holds them. Every function accepts both and returns keys of the kind it was given.
Bits come from the ``threefry2x32`` primitive in one of JAX's two counter layouts, chosen at call time
by ``config.jax_threefry_partitionable`` (see ``shared/notes/PRNG.md``):

* original (False, srcjax's default): ``hash(key, iota(n))`` splits the counters into two halves, so a
  value depends on the total size drawn;
* partitionable (True): element ``i`` hashes the counter pair ``(i >> 32, i & 0xFFFFFFFF)``.

Samplers turn bits into values with JAX's algorithms and key usage, through lax/jnp only, so they run
eagerly and inside compiled functions alike. Internally keys carry leading batch axes (``uint32[b..., 2]``):
the rejection samplers (gamma) run one key per element in lockstep, as JAX's vmapped loop does.
The hash, split, fold_in and the uniform and normal draws, called eagerly again and again with one signature
(a training loop's ``rng, key = split(rng)``), run compiled (``api.compiled_when_hot``).
"""

from __future__ import annotations

import math
import operator
import warnings
from typing import Any, Sequence

import numpy as np

import srcjax.runtime.numpy as jnp
from srcjax.runtime import dtypes, lax, tree_util
from srcjax.runtime.api import compiled_when_hot
from srcjax.runtime.array import Array
from srcjax.runtime.config import config
from srcjax.runtime.numpy._core import (
    TypeOrValueError, aval, broadcast_shapes, broadcast_to, check_arraylike, convert, is_arraylike,
)
from srcjax.transpiler.ir import ConcretizationError
from srcjax.transpiler.primitives.random import threefry2x32_p

__all__ = [
    "KeyArray", "PRNGKey", "key", "key_data", "wrap_key_data", "key_impl", "key_dtype", "split", "fold_in",
    "clone", "bits", "uniform", "normal", "randint", "bernoulli", "categorical", "choice", "permutation", "shuffle",
    "truncated_normal", "gumbel", "exponential", "laplace", "logistic", "rademacher", "multivariate_normal",
    "gamma", "loggamma", "beta", "dirichlet", "poisson", "cauchy", "pareto", "t", "chisquare", "f", "geometric",
    "lognormal", "weibull_min", "maxwell", "double_sided_maxwell", "rayleigh", "wald", "triangular",
    "generalized_normal", "ball", "orthogonal", "binomial", "multinomial",
]

IMPL_NAME = "threefry2x32"
UINT32 = np.dtype(np.uint32)
_UINT = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: UINT32, 64: np.dtype(np.uint64)}


# -- typed keys ------------------------------------------------------------------------------------------------
class KeyDtype:
    """The dtype of typed keys, printed ``key<fry>`` as JAX prints threefry keys."""

    name = "key<fry>"
    impl = IMPL_NAME
    type = dtypes.prng_key  # the scalar class, as for NumPy's dtypes: a key is an issubdtype of prng_key

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, KeyDtype) or other == self.name

    def __hash__(self) -> int:
        return hash(self.name)


KEY_DTYPE = KeyDtype()


class KeyArray:
    """An array of typed threefry keys: ``shape`` keys over ``uint32[*shape, 2]`` key data."""

    __slots__ = ("_data",)

    def __init__(self, data: Any):
        self._data = data

    shape = property(lambda self: aval(self._data).shape[:-1])
    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: math.prod(self.shape))
    dtype = property(lambda self: KEY_DTYPE)
    T = property(lambda self: self.transpose())

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object (a single key)")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a single key (a 0-d key array)")
        return (self[i] for i in range(self.shape[0]))

    def __getitem__(self, index: Any) -> KeyArray:
        index = index if isinstance(index, tuple) else (index,)
        return KeyArray(self._data[(*index, slice(None))])  # the trailing slice keeps the key words

    def __setitem__(self, index: Any, value: Any):
        raise TypeError("key arrays are immutable; make new keys with random.split or random.fold_in")

    def __eq__(self, other: Any) -> Any:
        if not isinstance(other, KeyArray):
            return NotImplemented
        return jnp.all(jnp.equal(self._data, other._data), axis=-1)

    def __ne__(self, other: Any) -> Any:
        if not isinstance(other, KeyArray):
            return NotImplemented
        return jnp.logical_not(self == other)

    __hash__ = None

    def reshape(self, *shape: Any) -> KeyArray:
        shape = shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        return KeyArray(jnp.reshape(self._data, (*shape, 2)))

    def ravel(self) -> KeyArray:
        return self.reshape((self.size,))

    flatten = ravel

    def transpose(self, *axes: Any) -> KeyArray:
        axes = axes[0] if len(axes) == 1 and not isinstance(axes[0], int) else axes
        axes = tuple(range(self.ndim))[::-1] if not axes else tuple(operator.index(a) % self.ndim for a in axes)
        return KeyArray(jnp.transpose(self._data, (*axes, self.ndim)))

    def block_until_ready(self) -> KeyArray:
        return self

    def __repr__(self) -> str:
        if not isinstance(self._data, Array):
            return f"KeyArray({self.shape}, dtype={KEY_DTYPE})"
        return f"Array({self.shape}, dtype={KEY_DTYPE}) overlaying:\n{np.asarray(self._data)}"

    __str__ = __repr__


# Typed keys cross jit, vmap and the tree utilities as their key data (JAX treats them as array leaves; our
# transformations trace arrays only, so the key is a node holding one).
tree_util.register_pytree_node(KeyArray, lambda k: ((k._data,), None), lambda _, children: KeyArray(children[0]))


def _unwrap(name: str, key: Any, allow_batched: bool = False) -> tuple[Any, bool]:
    """The key data ``uint32[..., 2]`` of a typed or raw key, and whether it was typed."""
    if isinstance(key, KeyArray):
        data, typed = key._data, True
    elif is_arraylike(key) and not isinstance(key, (bool, int, float, complex)):
        data, typed = (jnp.asarray(key) if isinstance(key, (np.ndarray, np.generic)) else key), False
        _check_key_data(name, aval(data))
    else:
        raise TypeError(
            f"{name}: unexpected PRNG key type {type(key).__name__}; pass a key from random.key(seed) or a "
            "uint32[2] array from random.PRNGKey(seed)"
        )
    if not allow_batched and aval(data).ndim > 1:
        shape = key.shape if typed else aval(data).shape
        raise ValueError(f"{name} accepts a single key, but was given a key array of shape {shape} != (). "
                         "Use jax.vmap for batching.")
    return data, typed


def _check_key_data(name: str, typ: Any) -> None:
    if typ.dtype != UINT32:
        raise TypeError(f"{name}: invalid PRNG key data: expected dtype uint32, got {typ.dtype.name} "
                        f"(shape {typ.shape})")
    if typ.ndim == 0 or typ.shape[-1] != 2:
        raise TypeError(f"{name}: invalid PRNG key data: expected a shape ending with (2,), got {typ.shape}")


def _rewrap(typed: bool, data: Any) -> Any:
    return KeyArray(data) if typed else data


def _check_impl(impl: Any) -> None:
    name = getattr(impl, "impl", impl)
    if name not in (None, IMPL_NAME):
        raise ValueError(f'unrecognized PRNG implementation "{impl}". Did you mean one of: "{IMPL_NAME}"?')


# -- shapes and dtypes ---------------------------------------------------------------------------------------
def _canonical_shape(name: str, shape: Any) -> tuple[int, ...]:
    if (isinstance(shape, (int, np.integer)) and not isinstance(shape, bool)) or getattr(shape, "ndim", None) == 0:
        shape = (shape,)  # (a traced 0-d one is then refused as a ConcretizationError, as a traced dimension is)
    try:
        dims = tuple(operator.index(d) for d in shape)
    except TypeError as e:  # (a traced one stays a ConcretizationError: a loop whose index it is retries unrolled)
        raise (ConcretizationError if isinstance(e, ConcretizationError) else TypeError)(
            f"{name}: shapes must be 1D sequences of concrete values of integer type, got {shape!r}"
        ) from None
    if any(d < 0 for d in dims):
        raise ValueError(f"{name}: negative dimension in shape {dims}")
    return dims


def _check_shape(name: str, shape: tuple[int, ...], *param_shapes: tuple[int, ...]) -> None:
    """Parameters must broadcast to exactly ``shape`` (JAX's rule for sampler parameters)."""
    if not param_shapes:
        return
    try:
        joined = broadcast_shapes(shape, *param_shapes)
    except ValueError:
        joined = None
    if joined != tuple(shape):
        raise ValueError(
            f"{name} parameter shapes must be broadcast-compatible with shape argument, and the result of "
            f"broadcasting the shapes must equal the shape argument, but got parameter shapes "
            f"{list(param_shapes)} for shape argument {tuple(shape)}."
        )


def _shape_or_broadcast(name: str, shape: Any, *params: Any) -> tuple[int, ...]:
    param_shapes = [np.shape(p) if not is_arraylike(p) else aval(p).shape for p in params]
    if shape is None:
        return broadcast_shapes(*param_shapes) if param_shapes else ()
    shape = _canonical_shape(name, shape)
    _check_shape(name, shape, *param_shapes)
    return shape


def _user_dtype(name: str, dtype: Any, default: Any, kinds: str, what: str) -> np.dtype:
    """The canonical dtype a sampler returns; 64-bit requests narrow (with JAX's warning) when x64 is off."""
    requested = np.dtype(default) if dtype is None else dtypes.to_dtype(dtype)
    kind = "f" if requested == dtypes.bfloat16 else requested.kind  # ml_dtypes' bfloat16 has NumPy kind 'V'
    if kind not in kinds:
        raise ValueError(f"dtype argument to `{name}` must be {what}, got {requested.name}")
    canonical = dtypes.canonicalize_dtype(requested)
    if dtype is not None and canonical != requested:
        warnings.warn(
            f"Explicitly requested dtype {requested.name} requested in {name} is not available, and will be "
            f"truncated to dtype {canonical.name}. To enable more dtypes, set the jax_enable_x64 configuration "
            "option or the JAX_ENABLE_X64 shell environment variable.",
            UserWarning,
            stacklevel=3,
        )
    return canonical


def _float_dtype(name: str, dtype: Any, kinds: str = "f") -> np.dtype:
    what = "a float dtype" if kinds == "f" else "a float or complex dtype"
    return _user_dtype(name, dtype, dtypes.default_float_dtype(), kinds, what)


def _finfo(dtype: np.dtype):
    try:
        return np.finfo(dtype)
    except ValueError:  # bfloat16 (ml_dtypes)
        import ml_dtypes

        return ml_dtypes.finfo(dtype)


def _array(x: Any) -> Any:
    """An array-like parameter as an array (lists and tuples are converted, as JAX's samplers accept them)."""
    if isinstance(x, (list, tuple)):
        return jnp.asarray(x)
    if not is_arraylike(x):
        raise TypeError(f"expected an array or a scalar, got {type(x).__name__}")
    return x


def _full(shape: tuple[int, ...], value: Any, dtype: Any) -> Any:
    """``value`` repeated to ``shape`` as ``dtype`` (lax.full)."""
    return lax.broadcast_in_dim(convert(np.array(value, dtype), np.dtype(dtype)), tuple(shape), ())


def _as(x: Any, dtype: np.dtype, shape: tuple[int, ...] | None = None) -> Any:
    """``x`` converted to ``dtype`` (strong) and, when given, broadcast to ``shape``."""
    x = convert(_array(x), dtype)
    return x if shape is None else broadcast_to(x, shape)


# -- the threefry hash over counters -------------------------------------------------------------------------
def _key_words(keys: Any) -> tuple[Any, Any]:
    """The two words ``uint32[b]`` of keys ``uint32[b, 2]``."""
    batch = aval(keys).shape[:-1]
    words = [
        lax.reshape(lax.slice(keys, (0,) * len(batch) + (w,), (*batch, w + 1)), batch) for w in (0, 1)
    ]
    return words[0], words[1]


def _threefry(keys: Any, x0: Any, x1: Any) -> tuple[Any, Any]:
    """threefry2x32 of every key (batch ``b``) with the counter words x0, x1 (shape ``s``): uint32[b + s] x 2."""
    batch, counters = aval(keys).shape[:-1], aval(x0).shape
    out = (*batch, *counters)
    k0, k1 = _key_words(keys)
    key_dims, counter_dims = tuple(range(len(batch))), tuple(range(len(batch), len(out)))
    k0, k1 = (lax.broadcast_in_dim(k, out, key_dims) for k in (k0, k1))
    x0, x1 = (lax.broadcast_in_dim(x, out, counter_dims) for x in (x0, x1))
    return threefry2x32_p.bind(k0, k1, x0, x1)


def _last_axis_slice(x: Any, start: int, stop: int) -> Any:
    shape = aval(x).shape
    return lax.slice(x, (0,) * (len(shape) - 1) + (start,), (*shape[:-1], stop))


def _hash_iota(keys: Any, n: int) -> Any:
    """JAX's original ``threefry_2x32(key, iota(n))`` per key: uint32[b, n].

    The n counters (one 0 appended when n is odd) are cut in halves X0, X1; the result is the first n
    words of concat(threefry(key, X0, X1)).
    """
    half = (n + 1) // 2
    counts = lax.iota(UINT32, n)
    if n % 2:
        counts = lax.concatenate([counts, _full((1,), 0, UINT32)], 0)
    x0, x1 = lax.slice(counts, (0,), (half,)), lax.slice(counts, (half,), (2 * half,))
    y0, y1 = _threefry(keys, x0, x1)
    out = lax.concatenate([y0, y1], len(aval(keys).shape) - 1)
    return _last_axis_slice(out, 0, n) if n % 2 else out


def _flat_counters(shape: tuple[int, ...]) -> tuple[Any, Any]:
    """The row-major index of each element as two uint32 words (high, low): JAX's ``iota_2x32_shape``."""
    size = math.prod(shape)
    if size >= 2**32:
        raise NotImplementedError(f"random arrays of 2**32 elements or more are not supported (shape {shape})")
    return _full(shape, 0, UINT32), lax.reshape(lax.iota(UINT32, size), shape)


def _partitionable() -> bool:
    return bool(config.jax_threefry_partitionable)


@compiled_when_hot(1, flags=_partitionable)
def _split(keys: Any, shape: tuple[int, ...]) -> Any:
    """``shape`` new keys from each key: uint32[b + shape + (2,)]."""
    batch = aval(keys).shape[:-1]
    if _partitionable():  # key i is threefry(key, i_hi, i_lo), so split(key, n)[i] == fold_in(key, i)
        y0, y1 = _threefry(keys, *_flat_counters(shape))
        return _stack_words(y0, y1)
    return lax.reshape(_hash_iota(keys, 2 * math.prod(shape)), (*batch, *shape, 2))


def _stack_words(y0: Any, y1: Any) -> Any:
    shape = aval(y0).shape
    return lax.concatenate([lax.reshape(y, (*shape, 1)) for y in (y0, y1)], len(shape))


def _split_list(keys: Any, n: int) -> list[Any]:
    """``n`` new keys from each key, as a list of uint32[b, 2]."""
    new = _split(keys, (n,))
    batch = aval(keys).shape[:-1]
    axis = len(batch)
    return [
        lax.reshape(lax.slice(new, (0,) * axis + (i, 0), (*batch, i + 1, 2)), (*batch, 2)) for i in range(n)
    ]


@compiled_when_hot(flags=_partitionable)
def _fold_in(keys: Any, data: Any) -> Any:
    # Both layouts: hash(key, [0, data]) = threefry(key, 0, data).
    y0, y1 = _threefry(keys, _full((), 0, UINT32), data)
    return _stack_words(y0, y1)


@compiled_when_hot(1, 2, flags=_partitionable)
def _random_bits(keys: Any, width: int, shape: tuple[int, ...]) -> Any:
    """Uniform random bits uint{width}[b + shape] from each key."""
    batch = aval(keys).shape[:-1]
    out_shape = (*batch, *shape)
    uint = _UINT[width]
    size = math.prod(shape)
    if _partitionable():
        y0, y1 = _threefry(keys, *_flat_counters(shape))
        if width == 64:  # (y0 << 32) | y1
            hi, lo = convert(y0, uint), convert(y1, uint)
            return lax.bitwise_or(lax.shift_left(hi, 32), lo)
        bits = lax.bitwise_xor(y0, y1)
        return bits if width == 32 else convert(bits, uint)
    if 2 * size >= 2**32:
        raise NotImplementedError(f"random arrays of 2**31 elements or more are not supported (shape {shape})")
    if width == 64:  # hash(key, iota(2N)): the first half gives the high words, the second the low words
        counts = lax.iota(UINT32, size)
        y0, y1 = _threefry(keys, counts, lax.add(counts, size))
        hi, lo = convert(y0, uint), convert(y1, uint)
        return lax.reshape(lax.bitwise_or(lax.shift_left(hi, 32), lo), out_shape)
    if width == 32:
        return lax.reshape(_hash_iota(keys, size), out_shape)
    return lax.reshape(_narrow_bits(keys, width, size), out_shape)


def _narrow_bits(keys: Any, width: int, size: int) -> Any:
    """8- or 16-bit values cut little-endian (low bits first) from ceil(size * width / 32) words."""
    batch = aval(keys).shape[:-1]
    per_word = 32 // width
    words = -(-size * width // 32)
    y = _hash_iota(keys, words)
    grid = (*batch, words, per_word)
    y = lax.broadcast_in_dim(y, grid, tuple(range(len(batch) + 1)))
    shifts = lax.broadcast_in_dim(lax.mul(lax.iota(UINT32, per_word), width), grid, (len(grid) - 1,))
    pieces = lax.bitwise_and(lax.shift_right_logical(y, shifts), (1 << width) - 1)
    pieces = lax.reshape(pieces, (*batch, words * per_word))
    return convert(_last_axis_slice(pieces, 0, size), _UINT[width])


# -- keys ------------------------------------------------------------------------------------------------------
def _seed_key_data(name: str, seed: Any) -> Any:
    if isinstance(seed, KeyArray):
        raise TypeError(f"{name} accepts a scalar seed, but was given a PRNG key.")
    if np.ndim(seed) if not is_arraylike(seed) else aval(seed).ndim:
        shape = np.shape(seed) if not is_arraylike(seed) else aval(seed).shape
        raise TypeError(
            f"{name} accepts a scalar seed, but was given an array of shape {shape} != (). Use jax.vmap for batching"
        )
    offset = int(config.jax_random_seed_offset)
    if isinstance(seed, (bool, int, np.integer, np.bool_)):
        # A Python int is an int64 narrowed to int32 (wrapping) when x64 is off; the key is the seed's two
        # 32-bit halves, (seed >> 32 logical, seed & 0xFFFFFFFF).
        if isinstance(seed, (bool, int)) and not -(2**63) <= int(seed) < 2**63:
            raise OverflowError(f"{name}: seed {seed} does not fit in int64")
        dtype = np.dtype(np.int64) if isinstance(seed, (bool, int)) else np.dtype(seed.dtype)
        dtype = np.dtype(np.int32) if dtype == np.bool_ else dtypes.canonicalize_dtype(dtype)
        bits = dtype.itemsize * 8
        value = (int(seed) + offset) % 2**bits  # the seed as its dtype stores it, then sign-extended
        if dtype.kind == "i" and value >= 2 ** (bits - 1):
            value -= 2**bits
        hi = (value % 2**64) >> 32 if bits == 64 else 0
        return jnp.asarray(np.array([hi, value % 2**32], np.uint32))
    seed = _array(seed)
    if aval(seed).dtype.kind not in "iu":
        raise TypeError(f"PRNG key seed must be an integer; got {seed!r}")
    if offset:
        seed = lax.add(seed, offset)
    hi = convert(lax.shift_right_logical(seed, 32), UINT32)  # 0 for seeds narrower than 64 bits
    lo = convert(seed, UINT32)  # conversion keeps the low 32 bits
    return lax.concatenate([lax.reshape(hi, (1,)), lax.reshape(lo, (1,))], 0)


def PRNGKey(seed: Any, *, impl: Any = None) -> Any:
    """A raw key ``uint32[2]`` from an integer seed."""
    _check_impl(impl)
    return _seed_key_data("PRNGKey", seed)


def key(seed: Any, *, impl: Any = None, dtype: Any = None) -> KeyArray:
    """A typed key (``key<fry>``) from an integer seed."""
    if impl is not None and dtype is not None:
        raise ValueError("Cannot specify both `impl` and `dtype` arguments to jax.random.key")
    _check_impl(impl if dtype is None else dtype)
    return KeyArray(_seed_key_data("key", seed))


def key_data(keys: Any) -> Any:
    """The uint32 key data under typed (or raw) keys: shape ``keys.shape + (2,)``."""
    data, _ = _unwrap("key_data", keys, allow_batched=True)
    return data


def wrap_key_data(key_bits_array: Any, *, impl: Any = None, dtype: Any = None) -> KeyArray:
    """Typed keys over ``uint32[..., 2]`` key data."""
    if impl is not None and dtype is not None:
        raise ValueError("Cannot specify both `impl` and `dtype` arguments to jax.random.wrap_key_data")
    _check_impl(impl if dtype is None else dtype)
    if isinstance(key_bits_array, KeyArray):
        raise TypeError("wrap_key_data: the argument is already a typed key array")
    data = _array(key_bits_array)
    data = jnp.asarray(data) if isinstance(data, (np.ndarray, np.generic)) else data
    _check_key_data("wrap_key_data", aval(data))
    return KeyArray(data)


def key_impl(keys: Any) -> str:
    _unwrap("key_impl", keys, allow_batched=True)
    return IMPL_NAME


def key_dtype(impl: Any = None) -> KeyDtype:
    """The dtype of typed threefry keys (``key<fry>``)."""
    _check_impl(impl)
    return KEY_DTYPE


def clone(key: Any) -> Any:
    """The key itself (JAX uses clone to mark deliberate key reuse)."""
    return key


def split(key: Any, num: int | Sequence[int] = 2) -> Any:
    """``num`` new keys (an int or a shape) from one key, along new leading axes."""
    data, typed = _unwrap("split", key)
    shape = _canonical_shape("split", num)
    return _rewrap(typed, _split(data, shape))


def fold_in(key: Any, data: Any) -> Any:
    """A new key that depends on ``key`` and the 32-bit integer ``data``."""
    keys, typed = _unwrap("fold_in", key)
    if (np.ndim(data) if not is_arraylike(data) else aval(data).ndim) != 0:
        shape = np.shape(data) if not is_arraylike(data) else aval(data).shape
        raise TypeError(f"fold_in accepts a scalar, but was given an array of shape {shape} != (). "
                        "Use jax.vmap for batching.")
    if isinstance(data, int) and not isinstance(data, bool) and not 0 <= data < 2**32:
        raise OverflowError(f"Python integer {data} out of bounds for uint32")
    return _rewrap(typed, _fold_in(keys, convert(_array(data), UINT32)))


# -- bits and uniform floats ----------------------------------------------------------------------------------
def bits(key: Any, shape: Any = (), dtype: Any = None) -> Any:
    """Uniform random bits as unsigned integers (uint32, or uint64 under x64)."""
    data, _ = _unwrap("bits", key)
    dtype = _user_dtype("bits", dtype, dtypes.default_uint_dtype(), "u", "an unsigned int dtype")
    return _random_bits(data, dtype.itemsize * 8, _canonical_shape("bits", shape))


# (total bits, mantissa bits, bit pattern of 1.0) of each float type
_FLOAT_LAYOUT = {"float16": (16, 10, 0x3C00), "bfloat16": (16, 7, 0x3F80), "float32": (32, 23, 0x3F800000),
                 "float64": (64, 52, 0x3FF0000000000000)}


@compiled_when_hot(1, 2, flags=_partitionable)
def _uniform01(keys: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    """Floats in [0, 1): random mantissa bits under the exponent of 1.0, minus 1."""
    nbits, nmant, one = _FLOAT_LAYOUT[np.dtype(dtype).name]
    rng_bits = 8 if nmant < 8 else nbits  # bfloat16 draws 8 bits and widens them
    bits_ = _random_bits(keys, rng_bits, shape)
    if rng_bits != nbits:
        bits_ = convert(bits_, _UINT[nbits])
    float_bits = lax.bitwise_or(lax.shift_right_logical(bits_, rng_bits - nmant), one)
    return lax.sub(lax.bitcast_convert_type(float_bits, dtype), 1.0)


def _scale(u: Any, minval: Any, maxval: Any) -> Any:
    """max(minval, u * (maxval - minval) + minval), with minval/maxval already u's dtype and shape.

    XLA contracts ``u * span + minval`` into one fused multiply-add (CPU and GPU), rounded once. For
    float32 the same single rounding comes from float64: the product of two float32 values is exact there.
    float16 arithmetic rounds each operation in XLA too, so it needs nothing.
    """
    span = lax.sub(maxval, minval)
    dtype = aval(u).dtype
    if dtype == np.float32:
        wide = [convert(v, np.float64) for v in (u, span, minval)]
        value = convert(lax.add(lax.mul(wide[0], wide[1]), wide[2]), np.float32)
    elif dtype == np.float64:
        value = _fma64(u, span, minval)
    else:
        value = lax.add(lax.mul(u, span), minval)
    return lax.max(minval, value)


def _fma64(a: Any, b: Any, c: Any) -> Any:
    """a * b + c in float64 with (nearly always) one rounding: Dekker's exact product and Knuth's exact sum.

    a * b == p + e exactly (a and b split into 26-bit halves); p + c == s + t exactly; then s + (t + e).
    """

    def halves(x):
        t = lax.mul(x, 134217729.0)  # 2^27 + 1
        hi = lax.sub(t, lax.sub(t, x))
        return hi, lax.sub(x, hi)

    p = lax.mul(a, b)
    (a_hi, a_lo), (b_hi, b_lo) = halves(a), halves(b)
    e = lax.add(lax.add(lax.add(lax.sub(lax.mul(a_hi, b_hi), p), lax.mul(a_hi, b_lo)), lax.mul(a_lo, b_hi)),
                lax.mul(a_lo, b_lo))
    s = lax.add(p, c)
    bb = lax.sub(s, p)
    t = lax.add(lax.sub(p, lax.sub(s, bb)), lax.sub(c, bb))
    return lax.add(s, lax.add(t, e))


def _uniform(keys: Any, shape: tuple[int, ...], dtype: np.dtype, minval: Any = 0.0, maxval: Any = 1.0) -> Any:
    full = (*aval(keys).shape[:-1], *shape)
    u = _uniform01(keys, shape, dtype)
    if isinstance(minval, float) and isinstance(maxval, float) and (minval, maxval) == (0.0, 1.0):
        return lax.max(_full(full, 0, dtype), u)  # u * (1 - 0) + 0 == u
    lo, hi = (_bounds(v, dtype, full, shape) for v in (minval, maxval))
    return _scale(u, lo, hi)


def _bounds(v: Any, dtype: np.dtype, full: tuple[int, ...], shape: tuple[int, ...]) -> Any:
    v = convert(_array(v), dtype)
    v_shape = aval(v).shape
    if len(v_shape) > len(shape) or any(a not in (1, b) for a, b in zip(v_shape[::-1], shape[::-1])):
        # (JAX raises a TypeError, NumPy's samplers a ValueError)
        raise TypeOrValueError(f"uniform: minval/maxval of shape {v_shape} do not broadcast to the shape {shape}")
    return broadcast_to(v, full)


def uniform(key: Any, shape: Any = (), dtype: Any = None, minval: Any = 0.0, maxval: Any = 1.0) -> Any:
    """Uniform floats in [minval, maxval)."""
    data, _ = _unwrap("uniform", key)
    dtype = _float_dtype("uniform", dtype)
    return _uniform(data, _canonical_shape("uniform", shape), dtype, minval, maxval)


# -- normal and relatives -------------------------------------------------------------------------------------
def _normal_real(keys: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    # u uniform in (-1, 1) (lo is the float after -1), then sqrt(2) * erfinv(u)
    lo = float(np.nextafter(np.array(-1.0, dtype), np.array(0.0, dtype)))
    u = _uniform(keys, shape, dtype, np.array(lo, dtype), np.array(1.0, dtype))
    return lax.mul(lax.erf_inv(u), float(np.array(np.sqrt(2), dtype)))


@compiled_when_hot(1, 2, flags=_partitionable)
def _normal(keys: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    if dtype.kind != "c":
        return _normal_real(keys, shape, dtype)
    real = np.dtype(np.float64 if dtype == np.complex128 else np.float32)
    key_re, key_im = _split_list(keys, 2)
    inv_sqrt2 = 1 / np.sqrt(np.array(2.0, real))
    re, im = (lax.mul(_normal_real(k, shape, real), float(inv_sqrt2)) for k in (key_re, key_im))
    return lax.complex(re, im)


def normal(key: Any, shape: Any = (), dtype: Any = None) -> Any:
    """Standard normal values (complex dtypes: independent real and imaginary parts of variance 1/2)."""
    data, _ = _unwrap("normal", key)
    dtype = _float_dtype("normal", dtype, kinds="fc")
    return _normal(data, _canonical_shape("normal", shape), dtype)


def truncated_normal(key: Any, lower: Any, upper: Any, shape: Any = None, dtype: Any = None) -> Any:
    """Standard normal values conditioned on lower < x < upper (inverse-CDF sampling)."""
    data, _ = _unwrap("truncated_normal", key)
    dtype = _float_dtype("truncated_normal", dtype)
    shape = _shape_or_broadcast("truncated_normal", shape, lower, upper)
    sqrt2 = float(np.array(np.sqrt(2), dtype))
    lower, upper = _as(lower, dtype), _as(upper, dtype)
    a, b = lax.erf(lax.div(lower, sqrt2)), lax.erf(lax.div(upper, sqrt2))
    u = _uniform(data, shape, dtype, a, b)
    out = lax.mul(lax.erf_inv(u), sqrt2)
    lo = lax.nextafter(lower, jnp.full(aval(lower).shape, np.inf, dtype))
    hi = lax.nextafter(upper, jnp.full(aval(upper).shape, -np.inf, dtype))
    return jnp.clip(out, lo, hi)


def multivariate_normal(key: Any, mean: Any, cov: Any, shape: Any = None, dtype: Any = None,
                        method: str = "cholesky") -> Any:
    """Normal vectors ``mean + factor @ z`` where ``factor @ factor.T == cov``."""
    data, _ = _unwrap("multivariate_normal", key)
    check_arraylike("multivariate_normal", mean, cov)
    mean, cov = _promote_inexact(mean, cov)
    if method not in ("svd", "eigh", "cholesky"):
        raise ValueError("method must be one of {'svd', 'eigh', 'cholesky'}")
    dtype = aval(mean).dtype if dtype is None else _float_dtype("multivariate_normal", dtype)
    if dtype.kind != "f":
        raise ValueError(f"dtype argument to `multivariate_normal` must be a float dtype, got {dtype}")
    mean_shape, cov_shape = aval(mean).shape, aval(cov).shape
    if len(mean_shape) < 1:
        raise ValueError(f"multivariate_normal requires mean.ndim >= 1, got mean.ndim == {len(mean_shape)}")
    if len(cov_shape) < 2:
        raise ValueError(f"multivariate_normal requires cov.ndim >= 2, got cov.ndim == {len(cov_shape)}")
    n = mean_shape[-1]
    if cov_shape[-2:] != (n, n):
        raise ValueError(f"multivariate_normal requires cov.shape == (..., n, n) for n={n}, "
                         f"but got cov.shape == {cov_shape}.")
    if shape is None:
        shape = broadcast_shapes(mean_shape[:-1], cov_shape[:-2])
    else:
        shape = _canonical_shape("multivariate_normal", shape)
        _check_shape("normal", shape, mean_shape[:-1], cov_shape[:-2])
    if method == "svd":
        u, s, _ = jnp.linalg.svd(cov)
        factor = u * jnp.sqrt(s[..., None, :])
    elif method == "eigh":
        w, v = jnp.linalg.eigh(cov)
        factor = v * jnp.sqrt(w[..., None, :])
    else:
        factor = jnp.linalg.cholesky(cov)
    z = _normal(data, (*shape, n), dtype)
    spread = jnp.matmul(factor, z[..., None])[..., 0]
    return jnp.broadcast_to(mean, aval(spread).shape) + spread  # (not rank promotion: jax_numpy_rank_promotion)


def _promote_inexact(*args: Any) -> list[Any]:
    from srcjax.runtime.numpy._core import promote_dtypes_inexact

    return promote_dtypes_inexact(*(_array(a) for a in args))


def lognormal(key: Any, sigma: Any = 1.0, shape: Any = None, dtype: Any = None) -> Any:
    data, _ = _unwrap("lognormal", key)
    dtype = _float_dtype("lognormal", dtype, kinds="fc")
    shape = _shape_or_broadcast("lognormal", shape, sigma)
    return jnp.exp(jnp.multiply(_normal(data, shape, dtype), _as(sigma, dtype)))


def maxwell(key: Any, shape: Any = (), dtype: Any = None) -> Any:
    """One-sided Maxwell: the length of a 3-d standard normal vector."""
    data, _ = _unwrap("maxwell", key)
    dtype = _float_dtype("maxwell", dtype)
    z = _normal(data, (*_canonical_shape("maxwell", shape), 3), dtype)
    return jnp.sqrt(jnp.sum(z * z, axis=-1))


def double_sided_maxwell(key: Any, loc: Any, scale: Any, shape: Any = (), dtype: Any = None) -> Any:
    data, _ = _unwrap("double_sided_maxwell", key)
    dtype = _float_dtype("double_sided_maxwell", dtype)
    shape = _canonical_shape("double_sided_maxwell", shape)
    params = broadcast_shapes(np.shape(loc) if not is_arraylike(loc) else aval(loc).shape,
                              np.shape(scale) if not is_arraylike(scale) else aval(scale).shape)
    shape = (*(shape or params), *params)
    maxwell_key, sign_key = (KeyArray(k) for k in _split_list(data, 2))
    magnitude = maxwell(maxwell_key, shape, dtype)
    sign = rademacher(sign_key, shape, dtype)
    return sign * magnitude * _as(scale, dtype) + _as(loc, dtype)


def orthogonal(key: Any, n: int, shape: Any = (), dtype: Any = None, m: int | None = None) -> Any:
    """Uniform orthogonal (or semi-orthogonal n x m) matrices: Q of a normal matrix, signs fixed by diag(R)."""
    data, _ = _unwrap("orthogonal", key)
    dtype = _float_dtype("orthogonal", dtype, kinds="fc")
    shape = _canonical_shape("orthogonal", shape)
    n = operator.index(n)
    m = n if m is None else operator.index(m)
    if n < 0 or m < 0:
        raise ValueError(f"orthogonal: negative dimensions are not allowed, got n={n} and m={m}")
    z = _normal(data, (*shape, max(n, m), min(n, m)), dtype)
    q, r = jnp.linalg.qr(z)
    d = jnp.diagonal(r, axis1=-2, axis2=-1)
    x = q * jnp.expand_dims(jnp.sign(d), -2)
    return jnp.swapaxes(x, -1, -2) if n < m else x


# -- distributions from one uniform draw ----------------------------------------------------------------------
def exponential(key: Any, shape: Any = (), dtype: Any = None) -> Any:
    data, _ = _unwrap("exponential", key)
    dtype = _float_dtype("exponential", dtype)
    return _exponential(data, _canonical_shape("exponential", shape), dtype)


def _exponential(keys: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    return lax.neg(lax.log1p(lax.neg(_uniform(keys, shape, dtype))))  # -log(1 - u)


def laplace(key: Any, shape: Any = (), dtype: Any = None) -> Any:
    data, _ = _unwrap("laplace", key)
    dtype = _float_dtype("laplace", dtype)
    u = _uniform(data, _canonical_shape("laplace", shape), dtype, -1.0 + float(_finfo(dtype).epsneg), 1.0)
    return lax.mul(lax.sign(u), lax.log1p(lax.neg(lax.abs(u))))


def logistic(key: Any, shape: Any = (), dtype: Any = None) -> Any:
    data, _ = _unwrap("logistic", key)
    dtype = _float_dtype("logistic", dtype)
    x = _uniform(data, _canonical_shape("logistic", shape), dtype, float(_finfo(dtype).tiny), 1.0)
    return lax.sub(lax.log(x), lax.log1p(lax.neg(x)))


def cauchy(key: Any, shape: Any = (), dtype: Any = None) -> Any:
    data, _ = _unwrap("cauchy", key)
    dtype = _float_dtype("cauchy", dtype)
    u = _uniform(data, _canonical_shape("cauchy", shape), dtype, float(_finfo(dtype).eps), 1.0)
    return lax.tan(lax.mul(lax.sub(u, 0.5), float(np.pi)))


def gumbel(key: Any, shape: Any = (), dtype: Any = None, mode: str | None = None) -> Any:
    """Gumbel values -log(-log(u)); mode 'high' spends two uniforms on the small-u tail."""
    data, _ = _unwrap("gumbel", key)
    dtype = _float_dtype("gumbel", dtype)
    if mode is None:
        mode = "high" if config.jax_high_dynamic_range_gumbel else "low"
    if mode not in ("highest", "high", "low"):
        raise ValueError(f"Must provide valid mode for gumbel got: {mode} (expected 'highest', 'high' or 'low')")
    return _gumbel(data, _canonical_shape("gumbel", shape), dtype, mode)


def _safe_int_to_float(bits_: Any) -> Any:
    """float32 in (0, 1) from uint32[2, ...] read as a 64-bit fixed-point fraction (high word first), rounded
    down to 24 significant bits: JAX's ``_safe_int_to_float``."""
    hi, lo = bits_[0], bits_[1]
    hiclz, loclz = lax.clz(hi), lax.clz(lo)
    all_lo = lax.eq(hiclz, _full(aval(hi).shape, 32, UINT32))
    mantissa = lax.bitwise_or(lax.shift_left(hi, hiclz),
                              lax.select(all_lo, lax.shift_left(lo, loclz), lax.shift_right_logical(lo, 32 - hiclz)))
    mantissa = lax.bitwise_and(lax.shift_right_logical(mantissa, 8), (1 << 23) - 1)
    exponent = lax.sub(_full(aval(hi).shape, 126, UINT32), lax.select(all_lo, lax.add(loclz, 32), hiclz))
    exponent = lax.bitwise_and(lax.shift_left(exponent, 23), (1 << 30) - (1 << 22))
    return lax.bitcast_convert_type(lax.bitwise_or(exponent, mantissa), np.float32)


def _gumbel(keys: Any, shape: tuple[int, ...], dtype: np.dtype, mode: str) -> Any:
    info = _finfo(dtype)
    if mode == "low":
        u = _uniform(keys, shape, dtype, float(info.tiny), 1.0)
        return lax.neg(lax.log(lax.neg(lax.log(u))))
    if mode == "highest" and dtype == np.float32:
        # 64 random bits u; below 1/2 use u, above it 1 - u (the bits negated, plus one), so that both tails
        # keep their full precision: -log(-log1p(-u)) and -log(-log(1 - u)).
        bits_ = _random_bits(keys, 32, (2, *shape))
        neg = lax.bitwise_not(bits_)
        lo_wraps = convert(lax.eq(neg[1], _full(shape, 0xFFFFFFFF, UINT32)), UINT32)
        neg = lax.add(neg, lax.concatenate([lax.reshape(lo_wraps, (1, *shape)), _full((1, *shape), 1, UINT32)], 0))
        flip = lax.lt(bits_[0], _full(shape, 1 << 31, UINT32))
        x = _safe_int_to_float(jnp.where(flip, bits_, neg))
        return jnp.where(flip, -jnp.log(-jnp.log1p(-x)), -jnp.log(-jnp.log(x)))
    both = _uniform(keys, (2, *shape), dtype)
    high, low = both[0], both[1]
    x = jnp.where(high >= 0.5, high, high + float(2.0 ** -info.nmant) * low + float(info.tiny))
    return -jnp.log(-jnp.log1p(-x))


def weibull_min(key: Any, scale: Any, concentration: Any, shape: Any = (), dtype: Any = None) -> Any:
    data, _ = _unwrap("weibull_min", key)
    dtype = _float_dtype("weibull_min", dtype)
    u = _uniform(data, _canonical_shape("weibull_min", shape), dtype)
    return jnp.power(-jnp.log1p(-u), 1.0 / _array(concentration)) * _array(scale)  # inverse Weibull CDF


def pareto(key: Any, b: Any, shape: Any = None, dtype: Any = None) -> Any:
    data, _ = _unwrap("pareto", key)
    dtype = _float_dtype("pareto", dtype)
    shape = _shape_or_broadcast("pareto", shape, b)
    return jnp.exp(_exponential(data, shape, dtype) / _as(b, dtype))


def rayleigh(key: Any, scale: Any = 1.0, shape: Any = None, dtype: Any = None) -> Any:
    data, _ = _unwrap("rayleigh", key)
    dtype = _float_dtype("rayleigh", dtype)
    shape = _shape_or_broadcast("rayleigh", shape, scale)
    u = _uniform(data, shape, dtype)
    return lax.mul(_as(scale, dtype, shape), lax.sqrt(lax.mul(lax.log(u), -2.0)))


def triangular(key: Any, left: Any, mode: Any, right: Any, shape: Any = None, dtype: Any = None) -> Any:
    data, _ = _unwrap("triangular", key)
    dtype = _float_dtype("triangular", dtype)
    shape = _shape_or_broadcast("triangular", shape, left, mode, right)
    left, mode, right = (_as(v, dtype, shape) for v in (left, mode, right))
    fc = (mode - left) / (right - left)
    u = _uniform(data, shape, dtype)
    out1 = left + lax.sqrt(u * (right - left) * (mode - left))
    out2 = right - lax.sqrt((1 - u) * (right - left) * (right - mode))
    return lax.select(u < fc, out1, out2)


def geometric(key: Any, p: Any, shape: Any = None, dtype: Any = None) -> Any:
    """Number of Bernoulli(p) trials up to the first success: floor(log u / log(1 - p)) + 1."""
    data, _ = _unwrap("geometric", key)
    dtype = _user_dtype("geometric", dtype, dtypes.default_int_dtype(), "iu", "an int dtype")
    shape = _shape_or_broadcast("geometric", shape, p)
    (p,) = _promote_inexact(p)
    u = _uniform(data, shape, aval(p).dtype)
    u = jnp.where(u == 0, 1, u)
    g = lax.floor(lax.div(lax.log(u), broadcast_to(lax.log1p(lax.neg(p)), shape))) + 1
    return convert(g, dtype)


def wald(key: Any, mean: Any, shape: Any = None, dtype: Any = None) -> Any:
    data, _ = _unwrap("wald", key)
    dtype = _float_dtype("wald", dtype)
    shape = _shape_or_broadcast("wald", shape, mean)
    k1, k2 = _split_list(data, 2)
    mean = _as(mean, dtype, shape)
    v = _normal(k1, shape, dtype)
    z = _uniform(k2, shape, dtype)
    y = v * v
    mean_sq = mean * mean
    sqrt_term = lax.sqrt(4 * mean * y + mean_sq * (y * y))
    x = mean + mean_sq * y / 2 - mean / 2 * sqrt_term
    return lax.select(lax.le(z, mean / (mean + x)), x, mean_sq / x)


# -- discrete ---------------------------------------------------------------------------------------------------
def randint(key: Any, shape: Any, minval: Any, maxval: Any, dtype: Any = None) -> Any:
    """Integers in [minval, maxval): two words of bits reduced modulo the span (JAX's slightly biased method)."""
    data, _ = _unwrap("randint", key)
    if dtype is not None and dtypes.to_dtype(dtype).kind not in "iu":
        raise TypeError(f"randint only accepts integer dtypes, got {dtypes.to_dtype(dtype).name}")
    dtype = _user_dtype("randint", dtype, dtypes.default_int_dtype(), "iu", "an integer dtype")
    shape = _canonical_shape("randint", shape)
    minval, maxval = _array(minval), _array(maxval)
    info = np.iinfo(dtype)
    if info.bits < 32:  # 8- and 16-bit values are drawn as int32 (less bias), then narrowed
        minval = lax.clamp(np.int32(info.min), convert(minval, np.int32), np.int32(info.max))
        maxval = lax.clamp(np.int32(info.min), convert(maxval, np.int32), np.int32(info.max + 1))
        return convert(_randint(data, shape, minval, maxval, np.dtype(np.int32)), dtype)
    return _randint(data, shape, minval, maxval, dtype)


def _clip_convert(val: Any, dtype: np.dtype) -> Any:
    """An integer array converted to ``dtype`` by clipping to the range both dtypes share (no wrapping)."""
    src = aval(val).dtype
    lo = max(int(np.iinfo(dtype).min), int(np.iinfo(src).min))
    hi = min(int(np.iinfo(dtype).max), int(np.iinfo(src).max))
    return convert(lax.clamp(np.array(lo, src), val, np.array(hi, src)), dtype)


def _randint(keys: Any, shape: tuple[int, ...], minval: Any, maxval: Any, dtype: np.dtype) -> Any:
    minval, maxval = jnp.asarray(minval), jnp.asarray(maxval)
    _check_shape("randint", shape, aval(minval).shape, aval(maxval).shape)
    minval, maxval = (v if aval(v).dtype.kind in "iu" else convert(v, dtypes.default_int_dtype())
                      for v in (minval, maxval))
    # maxval beyond the dtype's range (randint(k, s, 0, 256, uint8)) makes the span one larger.
    dtype_max = _clip_convert(jnp.asarray(np.iinfo(dtype).max, dtype), aval(maxval).dtype)
    out_of_range = broadcast_to(lax.gt(maxval, dtype_max), shape)
    minval, maxval = (broadcast_to(_clip_convert(v, dtype), shape) for v in (minval, maxval))
    nbits = np.iinfo(dtype).bits
    unsigned = _UINT[nbits]
    k1, k2 = _split_list(keys, 2)
    higher, lower = _random_bits(k1, nbits, shape), _random_bits(k2, nbits, shape)
    span = convert(lax.sub(maxval, minval), unsigned)  # wraps: the span as an unsigned number
    span = lax.select(lax.le(maxval, minval), _full(shape, 1, unsigned), span)  # then minval is returned
    span = lax.select(lax.bitwise_and(out_of_range, lax.gt(maxval, minval)), lax.add(span, 1), span)
    # (hi * 2^nbits + lo) mod span, with 2^nbits mod span = (2^(nbits/2) mod span)^2 mod span
    multiplier = lax.rem(_full(shape, 2 ** (nbits // 2), unsigned), span)
    multiplier = lax.rem(lax.mul(multiplier, multiplier), span)
    offset = lax.add(lax.mul(lax.rem(higher, span), multiplier), lax.rem(lower, span))
    offset = lax.rem(offset, span)
    return lax.add(minval, convert(offset, dtype))


def bernoulli(key: Any, p: Any = 0.5, shape: Any = None, mode: str = "low") -> Any:
    """Booleans that are True with probability p (mode 'high' adds a second uniform for tiny p)."""
    if mode not in ("high", "low"):
        raise ValueError(f"got mode={mode!r}, expected 'high' or 'low'")
    data, _ = _unwrap("bernoulli", key)
    p = _array(p)
    dtype = aval(p).dtype
    if dtype.kind != "f":
        raise TypeError(f"bernoulli probability `p` must have a floating dtype, got {dtype.name}.")
    p = convert(p, dtype)
    shape = _shape_or_broadcast("bernoulli", shape, p)
    p = broadcast_to(p, shape)
    if mode == "high":  # u2 * 2^-nmant < p - u1
        both = _uniform(data, (2, *shape), dtype)
        u1, u2 = (lax.reshape(lax.slice_in_dim(both, i, i + 1, axis=0), shape) for i in (0, 1))
        return lax.lt(lax.mul(u2, float(2.0 ** -_finfo(dtype).nmant)), lax.sub(p, u1))
    return lax.lt(_uniform(data, shape, dtype), p)


def rademacher(key: Any, shape: Any = (), dtype: Any = None) -> Any:
    """-1 or +1 with equal probability."""
    data, typed = _unwrap("rademacher", key)
    dtype = _user_dtype("rademacher", dtype, dtypes.default_int_dtype(), "iufc", "a numeric dtype")
    b = convert(bernoulli(data, 0.5, _canonical_shape("rademacher", shape)), dtype)
    return convert(2 * b - 1, dtype)


def categorical(key: Any, logits: Any, axis: int = -1, shape: Any = None, replace: bool = True,
                mode: str | None = None) -> Any:
    """Indices drawn with probabilities softmax(logits) along ``axis`` (Gumbel-max; Gumbel-top-k without
    replacement)."""
    data, _ = _unwrap("categorical", key)
    check_arraylike("categorical", logits)
    logits = jnp.asarray(logits)
    lshape = aval(logits).shape
    if not lshape:
        raise ValueError("categorical: logits must have at least one axis")
    axis = _canonical_axis("categorical", axis, len(lshape))
    batch_shape = lshape[:axis] + lshape[axis + 1:]
    if shape is None:
        shape = batch_shape
    else:
        shape = _canonical_shape("categorical", shape)
        _check_shape("categorical", shape, batch_shape)
    prefix = shape[: len(shape) - len(batch_shape)]
    dtype = aval(logits).dtype
    if replace:
        noise_shape = list(shape[len(prefix):])
        noise_shape.insert(axis, lshape[axis])
        noise = gumbel(KeyArray(data), (*prefix, *noise_shape), dtype, mode)
        expanded = jnp.reshape(logits, (1,) * len(prefix) + lshape)
        return jnp.argmax(noise + expanded, axis=len(prefix) + axis)
    noisy = logits + gumbel(KeyArray(data), lshape, dtype, mode)
    k = math.prod(prefix)
    if k > lshape[axis]:
        raise ValueError(f"Number of samples without replacement ({k}) cannot exceed number of categories "
                         f"({lshape[axis]}).")
    _, indices = lax.top_k(jnp.moveaxis(noisy, axis, -1), k)
    return jnp.reshape(jnp.moveaxis(indices, -1, 0), shape)


def _canonical_axis(name: str, axis: int, ndim: int) -> int:
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"{name}: axis {axis} is out of bounds for an array of dimension {ndim}")
    return axis % ndim


# -- permutations and choice -----------------------------------------------------------------------------------
def _shuffle(keys: Any, x: Any, axis: int) -> Any:
    # Sort by fresh 32-bit keys, ceil(3 ln(n) / ln(2^32 - 1)) times, so that ties are vanishingly rare.
    size = aval(x).size
    rounds = int(np.ceil(3 * np.log(max(1, size)) / np.log(np.iinfo(np.uint32).max)))
    for _ in range(rounds):
        keys, subkey = _split_list(keys, 2)
        sort_keys = _random_bits(subkey, 32, aval(x).shape)
        _, x = lax.sort_key_val(sort_keys, x, axis)
    return x


def permutation(key: Any, x: Any, axis: int = 0, independent: bool = False) -> Any:
    """A shuffled ``arange(x)`` (x an int) or ``x`` shuffled along ``axis`` (each slice alone if ``independent``)."""
    data, _ = _unwrap("permutation", key)
    check_arraylike("permutation", x)
    typ = aval(x)
    if typ.ndim == 0:
        if typ.dtype.kind not in "iu":
            raise TypeError("x must be an integer or at least 1-dimensional")
        return _shuffle(data, jnp.arange(operator.index(x)), 0)
    axis = _canonical_axis("permutation", axis, typ.ndim)
    x = jnp.asarray(x)
    if independent or typ.ndim == 1:
        return _shuffle(data, x, axis)
    order = _shuffle(data, jnp.arange(typ.shape[axis]), 0)
    return jnp.take(x, order, axis=axis)


def shuffle(key: Any, x: Any, axis: int = 0) -> Any:
    """Deprecated: use ``permutation(key, x, axis, independent=True)``."""
    warnings.warn("jax.random.shuffle is deprecated; use jax.random.permutation with independent=True",
                  DeprecationWarning, stacklevel=2)
    data, _ = _unwrap("shuffle", key)
    x = jnp.asarray(x)
    return _shuffle(data, x, _canonical_axis("shuffle", axis, max(aval(x).ndim, 1)))


def choice(key: Any, a: Any, shape: Sequence[int] = (), replace: bool = True, p: Any = None, axis: int = 0,
           mode: str | None = None) -> Any:
    """Samples from ``a`` (or ``arange(a)``) along ``axis``, uniformly or with probabilities ``p``."""
    data, _ = _unwrap("choice", key)
    if not isinstance(shape, Sequence):
        raise TypeError(f"shape argument of jax.random.choice must be a sequence, got {shape}")
    shape = _canonical_shape("choice", shape)
    check_arraylike("choice", a)
    arr = jnp.asarray(a)
    if aval(arr).ndim == 0:
        n_inputs = int(a)  # JAX's int(a): a float a counts its whole part
    else:
        axis = _canonical_axis("choice", axis, aval(arr).ndim)
        n_inputs = aval(arr).shape[axis]
    n_draws = math.prod(shape)
    if n_draws == 0:
        return jnp.zeros(shape, dtype=aval(arr).dtype)
    if n_inputs <= 0:
        raise ValueError("a must be greater than 0 unless no samples are taken")
    if not replace and n_draws > n_inputs:
        raise ValueError(f"Cannot take a larger sample (size {n_draws}) than population (size {n_inputs}) "
                         "when 'replace=False'")
    typed_key = KeyArray(data)
    if p is None:
        if replace:
            ind = randint(typed_key, shape, 0, n_inputs)
            result = ind if aval(arr).ndim == 0 else jnp.take(arr, ind, axis=axis)
        else:
            pool = n_inputs if aval(arr).ndim == 0 else arr
            result = permutation(typed_key, pool, axis)
            result = lax.slice_in_dim(result, 0, n_draws, axis=axis if aval(arr).ndim else 0)
    else:
        check_arraylike("choice", p)
        (p_arr,) = _promote_inexact(p)
        if aval(p_arr).shape != (n_inputs,):
            raise ValueError("p must be None or a 1D vector with the same size as a.shape[axis]. "
                             f"p has shape {aval(p_arr).shape} and a.shape[axis] is {n_inputs}.")
        if replace:
            p_cuml = jnp.cumsum(p_arr)
            r = p_cuml[-1] * (1 - uniform(typed_key, shape, dtype=aval(p_cuml).dtype))
            ind = convert(jnp.searchsorted(p_cuml, r), dtypes.default_int_dtype())
        else:
            g = gumbel(typed_key, (n_inputs,), aval(p_arr).dtype, mode) + jnp.log(p_arr)
            ind = convert(lax.top_k(g, n_draws)[1], dtypes.default_int_dtype())
        result = ind if aval(arr).ndim == 0 else jnp.take(arr, ind, axis=axis)
    a_shape = aval(arr).shape
    return jnp.reshape(result, shape if not a_shape else a_shape[:axis] + shape + a_shape[axis + 1:])


# -- gamma and the distributions built on it -----------------------------------------------------------------
def _gamma_batch(keys: Any, alpha: Any, log_space: bool) -> Any:
    """Marsaglia-Tsang gamma samples, one key per alpha (both flat), run in lockstep.

    Each element repeats: x ~ N(0,1) until v = (1 + c x)^3 > 0, u ~ U(0,1), accept when
    u < 1 - 0.0331 x^4 or log u < x^2/2 + d (1 - v + log v), with d = alpha - 1/3, c = 1 / sqrt(9 d).
    alpha < 1 samples alpha + 1 and multiplies by u^(1/alpha) (the 'boost'). Key use per element is
    JAX's: (key, boost_key) = split(key); each round (key, x_key, u_key) = split(key, 3); each normal
    draw (x_key, sub) = split(x_key).
    """
    dtype = aval(alpha).dtype
    shape = aval(alpha).shape
    zeros, ones = _full(shape, 0, dtype), _full(shape, 1, dtype)
    boost_mask = lax.ge(alpha, ones)
    alpha_orig = alpha
    alpha = lax.select(boost_mask, alpha, lax.add(alpha, 1.0))
    d = lax.sub(alpha, 1.0 / 3.0)
    c = lax.div(_full(shape, 1.0 / 3.0, dtype), lax.sqrt(d))

    def rejected(X, V, U):
        squeeze = lax.ge(U, lax.sub(1.0, lax.mul(lax.mul(X, X), 0.0331)))
        log_test = lax.ge(lax.log(U), lax.add(lax.mul(X, 0.5), lax.mul(d, lax.add(lax.sub(1.0, V), lax.log(V)))))
        return jnp.logical_and(squeeze, log_test)

    def round_cond(state):
        return jnp.any(rejected(*state[1:]))

    def round_body(state):
        key, X, V, U = state
        active = rejected(X, V, U)
        key_next, x_key, u_key = _split_list(key, 3)

        def draw_cond(s):
            return jnp.any(jnp.logical_and(active, lax.le(s[2], zeros)))

        def draw_body(s):
            k, x, v = s
            live = jnp.logical_and(active, lax.le(v, zeros))
            k_next, sub = _split_list(k, 2)
            x_new = _normal_real(sub, (), dtype)
            v_new = lax.add(lax.mul(x_new, c), 1.0)
            return _where_key(live, k_next, k), lax.select(live, x_new, x), lax.select(live, v_new, v)

        _, x, v = lax.while_loop(draw_cond, draw_body, (x_key, zeros, lax.neg(ones)))
        X_new, V_new = lax.mul(x, x), lax.mul(lax.mul(v, v), v)
        U_new = _uniform(u_key, (), dtype)
        return (_where_key(active, key_next, key), lax.select(active, X_new, X), lax.select(active, V_new, V),
                lax.select(active, U_new, U))

    key, boost_key = _split_list(keys, 2)
    _, _, V, _ = lax.while_loop(round_cond, round_body, (key, zeros, ones, _full(shape, 2, dtype)))
    if log_space:
        log_samples = lax.neg(_exponential(boost_key, (), dtype))
        no_boost = jnp.logical_or(boost_mask, lax.eq(log_samples, zeros))
        log_boost = lax.select(no_boost, zeros, lax.mul(log_samples, lax.div(ones, alpha_orig)))
        return lax.add(lax.add(lax.log(d), lax.log(V)), log_boost)
    samples = lax.sub(1.0, _uniform(boost_key, (), dtype))
    boost = lax.select(boost_mask, ones, lax.pow(samples, lax.div(ones, alpha_orig)))
    return lax.mul(lax.mul(d, V), boost)


def _where_key(mask: Any, new: Any, old: Any) -> Any:
    shape = aval(new).shape
    return lax.select(lax.broadcast_in_dim(mask, shape, tuple(range(len(shape) - 1))), new, old)


def _gamma(name: str, key: Any, a: Any, shape: Any, dtype: Any, log_space: bool) -> Any:
    data, _ = _unwrap(name, key)
    dtype = _float_dtype(name, dtype)
    a = _array(a)
    shape = aval(a).shape if shape is None else _canonical_shape(name, shape)
    _check_shape(name, shape, aval(a).shape)
    a = _as(a, dtype, shape)
    return _gamma_keys(data, a, log_space)


def _gamma_keys(key_data_: Any, a: Any, log_space: bool) -> Any:
    """Gamma samples of shape a.shape: JAX splits the key into one key per element. Their derivative in ``a`` is
    JAX's, the sample's at a fixed quantile (``_reparameterized``), not that of the rejection loop's arithmetic."""
    shape = aval(a).shape
    n = math.prod(shape)
    keys = lax.reshape(_split(key_data_, (n,)), (n, 2))
    out = _gamma_batch(keys, lax.reshape(lax.stop_gradient(a), (n,)), log_space)
    return _reparameterized(log_space)(a, lax.reshape(out, shape))


_REPARAMETERIZED: dict[bool, Any] = {}  # log_space -> the custom_jvp identity carrying the samples' derivative


def _reparameterized(log_space: bool) -> Any:
    """``f(a, sample) = sample`` whose derivative in ``a`` is the implicit one: the sample x held at its quantile
    P(a, x) moves by -(dP/da) / (dP/dx) (divided by x for a log sample, computed from log x)."""
    if log_space not in _REPARAMETERIZED:
        from srcjax.runtime.autodiff import custom_jvp
        from srcjax.runtime.scipy import special

        def rule(primals, tangents):
            (a, sample), (a_dot, _) = primals, tangents
            # (the derivative is a function of the output, not of ``sample``: the sample is drawn at a
            # stop_gradient of ``a``, and the output carries its dependence on ``a`` to higher orders)
            out = identity(a, sample)
            if not log_space:
                return out, a_dot * special.gamma_sample_grad(a, out)
            # d log x / da = (dx / da) / x, with x = exp(log x) raised to the smallest normal where it
            # underflows (JAX's rule)
            x = jnp.maximum(jnp.exp(out), float(_finfo(aval(out).dtype).tiny))
            return out, a_dot * special.gamma_sample_grad(a, x) / x

        identity = custom_jvp(lambda a, sample: sample)
        identity.defjvp(rule)
        _REPARAMETERIZED[log_space] = identity
    return _REPARAMETERIZED[log_space]


def gamma(key: Any, a: Any, shape: Any = None, dtype: Any = None) -> Any:
    """Gamma(a, 1) values (Marsaglia-Tsang, JAX's key usage)."""
    return _gamma("gamma", key, a, shape, dtype, log_space=False)


def loggamma(key: Any, a: Any, shape: Any = None, dtype: Any = None) -> Any:
    """log of Gamma(a, 1) values, accurate for small a."""
    return _gamma("loggamma", key, a, shape, dtype, log_space=True)


def beta(key: Any, a: Any, b: Any, shape: Any = None, dtype: Any = None) -> Any:
    """Beta(a, b) values as Ga / (Ga + Gb), computed from log-gamma samples."""
    data, _ = _unwrap("beta", key)
    dtype = _float_dtype("beta", dtype)
    shape = _shape_or_broadcast("beta", shape, a, b)
    key_a, key_b = _split_list(data, 2)
    log_a = _gamma_keys(key_a, _as(a, dtype, shape), log_space=True)
    log_b = _gamma_keys(key_b, _as(b, dtype, shape), log_space=True)
    log_max = lax.max(log_a, log_b)
    ga, gb = lax.exp(lax.sub(log_a, log_max)), lax.exp(lax.sub(log_b, log_max))
    return lax.div(ga, lax.add(ga, gb))


def dirichlet(key: Any, alpha: Any, shape: Any = None, dtype: Any = None) -> Any:
    """Dirichlet(alpha) vectors along the last axis: softmax of log-gamma samples."""
    data, _ = _unwrap("dirichlet", key)
    dtype = _float_dtype("dirichlet", dtype)
    alpha = _array(alpha)
    a_shape = aval(alpha).shape
    if len(a_shape) < 1:
        raise ValueError(f"dirichlet requires alpha.ndim >= 1, got alpha.ndim == {len(a_shape)}")
    if shape is None:
        shape = a_shape[:-1]
    else:
        shape = _canonical_shape("dirichlet", shape)
        _check_shape("dirichlet", shape, a_shape[:-1])
    logs = _gamma_keys(data, _as(alpha, dtype, (*shape, a_shape[-1])), log_space=True)
    unnormalized = jnp.exp(logs - jnp.max(logs, axis=-1, keepdims=True))
    return unnormalized / jnp.sum(unnormalized, axis=-1, keepdims=True)


def chisquare(key: Any, df: Any, shape: Any = None, dtype: Any = None) -> Any:
    data, _ = _unwrap("chisquare", key)
    dtype = _float_dtype("chisquare", dtype)
    shape = _shape_or_broadcast("chisquare", shape, df)
    half_df = lax.div(_as(df, dtype, shape), 2.0)
    return lax.mul(lax.exp(_gamma_keys(data, half_df, log_space=True)), 2.0)


def f(key: Any, dfnum: Any, dfden: Any, shape: Any = None, dtype: Any = None) -> Any:
    data, _ = _unwrap("f", key)
    dtype = _float_dtype("f", dtype)
    shape = _shape_or_broadcast("f", shape, dfnum, dfden)
    key_den, key_num = (KeyArray(k) for k in _split_list(data, 2))
    dfnum, dfden = _as(dfnum, dtype, shape), _as(dfden, dtype, shape)
    num = lax.div(chisquare(key_num, dfnum, shape, dtype), dfnum)
    den = lax.div(chisquare(key_den, dfden, shape, dtype), dfden)
    return lax.div(num, den)


def t(key: Any, df: Any, shape: Any = None, dtype: Any = None) -> Any:
    """Student's t: n * sqrt(df / 2 / g) with n normal and g ~ Gamma(df / 2)."""
    data, _ = _unwrap("t", key)
    dtype = _float_dtype("t", dtype)
    shape = _shape_or_broadcast("t", shape, df)
    key_n, key_g = _split_list(data, 2)
    n = _normal(key_n, shape, dtype)
    half_df = lax.div(_as(df, dtype, shape), 2.0)
    g = _gamma_keys(key_g, half_df, log_space=False)
    return n * jnp.sqrt(half_df / g)


def generalized_normal(key: Any, p: float, shape: Any = (), dtype: Any = None) -> Any:
    data, _ = _unwrap("generalized_normal", key)
    dtype = _float_dtype("generalized_normal", dtype)
    shape = _canonical_shape("generalized_normal", shape)
    key_g, key_r = _split_list(data, 2)
    g = _gamma_keys(key_g, _as(1 / p, dtype, shape), log_space=False)
    r = rademacher(key_r, shape, dtype)
    return r * g ** (1 / p)


def ball(key: Any, d: int, p: float = 2, shape: Any = (), dtype: Any = None) -> Any:
    """Uniform points in the unit p-norm ball of dimension d."""
    data, _ = _unwrap("ball", key)
    dtype = _float_dtype("ball", dtype)
    shape = _canonical_shape("ball", shape)
    d = operator.index(d)
    k1, k2 = (KeyArray(k) for k in _split_list(data, 2))
    g = generalized_normal(k1, p, (*shape, d), dtype)
    e = exponential(k2, shape, dtype)
    return g / (((jnp.abs(g) ** p).sum(-1) + e) ** (1 / p))[..., None]


# -- Poisson and binomial ---------------------------------------------------------------------------------------
def _poisson_knuth(keys: Any, lam: Any, shape: tuple[int, ...], dtype: np.dtype, max_iters: int) -> Any:
    # Multiply uniforms until the product drops below exp(-lam); the count of factors minus one is Poisson.
    def body(carry):
        i, k, rng, log_prod = carry
        rng, subkey = _split_list(rng, 2)
        k = lax.select(lax.gt(log_prod, lax.neg(lam)), lax.add(k, 1), k)
        u = _uniform(subkey, shape, np.dtype(np.float32))
        return lax.add(i, 1), k, rng, lax.add(log_prod, lax.log(u))

    def cond(carry):
        i, _, _, log_prod = carry
        return jnp.logical_and(jnp.any(lax.gt(log_prod, lax.neg(lam))), lax.lt(i, max_iters))

    init = (jnp.asarray(0, dtype=dtype), _full(shape, 0, dtype), keys, _full(shape, 0, np.float32))
    k = lax.while_loop(cond, body, init)[1]
    return convert(lax.sub(k, 1), dtype)


def _poisson_rejection(keys: Any, lam: Any, shape: tuple[int, ...], dtype: np.dtype, max_iters: int) -> Any:
    # Hormann's transformed rejection with squeeze (PTRS), for lam >= 10.
    log_lam = lax.log(lam)
    b = 0.931 + 2.53 * lax.sqrt(lam)
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    v_r = 0.9277 - 3.6224 / (b - 2)

    def body(carry):
        i, k_out, accepted, rng = carry
        rng, key_u, key_v = _split_list(rng, 3)
        u = _uniform(key_u, shape, aval(lam).dtype) - 0.5
        v = _uniform(key_v, shape, aval(lam).dtype)
        u_shifted = 0.5 - abs(u)
        k = lax.floor((2 * a / u_shifted + b) * u + lam + 0.43)
        s = lax.log(v * inv_alpha / (a / (u_shifted * u_shifted) + b))
        t_ = -lam + k * log_lam - lax.lgamma(k + 1)
        accept1 = (u_shifted >= 0.07) & (v <= v_r)
        reject = (k < 0) | ((u_shifted < 0.013) & (v > u_shifted))
        accept = accept1 | (~reject & (s <= t_))
        return lax.add(i, 1), lax.select(accept, k, k_out), accepted | accept, rng

    def cond(carry):
        i, _, accepted, _ = carry
        return jnp.logical_and(jnp.any(jnp.logical_not(accepted)), lax.lt(i, max_iters))

    init = (jnp.asarray(0, dtype=dtype), _full(shape, -1, aval(lam).dtype), _full(shape, False, np.bool_), keys)
    return convert(lax.while_loop(cond, body, init)[1], dtype)


def poisson(key: Any, lam: Any, shape: Any = None, dtype: Any = None) -> Any:
    """Poisson(lam) counts: Knuth's product method for lam < 10, transformed rejection above."""
    data, _ = _unwrap("poisson", key)
    dtype = _user_dtype("poisson", dtype, dtypes.default_int_dtype(), "iu", "an integer dtype")
    lam = _array(lam)
    shape = aval(lam).shape if shape is None else _canonical_shape("poisson", shape)
    _check_shape("poisson", shape, aval(lam).shape)
    lam = _as(lam, np.dtype(np.float32), shape)
    use_knuth = jnp.isnan(lam) | (lam < 10)
    lam_knuth = lax.select(use_knuth, lam, _full(shape, 0.0, np.float32))
    lam_rejection = lax.select(use_knuth, _full(shape, 1e5, np.float32), lam)
    max_iters = int(np.iinfo(dtype).max)
    result = lax.select(use_knuth, _poisson_knuth(data, lam_knuth, shape, dtype, max_iters),
                        _poisson_rejection(data, lam_rejection, shape, dtype, max_iters))
    return lax.select(lam == 0, _full(shape, 0, dtype), result)


def _stirling_approx_tail(k: Any) -> Any:
    # log k! - Stirling's approximation: a table for k <= 9, the series beyond.
    table = jnp.asarray(np.array([0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509,
                                  0.0166446911898211, 0.0138761288230707, 0.0118967099458917, 0.0104112652619720,
                                  0.00925546218271273, 0.00833056343336287], aval(k).dtype))
    use_table = k <= 9
    k = jnp.clip(k, 0.0, 9.0)
    kp1sq = (k + 1) * (k + 1)
    approx = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)
    return lax.select(use_table, jnp.take(table, convert(jnp.floor(k), np.int32)), approx)


def _binomial_inversion(keys, count, prob, shape, dtype, max_iters):
    log1minusprob = jnp.log1p(-prob)

    def body(carry):
        i, num_geom, geom_sum, rng = carry
        subkey, rng = _split_list(rng, 2)
        num_geom_out = lax.select(geom_sum <= count, num_geom + 1, num_geom)
        u = _uniform(subkey, shape, aval(prob).dtype)
        geom = jnp.ceil(jnp.log(u) / log1minusprob)
        return i + 1, num_geom_out, geom_sum + geom, rng

    def cond(carry):
        return jnp.logical_and(jnp.any(carry[2] <= count), carry[0] < max_iters)

    zeros = _full(shape, 0, aval(prob).dtype)
    k = lax.while_loop(cond, body, (jnp.asarray(0, np.int32), zeros, zeros, keys))[1]
    return convert(k - 1, dtype)


def _btrs(keys, count, prob, shape, dtype, max_iters):
    # Hormann's transformed rejection (BTRS) for count * prob > 10.
    stddev = jnp.sqrt(count * prob * (1 - prob))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * prob
    c = count * prob + 0.5
    v_r = 0.92 - 4.2 / b
    r = prob / (1 - prob)
    alpha = (2.83 + 5.1 / b) * stddev
    m = jnp.floor((count + 1) * prob)

    def body(carry):
        i, k_out, accepted, rng = carry
        rng, key_u, key_v = _split_list(rng, 3)
        u = _uniform(key_u, shape, aval(prob).dtype) - 0.5
        v = _uniform(key_v, shape, aval(prob).dtype)
        us = 0.5 - jnp.abs(u)
        accept1 = (us >= 0.07) & (v <= v_r)
        k = jnp.floor((2 * a / us + b) * u + c)
        reject = (k < 0) | (k > count)
        v = jnp.log(v * alpha / (a / (us * us) + b))
        upper = ((m + 0.5) * jnp.log((m + 1) / (r * (count - m + 1)))
                 + (count + 1) * jnp.log((count - m + 1) / (count - k + 1))
                 + (k + 0.5) * jnp.log(r * (count - k + 1) / (k + 1))
                 + _stirling_approx_tail(m) + _stirling_approx_tail(count - m)
                 - _stirling_approx_tail(k) - _stirling_approx_tail(count - k))
        accept = accept1 | (~reject & (v <= upper))
        return i + 1, lax.select(accept, k, k_out), accepted | accept, rng

    def cond(carry):
        return jnp.logical_and(jnp.any(jnp.logical_not(carry[2])), carry[0] < max_iters)

    init = (jnp.asarray(0, np.int32), _full(shape, -1, aval(prob).dtype), _full(shape, False, np.bool_), keys)
    return convert(lax.while_loop(cond, body, init)[1], dtype)


def binomial(key: Any, n: Any, p: Any, shape: Any = None, dtype: Any = None) -> Any:
    """Binomial(n, p) counts as floats: inversion for n * min(p, 1-p) <= 10, BTRS above (TensorFlow's scheme)."""
    data, _ = _unwrap("binomial", key)
    check_arraylike("binomial", n, p)
    dtype = _float_dtype("binomial", dtype)
    shape = _shape_or_broadcast("binomial", shape, n, p)
    (prob,) = _promote_inexact(p)
    count = broadcast_to(convert(_array(n), aval(prob).dtype), shape)
    prob = broadcast_to(prob, shape)
    p_lt_half = prob < 0.5
    q = lax.select(p_lt_half, prob, 1.0 - prob)
    count_nan_or_neg = jnp.isnan(count) | (count < 0.0)
    count_inf = jnp.isinf(count)
    q_is_nan = jnp.isnan(q)
    q_l_0 = q < 0.0
    q = lax.select(q_is_nan | q_l_0, _full(shape, 0.01, aval(q).dtype), q)
    use_inversion = count_nan_or_neg | (count * q <= 10.0)
    count = jnp.floor(count)
    count_inv = lax.select(use_inversion, count, _full(shape, 0.0, aval(count).dtype))
    count_btrs = lax.select(use_inversion, _full(shape, 1e4, aval(count).dtype), count)
    q_btrs = lax.select(use_inversion, _full(shape, 0.5, aval(q).dtype), q)
    max_iters = float(np.finfo(dtype).max)
    samples = lax.select(use_inversion, _binomial_inversion(data, count_inv, q, shape, dtype, max_iters),
                         _btrs(data, count_btrs, q_btrs, shape, dtype, max_iters))
    invalid = q_l_0 | q_is_nan | count_nan_or_neg
    samples = lax.select(invalid, _full(shape, np.nan, dtype), samples)
    samples = lax.select(count_inf & ~invalid, _full(shape, np.inf, dtype), samples)
    return lax.select(p_lt_half | count_nan_or_neg | q_is_nan | count_inf, samples, convert(count, dtype) - samples)


def multinomial(key: Any, n: Any, p: Any, *, shape: Any = None, dtype: Any = None, unroll: int | bool = 1) -> Any:
    """Counts of n trials over the outcomes of the last axis of p: a binomial per outcome, each on the
    trials the earlier outcomes left, with probability p_i / (p_i + ... + p_last)."""
    data, _ = _unwrap("multinomial", key)
    check_arraylike("multinomial", n, p)
    dtype = _float_dtype("multinomial", dtype)
    n, p = _promote_inexact(n, p)
    shape = aval(p).shape if shape is None else _canonical_shape("multinomial", shape)
    n, p = broadcast_to(n, shape[:-1]), broadcast_to(p, shape)
    p = jnp.moveaxis(p, -1, 0)
    remaining = jnp.flip(jnp.cumsum(jnp.flip(p, 0), axis=0), 0)
    ratios = p / jnp.where(remaining == 0, 1, remaining)
    keys = _split(data, (aval(ratios).shape[0],))

    def draw(remainder, ratio_and_key):
        ratio, k = ratio_and_key
        count = binomial(k, remainder, jnp.clip(ratio, 0, 1), dtype=aval(remainder).dtype)
        return remainder - count, count

    _, counts = lax.scan(draw, n, (ratios, keys), unroll=unroll)
    return convert(jnp.moveaxis(counts, 0, -1), dtype)
