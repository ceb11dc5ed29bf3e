"""Pytrees: flattening and rebuilding every node type, structures, key paths, registration, errors.

Expected structures and key strings are JAX's (recorded from jax 0.10).
"""

import collections
import dataclasses
import functools
import pickle

import pytest

from srcjax.runtime import tree
from srcjax.runtime import tree_util as tu

Point = collections.namedtuple("Point", "x y")
Other = collections.namedtuple("Other", "x y")

# (tree, leaves, repr of the structure, num_leaves, num_nodes)
CASES = [
    (1, [1], "PyTreeDef(*)", 1, 1),
    (None, [], "PyTreeDef(None)", 0, 1),
    ((), [], "PyTreeDef(())", 0, 1),
    ([], [], "PyTreeDef([])", 0, 1),
    ({}, [], "PyTreeDef({})", 0, 1),
    ((1,), [1], "PyTreeDef((*,))", 1, 2),
    ([1, (2, 3)], [1, 2, 3], "PyTreeDef([*, (*, *)])", 3, 5),
    ({"b": 1, "a": [2, None]}, [2, 1], "PyTreeDef({'a': [*, None], 'b': *})", 2, 5),
    (Point(1, (2,)), [1, 2], "PyTreeDef(CustomNode(namedtuple[Point], [*, (*,)]))", 2, 4),
    (collections.OrderedDict([("z", 1), ("a", 2)]), [1, 2], "PyTreeDef(CustomNode(OrderedDict[('z', 'a')], [*, *]))",
     2, 3),
    (collections.defaultdict(list, {"q": 8, "b": 9}), [9, 8],
     "PyTreeDef(CustomNode(defaultdict[(<class 'list'>, ('b', 'q'))], [*, *]))", 2, 3),
    # the big mixed tree recorded from JAX: 8 leaves, 15 nodes
    ((1, {"b": [2, 3], "a": None}, Point(4, 5), collections.OrderedDict([("z", 6), ("a", 7)]),
      collections.defaultdict(list, {"q": 8})), [1, 2, 3, 4, 5, 6, 7, 8],
     "PyTreeDef((*, {'a': None, 'b': [*, *]}, CustomNode(namedtuple[Point], [*, *]), "
     "CustomNode(OrderedDict[('z', 'a')], [*, *]), CustomNode(defaultdict[(<class 'list'>, ('q',))], [*])))", 8, 15),
]


@pytest.mark.parametrize("value, leaves, text, num_leaves, num_nodes", CASES)
def test_flatten_unflatten_roundtrip(value, leaves, text, num_leaves, num_nodes):
    got_leaves, treedef = tu.tree_flatten(value)
    assert got_leaves == leaves
    assert repr(treedef) == text
    assert (treedef.num_leaves, treedef.num_nodes) == (num_leaves, num_nodes)
    rebuilt = tu.tree_unflatten(treedef, got_leaves)
    assert rebuilt == value and type(rebuilt) is type(value)
    assert tu.tree_leaves(value) == leaves
    assert tu.tree_structure(value) == treedef
    assert treedef.unflatten(leaves) == value


def test_rebuilt_containers_keep_their_types_and_order():
    od = tu.tree_map(lambda x: x * 10, collections.OrderedDict([("z", 1), ("a", 2)]))
    assert list(od.items()) == [("z", 10), ("a", 20)]
    dd = tu.tree_map(lambda x: x + 1, collections.defaultdict(list, {"k": 1}))
    assert isinstance(dd, collections.defaultdict) and dd.default_factory is list and dd["k"] == 2
    assert dd["missing"] == []
    p = tu.tree_map(lambda x: -x, Point(1, 2))
    assert isinstance(p, Point) and p == Point(-1, -2)


def test_structure_equality_and_hash():
    a, b = tu.tree_structure([1, {"k": 2}]), tu.tree_structure([5, {"k": 6}])
    assert a == b and hash(a) == hash(b)
    assert tu.tree_structure((1, 2)) != tu.tree_structure([1, 2])
    assert tu.tree_structure(Point(1, 2)) != tu.tree_structure(Other(1, 2))
    assert tu.tree_structure(Point(1, 2)) != tu.tree_structure((1, 2))
    assert tu.tree_structure({"a": 1}) != tu.tree_structure({"b": 1})
    assert tu.tree_structure(None) != tu.tree_structure(1)
    assert len({a, b, tu.tree_structure((1, 2))}) == 2


