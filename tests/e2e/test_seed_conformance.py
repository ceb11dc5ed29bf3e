"""The seed programs of ../shared/conformance/seed_examples.py that the package supports so far.

Each case is a program from the seed tutorials with the numbers JAX printed; the list grows as the
transformations land. The file lives beside the repository (in CI too); without it the test skips.
"""

import importlib.util
import pathlib

import pytest

import srcjax
import srcjax.numpy as jnp

SCRIPT = pathlib.Path(__file__).resolve().parents[3] / "shared" / "conformance" / "seed_examples.py"

SUPPORTED = [
    "random_normal_prngkey0",
    "matmul_block_until_ready",
    "matmul_numpy_input_and_device_put",
    "convolve_python_loop",
    "numpy_api_dot",
    "device_put_and_back_to_numpy",
    "immutability_and_at_set",
    "prng_same_key_same_numbers",
    "prng_split",
    "arange_and_int_dot",
    "purity_in_place_and_index_update",
    # the transformations
    "selu_jit_matches_eager",
    "grad_sum_logistic",
    "grad_vs_finite_difference",
    "nested_grad_jit",
    "hessian_jacfwd_jacrev",
    "vjp_two_outputs",
    "vmap_apply_matrix",
    "vmap_convolve_axes",
    "grad_tanh_higher_order",
    "grad_polynomial_fourth_order",
    "logistic_regression_argnums",
    "logistic_regression_pytree_dict",
    "logistic_regression_value_and_grad",
    "logistic_regression_finite_differences",
    "check_grads_second_order",
    "grad_is_identity_for_half_norm",
    "vmap_shapes",
    "linear_regression_sgd",
    "grad_tanh_slides",
    "jit_fusion_example",
    "jit_training_loop_with_optimizers",
    "vmap_in_axes_none",
    "grad_sum_of_squares",
    "grad_options_argnums_value_aux",
]


def _load():
    if not SCRIPT.exists():
        pytest.skip(f"{SCRIPT} not found (../shared is not beside the repository)")
    spec = importlib.util.spec_from_file_location("seed_examples", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {fn.__name__: fn for _, fn in module.CASES}


@pytest.mark.parametrize("name", SUPPORTED)
def test_seed_case(name):
    cases = _load()
    cases[name](srcjax, jnp)
