"""Exercises of lesson 01, what is a pytree: counting, key paths, nodes and leaves, structure."""

import collections
import dataclasses
from typing import Any

import jax
import numpy as np
from jax.tree_util import keystr

from .._leaves import leaf_size, same_structure
from ._kit import (
    Layer,
    Opaque,
    Point,
    call_tree,
    call_value,
    count_none,
    in_parts,
    judge_bool,
    judge_number,
    random_f32,
    random_leaf,
    random_tree,
    to_python,
    tree_judge,
)
from ._plain import describe, rebuild_tree
from ._spec import Case, Exercise, Judge


def _none_leaf(x: Any) -> bool:
    return x is None


# --- 01.count_params -------------------------------------------------------------------------


def _count_params(tree: Any) -> int:
    return sum(leaf_size(leaf) or 0 for leaf in jax.tree.leaves(tree))


def _count_case(tree: Any, label: str) -> Case:
    leaves = jax.tree.leaves(tree)
    numbers = sum(1 for leaf in leaves if isinstance(leaf, (int, float)))
    info = {"leaves": len(leaves), "nones": count_none(tree), "numbers": numbers}
    return Case((tree,), label=label, info=info)


def _count_cases(rng: np.random.Generator) -> list[Case]:
    m, n = (int(k) for k in rng.integers(2, 6, size=2))
    cases = [
        _count_case(
            {"w": random_f32(rng, m, n), "b": random_f32(rng, n)},
            f"a layer with w of shape ({m}, {n}) and b of shape ({n},)",
        ),
        _count_case(
            {"encoder": {"w": random_f32(rng, n, m), "b": None}, "decoder": None},
            "a dict with None subtrees",
        ),
        _count_case(
            [1.5, random_f32(rng, n), (2, random_f32(rng, m, 1))],
            "a list mixing Python numbers and arrays",
        ),
        _count_case(
            (
                Layer(w=random_f32(rng, m, m), b=None),
                Point(x=random_f32(rng), y=random_f32(rng, 1)),
            ),
            "namedtuples with a None field and 0-d arrays",
        ),
        _count_case(collections.OrderedDict(z=[None, None], a=()), "a tree with no leaves at all"),
        _count_case(None, "None on its own"),
    ]
    for i in range(4):
        tree = {
            "params": random_tree(rng, depth=3, none_rate=0.3),
            "extra": random_tree(rng, depth=2),
        }
        cases.append(_count_case(tree, f"random tree {i + 1}, {describe(tree, 100)}"))
    # The trees without leaves (0 parameters) share a part with layers, so a constant 0 earns
    # nothing.
    dicts, mixed = "dicts, None and empty trees", "numbers, lists and namedtuples"
    return in_parts(cases, [dicts, dicts, mixed, mixed, dicts, dicts] + ["random trees"] * 4)


def _judge_count(got: Any, expected: Any, case: Case) -> str | None:
    problem = judge_number(got, expected, case)
    if problem is None or not isinstance(to_python(got), (int, float)):
        return problem
    value, want, info = to_python(got), to_python(expected), case.info
    if value == info["leaves"] != want:
        return (
            f"returned {value}, the number of leaves; count the elements in each leaf instead "
            "(a (3, 2) array holds 6)."
        )
    if info["nones"] and value == want + info["nones"]:
        return (
            f"returned {value}, expected {want}: each None seems to count as a parameter. None "
            "is an empty subtree: it holds no leaves."
        )
    if info["numbers"] and value == want - info["numbers"]:
        return (
            f"returned {value}, expected {want}: Python numbers are leaves too, and each "
            "counts as one element."
        )
    return problem


COUNT_PARAMS = Exercise(
    id="01.count_params",
    name="count_params",
    title="Count the parameters of any tree",
    points=2,
    cases=_count_cases,
    reference=_count_params,
    probe=call_value,
    judge=_judge_count,
    hints=(
        "jax.tree.leaves(tree) lists every leaf; None subtrees are already left out.",
        "np.size(leaf) counts the elements of a JAX array, a NumPy array or a Python number alike.",
        "Add the counts of all leaves; a tree without leaves (or None) has 0 parameters.",
    ),
    forbidden=("tree_size", "tree_bytes", "tree_summary", "FlatTree"),
    mistakes=(
        "counts the leaves, not the elements in them",
        "counts each `None` as a parameter",
        "forgets `return`",
    ),
)


