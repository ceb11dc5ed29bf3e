"""srcjax.random against JAX: the verified vectors of shared/notes/PRNG.md, JAX's recorded outputs of every
sampler in both threefry layouts, typed keys, errors, and statistical checks of the samplers.

The EXPECTED table was printed by JAX 0.10.2 for the calls in CASES: the block between the ``cases``
markers was exec'd with ``np``, and each call run as ``call(jax.random, jax.numpy)`` under
``jax_threefry_partitionable`` False and True (and ``jax_enable_x64`` where the case says), printing the
result's dtype, shape and values (floats in their shortest round-trip form, complex as (re, im) pairs).
"""

import contextlib
import math
import warnings

import numpy as np
import pytest

import srcjax
import srcjax.numpy as jnp
from srcjax.runtime.config import config
from srcjax import random


@contextlib.contextmanager
def flags(partitionable=False, x64=False, seed_offset=0):
    saved = {
        name: config.read(name) for name in ("jax_threefry_partitionable", "jax_enable_x64", "jax_random_seed_offset")
    }
    config.update("jax_threefry_partitionable", partitionable)
    config.update("jax_enable_x64", x64)
    config.update("jax_random_seed_offset", seed_offset)
    try:
        yield
    finally:
        for name, value in saved.items():
            config.update(name, value)