def test_treedef_children_node_data_and_helpers():
    treedef = tu.tree_structure([1, (2, 3)])
    assert treedef.children() == [tu.tree_structure(1), tu.tree_structure((2, 3))]
    assert tu.treedef_children(treedef) == treedef.children()
    assert treedef.node_data() == (list, None)
    assert tu.tree_structure(1).node_data() is None
    assert tu.treedef_is_leaf(tu.tree_structure(1))
    assert not tu.treedef_is_leaf(tu.tree_structure(None))
    assert repr(tu.treedef_tuple([tu.tree_structure(1), tu.tree_structure([1])])) == "PyTreeDef((*, [*]))"
    assert treedef.flatten_up_to([(1, 2), (3, [4])]) == [(1, 2), 3, [4]]
    assert tu.all_leaves([1, 2.0, "s"]) and not tu.all_leaves([1, [2]]) and not tu.all_leaves([None])
    assert tu.all_leaves([[1]], is_leaf=lambda x: isinstance(x, list))
    assert tu.flatten_one_level({"a": 1, "b": [2]}) == ([1, [2]], ("a", "b"))
    with pytest.raises(ValueError, match="can't tree-flatten type"):
        tu.flatten_one_level(1)


def test_unflatten_leaf_count_errors():
    treedef = tu.tree_structure([1, (2, 3)])
    with pytest.raises(ValueError, match="Too few leaves for PyTreeDef; expected 3, got 2"):
        treedef.unflatten([1, 2])
    with pytest.raises(ValueError, match="Too many leaves for PyTreeDef; expected 3, got 4"):
        tu.tree_unflatten(treedef, iter([1, 2, 3, 4]))
    with pytest.raises(TypeError, match="expected a PyTreeDef"):
        tu.tree_unflatten([1], [1])


def test_pickling_a_treedef_is_refused():
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(tu.tree_structure([1]))


def test_is_leaf():
    value = [1, None, (2, 3)]
    assert tu.tree_leaves(value, is_leaf=lambda x: x is None) == [1, None, 2, 3]
    assert tu.tree_leaves(value, is_leaf=lambda x: isinstance(x, tuple)) == [1, (2, 3)]
    assert tu.tree_map(lambda x: x, [1, (2, 3)], is_leaf=lambda x: isinstance(x, tuple)) == [1, (2, 3)]
    assert tu.tree_map(len, [(1, 2), (3,)], is_leaf=lambda x: isinstance(x, tuple)) == [2, 1]


def test_tree_map_several_trees_and_prefix_structure():
    assert tu.tree_map(lambda x, y: x + y, {"a": [1, 2], "b": None}, {"a": [10, 20], "b": None}) == {
        "a": [11, 22], "b": None}
    # the first tree's leaves may stand over whole subtrees of the others
    assert tu.tree_map(lambda x, y: (x, y), [1, 2], [(3, 4), 5]) == [(1, (3, 4)), (2, 5)]
    got = tu.tree_map(lambda x, y: x - y, collections.OrderedDict([("a", 5), ("b", 7)]),
                      collections.OrderedDict([("a", 2), ("b", 1)]))
    assert list(got.items()) == [("a", 3), ("b", 6)]


MISMATCHES = [
    ((1, 2), [1, 2], "at the root: node type mismatch: expected a tuple node, got a list node"),
    ({"a": 1}, {"b": 1}, r"at the root: dict key mismatch: expected keys \['a'\], got \['b'\]"),
    ({"a": 1, "b": 2}, {"a": 1}, r"dict key mismatch: expected keys \['a', 'b'\], got \['a'\]"),
    ((1, 2), (1, 2, 3), "tuple length mismatch: expected 2 children, got 3"),
    (Point(1, 2), (1, 2), "node type mismatch: expected a Point node, got a tuple node"),
    (Point(1, 2), Other(1, 2), "expected namedtuple Point, got Other"),
    ([1, [2]], [1, 2], r"at key path \[1\]: node type mismatch: expected a list node, got a leaf of type int"),
    ({"k": [1, None]}, {"k": [1, 2]}, r"at key path \['k'\]\[1\]: node type mismatch: expected a NoneType node"),
    # OrderedDicts are matched in order, as JAX does
    (collections.OrderedDict([("a", 1), ("b", 2)]), collections.OrderedDict([("b", 1), ("a", 2)]),
     r"dict key mismatch: expected keys \['a', 'b'\], got \['b', 'a'\]"),
    (collections.defaultdict(list, {"a": 1}), collections.defaultdict(dict, {"a": 1}), "default_factory mismatch"),
]


