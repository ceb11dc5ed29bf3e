"""``srcjax.tree_util``: pytrees, JAX's nested containers of arrays, flattened to leaves and a structure.

A pytree is a leaf or a node whose children are pytrees. Nodes are tuples, lists, dicts (children in
sorted key order), ``None`` (a node with no children), namedtuples, ``OrderedDict`` (insertion order),
``defaultdict`` and the types users register. ``PyTreeDef`` records the nodes; flattening and
unflattening are inverse. Flattening is a table lookup by exact type (namedtuples are found by their
``_fields``), so the common containers cost one dict access per node.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

__all__ = [
    "PyTreeDef", "tree_flatten", "tree_unflatten", "tree_map", "tree_leaves", "tree_structure", "tree_reduce",
    "tree_all", "tree_transpose", "tree_broadcast", "treedef_is_leaf", "treedef_children", "treedef_tuple",
    "all_leaves", "flatten_one_level", "tree_flatten_with_path", "tree_leaves_with_path", "tree_map_with_path",
    "keystr", "SequenceKey", "DictKey", "GetAttrKey", "FlattenedIndexKey", "register_pytree_node",
    "register_pytree_with_keys", "register_pytree_node_class", "register_pytree_with_keys_class",
    "register_dataclass", "register_static", "Partial", "is_tree_node", "tree_reduce_associative",
    "flatten_one_level_with_keys", "KeyEntry", "KeyPath",
]


# -- key path entries -------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class SequenceKey:
    idx: int

    def __str__(self) -> str:
        return f"[{self.idx!r}]"


@dataclasses.dataclass(frozen=True)
class DictKey:
    key: Any

    def __str__(self) -> str:
        return f"[{self.key!r}]"


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
    name: str

    def __str__(self) -> str:
        return f".{self.name}"


@dataclasses.dataclass(frozen=True)
class FlattenedIndexKey:
    key: int

    def __str__(self) -> str:
        return f"[<flat index {self.key}>]"


KeyEntry = Any  # one step of a key path: SequenceKey, DictKey, GetAttrKey, FlattenedIndexKey or a user's key
KeyPath = tuple  # the keys from the root to a subtree


def _simple_key(entry: Any) -> str:
    for field in ("idx", "key", "name"):
        if hasattr(entry, field):
            return str(getattr(entry, field))
    return str(entry)


def keystr(keys: tuple, *, simple: bool = False, separator: str = "") -> str:
    """A key path as text: ``[1]['b'].x`` (or ``1/b/x`` with ``simple=True, separator='/'``)."""
    return separator.join(_simple_key(k) if simple else str(k) for k in keys)


# -- node kinds --------------------------------------------------------------------------------------------
class _NodeKind(NamedTuple):
    """How one node type splits into children and aux data, and how it is rebuilt."""

    flatten: Callable[[Any], tuple[Iterable[Any], Any]]
    unflatten: Callable[[Any, list[Any]], Any]
    # (node, aux) -> the key of each child, in flattening order
    keys: Callable[[Any, Any], list[Any]] | None
    name: str  # how the repr names it ("" for the builtin containers that print as Python literals)


def _sorted_keys(d: dict) -> tuple:
    try:
        return tuple(sorted(d))
    except TypeError:
        raise ValueError(f"Comparator raised exception while sorting pytree dictionary keys: {list(d)!r} "
                         "cannot be sorted") from None


def _flatten_dict(d: dict) -> tuple[list, tuple]:
    keys = _sorted_keys(d)
    return [d[k] for k in keys], keys


def _flatten_defaultdict(d: collections.defaultdict) -> tuple[list, tuple]:
    keys = _sorted_keys(d)
    return [d[k] for k in keys], (d.default_factory, keys)


def _sequence_keys(node, aux) -> list:
    return [SequenceKey(i) for i in range(len(node))]


def _child_keys(kind: _NodeKind, node: Any, aux: Any, n: int) -> list:
    """The key of each child; nodes registered without keys get flat indices."""
    if kind.keys is None:
        return [FlattenedIndexKey(i) for i in range(n)]
    return kind.keys(node, aux)


_TUPLE = _NodeKind(lambda t: (t, None), lambda aux, ch: tuple(ch), _sequence_keys, "")
_LIST = _NodeKind(lambda t: (t, None), lambda aux, ch: list(ch), _sequence_keys, "")
_DICT = _NodeKind(
    _flatten_dict, lambda keys, ch: dict(zip(keys, ch, strict=True)), lambda d, keys: [DictKey(k) for k in keys], ""
)
_NONE = _NodeKind(lambda n: ((), None), lambda aux, ch: None, lambda n, aux: [], "")
_ORDERED_DICT = _NodeKind(
    lambda d: (list(d.values()), tuple(d)),
    lambda keys, ch: collections.OrderedDict(zip(keys, ch, strict=True)),
    lambda d, keys: [DictKey(k) for k in keys],
    "OrderedDict",
)
_DEFAULT_DICT = _NodeKind(
    _flatten_defaultdict,
    lambda aux, ch: collections.defaultdict(aux[0], zip(aux[1], ch, strict=True)),
    lambda d, aux: [DictKey(k) for k in aux[1]],
    "defaultdict",
)
# namedtuples: aux is the class itself, so two namedtuple types never compare equal
_NAMEDTUPLE = _NodeKind(
    lambda t: (t, type(t)),
    lambda cls, ch: cls(*ch),
    lambda t, cls: [GetAttrKey(f) for f in cls._fields],
    "namedtuple",
)

_registry: dict[type, _NodeKind] = {
    tuple: _TUPLE,
    list: _LIST,
    dict: _DICT,
    type(None): _NONE,
    collections.OrderedDict: _ORDERED_DICT,
    collections.defaultdict: _DEFAULT_DICT,
}


def _kind_of(x: Any) -> _NodeKind | None:
    kind = _registry.get(type(x))
    if kind is None and isinstance(x, tuple) and hasattr(type(x), "_fields"):
        return _NAMEDTUPLE
    return kind


def is_tree_node(x: Any) -> bool:
    return _kind_of(x) is not None


# -- PyTreeDef ---------------------------------------------------------------------------------------------
class PyTreeDef:
    """The structure of a pytree: its nodes and where the leaves go (a leaf is ``kind is None``)."""

    __slots__ = ("node_type", "kind", "aux", "children_defs", "num_leaves", "num_nodes", "_hash")

    def __init__(self, node_type: type | None, kind: _NodeKind | None, aux: Any, children: tuple[PyTreeDef, ...]):
        self.node_type = node_type
        self.kind = kind
        self.aux = aux
        self.children_defs = children
        if kind is None:
            self.num_leaves, self.num_nodes = 1, 1
        else:
            self.num_leaves = sum(c.num_leaves for c in children)
            self.num_nodes = 1 + sum(c.num_nodes for c in children)
        self._hash: int | None = None

    # -- structure -------------------------------------------------------------------------------------
    def children(self) -> list[PyTreeDef]:
        return list(self.children_defs)

    def node_data(self) -> tuple[type, Any] | None:
        """``(node type, aux data)`` of the root, ``None`` for a leaf."""
        return None if self.kind is None else (self.node_type, self.aux)

    def unflatten(self, leaves: Iterable[Any]) -> Any:
        leaves = list(leaves)
        if len(leaves) != self.num_leaves:
            few = "few" if len(leaves) < self.num_leaves else "many"
            raise ValueError(f"Too {few} leaves for PyTreeDef; expected {self.num_leaves}, got {len(leaves)}")
        return self._build(iter(leaves))

    def _build(self, iterator) -> Any:
        if self.kind is None:
            return next(iterator)
        return self.kind.unflatten(self.aux, [c._build(iterator) for c in self.children_defs])

    def flatten_up_to(self, tree: Any) -> list[Any]:
        """The subtrees of ``tree`` that sit where this structure has leaves (this must be a prefix of it)."""
        out: list[Any] = []
        _flatten_up_to(self, tree, out, (), ("flatten_up_to", self, tree))
        return out

    def compose(self, inner: PyTreeDef) -> PyTreeDef:
        """This structure with every leaf replaced by ``inner``."""
        if self.kind is None:
            return inner
        return PyTreeDef(self.node_type, self.kind, self.aux, tuple(c.compose(inner) for c in self.children_defs))

    # -- comparison and printing -----------------------------------------------------------------------
    def __eq__(self, other: Any) -> bool:
        if self is other:
            return True
        if not isinstance(other, PyTreeDef):
            return NotImplemented
        return (
            self.kind is other.kind
            and self.node_type is other.node_type
            and self.num_leaves == other.num_leaves
            and _aux_equal(self.aux, other.aux)
            and self.children_defs == other.children_defs
        )

    def __ne__(self, other: Any) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        if self._hash is None:
            try:
                aux_hash = hash(self.aux)
            except TypeError:  # unhashable aux data: equal trees still hash equal, just less spread
                aux_hash = 0
            self._hash = hash((self.node_type, aux_hash, self.children_defs))
        return self._hash

    def __repr__(self) -> str:
        return f"PyTreeDef({self._text()})"

    def _text(self) -> str:
        if self.kind is None:
            return "*"
        parts = [c._text() for c in self.children_defs]
        if self.kind is _TUPLE:
            return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
        if self.kind is _LIST:
            return "[" + ", ".join(parts) + "]"
        if self.kind is _DICT:
            return "{" + ", ".join(f"{k!r}: {p}" for k, p in zip(self.aux, parts, strict=True)) + "}"
        if self.kind is _NONE:
            return "None"
        if self.kind is _NAMEDTUPLE:
            label = f"namedtuple[{self.aux.__name__}]"
        elif self.kind is _DEFAULT_DICT:
            label = f"defaultdict[{self.aux!r}]"
        elif self.kind is _ORDERED_DICT:
            label = f"OrderedDict[{self.aux!r}]"
        else:
            label = f"{self.kind.name}[{self.aux}]"
        return f"CustomNode({label}, [{', '.join(parts)}])"

    def __reduce__(self):
        raise TypeError("PyTreeDef objects cannot be pickled")


_SENTINEL = object()
_LEAF = PyTreeDef(None, None, None, ())


def _aux_equal(a: Any, b: Any) -> bool:
    if a is b:
        return True
    try:
        return bool(a == b)
    except Exception:  # aux data whose == is elementwise or raises: treat as different
        return False


# -- flattening --------------------------------------------------------------------------------------------
def _flatten(x: Any, is_leaf: Callable[[Any], bool] | None, leaves: list) -> PyTreeDef:
    if is_leaf is not None and is_leaf(x):
        leaves.append(x)
        return _LEAF
    kind = _registry.get(type(x))
    if kind is None:
        if not (isinstance(x, tuple) and hasattr(type(x), "_fields")):
            leaves.append(x)
            return _LEAF
        kind = _NAMEDTUPLE
    children, aux = kind.flatten(x)
    return PyTreeDef(type(x), kind, aux, tuple(_flatten(c, is_leaf, leaves) for c in children))


def tree_flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> tuple[list[Any], PyTreeDef]:
    leaves: list[Any] = []
    treedef = _flatten(tree, is_leaf, leaves)
    return leaves, treedef


def tree_unflatten(treedef: PyTreeDef, leaves: Iterable[Any]) -> Any:
    if not isinstance(treedef, PyTreeDef):
        raise TypeError(f"tree_unflatten: expected a PyTreeDef as the first argument, got {type(treedef).__name__}")
    return treedef.unflatten(leaves)


def tree_leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list[Any]:
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> PyTreeDef:
    return tree_flatten(tree, is_leaf)[1]


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
    return treedef.num_nodes == 1 and treedef.num_leaves == 1


def treedef_children(treedef: PyTreeDef) -> list[PyTreeDef]:
    return treedef.children()


def treedef_tuple(treedefs: Iterable[PyTreeDef]) -> PyTreeDef:
    return PyTreeDef(tuple, _TUPLE, None, tuple(treedefs))


def all_leaves(iterable: Iterable[Any], is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """True when every element of ``iterable`` is a leaf."""
    if is_leaf is None:
        return all(_kind_of(x) is None for x in iterable)
    return all(is_leaf(x) or _kind_of(x) is None for x in iterable)


def flatten_one_level(tree: Any) -> tuple[Iterable[Any], Any]:
    """The children and aux data of the root node (a leaf is an error)."""
    kind = _kind_of(tree)
    if kind is None:
        raise ValueError(f"can't tree-flatten type: {type(tree)}")
    return kind.flatten(tree)


def flatten_one_level_with_keys(tree: Any) -> tuple[tuple[tuple[Any, Any], ...], Any]:
    """The ``(key, child)`` pairs and aux data of the root node (a leaf is an error)."""
    kind = _kind_of(tree)
    if kind is None:
        raise ValueError(f"can't tree-flatten type: {type(tree)}")
    children, aux = kind.flatten(tree)
    children = list(children)
    return tuple(zip(_child_keys(kind, tree, aux, len(children)), children, strict=True)), aux


# -- structures built around placeholders -------------------------------------------------------------------
class _Unbuilt:
    """A registered node not built yet: its structure and the leaves it will have. It flattens to those
    leaves; unflattened with new ones, it builds the node then. The node type's own code (an ``__init__`` that
    calls ``jnp.asarray``) so runs on what the caller finally puts in (arrays, traced values), never on the
    placeholders a structure was first filled with (types, leaf numbers)."""

    __slots__ = ("treedef", "leaves")

    def __init__(self, treedef: PyTreeDef, leaves: list[Any]):
        self.treedef, self.leaves = treedef, leaves

    def __repr__(self) -> str:
        return f"Unbuilt({self.treedef})"


_UNBUILT = _NodeKind(lambda u: (u.leaves, u.treedef), lambda treedef, ch: treedef.unflatten(ch), None, "Unbuilt")
_registry[_Unbuilt] = _UNBUILT
_CONTAINERS = (_TUPLE, _LIST, _DICT, _NONE, _ORDERED_DICT, _DEFAULT_DICT, _NAMEDTUPLE)


def unflatten_containers(treedef: PyTreeDef, leaves: Iterable[Any]) -> Any:
    """``treedef`` rebuilt on ``leaves`` where no user code runs: the built-in containers are built, each
    registered node stays unbuilt (flattening gives its leaves back; unflattening builds it on new leaves)."""
    leaves = list(leaves)
    if len(leaves) != treedef.num_leaves:
        raise ValueError(f"expected {treedef.num_leaves} leaves for {treedef}, got {len(leaves)}")
    return _build_containers(treedef, iter(leaves))


def _build_containers(treedef: PyTreeDef, leaves: Any) -> Any:
    if treedef.kind is None:
        return next(leaves)
    if not any(treedef.kind is kind for kind in _CONTAINERS):
        return _Unbuilt(treedef, [next(leaves) for _ in range(treedef.num_leaves)])
    return treedef.kind.unflatten(treedef.aux, [_build_containers(c, leaves) for c in treedef.children_defs])


# -- matching a tree against a structure -------------------------------------------------------------------
def _describe(x: Any) -> str:
    kind = _kind_of(x)
    if kind is None:
        return f"a leaf of type {type(x).__name__}"
    return f"a {type(x).__name__} node"


def _mismatch(context: tuple[str, PyTreeDef, Any], path: tuple, detail: str) -> ValueError:
    what, root, full = context
    where = f"key path {keystr(path)}" if path else "the root"
    return ValueError(
        f"{what}: pytree structure mismatch at {where}: {detail}.\n"
        f"  expected structure: {root}\n  got a tree with structure: {tree_structure(full)}"
    )


def _flatten_up_to(treedef: PyTreeDef, x: Any, out: list, path: tuple, context: tuple) -> None:
    """Append the subtrees of ``x`` at ``treedef``'s leaves; ``context`` is (caller, root structure, root tree)."""
    if treedef.kind is None:
        out.append(x)
        return
    kind = _kind_of(x)
    if kind is not treedef.kind or (kind is not _NAMEDTUPLE and type(x) is not treedef.node_type):
        raise _mismatch(context, path,
                        f"node type mismatch: expected a {treedef.node_type.__name__} node, got {_describe(x)}")
    children, aux = kind.flatten(x)
    children = list(children)
    if kind in (_DICT, _ORDERED_DICT, _DEFAULT_DICT):
        # keys in order (sorted for dict and defaultdict, insertion order for OrderedDict, as JAX compares them)
        keys = aux if kind is not _DEFAULT_DICT else aux[1]
        expected = treedef.aux if kind is not _DEFAULT_DICT else treedef.aux[1]
        if tuple(keys) != tuple(expected):
            raise _mismatch(context, path, f"dict key mismatch: expected keys {list(expected)!r}, got {list(keys)!r}")
        if kind is _DEFAULT_DICT and aux[0] != treedef.aux[0]:
            raise _mismatch(context, path, f"defaultdict default_factory mismatch: expected {treedef.aux[0]!r}, "
                                           f"got {aux[0]!r}")
    elif kind is _NAMEDTUPLE and aux is not treedef.aux:
        raise _mismatch(context, path,
                        f"node type mismatch: expected namedtuple {treedef.aux.__name__}, got {aux.__name__}")
    elif len(children) != len(treedef.children_defs):
        raise _mismatch(context, path,
                        f"{type(x).__name__} length mismatch: expected {len(treedef.children_defs)} children, "
                        f"got {len(children)}")
    elif not _aux_equal(aux, treedef.aux):
        raise _mismatch(context, path,
                        f"{type(x).__name__} aux data mismatch: expected {treedef.aux!r}, got {aux!r}")
    keys = _child_keys(treedef.kind, x, treedef.aux, len(children))
    for key, child_def, child in zip(keys, treedef.children_defs, children, strict=True):
        _flatten_up_to(child_def, child, out, (*path, key), context)