# --- cases --- (read by the recording script too: each case is (id, needs_x64, call on (random, jnp)))
EXACT = "exact"  # bit-identical to JAX
CLOSE = "close"  # float math (log, pow, erf, linear algebra) may differ from XLA's in the last bits
CASES = [
    # keys
    ("split_default", False, EXACT, lambda R, jnp: R.split(R.PRNGKey(0))),
    ("split_3", False, EXACT, lambda R, jnp: R.split(R.PRNGKey(42), 3)),
    ("split_shape", False, EXACT, lambda R, jnp: R.split(R.PRNGKey(1), (2, 3))),
    ("split_typed", False, EXACT, lambda R, jnp: R.key_data(R.split(R.key(7), 4))),
    ("split_0", False, EXACT, lambda R, jnp: R.split(R.PRNGKey(3), 0)),
    ("fold_in_4", False, EXACT, lambda R, jnp: R.fold_in(R.PRNGKey(0), 4)),
    ("fold_in_big", False, EXACT, lambda R, jnp: R.fold_in(R.PRNGKey(5), 123456789)),
    ("fold_in_typed", False, EXACT, lambda R, jnp: R.key_data(R.fold_in(R.key(3), 0))),
    ("fold_in_float", False, EXACT, lambda R, jnp: R.fold_in(R.PRNGKey(0), 3.7)),
    ("seed_neg", False, EXACT, lambda R, jnp: R.PRNGKey(-1)),
    ("seed_wide", False, EXACT, lambda R, jnp: R.PRNGKey(2**33 + 7)),
    ("seed_uint32", False, EXACT, lambda R, jnp: R.PRNGKey(np.uint32(4000000000))),
    ("seed_int8", False, EXACT, lambda R, jnp: R.PRNGKey(np.int8(-3))),
    ("seed_typed", False, EXACT, lambda R, jnp: R.key_data(R.key(12345))),
    ("seed_neg_x64", True, EXACT, lambda R, jnp: R.PRNGKey(-2)),
    ("seed_wide_x64", True, EXACT, lambda R, jnp: R.PRNGKey(2**40 + 3)),
    # bits
    ("bits_u32", False, EXACT, lambda R, jnp: R.bits(R.PRNGKey(1701), (3,))),
    ("bits_u32_odd", False, EXACT, lambda R, jnp: R.bits(R.PRNGKey(2), (5,))),
    ("bits_u32_2d", False, EXACT, lambda R, jnp: R.bits(R.PRNGKey(2), (2, 3))),
    ("bits_u32_scalar", False, EXACT, lambda R, jnp: R.bits(R.PRNGKey(2))),
    ("bits_u16", False, EXACT, lambda R, jnp: R.bits(R.PRNGKey(1701), (3,), jnp.uint16)),
    ("bits_u16_5", False, EXACT, lambda R, jnp: R.bits(R.PRNGKey(9), (5,), jnp.uint16)),
    ("bits_u8", False, EXACT, lambda R, jnp: R.bits(R.PRNGKey(1701), (3,), jnp.uint8)),
    ("bits_u8_7", False, EXACT, lambda R, jnp: R.bits(R.PRNGKey(9), (7,), jnp.uint8)),
    ("bits_u64", True, EXACT, lambda R, jnp: R.bits(R.PRNGKey(1701), (3,), jnp.uint64)),
    ("bits_typed", False, EXACT, lambda R, jnp: R.bits(R.key(4), (4,))),
    # uniform and normal
    ("uniform_f32", False, EXACT, lambda R, jnp: R.uniform(R.PRNGKey(0), (5,))),
    ("uniform_range", False, EXACT, lambda R, jnp: R.uniform(R.PRNGKey(1), (2, 3), minval=-2.0, maxval=3.0)),
    (
        "uniform_array_bounds",
        False,
        EXACT,
        lambda R, jnp: R.uniform(R.PRNGKey(1), (2, 3), minval=jnp.asarray([0.0, 1.0, 2.0]), maxval=5.0),
    ),
    ("uniform_scalar", False, EXACT, lambda R, jnp: R.uniform(R.key(0))),
    ("uniform_key0_3", False, EXACT, lambda R, jnp: R.uniform(R.key(0), (3,))),
    ("uniform_f16", False, EXACT, lambda R, jnp: R.uniform(R.PRNGKey(3), (4,), jnp.float16)),
    ("uniform_f16_range", False, EXACT, lambda R, jnp: R.uniform(R.PRNGKey(3), (6,), jnp.float16, -2.3, 3.7)),
    ("uniform_f64_range", True, EXACT, lambda R, jnp: R.uniform(R.PRNGKey(3), (6,), jnp.float64, -2.3, 3.7)),
    ("uniform_f64", True, EXACT, lambda R, jnp: R.uniform(R.PRNGKey(3), (3,), jnp.float64)),
    ("normal_10", False, EXACT, lambda R, jnp: R.normal(R.PRNGKey(0), (10,))),
    ("normal_9", False, EXACT, lambda R, jnp: R.normal(R.PRNGKey(0), (9,))),
    ("normal_2d", False, EXACT, lambda R, jnp: R.normal(R.key(1), (2, 3))),
    ("normal_scalar", False, EXACT, lambda R, jnp: R.normal(R.PRNGKey(11), ())),
    ("normal_complex", False, CLOSE, lambda R, jnp: R.normal(R.PRNGKey(2), (3,), jnp.complex64)),
    ("normal_f16", False, CLOSE, lambda R, jnp: R.normal(R.PRNGKey(2), (3,), jnp.float16)),
    ("normal_f64", True, CLOSE, lambda R, jnp: R.normal(R.PRNGKey(2), (3,), jnp.float64)),
    ("truncated_normal", False, CLOSE, lambda R, jnp: R.truncated_normal(R.PRNGKey(5), -1.0, 2.0, (5,))),
    (
        "truncated_normal_arrays",
        False,
        CLOSE,
        lambda R, jnp: R.truncated_normal(R.PRNGKey(5), jnp.asarray([-3.0, 0.0, 1.0]), 1.5),
    ),
    ("lognormal", False, CLOSE, lambda R, jnp: R.lognormal(R.PRNGKey(6), 0.5, (3,))),
    (
        "multivariate_normal",
        False,
        CLOSE,
        lambda R, jnp: R.multivariate_normal(
            R.PRNGKey(7), jnp.asarray([1.0, -1.0]), jnp.asarray([[2.0, 0.5], [0.5, 1.0]]), (3,)
        ),
    ),
    ("maxwell", False, CLOSE, lambda R, jnp: R.maxwell(R.PRNGKey(8), (3,))),
    ("double_sided_maxwell", False, CLOSE, lambda R, jnp: R.double_sided_maxwell(R.PRNGKey(8), 1.0, 2.0, (3,))),
    ("orthogonal", False, CLOSE, lambda R, jnp: R.orthogonal(R.PRNGKey(9), 3)),
    ("wald", False, CLOSE, lambda R, jnp: R.wald(R.PRNGKey(9), 1.5, (3,))),
    # one uniform per value
    ("exponential", False, CLOSE, lambda R, jnp: R.exponential(R.PRNGKey(10), (4,))),
    ("laplace", False, CLOSE, lambda R, jnp: R.laplace(R.PRNGKey(10), (4,))),
    ("logistic", False, CLOSE, lambda R, jnp: R.logistic(R.PRNGKey(10), (4,))),
    ("cauchy", False, CLOSE, lambda R, jnp: R.cauchy(R.PRNGKey(10), (3,))),
    ("gumbel", False, CLOSE, lambda R, jnp: R.gumbel(R.PRNGKey(11), (4,))),
    ("gumbel_high", False, CLOSE, lambda R, jnp: R.gumbel(R.PRNGKey(11), (3,), mode="high")),
    ("pareto", False, CLOSE, lambda R, jnp: R.pareto(R.PRNGKey(12), 2.0, (3,))),
    ("weibull_min", False, CLOSE, lambda R, jnp: R.weibull_min(R.PRNGKey(12), 1.5, 2.0, (3,))),
    ("rayleigh", False, CLOSE, lambda R, jnp: R.rayleigh(R.PRNGKey(12), 2.0, (3,))),
    ("triangular", False, CLOSE, lambda R, jnp: R.triangular(R.PRNGKey(12), 0.0, 1.0, 3.0, (4,))),
    ("geometric", False, EXACT, lambda R, jnp: R.geometric(R.PRNGKey(13), 0.3, (5,))),
    # discrete
    ("randint_3x3", False, EXACT, lambda R, jnp: R.randint(R.PRNGKey(0), (3, 3), 0, 8)),
    ("randint_int8", False, EXACT, lambda R, jnp: R.randint(R.PRNGKey(0), (5,), -5, 5, jnp.int8)),
    ("randint_uint8_256", False, EXACT, lambda R, jnp: R.randint(R.PRNGKey(0), (4,), 0, 256, jnp.uint8)),
    (
        "randint_array_bounds",
        False,
        EXACT,
        lambda R, jnp: R.randint(R.PRNGKey(4), (2, 3), jnp.asarray([0, 10, 100]), 1000),
    ),
    ("randint_empty_range", False, EXACT, lambda R, jnp: R.randint(R.PRNGKey(4), (3,), 5, 2)),
    ("randint_wide", False, EXACT, lambda R, jnp: R.randint(R.PRNGKey(4), (4,), -(2**31), 2**31 - 1)),
    (
        "randint_uint32",
        False,
        EXACT,
        lambda R, jnp: R.randint(R.PRNGKey(4), (3,), 7, jnp.asarray(3000000000, dtype=jnp.uint32), jnp.uint32),
    ),
    ("randint_int64", True, EXACT, lambda R, jnp: R.randint(R.PRNGKey(4), (3,), -(2**40), 2**45, jnp.int64)),
    ("bernoulli", False, EXACT, lambda R, jnp: R.bernoulli(R.PRNGKey(14), 0.5, (6,))),
    ("bernoulli_p", False, EXACT, lambda R, jnp: R.bernoulli(R.PRNGKey(14), jnp.asarray([0.1, 0.5, 0.9]))),
    ("bernoulli_high", False, EXACT, lambda R, jnp: R.bernoulli(R.PRNGKey(14), 0.3, (4,), mode="high")),
    ("rademacher", False, EXACT, lambda R, jnp: R.rademacher(R.PRNGKey(15), (6,))),
    (
        "categorical",
        False,
        EXACT,
        lambda R, jnp: R.categorical(R.PRNGKey(16), jnp.log(jnp.asarray([0.1, 0.2, 0.3, 0.4])), shape=(6,)),
    ),
    (
        "categorical_axis0",
        False,
        EXACT,
        lambda R, jnp: R.categorical(R.PRNGKey(16), jnp.asarray([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]]), axis=0),
    ),
    (
        "categorical_no_replace",
        False,
        EXACT,
        lambda R, jnp: R.categorical(R.PRNGKey(16), jnp.zeros(5), shape=(3,), replace=False),
    ),
    ("choice_int", False, EXACT, lambda R, jnp: R.choice(R.PRNGKey(17), 10, (4,))),
    (
        "choice_no_replace",
        False,
        EXACT,
        lambda R, jnp: R.choice(R.PRNGKey(17), jnp.arange(10, 20), (3,), replace=False),
    ),
    (
        "choice_p",
        False,
        EXACT,
        lambda R, jnp: R.choice(R.PRNGKey(17), 5, (4,), p=jnp.asarray([0.1, 0.2, 0.3, 0.2, 0.2])),
    ),
    (
        "choice_p_no_replace",
        False,
        EXACT,
        lambda R, jnp: R.choice(R.PRNGKey(17), 5, (3,), replace=False, p=jnp.asarray([0.1, 0.2, 0.3, 0.2, 0.2])),
    ),
    ("choice_axis1", False, EXACT, lambda R, jnp: R.choice(R.PRNGKey(17), jnp.arange(12).reshape(3, 4), (2,), axis=1)),
    ("permutation_int", False, EXACT, lambda R, jnp: R.permutation(R.PRNGKey(18), 10)),
    (
        "permutation_axis1",
        False,
        EXACT,
        lambda R, jnp: R.permutation(R.PRNGKey(18), jnp.arange(12).reshape(3, 4), axis=1),
    ),
    (
        "permutation_independent",
        False,
        EXACT,
        lambda R, jnp: R.permutation(R.PRNGKey(18), jnp.arange(12).reshape(3, 4), axis=1, independent=True),
    ),
    ("permutation_typed", False, EXACT, lambda R, jnp: R.permutation(R.key(18), jnp.asarray([1.5, 2.5, 3.5]))),
    # gamma family and counts
    ("gamma", False, CLOSE, lambda R, jnp: R.gamma(R.PRNGKey(19), 1.5, (4,))),
    ("gamma_small_a", False, CLOSE, lambda R, jnp: R.gamma(R.PRNGKey(19), 0.3, (4,))),
    ("gamma_array", False, CLOSE, lambda R, jnp: R.gamma(R.PRNGKey(20), jnp.asarray([0.5, 1.0, 2.0, 5.0]))),
    ("loggamma", False, CLOSE, lambda R, jnp: R.loggamma(R.PRNGKey(21), 0.2, (3,))),
    ("beta", False, CLOSE, lambda R, jnp: R.beta(R.PRNGKey(22), 2.0, 3.0, (4,))),
    ("dirichlet", False, CLOSE, lambda R, jnp: R.dirichlet(R.PRNGKey(23), jnp.asarray([1.0, 2.0, 3.0]))),
    ("dirichlet_shape", False, CLOSE, lambda R, jnp: R.dirichlet(R.PRNGKey(23), jnp.asarray([0.5, 0.5]), (2,))),
    ("chisquare", False, CLOSE, lambda R, jnp: R.chisquare(R.PRNGKey(24), 2.5, (3,))),
    ("f", False, CLOSE, lambda R, jnp: R.f(R.PRNGKey(24), 3.0, 5.0, (3,))),
    ("t", False, CLOSE, lambda R, jnp: R.t(R.PRNGKey(24), 3.0, (3,))),
    ("generalized_normal", False, CLOSE, lambda R, jnp: R.generalized_normal(R.PRNGKey(25), 1.5, (3,))),
    ("ball", False, CLOSE, lambda R, jnp: R.ball(R.PRNGKey(25), 3, shape=(2,))),
    ("poisson_small", False, EXACT, lambda R, jnp: R.poisson(R.PRNGKey(26), 3.0, (6,))),
    ("poisson_large", False, EXACT, lambda R, jnp: R.poisson(R.PRNGKey(26), 50.0, (4,))),
    ("poisson_mixed", False, EXACT, lambda R, jnp: R.poisson(R.PRNGKey(27), jnp.asarray([0.0, 1.0, 12.0, 100.0]))),
    ("binomial_small", False, EXACT, lambda R, jnp: R.binomial(R.PRNGKey(28), 10.0, 0.3, (4,))),
    ("multinomial", False, EXACT, lambda R, jnp: R.multinomial(R.PRNGKey(29), 10.0, jnp.asarray([0.2, 0.3, 0.5]))),
    (
        "multinomial_batch",
        False,
        EXACT,
        lambda R, jnp: R.multinomial(R.PRNGKey(29), jnp.asarray([5.0, 50.0]), jnp.asarray([[0.1, 0.9], [0.5, 0.5]])),
    ),
    ("binomial_large", False, EXACT, lambda R, jnp: R.binomial(R.PRNGKey(28), 100.0, 0.6, (3,))),
]
# --- end cases ---
# The outputs JAX printed for CASES (recorded, not computed here).
EXPECTED = {
    False: {
        "split_default": ("uint32", (2, 2), [[4146024105, 967050713], [2718843009, 1272950319]]),
        "split_3": ("uint32", (3, 2), [[3134548294, 3733159049], [3746501087, 894150801], [801545058, 2363201431]]),
        "split_shape": (
            "uint32",
            (2, 3, 2),
            [
                [[2276640802, 678091675], [543262595, 1902325640], [3103313315, 322800629]],
                [[2087527766, 2395191195], [2549061966, 4041350066], [549805673, 3523432456]],
            ],
        ),
        "split_typed": (
            "uint32",
            (4, 2),
            [[51277378, 1628829261], [1440439266, 395909871], [3088387524, 4291721531], [3731608162, 3705585371]],
        ),
        "split_0": ("uint32", (0, 2), []),
        "fold_in_4": ("uint32", (2,), [2285895361, 433833334]),
        "fold_in_big": ("uint32", (2,), [1276188560, 3905377080]),
        "fold_in_typed": ("uint32", (2,), [3716834203, 3481239269]),
        "fold_in_float": ("uint32", (2,), [2467461003, 3840466878]),
        "seed_neg": ("uint32", (2,), [0, 4294967295]),
        "seed_wide": ("uint32", (2,), [0, 7]),
        "seed_uint32": ("uint32", (2,), [0, 4000000000]),
        "seed_int8": ("uint32", (2,), [0, 4294967293]),
        "seed_typed": ("uint32", (2,), [0, 12345]),
        "seed_neg_x64": ("uint32", (2,), [4294967295, 4294967294]),
        "seed_wide_x64": ("uint32", (2,), [256, 3]),
        "bits_u32": ("uint32", (3,), [56197195, 4200222568, 961309823]),
        "bits_u32_odd": ("uint32", (5,), [1882815094, 4045909804, 1513520388, 2441629631, 1170640659]),
        "bits_u32_2d": ("uint32", (2, 3), [[1882815094, 4045909804, 3043762941], [2441629631, 1170640659, 4096935141]]),
        "bits_u32_scalar": ("uint32", (), 1821159224),
        "bits_u16": ("uint16", (3,), [41682, 1300, 55017]),
        "bits_u16_5": ("uint16", (5,), [9636, 40841, 6250, 21135, 19481]),
        "bits_u8": ("uint8", (3,), [216, 115, 43]),
        "bits_u8_7": ("uint8", (7,), [135, 60, 135, 8, 111, 26, 53]),
        "bits_u64": ("uint64", (3,), [3982329540505020460, 16822122385914693683, 7882654074788531506]),
        "bits_typed": ("uint32", (4,), [2609697535, 3557854240, 3092625430, 4099115968]),
        "uniform_f32": ("float32", (5,), [0.57450044, 0.09968603, 0.39316022, 0.8941783, 0.59656656]),
        "uniform_range": ("float32", (2, 3), [[2.1539693, -1.1697955, 2.2152429], [1.2144421, 0.8432697, 1.0722231]]),
        "uniform_array_bounds": (
            "float32",
            (2, 3),
            [[4.1539693, 1.6641636, 4.5291457], [3.2144423, 3.2746158, 3.8433337]],
        ),
        "uniform_scalar": ("float32", (), 0.41845703),
        "uniform_key0_3": ("float32", (3,), [0.9653214, 0.31468165, 0.63302994]),
        "uniform_f16": ("float16", (4,), [0.2041, 0.4531, 0.05664, 0.5156]),
        "uniform_f16_range": ("float16", (6,), [2.527, -0.871, 1.977, -2.178, 2.262, 1.332]),
        "uniform_f64_range": (
            "float64",
            (6,),
            [
                2.871455210699958,
                1.2980221371892187,
                3.646431517185153,
                0.36351791076648254,
                1.9243145528763246,
                3.225425122813734,
            ],
        ),
        "uniform_f64": ("float64", (3,), [0.2042374079588094, 0.3759073262702217, 0.45404934553002585]),
        "normal_10": (
            "float32",
            (10,),
            [
                -0.3721109,
                0.26423115,
                -0.18252768,
                -0.7368197,
                -0.44030377,
                -0.1521442,
                -0.67135346,
                -0.5908641,
                0.73168886,
                0.5673026,
            ],
        ),
        "normal_9": (
            "float32",
            (9,),
            [
                -0.3721109,
                0.26423115,
                -0.18252768,
                -0.7368197,
                0.44973662,
                -0.1521442,
                -0.67135346,
                -0.5908641,
                0.73168886,
            ],
        ),
        "normal_2d": ("float32", (2, 3), [[0.95730704, -0.9699289, 1.0070665], [0.3661903, 0.1729483, 0.29092234]]),
        "normal_scalar": ("float32", (), -0.11942908),
        "normal_complex": (
            "complex64",
            (3,),
            [[-0.17854045, -0.5756482], [1.3324457, -0.22851337], [-1.061663, 0.26498836]],
        ),
        "normal_f16": ("float16", (3,), [1.73, -1.046, -0.9155]),
        "normal_f64": ("float64", (3,), [-0.15508526216434632, 1.5718884129995188, 0.549536343824245]),
        "truncated_normal": ("float32", (5,), [0.5796177, 0.6177219, -0.22463877, 0.6590055, -0.7998421]),
        "truncated_normal_arrays": ("float32", (3,), [0.77626336, 0.28967786, 1.1725459]),
        "lognormal": ("float32", (3,), [0.566521, 1.1283815, 0.6195535]),
        "multivariate_normal": (
            "float32",
            (3, 2),
            [[-1.1481421, -2.3219888], [0.79982495, -1.3302085], [1.6433575, -1.2594761]],
        ),
        "maxwell": ("float32", (3,), [0.825787, 2.3899813, 0.81126803]),
        "double_sided_maxwell": ("float32", (3,), [3.0475426, 4.906269, -2.7434666]),
        "orthogonal": (
            "float32",
            (3, 3),
            [
                [-0.101311326, -0.9308779, 0.35100198],
                [0.98362166, -0.14659536, -0.10487248],
                [0.14907877, 0.3346284, 0.9304834],
            ],
        ),
        "wald": ("float32", (3,), [1.355413, 0.51189786, 0.4505273]),
        "exponential": ("float32", (4,), [2.41945, 0.007398969, 0.3379779, 2.1271765]),
        "laplace": ("float32", (4,), [-1.7263031, 4.2169604, 0.5558615, -1.4340297]),
        "logistic": ("float32", (4,), [2.32627, -4.902713, -0.9110309, 2.000282]),
        "cauchy": ("float32", (3,), [3.484042, -1.9049058, -0.79196453]),
        "gumbel": ("float32", (4,), [1.542187, -1.0584968, 0.23960769, -1.1807436]),
        "gumbel_high": ("float32", (3,), [-0.35707703, -0.59540856, 1.1137066]),
        "pareto": ("float32", (3,), [1.051057, 2.5320787, 1.5339001]),
        "weibull_min": ("float32", (3,), [0.47337455, 2.0446718, 1.3875018]),
        "rayleigh": ("float32", (3,), [4.3414745, 1.1647118, 2.1041179]),
        "triangular": ("float32", (4,), [0.53327453, 0.8474757, 1.403097, 0.6411145]),
        "geometric": ("int32", (5,), [6, 1, 3, 1, 1]),
        "randint_3x3": ("int32", (3, 3), [[2, 1, 3], [6, 1, 5], [6, 3, 4]]),
        "randint_int8": ("int8", (5,), [3, -4, -2, 3, 3]),
        "randint_uint8_256": ("uint8", (4,), [112, 249, 21, 134]),
        "randint_array_bounds": ("int32", (2, 3), [[725, 922, 877], [948, 811, 191]]),
        "randint_empty_range": ("int32", (3,), [5, 5, 5]),
        "randint_wide": ("int32", (4,), [-1958288298, 364632830, 1911871551, 1636266194]),
        "randint_uint32": ("uint32", (3,), [189195357, 315127645, 1059355213]),
        "randint_int64": ("int64", (3,), [23180505878468, 8255285303719, 33972751378035]),
        "bernoulli": ("bool", (6,), [False, False, True, False, False, False]),
        "bernoulli_p": ("bool", (3,), [False, True, True]),
        "bernoulli_high": ("bool", (4,), [False, False, False, False]),
        "rademacher": ("int32", (6,), [1, -1, 1, 1, 1, 1]),
        "categorical": ("int32", (6,), [2, 3, 3, 0, 3, 1]),
        "categorical_axis0": ("int32", (3,), [1, 0, 0]),
        "categorical_no_replace": ("int32", (3,), [1, 4, 0]),
        "choice_int": ("int32", (4,), [2, 7, 2, 7]),
        "choice_no_replace": ("int32", (3,), [15, 17, 11]),
        "choice_p": ("int32", (4,), [4, 0, 0, 2]),
        "choice_p_no_replace": ("int32", (3,), [2, 1, 4]),
        "choice_axis1": ("int32", (3, 2), [[1, 0], [5, 4], [9, 8]]),
        "permutation_int": ("int32", (10,), [7, 5, 9, 3, 0, 1, 2, 6, 4, 8]),
        "permutation_axis1": ("int32", (3, 4), [[3, 0, 2, 1], [7, 4, 6, 5], [11, 8, 10, 9]]),
        "permutation_independent": ("int32", (3, 4), [[2, 3, 0, 1], [4, 6, 7, 5], [11, 10, 8, 9]]),
        "permutation_typed": ("float32", (3,), [1.5, 3.5, 2.5]),
        "gamma": ("float32", (4,), [3.6791024, 1.2421892, 0.69522375, 2.90218]),
        "gamma_small_a": ("float32", (4,), [0.9944449, 0.27069575, 0.000620297, 0.09707388]),
        "gamma_array": ("float32", (4,), [0.5590858, 1.6260693, 3.7381687, 3.2178915]),
        "loggamma": ("float32", (3,), [-2.6802154, -13.028675, -2.6792421]),
        "beta": ("float32", (4,), [0.31552514, 0.6904764, 0.5443759, 0.37301093]),
        "dirichlet": ("float32", (3,), [0.23198867, 0.54983187, 0.21817946]),
        "dirichlet_shape": ("float32", (2, 2), [[0.669963, 0.330037], [0.9492709, 0.050729103]]),
        "chisquare": ("float32", (3,), [0.15017244, 1.4352317, 1.251684]),
        "f": ("float32", (3,), [0.55732673, 0.929997, 2.7174456]),
        "t": ("float32", (3,), [0.8307904, 0.22477785, 0.87689406]),
        "generalized_normal": ("float32", (3,), [2.0775888, 1.2782471, 1.6104357]),
        "ball": ("float32", (2, 3), [[-0.0789008, -0.18800533, -0.8115131], [-0.24802703, 0.13433959, 0.91897064]]),
        "poisson_small": ("int32", (6,), [3, 2, 2, 4, 3, 2]),
        "poisson_large": ("int32", (4,), [62, 39, 55, 42]),
        "poisson_mixed": ("int32", (4,), [0, 0, 9, 94]),
        "binomial_small": ("float32", (4,), [1.0, 1.0, 3.0, 2.0]),
        "multinomial": ("float32", (3,), [2.0, 2.0, 6.0]),
        "multinomial_batch": ("float32", (2, 2), [[3.0, 2.0], [32.0, 18.0]]),
        "binomial_large": ("float32", (3,), [65.0, 59.0, 54.0]),
    },
    True: {
        "split_default": ("uint32", (2, 2), [[1797259609, 2579123966], [928981903, 3453687069]]),
        "split_3": ("uint32", (3, 2), [[1832780943, 270669613], [64467757, 2916123636], [2465931498, 255383827]]),
        "split_shape": (
            "uint32",
            (2, 3, 2),
            [
                [[507451445, 1853169794], [1948878966, 4237131848], [2441914641, 3819641963]],
                [[3568232559, 2761185182], [869452973, 3597360905], [3243370355, 1313272271]],
            ],
        ),
        "split_typed": (
            "uint32",
            (4, 2),
            [[3625411723, 1954958720], [195045567, 4062205631], [966301609, 1948237315], [276534068, 1641862660]],
        ),
        "split_0": ("uint32", (0, 2), []),
        "fold_in_4": ("uint32", (2,), [2285895361, 433833334]),
        "fold_in_big": ("uint32", (2,), [1276188560, 3905377080]),
        "fold_in_typed": ("uint32", (2,), [3716834203, 3481239269]),
        "fold_in_float": ("uint32", (2,), [2467461003, 3840466878]),
        "seed_neg": ("uint32", (2,), [0, 4294967295]),
        "seed_wide": ("uint32", (2,), [0, 7]),
        "seed_uint32": ("uint32", (2,), [0, 4000000000]),
        "seed_int8": ("uint32", (2,), [0, 4294967293]),
        "seed_typed": ("uint32", (2,), [0, 12345]),
        "seed_neg_x64": ("uint32", (2,), [4294967295, 4294967294]),
        "seed_wide_x64": ("uint32", (2,), [256, 3]),
        "bits_u32": ("uint32", (3,), [1111271205, 2679469115, 974515252]),
        "bits_u32_odd": ("uint32", (5,), [2752176745, 3868056420, 987989481, 3786487241, 1796291613]),
        "bits_u32_2d": ("uint32", (2, 3), [[2752176745, 3868056420, 987989481], [3786487241, 1796291613, 868965556]]),
        "bits_u32_scalar": ("uint32", (), 2752176745),
        "bits_u16": ("uint16", (3,), [42789, 29755, 60468]),
        "bits_u16_5": ("uint16", (5,), [28248, 9960, 27069, 56649, 8964]),
        "bits_u8": ("uint8", (3,), [37, 59, 52]),
        "bits_u8_7": ("uint8", (7,), [88, 232, 189, 73, 4, 94, 212]),
        "bits_u64": ("uint64", (3,), [3182764935064573181, 366096495144982249, 241365115613244543]),
        "bits_typed": ("uint32", (4,), [3781919339, 3306647892, 601451241, 2710065977]),
        "uniform_f32": ("float32", (5,), [0.947667, 0.9785799, 0.33229148, 0.46866846, 0.5698887]),
        "uniform_range": ("float32", (2, 3), [[0.19316244, 0.6687646, 0.22959161], [0.19198167, 2.486814, 0.79473007]]),
        "uniform_array_bounds": (
            "float32",
            (2, 3),
            [[2.1931624, 3.1350117, 3.337755], [2.1919818, 4.5894513, 3.676838]],
        ),
        "uniform_scalar": ("float32", (), 0.947667),
        "uniform_key0_3": ("float32", (3,), [0.947667, 0.9785799, 0.33229148]),
        "uniform_f16": ("float16", (4,), [0.11426, 0.2295, 0.0498, 0.2969]),
        "uniform_f16_range": ("float16", (6,), [-1.615, -0.924, -2.002, -0.5195, 2.328, 0.2832]),
        "uniform_f64_range": (
            "float64",
            (6,),
            [
                2.8923574001675543,
                0.4192264658161564,
                -0.8687739142129525,
                -1.0745755522471434,
                -0.39575848595075414,
                1.1426761609930236,
            ],
        ),
        "uniform_f64": ("float64", (3,), [0.8653929000279257, 0.4532044109693594, 0.2385376809645079]),
        "normal_10": (
            "float32",
            (10,),
            [
                1.6226422,
                2.0252647,
                -0.43359444,
                -0.07861735,
                0.1760909,
                -0.97208923,
                -0.49529874,
                0.4943786,
                0.6643493,
                -0.9501635,
            ],
        ),
        "normal_9": (
            "float32",
            (9,),
            [1.6226422, 2.0252647, -0.43359444, -0.07861735, 0.1760909, -0.97208923, -0.49529874, 0.4943786, 0.6643493],
        ),
        "normal_2d": (
            "float32",
            (2, 3),
            [[-0.15443718, 0.084707275, -0.13598049], [-0.15503626, 1.2666674, 0.14829758]],
        ),
        "normal_scalar": ("float32", (), -0.80717516),
        "normal_complex": (
            "complex64",
            (3,),
            [[0.24647464, 1.8570145], [0.25882903, 0.015438977], [-0.93536997, -1.4728069]],
        ),
        "normal_f16": ("float16", (3,), [1.195, 1.065, 0.05692]),
        "normal_f64": ("float64", (3,), [-0.1916155654197445, -1.0433587578808123, 0.4285149596629384]),
        "truncated_normal": ("float32", (5,), [0.101520345, 1.356208, 0.7094761, -0.717644, 1.3240184]),
        "truncated_normal_arrays": ("float32", (3,), [-0.16126412, 1.2754163, 1.3341795]),
        "lognormal": ("float32", (3,), [1.2131689, 0.7517146, 0.43208605]),
        "multivariate_normal": (
            "float32",
            (3, 2),
            [[1.6381428, 0.9868218], [0.26992714, -1.3143559], [1.8704438, -0.46966463]],
        ),
        "maxwell": ("float32", (3,), [3.1254315, 1.6219393, 2.4222574]),
        "double_sided_maxwell": ("float32", (3,), [-2.082814, -0.5836868, -2.556104]),
        "orthogonal": (
            "float32",
            (3, 3),
            [
                [-0.787562, 0.5290195, -0.3160447],
                [-0.5742822, -0.44407326, 0.687749],
                [-0.22348563, -0.72314394, -0.6535419],
            ],
        ),
        "wald": ("float32", (3,), [1.3192828, 0.4676321, 0.18939579]),
        "exponential": ("float32", (4,), [0.040166765, 0.4559095, 0.9841807, 0.7314114]),
        "laplace": ("float32", (4,), [2.5415835, 0.31162283, -0.29103357, -0.03826428]),
        "logistic": ("float32", (4,), [-3.1945646, -0.54886055, 0.51618254, 0.075118065]),
        "cauchy": ("float32", (3,), [-8.043638, -0.4472546, 0.41883934]),
        "gumbel": ("float32", (4,), [-0.44576406, -1.3804677, 1.1449953, -0.061992265]),
        "gumbel_high": ("float32", (3,), [1.4462677, 3.96731, -0.26228133]),
        "pareto": ("float32", (3,), [1.5827087, 1.4635036, 1.4821341]),
        "weibull_min": ("float32", (3,), [1.4374003, 1.3091027, 1.3306665]),
        "rayleigh": ("float32", (3,), [2.0189197, 2.2432532, 2.2043233]),
        "triangular": ("float32", (4,), [1.4523433, 1.3262837, 1.3473226, 0.821504]),
        "geometric": ("int32", (5,), [1, 3, 1, 1, 2]),
        "randint_3x3": ("int32", (3, 3), [[5, 0, 0], [5, 3, 3], [0, 7, 5]]),
        "randint_int8": ("int8", (5,), [4, -5, -3, -2, -4]),
        "randint_uint8_256": ("uint8", (4,), [101, 80, 200, 61]),
        "randint_array_bounds": ("int32", (2, 3), [[854, 966, 437], [810, 610, 439]]),
        "randint_empty_range": ("int32", (3,), [5, 5, 5]),
        "randint_wide": ("int32", (4,), [591994710, 341517154, 867671949, 517258274]),
        "randint_uint32": ("uint32", (3,), [2739478365, 2489000809, 15155611]),
        "randint_int64": ("int64", (3,), [14413482896461, 17176653984509, -758635327806]),
        "bernoulli": ("bool", (6,), [True, False, True, True, True, False]),
        "bernoulli_p": ("bool", (3,), [False, False, True]),
        "bernoulli_high": ("bool", (4,), [True, False, True, True]),
        "rademacher": ("int32", (6,), [1, -1, -1, 1, -1, -1]),
        "categorical": ("int32", (6,), [0, 0, 2, 0, 3, 0]),
        "categorical_axis0": ("int32", (3,), [0, 1, 0]),
        "categorical_no_replace": ("int32", (3,), [0, 4, 2]),
        "choice_int": ("int32", (4,), [1, 3, 4, 2]),
        "choice_no_replace": ("int32", (3,), [12, 17, 16]),
        "choice_p": ("int32", (4,), [3, 1, 1, 3]),
        "choice_p_no_replace": ("int32", (3,), [1, 2, 4]),
        "choice_axis1": ("int32", (3, 2), [[3, 3], [7, 7], [11, 11]]),
        "permutation_int": ("int32", (10,), [6, 9, 7, 4, 2, 3, 1, 8, 5, 0]),
        "permutation_axis1": ("int32", (3, 4), [[2, 3, 1, 0], [6, 7, 5, 4], [10, 11, 9, 8]]),
        "permutation_independent": ("int32", (3, 4), [[2, 3, 1, 0], [6, 7, 4, 5], [9, 10, 11, 8]]),
        "permutation_typed": ("float32", (3,), [3.5, 2.5, 1.5]),
        "gamma": ("float32", (4,), [1.3116364, 1.7726953, 2.5098445, 1.2061697]),
        "gamma_small_a": ("float32", (4,), [0.022030747, 0.8227013, 0.26029852, 0.018635282]),
        "gamma_array": ("float32", (4,), [0.023102583, 4.406805, 0.41702726, 4.302397]),
        "loggamma": ("float32", (3,), [-6.3917027, 0.32886463, -4.7250624]),
        "beta": ("float32", (4,), [0.34361938, 0.46121445, 0.13512346, 0.6714017]),
        "dirichlet": ("float32", (3,), [0.24178274, 0.13636836, 0.6218489]),
        "dirichlet_shape": ("float32", (2, 2), [[0.9231413, 0.0768587], [0.8345914, 0.16540867]]),
        "chisquare": ("float32", (3,), [1.0201145, 1.5499096, 1.4889053]),
        "f": ("float32", (3,), [1.2228229, 2.0116963, 0.37606716]),
        "t": ("float32", (3,), [-0.14018597, -2.1433382, -0.7989536]),
        "generalized_normal": ("float32", (3,), [0.56796515, 1.0590149, -1.2483463]),
        "ball": ("float32", (2, 3), [[-0.112420805, -0.500055, 0.56102216], [-0.557518, 0.49404216, 0.58190054]]),
        "poisson_small": ("int32", (6,), [3, 4, 3, 2, 6, 3]),
        "poisson_large": ("int32", (4,), [49, 47, 51, 53]),
        "poisson_mixed": ("int32", (4,), [0, 0, 7, 102]),
        "binomial_small": ("float32", (4,), [2.0, 3.0, 3.0, 0.0]),
        "multinomial": ("float32", (3,), [1.0, 5.0, 4.0]),
        "multinomial_batch": ("float32", (2, 2), [[1.0, 4.0], [26.0, 24.0]]),
        "binomial_large": ("float32", (3,), [63.0, 63.0, 56.0]),
    },
}