@pytest.mark.parametrize("first, second, message", MISMATCHES)
def test_tree_map_mismatch_errors_say_where_and_what(first, second, message):
    with pytest.raises(ValueError, match=message) as info:
        tu.tree_map(lambda x, y: x, first, second)
    text = str(info.value)
    assert "tree_map: tree 1 vs the first tree" in text
    assert f"expected structure: {tu.tree_structure(first)}" in text
    assert f"got a tree with structure: {tu.tree_structure(second)}" in text


def test_reduce_all_transpose_broadcast():
    assert tu.tree_reduce(lambda a, b: a + b, [1, (2, 3)]) == 6
    assert tu.tree_reduce(lambda a, b: a + b, [], 10) == 10
    with pytest.raises(TypeError, match="empty"):
        tu.tree_reduce(lambda a, b: a + b, [])
    assert tu.tree_all([True, (1, 2)]) and not tu.tree_all([True, (1, 0)]) and tu.tree_all([])
    outer, inner = tu.tree_structure([0, 0]), tu.tree_structure((0, 0, 0))
    assert tu.tree_transpose(outer, inner, [(1, 2, 3), (4, 5, 6)]) == ([1, 4], [2, 5], [3, 6])
    assert tu.tree_transpose(outer, None, [(1, 2, 3), (4, 5, 6)]) == ([1, 4], [2, 5], [3, 6])
    with pytest.raises(TypeError, match="tree_transpose: structure mismatch"):
        tu.tree_transpose(outer, inner, [(1, 2, 3), (4, 5)])
    assert tu.tree_broadcast([1, (2, 3)], [(1, 2), ((3, 4), 5)]) == [(1, 1), ((2, 2), 3)]


def test_key_paths():
    value = (1, {"b": [2, 3], "a": None}, Point(4, 5), collections.OrderedDict([("z", 6), ("a", 7)]),
             collections.defaultdict(list, {"q": 8}))
    pairs, treedef = tu.tree_flatten_with_path(value)
    assert treedef == tu.tree_structure(value)
    assert [x for _, x in pairs] == [1, 2, 3, 4, 5, 6, 7, 8]
    assert [tu.keystr(p) for p, _ in pairs] == [
        "[0]", "[1]['b'][0]", "[1]['b'][1]", "[2].x", "[2].y", "[3]['z']", "[3]['a']", "[4]['q']"]
    assert pairs[1][0] == (tu.SequenceKey(1), tu.DictKey("b"), tu.SequenceKey(0))
    assert repr(tu.GetAttrKey("x")) == "GetAttrKey(name='x')" and str(tu.GetAttrKey("x")) == ".x"
    path = (tu.SequenceKey(1), tu.DictKey("b"), tu.GetAttrKey("x"), tu.FlattenedIndexKey(2))
    assert tu.keystr(path) == "[1]['b'].x[<flat index 2>]"
    assert tu.keystr(path, simple=True, separator="/") == "1/b/x/2"
    assert tu.tree_leaves_with_path([1])[0] == ((tu.SequenceKey(0),), 1)
    doubled = tu.tree_map_with_path(lambda p, x, y: (tu.keystr(p), x + y), {"a": 1, "b": (2,)}, {"a": 10, "b": (20,)})
    assert doubled == {"a": ("['a']", 11), "b": (("['b'][0]", 22),)}
    taken = tu.tree_leaves_with_path([[1, 2], 3], is_leaf=lambda p, x: len(p) == 1, is_leaf_takes_path=True)
    assert [(tu.keystr(p), x) for p, x in taken] == [("[0]", [1, 2]), ("[1]", 3)]


