"""``srcjax.tree``: the short names of ``srcjax.tree_util`` (``tree.map`` is ``tree_util.tree_map``)."""

import dataclasses
from typing import Any

from srcjax.runtime.tree_util import tree_all as all
from srcjax.runtime.tree_util import tree_broadcast as broadcast
from srcjax.runtime.tree_util import tree_flatten as flatten
from srcjax.runtime.tree_util import tree_flatten_with_path as flatten_with_path
from srcjax.runtime.tree_util import tree_leaves as leaves
from srcjax.runtime.tree_util import tree_leaves_with_path as leaves_with_path
from srcjax.runtime.tree_util import tree_map as map
from srcjax.runtime.tree_util import tree_map_with_path as map_with_path
from srcjax.runtime.tree_util import tree_reduce as reduce
from srcjax.runtime.tree_util import tree_reduce_associative as reduce_associative
from srcjax.runtime.tree_util import tree_structure as structure
from srcjax.runtime.tree_util import tree_transpose as transpose
from srcjax.runtime.tree_util import tree_unflatten as unflatten

__all__ = [
    "all", "broadcast", "flatten", "flatten_with_path", "leaves", "leaves_with_path", "map", "map_with_path",
    "reduce", "reduce_associative", "static", "structure", "transpose", "unflatten",
]


def static(**kwargs: Any) -> dataclasses.Field:
    """``dataclasses.field`` marked static: a meta field (part of the structure) of ``register_dataclass``."""
    metadata = {"static": True, **(kwargs.pop("metadata", None) or {})}
    return dataclasses.field(metadata=metadata, **kwargs)
