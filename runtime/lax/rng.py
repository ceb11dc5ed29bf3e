"""``lax.rng_bit_generator``: XLA's stateless bit generator, bit for bit.

The key is the generator's state, four uint32 words (or, as JAX also takes it, two uint64): words 0-1 are the
key proper, words 2-3 a 64-bit counter (low word first). A call hashes consecutive counter values and returns the
key with its counter advanced past them. The algorithms are those of XLA's ``RngBitGenerator`` expansion:

- Threefry-2x32 (20 rounds) of the 64-bit counter ``state + i``: for 32-bit outputs each hash gives two
  numbers, the two halves interleaved along one axis of the shape (the first even axis, else the longest); for
  64-bit outputs each hash is one number (low word first).
- Philox-4x32 (10 rounds) of the 128-bit counter whose low 64 bits are words 2-3 and high 64 bits words 0-1,
  plus i: each hash gives four 32-bit numbers (or two 64-bit ones), laid out in turn.

XLA's CPU backend takes Philox for ``RNG_DEFAULT``. 8- and 16-bit outputs are the low bits of 32-bit ones.
Everything is uint32 arithmetic over srcjax's own operations, so it runs eagerly, compiled and batched.
"""

from __future__ import annotations

import enum
import functools
import math
import operator
from typing import Any

import numpy as np

__all__ = ["RandomAlgorithm", "rng_bit_generator"]


class RandomAlgorithm(enum.IntEnum):
    """Which algorithm ``rng_bit_generator`` runs."""

    RNG_DEFAULT = 0
    RNG_THREE_FRY = 1
    RNG_PHILOX = 2

    def __str__(self) -> str:
        return self.name


_U32 = np.dtype(np.uint32)
_BITS = {np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64)}


def _add(lo: Any, hi: Any, n: Any) -> tuple[Any, Any]:
    """The 64-bit sum (lo, hi) + n of uint32 words, n a uint32 (array)."""
    total = lo + n
    return total, hi + (total < lo).astype(_U32)


def _interleave(parts: list[Any], axis: int) -> Any:
    """Element ``len(parts) * i + j`` along ``axis`` is ``parts[j][i]``."""
    import srcjax.runtime.numpy as jnp

    stacked = jnp.stack(parts, axis=axis + 1)
    shape = list(parts[0].shape)
    shape[axis] *= len(parts)
    return stacked.reshape(shape)