# -- mapping -----------------------------------------------------------------------------------------------
def tree_map(f: Callable[..., Any], tree: Any, *rest: Any, is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """``f`` applied leafwise; ``rest`` must have ``tree``'s structure (or one it is a prefix of)."""
    leaves, treedef = tree_flatten(tree, is_leaf)
    if not rest:
        return treedef.unflatten([f(x) for x in leaves])
    columns = [leaves]
    for i, other in enumerate(rest):
        out: list[Any] = []
        _flatten_up_to(treedef, other, out, (), (f"tree_map: tree {i + 1} vs the first tree", treedef, other))
        columns.append(out)
    return treedef.unflatten([f(*xs) for xs in zip(*columns, strict=True)])


def tree_reduce(function: Callable[[Any, Any], Any], tree: Any, initializer: Any = _SENTINEL,
                is_leaf: Callable[[Any], bool] | None = None) -> Any:
    leaves = tree_leaves(tree, is_leaf)
    if initializer is _SENTINEL:
        return functools.reduce(function, leaves)
    return functools.reduce(function, leaves, initializer)


def _halving_reduce(function: Callable[[Any, Any], Any], leaves: list[Any]) -> Any:
    if len(leaves) == 1:
        return leaves[0]
    half = len(leaves) // 2
    return function(_halving_reduce(function, leaves[:half]), _halving_reduce(function, leaves[half:]))


def tree_reduce_associative(operation: Callable[[Any, Any], Any], tree: Any, *, identity: Any = _SENTINEL,
                            is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """The leaves combined by an associative ``operation`` as a balanced tree, halves first (as JAX pairs them);
    ``identity`` is the result of an empty tree only."""
    leaves = tree_leaves(tree, is_leaf)
    if not leaves:
        if identity is _SENTINEL:
            raise TypeError("Must specify identity for parallel reduction of empty sequence.")
        return identity
    return _halving_reduce(operation, leaves)


def tree_all(tree: Any, *, is_leaf: Callable[[Any], bool] | None = None) -> bool:
    return all(tree_leaves(tree, is_leaf))


def tree_transpose(outer_treedef: PyTreeDef, inner_treedef: PyTreeDef | None, pytree_to_transpose: Any) -> Any:
    """Turn an outer structure of inner structures into an inner structure of outer ones."""
    flat, treedef = tree_flatten(pytree_to_transpose)
    if inner_treedef is None:  # inferred from the first outer leaf's subtree
        inner_treedef = tree_structure(outer_treedef.flatten_up_to(pytree_to_transpose)[0])
    expected = outer_treedef.compose(inner_treedef)
    if treedef != expected:
        raise TypeError(f"tree_transpose: structure mismatch\n{treedef}\n != \n{expected}")
    n_inner = inner_treedef.num_leaves
    groups = [flat[i * n_inner:(i + 1) * n_inner] for i in range(outer_treedef.num_leaves)]
    subtrees = [outer_treedef.unflatten(column) for column in zip(*groups, strict=True)] if groups else [
        outer_treedef.unflatten([]) for _ in range(n_inner)]
    return inner_treedef.unflatten(subtrees)


def tree_broadcast(prefix_tree: Any, full_tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """``prefix_tree`` with each leaf repeated over the matching subtree of ``full_tree``."""
    prefix_leaves, prefix_def = tree_flatten(prefix_tree, is_leaf)
    subtrees = prefix_def.flatten_up_to(full_tree)
    parts = [tree_map(lambda _, v=leaf: v, sub) for leaf, sub in zip(prefix_leaves, subtrees, strict=True)]
    return prefix_def.unflatten(parts)


# -- key paths ---------------------------------------------------------------------------------------------
def _flatten_with_path(x: Any, path: tuple, is_leaf, takes_path: bool, out: list) -> PyTreeDef:
    if is_leaf is not None and (is_leaf(path, x) if takes_path else is_leaf(x)):
        out.append((path, x))
        return _LEAF
    kind = _kind_of(x)
    if kind is None:
        out.append((path, x))
        return _LEAF
    children, aux = kind.flatten(x)
    children = list(children)
    keys = _child_keys(kind, x, aux, len(children))
    pairs = zip(keys, children, strict=True)
    defs = tuple(_flatten_with_path(c, (*path, k), is_leaf, takes_path, out) for k, c in pairs)
    return PyTreeDef(type(x), kind, aux, defs)


def tree_flatten_with_path(tree: Any, is_leaf: Callable[..., bool] | None = None,
                           is_leaf_takes_path: bool = False) -> tuple[list[tuple[tuple, Any]], PyTreeDef]:
    out: list[tuple[tuple, Any]] = []
    treedef = _flatten_with_path(tree, (), is_leaf, is_leaf_takes_path, out)
    return out, treedef


def tree_leaves_with_path(tree: Any, is_leaf: Callable[..., bool] | None = None,
                          is_leaf_takes_path: bool = False) -> list[tuple[tuple, Any]]:
    return tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)[0]


def tree_map_with_path(f: Callable[..., Any], tree: Any, *rest: Any, is_leaf: Callable[..., bool] | None = None,
                       is_leaf_takes_path: bool = False) -> Any:
    """``f(path, leaf, *other_leaves)`` applied leafwise."""
    pairs, treedef = tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)
    columns = []
    for i, other in enumerate(rest):
        out: list[Any] = []
        context = (f"tree_map_with_path: tree {i + 1} vs the first tree", treedef, other)
        _flatten_up_to(treedef, other, out, (), context)
        columns.append(out)
    return treedef.unflatten([f(path, x, *(c[j] for c in columns)) for j, (path, x) in enumerate(pairs)])


# -- registration ------------------------------------------------------------------------------------------
def _register(nodetype: type, kind: _NodeKind) -> None:
    if nodetype in _registry:
        raise ValueError(f"Duplicate custom PyTreeDef type registration for {nodetype}.")
    _registry[nodetype] = kind


def register_pytree_node(nodetype: type, flatten_func: Callable, unflatten_func: Callable,
                         flatten_with_keys_func: Callable | None = None) -> None:
    """Make ``nodetype`` a node: ``flatten_func(x) -> (children, aux)``, ``unflatten_func(aux, children)``."""
    if flatten_with_keys_func is None:
        keys = None
    else:
        keys = lambda x, aux: [k for k, _ in flatten_with_keys_func(x)[0]]  # noqa: E731
    kind = _NodeKind(flatten_func, unflatten_func, keys, nodetype.__name__)
    _register(nodetype, kind)


def register_pytree_with_keys(nodetype: type, flatten_with_keys: Callable, unflatten_func: Callable,
                              flatten_func: Callable | None = None) -> None:
    """As ``register_pytree_node``, from ``flatten_with_keys(x) -> ([(key, child), ...], aux)``."""
    if flatten_func is None:
        def flatten_func(x):
            pairs, aux = flatten_with_keys(x)
            return [c for _, c in pairs], aux
    register_pytree_node(nodetype, flatten_func, unflatten_func, flatten_with_keys)


def register_pytree_node_class(cls: type) -> type:
    """Class decorator: the class provides ``tree_flatten(self)`` and classmethod ``tree_unflatten(aux, ch)``."""
    register_pytree_node(cls, lambda x: x.tree_flatten(), cls.tree_unflatten)
    return cls


def register_pytree_with_keys_class(cls: type) -> type:
    flatten = (lambda x: x.tree_flatten()) if hasattr(cls, "tree_flatten") else None
    register_pytree_with_keys(cls, lambda x: x.tree_flatten_with_keys(), cls.tree_unflatten, flatten)
    return cls


def register_dataclass(nodetype: type, data_fields: Iterable[str] | None = None,
                       meta_fields: Iterable[str] | None = None, drop_fields: Iterable[str] = ()) -> type:
    """Make a dataclass a node: data fields are children, meta fields are static aux data.

    Without field lists the class must be a dataclass; fields with ``metadata=dict(static=True)`` are
    meta fields, the other ``init`` fields are data fields.
    """
    if data_fields is None and meta_fields is None:
        if not dataclasses.is_dataclass(nodetype):
            raise TypeError(f"register_dataclass: {nodetype.__name__} is not a dataclass; pass data_fields and "
                            "meta_fields explicitly")
        fields = [f for f in dataclasses.fields(nodetype) if f.init]
        meta_fields = [f.name for f in fields if f.metadata.get("static", False)]
        data_fields = [f.name for f in fields if not f.metadata.get("static", False)]
    elif data_fields is None or meta_fields is None:
        raise TypeError("register_dataclass: pass both data_fields and meta_fields, or neither")
    data_fields, meta_fields = tuple(data_fields), tuple(meta_fields)
    if dataclasses.is_dataclass(nodetype):
        init_fields = {f.name for f in dataclasses.fields(nodetype) if f.init} - set(drop_fields)
        given = set(data_fields) | set(meta_fields)
        if given != init_fields:
            raise ValueError(
                f"register_dataclass: data_fields and meta_fields must together be the init fields of "
                f"{nodetype.__name__}; missing {sorted(init_fields - given)}, unexpected {sorted(given - init_fields)}")

    def flatten(x):
        return [getattr(x, n) for n in data_fields], tuple(getattr(x, n) for n in meta_fields)

    def unflatten(meta, children):
        return nodetype(**dict(zip(meta_fields, meta, strict=True)), **dict(zip(data_fields, children, strict=True)))

    keys = lambda x, aux: [GetAttrKey(n) for n in data_fields]  # noqa: E731
    _register(nodetype, _NodeKind(flatten, unflatten, keys, nodetype.__name__))
    return nodetype


def register_static(cls: type) -> type:
    """Instances of ``cls`` become nodes with no children: hashable values carried in the structure."""
    _register(cls, _NodeKind(lambda x: ((), x), lambda aux, ch: aux, lambda x, aux: [], cls.__name__))
    return cls


# -- Partial -----------------------------------------------------------------------------------------------
class Partial(functools.partial):
    """``functools.partial`` as a pytree: the bound arguments are children, the function is static.

    A partial of a partial is kept nested (not merged) so the inner arguments stay in the tree.
    """

    def __new__(klass, func, *args, **kw):
        if isinstance(func, functools.partial):
            inner = func
            func = lambda *a, **k: inner(*a, **k)  # noqa: E731 - hides the partial from functools' merging
            func.func = inner.func  # for repr and equality of the structure
        return super().__new__(klass, func, *args, **kw)


register_pytree_node(
    Partial,
    lambda p: ((p.args, p.keywords), p.func),
    lambda func, children: Partial(func, *children[0], **children[1]),
)