def _expected(dtype_name, shape, values):
    if dtype_name.startswith("complex"):  # recorded as (real, imag) pairs
        pairs = np.asarray(values, np.float32 if dtype_name == "complex64" else np.float64).reshape(*shape, 2)
        return pairs[..., 0] + 1j * pairs[..., 1]
    return np.asarray(values, dtype=dtype_name).reshape(shape)


@pytest.mark.parametrize("partitionable", [False, True], ids=["original", "partitionable"])
@pytest.mark.parametrize("case_id, x64, kind, call", CASES, ids=[c[0] for c in CASES])
def test_matches_jax(partitionable, case_id, x64, kind, call):
    dtype_name, shape, values = EXPECTED[partitionable][case_id]
    want = _expected(dtype_name, shape, values)
    with flags(partitionable, x64):
        got = call(random, jnp)
        got_np = np.asarray(got)
    assert got_np.dtype == np.dtype(dtype_name), (got_np.dtype, dtype_name)
    assert got_np.shape == want.shape
    if kind == EXACT:
        np.testing.assert_array_equal(got_np, want)
    else:
        np.testing.assert_allclose(got_np, want, rtol=2e-6, atol=2e-7)


# -- the verified vectors of the notes -----------------------------------------------------------------------------
NORMAL_10 = {
    False: [
        -0.3721109,
        0.26423115,
        -0.18252768,
        -0.7368197,
        -0.44030377,
        -0.1521442,
        -0.67135346,
        -0.5908641,
        0.73168886,
        0.5673026,
    ],
    True: [
        1.6226422,
        2.0252647,
        -0.43359444,
        -0.07861735,
        0.1760909,
        -0.97208923,
        -0.49529874,
        0.4943786,
        0.6643493,
        -0.9501635,
    ],
}
SPLIT_0 = {
    False: [[4146024105, 967050713], [2718843009, 1272950319]],
    True: [[1797259609, 2579123966], [928981903, 3453687069]],
}