def _threefry32(words: list[Any], shape: tuple[int, ...]) -> tuple[Any, list[Any]]:
    """32-bit Threefry bits: one hash per pair of numbers, the pairs interleaved along the split axis."""
    import srcjax.runtime.numpy as jnp
    from srcjax.runtime.lax import threefry2x32

    axis = 0 if not shape else next((i for i, d in enumerate(shape) if d % 2 == 0), int(np.argmax(shape)))
    half = (1,) if not shape else shape[:axis] + (-(-shape[axis] // 2),) + shape[axis + 1:]
    count = math.prod(half)
    lo, hi = _add(words[2], words[3], jnp.arange(count, dtype=_U32))
    out = threefry2x32(*(jnp.broadcast_to(k, (count,)) for k in words[:2]), lo, hi)
    if not shape:  # a scalar is the first half of one hash
        bits = out[0].reshape(())
    else:
        bits = _interleave([o.reshape(half) for o in out], axis)[tuple(slice(0, d) for d in shape)]
    return bits, [words[0], words[1], *_add(words[2], words[3], np.uint32(count))]


def _threefry64(words: list[Any], shape: tuple[int, ...]) -> tuple[Any, list[Any]]:
    import srcjax.runtime.numpy as jnp
    from srcjax.runtime.lax import threefry2x32

    count = math.prod(shape)
    lo, hi = _add(words[2], words[3], jnp.arange(count, dtype=_U32))
    low, high = threefry2x32(*(jnp.broadcast_to(k, (count,)) for k in words[:2]), lo, hi)
    return _join(low, high).reshape(shape), [words[0], words[1], *_add(words[2], words[3], np.uint32(count))]


def _join(low: Any, high: Any) -> Any:
    """uint64 from its two uint32 halves."""
    return low.astype(np.uint64) | (high.astype(np.uint64) << np.uint64(32))


def _philox4x32(counter: list[Any], k0: Any, k1: Any) -> list[Any]:
    """Philox-4x32 with 10 rounds: each round multiplies words 0 and 2 by fixed odd constants and mixes the
    halves of the products with words 1 and 3 and the key; the key grows by the Weyl constants."""
    from srcjax.runtime.lax import mulhi

    a, b = np.uint32(0xD2511F53), np.uint32(0xCD9E8D57)
    x = counter
    for _ in range(10):
        x = [mulhi(x[2], b) ^ x[1] ^ k0, x[2] * b, mulhi(x[0], a) ^ x[3] ^ k1, x[0] * a]
        k0, k1 = k0 + np.uint32(0x9E3779B9), k1 + np.uint32(0xBB67AE85)
    return x


def _philox(words: list[Any], shape: tuple[int, ...], wide: bool) -> tuple[Any, list[Any]]:
    """Philox bits: 4 numbers (2 when 64-bit) per hash of the 128-bit counter, laid out hash by hash."""
    import srcjax.runtime.numpy as jnp

    size = math.prod(shape)
    count = -(-size * (2 if wide else 1) // 4)
    step = jnp.arange(count, dtype=_U32)
    w0, w1 = _add(words[2], words[3], step)  # the low 64 bits, carried into the high ones
    carry = (w1 < words[3]).astype(_U32)  # the low 64 bits wrapped
    w2, w3 = _add(words[0], words[1], carry)
    hashes = _philox4x32([w0, w1, w2, w3], *(jnp.broadcast_to(k, (count,)) for k in words[:2]))
    parts = [_join(hashes[0], hashes[1]), _join(hashes[2], hashes[3])] if wide else hashes
    bits = _interleave(parts, 0)[:size].reshape(shape)
    return bits, [words[0], words[1], *_add(words[2], words[3], np.uint32(count))]


def _key_words(key: Any) -> tuple[list[Any], Any]:
    """The four uint32 words of a uint32[4] or uint64[2] key, and how to give the new words back in its form."""
    import srcjax.runtime.numpy as jnp

    if key.shape == (4,) and key.dtype == _U32:
        return [key[i] for i in range(4)], jnp.stack
    if key.shape == (2,) and key.dtype == np.uint64:
        halves = [(key[i] & np.uint64(0xFFFFFFFF)).astype(_U32) for i in range(2)]
        highs = [(key[i] >> np.uint64(32)).astype(_U32) for i in range(2)]
        return [halves[0], highs[0], halves[1], highs[1]], lambda w: jnp.stack([_join(*w[:2]), _join(*w[2:])])
    raise TypeError(f"rng_bit_generator: the key must be uint32[4] (or uint64[2]), got {key.dtype.name}"
                    f"{list(key.shape)}")


def rng_bit_generator(key: Any, shape: Any, dtype: Any = np.uint32,
                      algorithm: RandomAlgorithm = RandomAlgorithm.RNG_DEFAULT, *,
                      out_sharding: Any = None) -> tuple[Any, Any]:
    """``(new_key, bits)``: uniformly random unsigned integers of ``shape`` and ``dtype`` from the generator state
    ``key``, and the state advanced past them (see the module docstring)."""
    import srcjax.runtime.numpy as jnp
    from srcjax.runtime import dtypes

    shape = tuple(operator.index(d) for d in shape)
    dtype = dtypes.check_user_dtype(dtype, "rng_bit_generator")
    if dtype not in _BITS:
        raise TypeError(f"rng_bit_generator: unsupported dtype {dtype}")
    return _batchable(shape, dtype, RandomAlgorithm(algorithm))(jnp.asarray(key))


def _generate(key: Any, shape: tuple[int, ...], dtype: np.dtype, algorithm: RandomAlgorithm) -> tuple[Any, Any]:
    words, pack = _key_words(key)
    wide = dtype == np.uint64
    if algorithm == RandomAlgorithm.RNG_THREE_FRY:
        bits, words = (_threefry64 if wide else _threefry32)(words, shape)
    else:  # RNG_DEFAULT is Philox on the CPU
        bits, words = _philox(words, shape, wide)
    return pack(words), bits if bits.dtype == dtype else bits.astype(dtype)


@functools.cache
def _batchable(shape: tuple[int, ...], dtype: np.dtype, algorithm: RandomAlgorithm) -> Any:
    """The generator of one shape, dtype and algorithm as a function of the key, with JAX's batching rule: the
    first key draws the bits of the whole batch, as one call of shape ``(size, *shape)``, and only it advances
    (the other keys come back as they were). (Made on first use: custom_batching imports the runtime.)"""
    from srcjax.runtime.custom_batching import custom_vmap

    def generate_batched(size: int, in_batched: list, keys: Any) -> tuple[tuple[Any, Any], tuple[bool, bool]]:
        new_key, bits = _batchable((size, *shape), dtype, algorithm)(keys[0])
        return (keys.at[0].set(new_key), bits), (True, True)

    def rng_bit_generator(key: Any) -> tuple[Any, Any]:
        return _generate(key, shape, dtype, algorithm)

    generate = custom_vmap(rng_bit_generator)
    generate.def_vmap(generate_batched)
    return generate