# -- registration ---------------------------------------------------------------------------------------------
class Box:
    def __init__(self, a, b, label):
        self.a, self.b, self.label = a, b, label

    def __eq__(self, other):
        return isinstance(other, Box) and (self.a, self.b, self.label) == (other.a, other.b, other.label)


tu.register_pytree_node(Box, lambda box: ((box.a, box.b), box.label), lambda label, ch: Box(ch[0], ch[1], label))


@tu.register_pytree_node_class
class Pair:
    def __init__(self, first, aux):
        self.first, self.aux = first, aux

    def tree_flatten(self):
        return (self.first,), self.aux

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(children[0], aux)


@tu.register_pytree_with_keys_class
class Keyed:
    def __init__(self, u, v):
        self.u, self.v = u, v

    def tree_flatten_with_keys(self):
        return [(tu.GetAttrKey("u"), self.u), (tu.GetAttrKey("v"), self.v)], None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)


@dataclasses.dataclass
class Explicit:
    x: object
    y: object
    name: str


tu.register_dataclass(Explicit, data_fields=["x", "y"], meta_fields=["name"])


@tu.register_dataclass
@dataclasses.dataclass(frozen=True)
class Inferred:
    w: object
    name: str = dataclasses.field(metadata=dict(static=True), default="n")


@tu.register_static
class Static:
    def __init__(self, v):
        self.v = v

    def __eq__(self, other):
        return isinstance(other, Static) and self.v == other.v

    def __hash__(self):
        return hash(self.v)


def test_registered_node_classes():
    leaves, treedef = tu.tree_flatten(Box(1, [2, 3], "lbl"))
    assert leaves == [1, 2, 3] and repr(treedef) == "PyTreeDef(CustomNode(Box[lbl], [*, [*, *]]))"
    assert tu.tree_map(lambda x: x * 2, Box(1, [2, 3], "lbl")) == Box(2, [4, 6], "lbl")
    assert tu.tree_structure(Box(1, 2, "p")) != tu.tree_structure(Box(1, 2, "q"))  # aux data is compared
    assert [tu.keystr(p) for p, _ in tu.tree_flatten_with_path(Box(1, 2, "l"))[0]] == [
        "[<flat index 0>]", "[<flat index 1>]"]
    leaves, treedef = tu.tree_flatten(Pair(5, "aux"))
    assert leaves == [5] and repr(treedef) == "PyTreeDef(CustomNode(Pair[aux], [*]))"
    assert tu.tree_unflatten(treedef, [6]).first == 6
    pairs, _ = tu.tree_flatten_with_path(Keyed(1, 2))
    assert [(tu.keystr(p), x) for p, x in pairs] == [(".u", 1), (".v", 2)]
    assert tu.tree_map(lambda x: x + 1, Keyed(1, 2)).v == 3
    with pytest.raises(ValueError, match="Duplicate custom PyTreeDef type registration"):
        tu.register_pytree_node(Box, lambda b: ((), None), lambda a, c: None)


def test_dataclasses_and_static():
    leaves, treedef = tu.tree_flatten(Explicit(1, 2, "n"))
    assert leaves == [1, 2] and repr(treedef) == "PyTreeDef(CustomNode(Explicit[('n',)], [*, *]))"
    assert tu.tree_map(lambda v: v * 3, Explicit(1, 2, "n")) == Explicit(3, 6, "n")
    assert [tu.keystr(p) for p, _ in tu.tree_flatten_with_path(Explicit(1, 2, "n"))[0]] == [".x", ".y"]
    leaves, treedef = tu.tree_flatten(Inferred(7, "m"))
    assert leaves == [7] and repr(treedef) == "PyTreeDef(CustomNode(Inferred[('m',)], [*]))"
    assert tu.tree_map(lambda v: v + 1, Inferred(7, "m")) == Inferred(8, "m")
    leaves, treedef = tu.tree_flatten([Static(1), 2])
    assert leaves == [2] and tu.tree_unflatten(treedef, [3]) == [Static(1), 3]
    assert tu.tree_structure([Static(1)]) != tu.tree_structure([Static(2)])