HOT_CASES = ["split_3", "split_typed", "fold_in_4", "bits_u16_5", "bits_u64", "uniform_f32", "uniform_f64",
             "normal_9", "normal_complex", "normal_f16", "bernoulli", "exponential", "gumbel"]


@pytest.mark.parametrize("partitionable", [False, True], ids=["original", "partitionable"])
def test_repeated_eager_calls_run_compiled_with_the_same_bits(partitionable):
    """Eager calls repeated with one signature compile (``api.compiled_when_hot``): every repetition, before
    and after, gives JAX's values, under each threefry layout (the layout is part of the compiled key)."""
    from srcjax.runtime import api
    from srcjax.runtime import random as runtime_random

    compiled_before = sum(len(f.specialised) for f in (runtime_random._split, runtime_random._uniform01))
    for case_id, x64, kind, call in [c for c in CASES if c[0] in HOT_CASES]:
        dtype_name, shape, values = EXPECTED[partitionable][case_id]
        want = _expected(dtype_name, shape, values)
        for _ in range(api.HOT_CALLS + 1):
            with flags(partitionable, x64):
                got = np.asarray(call(random, jnp))
            assert got.dtype == want.dtype and got.shape == want.shape, case_id
            if kind == EXACT:
                np.testing.assert_array_equal(got, want, err_msg=case_id)
            else:
                np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-7, err_msg=case_id)
    assert sum(len(f.specialised) for f in (runtime_random._split, runtime_random._uniform01)) > compiled_before
    inside = srcjax.jit(lambda k: random.normal(random.split(k)[1], (9,)))  # traced calls are not counted
    key = random.PRNGKey(0)
    with flags(partitionable):
        np.testing.assert_array_equal(np.asarray(inside(key)), np.asarray(random.normal(random.split(key)[1], (9,))))