# --- 01.leaf_paths ---------------------------------------------------------------------------


def _leaf_paths(tree: Any) -> list[str]:
    return [
        keystr(path) for path, _ in jax.tree_util.tree_leaves_with_path(tree, is_leaf=_none_leaf)
    ]


def _paths_case(tree: Any, label: str) -> Case:
    paths = jax.tree_util.tree_leaves_with_path(tree, is_leaf=_none_leaf)
    none_paths = [keystr(path) for path, leaf in paths if leaf is None]
    return Case((tree,), label=label, info={"none_paths": none_paths})


def _paths_cases(rng: np.random.Generator) -> list[Case]:
    leaf = lambda: random_leaf(rng)
    cases = [
        _paths_case(
            {"w": leaf(), "b": None, "alpha": [leaf(), None]},
            "a dict with None values, keys not in sorted order",
        ),
        _paths_case(
            collections.OrderedDict(z=leaf(), a=None, m=(leaf(),)),
            "an OrderedDict, which keeps its own key order",
        ),
        _paths_case(
            [Layer(w=leaf(), b=None), Point(x=None, y=leaf())],
            "a list of namedtuples with None fields",
        ),
        _paths_case(
            (leaf(), [None, [leaf(), ()]], {}), "nested tuples and lists with empty containers"
        ),
        _paths_case(leaf(), "a single leaf (its path is empty)"),
    ]
    for i in range(4):
        tree = {
            "decoder": random_tree(rng, depth=3, none_rate=0.35),
            "encoder": random_tree(rng, depth=3, none_rate=0.35),
        }
        cases.append(_paths_case(tree, f"random tree {i + 1}, {describe(tree, 100)}"))
    dicts, nested = (
        "dicts and OrderedDicts with None",
        "namedtuples, nested containers and a single leaf",
    )
    return in_parts(cases, [dicts, dicts, nested, nested, nested] + ["random trees"] * 4)


def _judge_paths(got: Any, expected: Any, case: Case) -> str | None:
    if isinstance(got, tuple):
        return "returned a tuple; return a list of strings."
    if not isinstance(got, list):
        return f"returned {describe(got)}; return a list of strings."
    if not all(isinstance(p, str) for p in got):
        bad = next(p for p in got if not isinstance(p, str))
        return (
            f"the list holds {describe(bad)}, not a string: jax.tree_util.keystr(path) writes "
            "a key path as a string."
        )
    if got == expected:
        return None
    none_paths = case.info["none_paths"]
    if none_paths and got == [p for p in expected if p not in none_paths]:
        return (
            f"the paths of the None entries ({', '.join(none_paths)}) are missing: JAX "
            "skips None, an empty subtree, unless is_leaf says it is a leaf."
        )
    if sorted(got) == sorted(expected):
        return (
            "the right paths in the wrong order: JAX goes through a dict's keys in sorted order "
            "(an OrderedDict keeps its own order), so follow the order jax.tree.leaves uses."
        )
    missing = [p for p in expected if p not in got]
    extra = [p for p in got if p not in expected]
    if missing:
        return f"missing path {missing[0]!r}" + (
            f", and {extra[0]!r} is not a path of a leaf." if extra else "."
        )
    if extra:
        return f"{extra[0]!r} is not the path of a leaf or of a None entry."
    return f"returned {len(got)} paths, expected {len(expected)}: some appear twice."


LEAF_PATHS = Exercise(
    id="01.leaf_paths",
    name="leaf_paths",
    title="List the key paths of the leaves, None included",
    points=2,
    cases=_paths_cases,
    reference=_leaf_paths,
    probe=call_value,
    judge=_judge_paths,
    hints=(
        "jax.tree_util.tree_leaves_with_path(tree) gives (key path, leaf) pairs in flatten order.",
        "Turn a key path into text with jax.tree_util.keystr(path).",
        (
            "None is an empty subtree, so it has no path unless you say it is a leaf: "
            "is_leaf=lambda x: x is None."
        ),
    ),
    forbidden=("tree_summary", "FlatTree"),
    mistakes=(
        "leaves out the paths of the `None` entries",
        "returns a tuple instead of a list",
    ),
)


# --- 01.is_node ------------------------------------------------------------------------------


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class RegisteredLayer:
    """A class registered with JAX: a node, though it is no list, tuple or dict."""

    w: Any
    b: Any


