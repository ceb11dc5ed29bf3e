"""``jax.experimental.sparse`` (BCOO arrays and their operations, ``sparsify``), written over srcjax's jnp."""

from srcjax.runtime.sparse.ad import grad, value_and_grad
from srcjax.runtime.sparse.api import empty, eye, fromdense, random_bcoo, todense
from srcjax.runtime.sparse.bcoo import BCOO, bcoo_fromdense, bcoo_todense
from srcjax.runtime.sparse.bcoo_index import bcoo_extract, bcoo_slice, bcoo_squeeze
from srcjax.runtime.sparse.bcoo_layout import (
    SparseEfficiencyError, SparseEfficiencyWarning, bcoo_broadcast_in_dim, bcoo_concatenate, bcoo_eliminate_zeros,
    bcoo_reduce_sum, bcoo_reshape, bcoo_sort_indices, bcoo_sum_duplicates, bcoo_transpose, bcoo_update_layout,
)
from srcjax.runtime.sparse.bcoo_dot import bcoo_dot_general, bcoo_multiply_dense, bcoo_multiply_sparse
from srcjax.runtime.sparse.bcsr import BCSR, bcsr_dot_general, bcsr_fromdense, bcsr_sum_duplicates, bcsr_todense
from srcjax.runtime.sparse.transform import sparsify

__all__ = [
    "BCOO", "BCSR", "SparseEfficiencyError", "SparseEfficiencyWarning", "bcoo_broadcast_in_dim", "bcoo_concatenate",
    "bcoo_dot_general", "bcoo_eliminate_zeros", "bcoo_extract", "bcoo_fromdense", "bcoo_multiply_dense",
    "bcoo_multiply_sparse", "bcoo_reduce_sum", "bcoo_reshape", "bcoo_slice", "bcoo_sort_indices", "bcoo_squeeze",
    "bcoo_sum_duplicates", "bcoo_todense", "bcoo_transpose", "bcoo_update_layout", "bcsr_dot_general",
    "bcsr_fromdense", "bcsr_sum_duplicates", "bcsr_todense", "empty", "eye", "fromdense", "grad", "random_bcoo",
    "sparsify", "todense", "value_and_grad",
]