@pytest.mark.parametrize("partitionable", [False, True])
def test_notes_vectors(partitionable):
    with flags(partitionable):
        x = random.normal(random.PRNGKey(0), (10,))
        assert x.dtype == np.float32
        np.testing.assert_array_equal(np.asarray(x), np.float32(NORMAL_10[partitionable]))
        np.testing.assert_array_equal(np.asarray(random.split(random.PRNGKey(0))), SPLIT_0[partitionable])
        # fold_in is hash(key, [0, data]) in both layouts
        assert np.asarray(random.fold_in(random.PRNGKey(0), 4)).tolist() == [2285895361, 433833334]


def test_notes_vectors_original_layout():
    with flags(False):
        key = random.PRNGKey(0)
        assert np.asarray(random.split(key, 4)).tolist() == [
            [2285895361, 1501764800],
            [1518642379, 4090693311],
            [433833334, 4221794875],
            [839183663, 3740430601],
        ]
        key = random.PRNGKey(1701)
        assert np.asarray(random.bits(key, (3,))).tolist() == [56197195, 4200222568, 961309823]
        assert np.asarray(random.bits(key, (3,), jnp.uint16)).tolist() == [41682, 1300, 55017]
        assert np.asarray(random.bits(key, (3,), jnp.uint8)).tolist() == [216, 115, 43]
        assert np.asarray(random.randint(random.PRNGKey(0), (3, 3), 0, 8)).tolist() == [[2, 1, 3], [6, 1, 5], [6, 3, 4]]
        # the counters are cut in halves, so a value depends on how many are drawn
        assert float(random.normal(random.PRNGKey(0), (9,))[4]) == np.float32(0.44973662)