def _is_node(x: Any) -> bool:
    return not jax.tree_util.all_leaves([x])


_NODE_WHY = {
    "none": (
        "None is a node: an empty subtree with no children, which is why "
        "jax.tree.leaves(None) is []."
    ),
    "empty": "an empty container is still a node; it just has no children.",
    "single": "a container holding a single leaf is still a node.",
    "container": "lists, tuples and dicts are nodes.",
    "namedtuple": "a namedtuple is a node: each field is a child.",
    "ordered": "an OrderedDict is a node (its children keep their insertion order).",
    "shape": (
        "x.shape is a plain tuple, so JAX sees a node with the dimensions as leaves (pitfall: "
        "mapping over a shape)."
    ),
    "array": "an array is one leaf, however many elements it holds.",
    "number": "a Python number is a leaf.",
    "string": "a string is a leaf: JAX does not look inside it.",
    "set": "a set is not a registered pytree node, so it is a leaf.",
    "opaque": "an instance of a class JAX does not know is a leaf.",
    "registered": (
        "a class registered with JAX (here with register_dataclass) is a node, though it is "
        "no list, tuple or dict: ask JAX, not isinstance."
    ),
    "partial": (
        "jax.tree_util.Partial is registered as a node: its bound arguments are its children."
    ),
}


def _node_cases(rng: np.random.Generator) -> list[Case]:
    a, b = random_leaf(rng), random_leaf(rng)
    arr = random_f32(rng, *(int(k) for k in rng.integers(1, 4, size=2)))
    found = [
        ("None", None, "none"),
        ("an empty tuple", (), "empty"),
        ("an empty list", [], "empty"),
        ("an empty dict", {}, "empty"),
        ("an empty OrderedDict", collections.OrderedDict(), "empty"),
        ("a list of one leaf", [a], "single"),
        ("a tuple holding only None", (None,), "single"),
        ("a dict", {"w": a, "b": b}, "container"),
        ("a namedtuple", Layer(w=a, b=b), "namedtuple"),
        ("a registered dataclass", RegisteredLayer(w=a, b=b), "registered"),
        (
            "a jax.tree_util.Partial with a bound array",
            jax.tree_util.Partial(np.multiply, arr),
            "partial",
        ),
        ("an OrderedDict", collections.OrderedDict(b=a, a=b), "ordered"),
        ("the shape of an array", arr.shape, "shape"),
        ("a NumPy array", arr, "array"),
        ("a JAX array", jax.device_put(arr), "array"),
        ("a 0-d array", np.float32(rng.normal()).round(2), "array"),
        ("a Python float", round(float(rng.normal()), 2), "number"),
        ("a Python int", int(rng.integers(0, 100)), "number"),
        ("a string", str(rng.choice(["relu", "gelu", "adam", "sgd"])), "string"),
        ("a set", {int(rng.integers(0, 9))}, "set"),
        (
            "an instance of an unregistered class",
            Opaque(str(rng.choice(["config", "rng", "logger"]))),
            "opaque",
        ),
    ]
    order = rng.permutation(len(found))
    return [Case((found[i][1],), label=found[i][0], info={"kind": found[i][2]}) for i in order]


def _explained_bool(name: str, why: dict[str, str]) -> Judge:
    """:func:`judge_bool`, and for a wrong True or False the reason its kind of input gives."""

    def judge(got: Any, expected: Any, case: Case) -> str | None:
        problem = judge_bool(got, expected, case)
        if problem is None or not isinstance(to_python(got), bool):
            return problem
        return f"{name} returned {to_python(got)}, expected {expected}: {why[case.info['kind']]}"

    return judge


IS_NODE = Exercise(
    id="01.is_node",
    name="is_node",
    title="Tell nodes from leaves",
    points=1,
    cases=_node_cases,
    reference=_is_node,
    probe=call_value,
    judge=_explained_bool("is_node", _NODE_WHY),
    hints=(
        "Ask JAX what it sees: jax.tree.structure(x).",
        (
            "A leaf on its own has the structure PyTreeDef(*); compare with the structure of "
            "something you know is a leaf."
        ),
        (
            "Counting leaves does not decide it: None and empty containers are nodes with no "
            "leaves, and [x] is a node with one."
        ),
    ),
    mistakes=(
        "asks `treedef_is_leaf`, which calls `None` and empty containers leaves",
        "decides by counting leaves",
        "decides with `isinstance`, which misses registered classes",
    ),
)


