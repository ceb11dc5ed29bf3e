"""What runs: arrays and devices, dtypes and config, pytrees, the eager interpreter, the transformation
API and the numpy / lax / random libraries."""

from srcjax.runtime import eager  # noqa: F401 - installs the eager interpreter as the base of ``bind``
from srcjax.runtime import tree_util as _tree_util
from srcjax.transpiler import trees as _trees

_trees.install(_tree_util.tree_flatten, _tree_util.tree_unflatten)  # the compiler sees registered pytrees
_tree_util.register_pytree_node(_trees.Float0Zeros, lambda z: ([z.zeros], None),
                                lambda _, children: _trees.Float0Zeros.unwrap(children))