def test_notes_vectors_partitionable_layout():
    with flags(True):
        np.testing.assert_array_equal(
            np.asarray(random.uniform(random.key(0), (3,))), np.float32([0.947667, 0.9785799, 0.33229148])
        )
        key = random.PRNGKey(0)
        assert np.asarray(random.split(key, 8)[4]).tolist() == [2285895361, 433833334]
        for i in range(5):  # split(key, n)[i] == fold_in(key, i)
            np.testing.assert_array_equal(np.asarray(random.split(key, 5)[i]), np.asarray(random.fold_in(key, i)))
        # any prefix of a draw is stable
        np.testing.assert_array_equal(np.asarray(random.normal(key, (10,)))[:7], np.asarray(random.normal(key, (7,))))


def test_layout_is_read_at_call_time():
    key = random.PRNGKey(0)
    with flags(False):
        old = np.asarray(random.split(key))
    with flags(True):
        new = np.asarray(random.split(key))
    assert old.tolist() == SPLIT_0[False] and new.tolist() == SPLIT_0[True]


def test_seed_programs():
    # What the seed tutorials print (jax_threefry_partitionable=False).
    with flags(False):
        key = random.PRNGKey(0)
        np.testing.assert_allclose(np.asarray(random.normal(key, shape=(1,))), [-0.20584226], rtol=1e-6)
        key, subkey = random.split(key)
        np.testing.assert_allclose(np.asarray(random.normal(key, shape=(1,))), [0.14389051], rtol=1e-6)
        np.testing.assert_allclose(np.asarray(random.normal(subkey, shape=(1,))), [-1.2515389], rtol=1e-6)
        key, *subkeys = random.split(key, 4)
        assert len(subkeys) == 3 and all(np.asarray(k).shape == (2,) for k in subkeys)
        big = random.normal(random.PRNGKey(0), (300, 300), dtype=jnp.float32)
        assert big.shape == (300, 300) and big.dtype == np.float32
        typed = random.key(0)
        typed, w_key, b_key = random.split(typed, 3)
        assert random.normal(w_key, (3,)).shape == (3,) and random.normal(b_key, ()).shape == ()


# -- typed keys ---------------------------------------------------------------------------------------------------
def test_typed_key_array():
    with flags(True):
        key = random.key(0)
        assert key.shape == () and key.ndim == 0 and key.size == 1
        assert str(key.dtype) == "key<fry>" and repr(key.dtype) == "key<fry>"
        assert repr(key) == "Array((), dtype=key<fry>) overlaying:\n[0 0]"
        keys = random.split(key, 3)
        assert isinstance(keys, random.KeyArray) and keys.shape == (3,) and len(keys) == 3
        assert repr(keys).startswith("Array((3,), dtype=key<fry>) overlaying:\n[[1797259609 2579123966]")
        a, b, c = keys
        assert isinstance(a, random.KeyArray) and a.shape == ()
        assert np.asarray(random.key_data(b)).tolist() == [928981903, 3453687069]
        assert np.asarray(random.key_data(keys[1:])).shape == (2, 2)
        assert random.split(key, (2, 3)).shape == (2, 3)
        assert np.asarray(keys == keys[0]).tolist() == [True, False, False]
        assert random.key_impl(key) == "threefry2x32"
        with pytest.raises(TypeError, match="len"):
            len(key)


def test_typed_key_dtype_is_an_extended_dtype():
    # JAX 0.10.2: a key's dtype is an issubdtype of prng_key, extended and np.generic only, and of no NumPy
    # kind (code that filters a pytree by jnp.issubdtype(x.dtype, jnp.floating) meets keys); srcjax raised
    # "key<fry> is not a valid dtype"
    kd = random.key(0).dtype
    assert not jnp.issubdtype(kd, jnp.floating) and not jnp.issubdtype(kd, jnp.integer)
    assert jnp.issubdtype(kd, srcjax.dtypes.prng_key) and jnp.issubdtype(kd, srcjax.dtypes.extended)
    assert jnp.issubdtype(kd, np.generic) and jnp.issubdtype(kd, kd)
    assert srcjax.dtypes.issubdtype(srcjax.dtypes.prng_key, srcjax.dtypes.extended)
    assert not jnp.issubdtype(jnp.float32, srcjax.dtypes.prng_key) and not jnp.issubdtype(kd, jnp.float32)
    assert jnp.issubdtype("float32", jnp.floating) and jnp.issubdtype(float, jnp.inexact)


def test_typed_and_raw_keys_give_the_same_stream():
    for partitionable in (False, True):
        with flags(partitionable):
            raw, typed = random.PRNGKey(42), random.key(42)
            assert np.asarray(random.key_data(typed)).tolist() == np.asarray(raw).tolist()
            for sample in (
                lambda k: random.normal(k, (4,)),
                lambda k: random.randint(k, (3,), 0, 9),
                lambda k: random.key_data(random.fold_in(k, 7)),
                lambda k: random.gamma(k, 2.0, (3,)),
            ):
                np.testing.assert_array_equal(np.asarray(sample(raw)), np.asarray(sample(typed)))


def test_wrap_key_data_round_trip():
    data = random.split(random.PRNGKey(3), 4)
    keys = random.wrap_key_data(data)
    assert keys.shape == (4,) and np.asarray(random.key_data(keys)).tolist() == np.asarray(data).tolist()
    assert random.key_data(random.PRNGKey(3)).shape == (2,)  # raw keys are their own data
    assert random.wrap_key_data(np.zeros((2, 3, 2), np.uint32)).shape == (2, 3)
    assert random.clone(keys) is keys
    assert random.key_dtype() == keys.dtype


JIT_SOURCE = """
from srcjax import random


def draws(key):
    return random.normal(key, (3,)), random.gamma(key, 2.0, (2,)), random.split(key, 3)


def normal_and_gamma(key):
    return random.normal(key, (3,)), random.gamma(key, 2.0, (2,))
"""