def test_register_dataclass_errors():
    class Plain:
        pass

    with pytest.raises(TypeError, match="not a dataclass"):
        tu.register_dataclass(Plain)

    @dataclasses.dataclass
    class Partial:
        a: int
        b: int

    with pytest.raises(ValueError, match=r"missing \['b'\]"):
        tu.register_dataclass(Partial, data_fields=["a"], meta_fields=[])
    with pytest.raises(TypeError, match="both data_fields and meta_fields"):
        tu.register_dataclass(Partial, data_fields=["a", "b"])


def test_partial_is_a_pytree():
    add = lambda a, b, scale=1: (a + b) * scale  # noqa: E731
    p = tu.Partial(add, 1, scale=2)
    assert p(3) == 8
    leaves, treedef = tu.tree_flatten(p)
    assert leaves == [1, 2]
    q = tu.tree_unflatten(treedef, [10, 3])
    assert isinstance(q, tu.Partial) and q(1) == 33
    assert tu.tree_map(lambda x: x * 2, p)(0) == 8  # (2 + 0) * 4
    nested = tu.Partial(functools.partial(add, 1), 2)  # the inner partial stays opaque, not merged
    assert nested() == 3 and tu.tree_leaves(nested) == [2]


def test_tree_module_aliases():
    assert tree.map(lambda x: x + 1, [1, (2,)]) == [2, (3,)]
    assert tree.leaves({"a": 1, "b": 2}) == [1, 2]
    leaves, treedef = tree.flatten((1, 2))
    assert tree.unflatten(treedef, leaves) == (1, 2) and tree.structure((3, 4)) == treedef
    assert tree.reduce(max, [3, 9, 2]) == 9 and tree.all([1, 1])
    assert tree.map_with_path(lambda p, x: tu.keystr(p), [5]) == ["[0]"]
    assert tree.flatten_with_path([5])[0] == [((tu.SequenceKey(0),), 5)]
    assert tree.transpose(tree.structure([0]), tree.structure((0, 0)), [(1, 2)]) == ([1], [2])


def test_associative_reduce_static_fields_and_one_level_keys():
    """JAX's tree.reduce_associative pairs the leaves as halves (recorded from jax 0.10.2: ``((12)(3(45)))``),
    tree.static marks a dataclass field as a meta field, flatten_one_level_with_keys gives the root's keyed
    children, and dict keys that cannot be sorted are JAX's ValueError."""
    assert tree.reduce_associative(lambda a, b: f"({a}{b})", [1, 2, (3, 4), 5]) == "((12)(3(45)))"
    assert tu.tree_reduce_associative(lambda a, b: a + b, [], identity=0) == 0
    with pytest.raises(TypeError, match="Must specify identity"):
        tree.reduce_associative(lambda a, b: a + b, [])

    @tu.register_dataclass
    @dataclasses.dataclass
    class Op:
        x: object
        kind: str = tree.static(default="add")

    assert tree.leaves(Op(1)) == [1] and repr(tree.structure(Op(1))) == "PyTreeDef(CustomNode(Op[('add',)], [*]))"
    assert tu.flatten_one_level_with_keys({"b": 1, "a": (2,)}) == (
        ((tu.DictKey("a"), (2,)), (tu.DictKey("b"), 1)), ("a", "b"))
    assert tu.flatten_one_level_with_keys(None) == ((), None)
    with pytest.raises(ValueError, match="can't tree-flatten"):
        tu.flatten_one_level_with_keys(3)
    with pytest.raises(ValueError, match="Comparator raised exception while sorting pytree dictionary keys"):
        tree.leaves({1: 1, "a": 2})


def test_flattening_a_wide_tree_takes_time_in_proportion_to_its_size():
    """Flattening and rebuilding 10x the layers takes about 10x the time, not 100x (no quadratic step). The
    two sizes are timed best of five, one right after the other, so the machine's load weighs on both alike;
    the bound leaves room for noise."""
    import time

    def best(layers: int) -> float:
        params = {f"layer{i}": {"w": [i] * 8, "b": (i, None)} for i in range(layers)}
        times = []
        for _ in range(5):
            start = time.perf_counter()
            leaves, treedef = tu.tree_flatten(params)
            assert treedef.unflatten(leaves) == params and len(leaves) == layers * 9
            times.append(time.perf_counter() - start)
        return min(times)

    small, large = best(200), best(2000)
    assert large < 40 * small, (small, large)