# --- 01.replace_leaves -----------------------------------------------------------------------


def _replace_leaves(tree: Any, values: list[Any]) -> Any:
    return jax.tree.unflatten(jax.tree.structure(tree), values)


def _replace_cases(rng: np.random.Generator) -> list[Case]:
    def case(tree: Any, label: str, strings: bool) -> Case:
        n = len(jax.tree.leaves(tree))
        if strings:
            tags = [
                str(t)
                for t in rng.choice(list("abcdefghijklmnopqrstuvwxyz"), size=n, replace=False)
            ]
            values: list[Any] = [f"new_{t}" for t in tags]
        else:
            values = [
                np.full(tuple(int(k) for k in rng.integers(1, 3, size=1)), i, np.float32)
                for i in range(n)
            ]
        return Case((tree, values), label=label)

    def odd_values(tree: Any, label: str) -> Case:
        """New values that are trees themselves: each must land whole in one leaf's place."""
        kinds: list[Any] = [(1, 2), [3.0, 4.0], None, "text", {"k": 5.0}, np.arange(2.0)]
        n = len(jax.tree.leaves(tree))
        return Case((tree, [kinds[i % len(kinds)] for i in range(n)]), label=label)

    leaf = lambda: random_leaf(rng)
    cases = [
        case(
            {"w": leaf(), "b": leaf(), "alpha": leaf()},
            "a dict whose keys are not in sorted order",
            True,
        ),
        odd_values(
            {"w": leaf(), "b": leaf(), "c": [leaf(), leaf()], "d": (leaf(), leaf())},
            "new values that are tuples, lists, dicts and None",
        ),
        case([leaf(), None, (leaf(), {"z": leaf(), "a": None})], "a list with None subtrees", True),
        case(Layer(w=leaf(), b=(leaf(), leaf())), "a namedtuple", False),
        case(collections.OrderedDict(z=leaf(), a=[leaf()]), "an OrderedDict", True),
        case(leaf(), "a single leaf", False),
    ]
    for i in range(3):
        tree = {"head": random_tree(rng, depth=3), "emb": random_tree(rng, depth=2), "b": leaf()}
        cases.append(case(tree, f"random tree {i + 1}, {describe(tree, 100)}", i % 2 == 0))
    dicts, other = "dicts and lists with None", "namedtuples, OrderedDicts and a single leaf"
    odd = "new values that are trees themselves"
    return in_parts(cases, [dicts, odd, dicts, other, other, other] + ["random trees"] * 3)


_tree_judge = tree_judge()


def _judge_replace(got: Any, expected: Any, case: Case) -> str | None:
    problem = _tree_judge(got, expected, case)
    if problem is None or problem.startswith("the structure"):
        return problem
    mine, theirs = jax.tree.leaves(rebuild_tree(got)), jax.tree.leaves(rebuild_tree(expected))
    if sorted(map(describe, mine)) == sorted(map(describe, theirs)):
        return problem + (
            " The values are all there but in another order: they go in the order "
            "jax.tree.leaves lists leaves (dict keys sorted)."
        )
    return problem


REPLACE_LEAVES = Exercise(
    id="01.replace_leaves",
    name="replace_leaves",
    title="Build a tree with a given structure",
    points=2,
    cases=_replace_cases,
    reference=_replace_leaves,
    probe=call_tree,
    judge=_judge_replace,
    hints=(
        "jax.tree.structure(tree) is the tree without its leaves: a PyTreeDef.",
        (
            "A PyTreeDef can be filled with new leaves, taken in flatten order: look at "
            "jax.tree.unflatten."
        ),
        "None subtrees are part of the structure; they hold no leaves and take no values.",
    ),
    mistakes=(
        "returns the new values instead of a tree",
        "fills the leaves in insertion order, not in flatten order (dict keys sorted)",
    ),
)


# --- 01.same_structure -----------------------------------------------------------------------