def test_keys_under_jit_and_vmap(tmp_path, monkeypatch):
    # The samplers bind primitives only, so they compile (loops included); typed keys cross jit as key data.
    # (The functions live in a small module: the front end parses the whole file a function comes from.)
    (tmp_path / "random_jit_draws.py").write_text(JIT_SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))
    from random_jit_draws import draws, normal_and_gamma

    compiled = srcjax.jit(draws)
    for key in (random.PRNGKey(5), random.key(5)):
        for got, want in zip(compiled(key), draws(key)):
            assert type(got) is type(want)
            if isinstance(want, random.KeyArray):
                got, want = random.key_data(got), random.key_data(want)
            np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert len(srcjax.tree_util.tree_leaves(random.key(1))) == 1
    for keys in (random.split(random.PRNGKey(6), 3), random.split(random.key(6), 3)):
        batched = srcjax.vmap(normal_and_gamma)(keys)
        one_by_one = [normal_and_gamma(k) for k in keys]
        for i, got in enumerate(batched):
            np.testing.assert_array_equal(np.asarray(got), np.stack([np.asarray(o[i]) for o in one_by_one]))


def test_shuffle_is_deprecated_permutation():
    key = random.PRNGKey(4)
    with pytest.warns(DeprecationWarning):
        shuffled = random.shuffle(key, jnp.arange(8))
    np.testing.assert_array_equal(np.asarray(shuffled), np.asarray(random.permutation(key, jnp.arange(8))))


# -- dtypes, shapes, edge cases --------------------------------------------------------------------------------------
def test_default_and_canonical_dtypes():
    key = random.PRNGKey(0)
    with flags(x64=False):
        assert random.normal(key).dtype == np.float32
        assert random.randint(key, (2,), 0, 3).dtype == np.int32
        assert random.bits(key).dtype == np.uint32
        assert random.poisson(key, 2.0, (2,)).dtype == np.int32
        assert random.bernoulli(key).dtype == np.bool_ and random.rademacher(key, (2,)).dtype == np.int32
        with pytest.warns(UserWarning, match="float64"):
            assert random.normal(key, (2,), jnp.float64).dtype == np.float32
    with flags(x64=True):
        assert random.normal(key).dtype == np.float64
        assert random.uniform(key, (2,), jnp.float32).dtype == np.float32
        assert random.randint(key, (2,), 0, 3).dtype == np.int64
        assert random.bits(key).dtype == np.uint64


@pytest.mark.parametrize("partitionable", [False, True])
@pytest.mark.parametrize("shape", [(), (0,), (2, 0), (1,), (3, 1, 2)])
def test_shapes(partitionable, shape):
    key = random.PRNGKey(1)
    with flags(partitionable):
        for sample, dtype in [
            (lambda: random.normal(key, shape), np.float32),
            (lambda: random.uniform(key, shape, jnp.float16), np.float16),
            (lambda: random.bits(key, shape, jnp.uint8), np.uint8),
            (lambda: random.randint(key, shape, 0, 5), np.int32),
            (lambda: random.gamma(key, 1.5, shape), np.float32),
            (lambda: random.poisson(key, 4.0, shape), np.int32),
            (lambda: random.bernoulli(key, 0.5, shape), np.bool_),
        ]:
            out = sample()
            assert out.shape == shape and out.dtype == dtype
    assert random.split(key, 0).shape == (0, 2)
    assert random.normal(key, 3).shape == (3,)  # an int shape is accepted


def test_seed_handling():
    with flags(x64=False):
        assert np.asarray(random.PRNGKey(True)).tolist() == [0, 1]
        assert np.asarray(random.PRNGKey(jnp.asarray(7))).tolist() == [0, 7]
        assert np.asarray(random.PRNGKey(jnp.asarray(-1))).tolist() == [0, 4294967295]
    with flags(x64=True):
        assert np.asarray(random.PRNGKey(jnp.asarray(2**40 + 3))).tolist() == [256, 3]
    with flags(seed_offset=5):
        assert np.asarray(random.PRNGKey(1)).tolist() == [0, 6]
        assert np.asarray(random.key_data(random.key(1))).tolist() == [0, 6]


BAD_CALLS = [
    (lambda: random.normal(jnp.zeros(2), (2,)), TypeError, "uint32"),
    (lambda: random.normal(jnp.zeros(2, jnp.int32), (2,)), TypeError, "uint32"),
    (lambda: random.normal(jnp.zeros(3, jnp.uint32), (2,)), TypeError, r"\(2,\)"),
    (lambda: random.normal([0, 0], (2,)), TypeError, "key type list"),
    (lambda: random.normal(random.split(random.PRNGKey(0)), (2,)), ValueError, "single key"),
    (lambda: random.split(random.split(random.key(0))), ValueError, r"shape \(2,\)"),
    (lambda: random.normal(random.PRNGKey(0), (-1,)), ValueError, "negative"),
    (lambda: random.normal(random.PRNGKey(0), (2.0,)), TypeError, "integer"),
    (lambda: random.normal(random.PRNGKey(0), (2,), jnp.int32), ValueError, "float or complex"),
    (lambda: random.uniform(random.PRNGKey(0), (2,), jnp.int32), ValueError, "float dtype"),
    (lambda: random.uniform(random.PRNGKey(0), (3,), minval=jnp.zeros(4)), ValueError, "broadcast"),
    (lambda: random.uniform(random.PRNGKey(0), (3,), minval=jnp.zeros((2, 3))), ValueError, "broadcast"),
    (lambda: random.randint(random.PRNGKey(0), (2,), 0, 5, jnp.float32), TypeError, "integer dtypes"),
    (lambda: random.randint(random.PRNGKey(0), (2,), jnp.zeros(3, jnp.int32), 5), ValueError, "broadcast"),
    (lambda: random.bits(random.PRNGKey(0), (2,), jnp.int32), ValueError, "unsigned"),
    (lambda: random.bernoulli(random.PRNGKey(0), 1, (2,)), TypeError, "floating"),
    (lambda: random.bernoulli(random.PRNGKey(0), 0.5, mode="x"), ValueError, "mode"),
    (lambda: random.gumbel(random.PRNGKey(0), mode="x"), ValueError, "mode"),
    (lambda: random.PRNGKey(1.0), TypeError, "integer"),
    (lambda: random.PRNGKey(jnp.asarray([1, 2])), TypeError, "scalar seed"),
    (lambda: random.PRNGKey(random.key(0)), TypeError, "PRNG key"),
    (lambda: random.PRNGKey(2**64), OverflowError, "int64"),
    (lambda: random.PRNGKey(0, impl="rbg"), ValueError, "unrecognized PRNG"),
    (lambda: random.fold_in(random.PRNGKey(0), jnp.asarray([1, 2])), TypeError, "scalar"),
    (lambda: random.fold_in(random.PRNGKey(0), -1), OverflowError, "uint32"),
    (lambda: random.wrap_key_data(jnp.zeros(2)), TypeError, "uint32"),
    (lambda: random.choice(random.PRNGKey(0), 5, 3), TypeError, "sequence"),
    (lambda: random.choice(random.PRNGKey(0), 5, (6,), replace=False), ValueError, "larger sample"),
    (lambda: random.choice(random.PRNGKey(0), 5, (2,), p=jnp.ones(4)), ValueError, "p must be"),
    (lambda: random.permutation(random.PRNGKey(0), 5.0), TypeError, "integer or at least 1-dimensional"),
    (lambda: random.categorical(random.PRNGKey(0), jnp.zeros((2, 3)), shape=(4,)), ValueError, "broadcast"),
    (lambda: random.multivariate_normal(random.PRNGKey(0), jnp.zeros(3), jnp.eye(2)), ValueError, "cov.shape"),
    (lambda: random.multivariate_normal(random.PRNGKey(0), jnp.zeros(2), jnp.eye(2), method="x"), ValueError, "method"),
    (lambda: random.dirichlet(random.PRNGKey(0), 1.0), ValueError, "ndim >= 1"),
    (lambda: random.gamma(random.PRNGKey(0), 1.0, dtype=jnp.int32), ValueError, "float dtype"),
    (lambda: random.gamma(random.PRNGKey(0), jnp.ones(3), (2,)), ValueError, "broadcast"),
    (lambda: random.poisson(random.PRNGKey(0), 1.0, dtype=jnp.float32), ValueError, "integer dtype"),
    (lambda: random.orthogonal(random.PRNGKey(0), -1), ValueError, "negative dimensions"),
]


@flags()
def test_gumbel_highest_mode_and_the_high_dynamic_range_option():
    # JAX 0.10.2's values (partitionable off). 'highest' builds (0, 1) floats from 64 random bits (JAX's
    # _safe_int_to_float); the option makes 'high' the mode of gumbel and categorical when none is given.
    key = random.PRNGKey(0)
    want = [0.82471955, 0.07597001, 0.5835939, 1.338781, 0.91562462]
    np.testing.assert_allclose(random.gumbel(key, (5,), mode="highest"), want, rtol=2e-6)
    np.testing.assert_allclose(srcjax.jit(lambda k: random.gumbel(k, (5,), mode="highest"))(key), want, rtol=2e-6)
    logits = jnp.array([0.0, 1.0, 2.0])
    assert np.asarray(random.categorical(key, logits, shape=(8,))).tolist() == [0, 1, 2, 2, 2, 0, 0, 2]
    sample = srcjax.jit(lambda k: random.gumbel(k, (5,)))
    low = np.asarray(sample(key))
    config.update("jax_high_dynamic_range_gumbel", True)
    try:
        np.testing.assert_allclose(sample(key), [0.82471943, 0.07597014, 0.5835939, 1.3387806, 0.9156245], rtol=2e-6)
        assert np.asarray(random.categorical(key, logits, shape=(8,))).tolist() == [2, 2, 1, 2, 2, 2, 2, 2]
    finally:
        config.update("jax_high_dynamic_range_gumbel", False)
    assert np.array_equal(sample(key), low)


@flags()
def test_choice_of_a_float_count():
    # JAX takes int(a) of a scalar a: choice(key, 4.0, (3,)) is choice(key, 4, (3,)) ([0, 3, 1] in JAX 0.10.2)
    key = random.PRNGKey(0)
    assert np.array_equal(random.choice(key, 4.0, (3,)), random.choice(key, 4, (3,)))
    assert np.asarray(random.choice(key, 4.0, (3,))).tolist() == [0, 3, 1]


@pytest.mark.parametrize("call, error, message", BAD_CALLS)
def test_bad_input(call, error, message):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(error, match=message):
            call()


# -- statistics ---------------------------------------------------------------------------------------------------
N = 10000


def _moments(x):
    x = np.asarray(x, np.float64)
    return x.mean(), x.var()


def _check_moments(x, mean, var, sigmas=5.0):
    # The sample mean is within a few standard errors; the variance within a few relative standard errors.
    got_mean, got_var = _moments(x)
    n = np.asarray(x).size
    assert abs(got_mean - mean) < sigmas * math.sqrt(var / n), (got_mean, mean)
    assert abs(got_var - var) < sigmas * var * math.sqrt(2.0 / n) * 2, (got_var, var)


STATS = [  # (sampler, mean, variance)
    ("uniform", lambda k: random.uniform(k, (N,)), 0.5, 1 / 12),
    ("uniform_range", lambda k: random.uniform(k, (N,), minval=-2.0, maxval=6.0), 2.0, 64 / 12),
    ("normal", lambda k: random.normal(k, (N,)), 0.0, 1.0),
    ("normal_f16", lambda k: random.normal(k, (N,), jnp.float16), 0.0, 1.0),
    ("exponential", lambda k: random.exponential(k, (N,)), 1.0, 1.0),
    ("laplace", lambda k: random.laplace(k, (N,)), 0.0, 2.0),
    ("logistic", lambda k: random.logistic(k, (N,)), 0.0, math.pi**2 / 3),
    ("gumbel", lambda k: random.gumbel(k, (N,)), np.euler_gamma, math.pi**2 / 6),
    ("gamma_2_5", lambda k: random.gamma(k, 2.5, (N,)), 2.5, 2.5),
    ("gamma_0_4", lambda k: random.gamma(k, 0.4, (N,)), 0.4, 0.4),
    ("beta", lambda k: random.beta(k, 2.0, 3.0, (N,)), 0.4, 6 / (25 * 6)),
    ("chisquare", lambda k: random.chisquare(k, 3.0, (N,)), 3.0, 6.0),
    ("poisson_3", lambda k: random.poisson(k, 3.0, (N,)), 3.0, 3.0),
    ("poisson_40", lambda k: random.poisson(k, 40.0, (N,)), 40.0, 40.0),
    ("binomial", lambda k: random.binomial(k, 20.0, 0.3, (N,)), 6.0, 4.2),
    ("bernoulli", lambda k: random.bernoulli(k, 0.3, (N,)), 0.3, 0.21),
    ("rademacher", lambda k: random.rademacher(k, (N,)), 0.0, 1.0),
    ("randint", lambda k: random.randint(k, (N,), -3, 7), 1.5, (10**2 - 1) / 12),
    ("geometric", lambda k: random.geometric(k, 0.25, (N,)), 4.0, 0.75 / 0.0625),
    (
        "truncated_normal",
        lambda k: random.truncated_normal(k, 0.0, 10.0, (N,)),
        math.sqrt(2 / math.pi),
        1 - 2 / math.pi,
    ),
    ("rayleigh", lambda k: random.rayleigh(k, 1.0, (N,)), math.sqrt(math.pi / 2), (4 - math.pi) / 2),
    ("maxwell", lambda k: random.maxwell(k, (N,)), 2 * math.sqrt(2 / math.pi), 3 - 8 / math.pi),
    ("weibull", lambda k: random.weibull_min(k, 1.0, 1.0, (N,)), 1.0, 1.0),
]


@pytest.mark.parametrize("name, sample, mean, var", STATS, ids=[s[0] for s in STATS])
def test_moments(name, sample, mean, var):
    # The samplers are one code for both layouts; only the bits differ (checked below).
    with flags(False):
        _check_moments(sample(random.PRNGKey(2024)), mean, var)


@pytest.mark.parametrize("name, sample, mean, var", [s for s in STATS if s[0] in ("uniform", "normal", "randint")])
def test_moments_partitionable_layout(name, sample, mean, var):
    with flags(True):
        _check_moments(sample(random.PRNGKey(2024)), mean, var)
    bits = np.asarray(random.bits(random.PRNGKey(5), (N,)), np.float64)
    _check_moments(bits / 2.0**32, 0.5, 1 / 12)


def test_dirichlet_and_multivariate_normal_statistics():
    key = random.PRNGKey(7)
    alpha = np.array([1.0, 2.0, 5.0])
    d = np.asarray(random.dirichlet(key, jnp.asarray(alpha), (4000,)), np.float64)
    np.testing.assert_allclose(d.sum(-1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(d.mean(0), alpha / alpha.sum(), atol=0.01)
    cov = np.array([[2.0, 0.6], [0.6, 1.0]])
    for method in ("cholesky", "eigh", "svd"):
        x = np.asarray(
            random.multivariate_normal(key, jnp.asarray([1.0, -2.0]), jnp.asarray(cov), (N,), method=method), np.float64
        )
        np.testing.assert_allclose(x.mean(0), [1.0, -2.0], atol=0.05)
        np.testing.assert_allclose(np.cov(x.T), cov, atol=0.08)


def test_discrete_distributions():
    key = random.PRNGKey(11)
    perm = np.asarray(random.permutation(key, 200))
    assert sorted(perm.tolist()) == list(range(200)) and perm.tolist() != list(range(200))
    rows = np.asarray(random.permutation(key, jnp.arange(20).reshape(4, 5), axis=1, independent=True))
    assert all(sorted(r.tolist()) == list(range(5 * i, 5 * i + 5)) for i, r in enumerate(rows))
    picks = np.asarray(random.choice(key, 50, (50,), replace=False))
    assert sorted(picks.tolist()) == list(range(50))
    p = np.array([0.1, 0.6, 0.3])
    counts = np.bincount(np.asarray(random.choice(key, 3, (N,), p=jnp.asarray(p))), minlength=3) / N
    np.testing.assert_allclose(counts, p, atol=0.02)
    draws = np.asarray(random.categorical(key, jnp.log(jnp.asarray(p)), shape=(N,)))
    np.testing.assert_allclose(np.bincount(draws, minlength=3) / N, p, atol=0.02)
    no_repeat = np.asarray(random.categorical(key, jnp.zeros((2, 6)), shape=(6, 2), replace=False))
    assert all(sorted(no_repeat[:, j].tolist()) == list(range(6)) for j in range(2))
    u8 = np.asarray(random.randint(key, (N,), 0, 256, jnp.uint8))
    assert u8.min() == 0 and u8.max() == 255
    orth = np.asarray(random.orthogonal(key, 4), np.float64)
    np.testing.assert_allclose(orth @ orth.T, np.eye(4), atol=1e-5)
    ball = np.asarray(random.ball(key, 3, shape=(1000,)), np.float64)
    assert (np.linalg.norm(ball, axis=-1) <= 1 + 1e-6).all()