_SAME_WHY = {
    "list_tuple": "a list and a tuple are different node types, even with the same leaves.",
    "namedtuple_tuple": "a namedtuple is its own node type, not a tuple.",
    "dict_order": "dict keys are sorted when flattened, so insertion order does not matter.",
    "ordered_order": "an OrderedDict keeps its key order, and the order is part of its structure.",
    "dict_ordered": "a dict and an OrderedDict are different node types.",
    "shapes": "the structure ignores what the leaves are: shapes and dtypes do not matter.",
    "leaf_kinds": "a Python number and an array are both leaves, so the structures are the same.",
    "none_leaf": "None is an empty subtree, not a leaf, so it differs from a leaf in its place.",
    "leaf_none": (
        "None is an empty subtree, not a leaf, so it differs from a leaf in its place "
        "(jax.tree.map accepts this pair: a None in the second tree is handed to f)."
    ),
    "deeper": (
        "a leaf in one tree where the other has a tuple are different structures "
        "(jax.tree.map accepts this pair: the second tree may go deeper)."
    ),
    "extra_key": "a dict with an extra key has another structure.",
    "same": "two copies of one tree have the same structure.",
    "none_both": "None in the same place in both trees is the same structure.",
    "length": "lists of different lengths are different structures.",
}


def _same_cases(rng: np.random.Generator) -> list[Case]:
    leaf = lambda: random_leaf(rng)
    x, y, z = random_f32(rng, 2), random_f32(rng, 3, 2), random_f32(rng, 1)
    pairs = [
        ("a list and a tuple with the same leaves", [x, y], (x, y), "list_tuple"),
        (
            "a namedtuple and a tuple with the same leaves",
            Point(x=x, y=y),
            (x, y),
            "namedtuple_tuple",
        ),
        (
            "two dicts with the same keys inserted in different orders",
            {"w": x, "b": y},
            {"b": z, "w": x},
            "dict_order",
        ),
        (
            "two OrderedDicts with the same keys in different orders",
            collections.OrderedDict(w=x, b=y),
            collections.OrderedDict(b=y, w=x),
            "ordered_order",
        ),
        (
            "a dict and an OrderedDict with the same keys",
            {"a": x},
            collections.OrderedDict(a=x),
            "dict_ordered",
        ),
        (
            "the same containers with leaves of other shapes and dtypes",
            {"w": [x, y]},
            {"w": [y.astype(np.int32), z]},
            "shapes",
        ),
        ("a Python float where the other tree has an array", (1.5, [x]), (x, [2]), "leaf_kinds"),
        (
            "None where the other tree has a leaf",
            {"w": x, "b": None},
            {"w": x, "b": z},
            "none_leaf",
        ),
        ("a leaf where the other tree has None", (x, z), (x, None), "leaf_none"),
        ("a leaf where the other tree has a tuple", [x], [(x, z)], "deeper"),
        ("a dict with an extra key", {"w": x}, {"w": x, "b": y}, "extra_key"),
        ("None in the same place in both trees", [None, x], [None, y], "none_both"),
        ("lists of different lengths", [x, y], [x, y, z], "length"),
    ]
    for i in range(3):
        tree = random_tree(rng, depth=3, none_rate=0.3)
        pairs.append(
            (
                f"two copies of random tree {i + 1}",
                tree,
                jax.tree.map(lambda _: leaf(), tree),
                "same",
            )
        )
    order = rng.permutation(len(pairs))
    return [
        Case((pairs[i][1], pairs[i][2]), label=pairs[i][0], info={"kind": pairs[i][3]})
        for i in order
    ]


def _same_structure(a: Any, b: Any) -> bool:
    return same_structure(a, b)


SAME_STRUCTURE = Exercise(
    id="01.same_structure",
    name="same_structure",
    title="Do two trees have the same structure?",
    points=1,
    cases=_same_cases,
    reference=_same_structure,
    probe=call_value,
    judge=_explained_bool("same_structure", _SAME_WHY),
    hints=(
        "Compare what JAX sees once the leaves are taken away.",
        "jax.tree.structure gives a PyTreeDef, and two PyTreeDefs compare with ==.",
        "Leaves do not count: neither their values, nor their shapes, nor their types.",
    ),
    forbidden=("tree_diff", "tree_allclose", "assert_trees_close"),
    mistakes=(
        "compares the numbers of leaves",
        "accepts any pair that `jax.tree.map` accepts, a prefix included",
    ),
)


EXERCISES = (COUNT_PARAMS, LEAF_PATHS, IS_NODE, REPLACE_LEAVES, SAME_STRUCTURE)
