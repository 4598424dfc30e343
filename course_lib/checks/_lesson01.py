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
    structure_found,
    to_python,
    tree_judge,
)
from ._mistakes import Steps
from ._plain import describe, rebuild_tree
from ._sections import (
    APART_AND_BACK,
    CONTAINERS_AND_LEAVES,
    PITFALL_1,
    PITFALL_4,
    PITFALL_14,
    PYTREEDEF,
    WHICH_NODES,
)
from ._spec import Case, Exercise, Judge, Mistake


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
            f"a layer with `w` of shape `({m}, {n})` and `b` of shape `({n},)`",
        ),
        _count_case(
            {"encoder": {"w": random_f32(rng, n, m), "b": None}, "decoder": None},
            "a dict with `None` subtrees",
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
            "namedtuples with a `None` field and 0-d arrays",
        ),
        _count_case(collections.OrderedDict(z=[None, None], a=()), "a tree with no leaves at all"),
        _count_case(None, "`None` on its own"),
    ]
    for i in range(4):
        tree = {
            "params": random_tree(rng, depth=3, none_rate=0.3),
            "extra": random_tree(rng, depth=2),
        }
        cases.append(_count_case(tree, f"random tree {i + 1}, {describe(tree, 100)}"))
    # The trees without leaves (0 parameters) share a part with layers, so a constant 0 earns
    # nothing.
    dicts, mixed = "dicts and None", "numbers, lists, namedtuples"
    return in_parts(cases, [dicts, dicts, mixed, mixed, dicts, dicts] + ["random trees"] * 4)


def _judge_count(got: Any, expected: Any, case: Case) -> str | Mistake | None:
    problem = judge_number(got, expected, case)
    if problem is None or not isinstance(to_python(got), (int, float)):
        return problem
    value, want, info = to_python(got), to_python(expected), case.info
    if value == info["leaves"] != want:
        return Mistake(
            f"returned {value}, the number of leaves, where {want} was expected.",
            "A parameter is one entry of an array: a leaf holds as many parameters as it has "
            "elements.",
            "Add up the element counts of the leaves instead of counting the leaves (a `(3, 2)` "
            "array holds 6).",
        )
    if info["nones"] and value == want + info["nones"]:
        return Mistake(
            f"returned {value}, expected {want}: each `None` seems to count as a parameter.",
            "`None` is an empty subtree: it holds no leaves, so it adds no parameters.",
            "Count only what `jax.tree.leaves(tree)` lists: it already leaves `None` out.",
            reread=PITFALL_1,
        )
    if info["numbers"] and value == want - info["numbers"]:
        n = info["numbers"]
        return _NUMBERS_ARE_LEAVES.mistake(
            f"returned {value}, expected {want}: the input's {n} Python number"
            f"{'s were' if n > 1 else ' was'} not counted."
        )
    return problem


_NUMBERS_ARE_LEAVES = Steps(
    idea="Python numbers are leaves too, and each holds one element.",
    fix="`np.size(leaf)` counts a Python number as 1, where `leaf.size` fails on it.",
    reread=WHICH_NODES,
)
"""The steps of an answer that leaves out, or fails on, the Python numbers among the leaves."""


def _judge_count_raise(error: str, message: str, case: Case) -> Mistake | None:
    """``leaf.size`` on a Python number: Python's own AttributeError names the number's type."""
    number = next(
        (t for t in ("float", "int") if f"'{t}' object has no attribute 'size'" in message), None
    )
    if error != "AttributeError" or number is None:
        return None
    return _NUMBERS_ARE_LEAVES.mistake(
        f"`leaf.size` fails on a Python {number}: this input has Python numbers among its leaves."
    )


COUNT_PARAMS = Exercise(
    id="01.count_params",
    name="count_params",
    title="Count the parameters of any tree",
    points=2,
    cases=_count_cases,
    reference=_count_params,
    probe=call_value,
    judge=_judge_count,
    judge_raise=_judge_count_raise,
    hints=(
        (
            "A parameter is one entry of an array, so a leaf counts as many parameters as it has "
            "elements, and a `None` subtree has none."
        ),
        (
            "Add `np.size(leaf)` over `jax.tree.leaves(tree)`: `np.size` counts the elements of "
            "a JAX array, a NumPy array or a Python number alike, and a tree without leaves "
            "gives 0."
        ),
    ),
    reread=CONTAINERS_AND_LEAVES,
    forbidden=("tree_size", "tree_bytes", "tree_summary", "FlatTree"),
    mistakes=(
        "counts the leaves, not the elements in them",
        "counts each `None` as a parameter",
        "leaves out the Python numbers, which have no `.size`",
        "calls `.size` on a Python number",
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
            "a dict with `None` values, keys not in sorted order",
        ),
        _paths_case(
            collections.OrderedDict(z=leaf(), a=None, m=(leaf(),)),
            "an `OrderedDict`, which keeps its own key order",
        ),
        _paths_case(
            [Layer(w=leaf(), b=None), Point(x=None, y=leaf())],
            "a list of namedtuples with `None` fields",
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


def _judge_paths(got: Any, expected: Any, case: Case) -> str | Mistake | None:
    if isinstance(got, tuple):
        return Mistake(
            f"returned a tuple of {len(got)} paths, where a list was expected.",
            "A tuple and a list are different types: Python tells them apart, and so does JAX, "
            "for which they are different nodes.",
            "Build the result as a list: a list comprehension over the `(path, leaf)` pairs, or "
            "`list(...)` around what you have.",
            reread=PITFALL_14,
        )
    if not isinstance(got, list):
        return f"returned {describe(got)}, where a list of strings was expected."
    if not all(isinstance(p, str) for p in got):
        bad = next(p for p in got if not isinstance(p, str))
        return Mistake(
            f"the list holds {describe(bad)}, where the text of a key path was expected.",
            "A key path is a tuple of key objects, one per step from the root; the exercise asks "
            "for the text JAX writes for it, such as `\"['b'][0]\"`.",
            "`jax.tree_util.keystr(path)` writes a key path as a string: apply it to each path.",
        )
    if got == expected:
        return None
    none_paths = case.info["none_paths"]
    if none_paths and got == [p for p in expected if p not in none_paths]:
        return Mistake(
            f"the paths of the `None` entries ({', '.join(none_paths)}) are missing; every other "
            "path is there.",
            "`None` is an empty subtree: JAX lists no leaf for it, so it has no path of its own "
            "unless `is_leaf` says it is a leaf.",
            "Give `jax.tree_util.tree_leaves_with_path` an `is_leaf` argument, a function that "
            "returns `True` for `None`.",
            reread=PITFALL_1,
        )
    if sorted(got) == sorted(expected):
        i = next(i for i, (a, b) in enumerate(zip(got, expected, strict=True)) if a != b)
        return Mistake(
            f"the right paths in another order: path {i + 1} is {got[i]!r}, expected "
            f"{expected[i]!r}.",
            "The leaves come in flatten order: a dict's keys sorted, whatever order they were "
            "written in, and an `OrderedDict`'s in its own order.",
            "Keep the paths in the order `jax.tree_util.tree_leaves_with_path` gives them, "
            "without sorting or walking the containers yourself.",
            reread=PITFALL_4,
        )
    missing = [p for p in expected if p not in got]
    extra = [p for p in got if p not in expected]
    if missing:
        return f"missing path {missing[0]!r}" + (
            f", and {extra[0]!r} is not a path of a leaf." if extra else "."
        )
    if extra:
        return f"{extra[0]!r} is not the path of a leaf or of a `None` entry."
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
        (
            "JAX can hand you each leaf together with its key path, the keys that lead to it from "
            "the root, in flatten order. `None` is an empty subtree, so it has a path only if you "
            "declare it a leaf."
        ),
        (
            "`jax.tree_util.tree_leaves_with_path` gives `(path, leaf)` pairs and takes "
            "`is_leaf`, a function that says which objects count as leaves: one that is true for "
            "`None`. Write each path as text with `jax.tree_util.keystr(path)`."
        ),
    ),
    reread=PITFALL_1,
    forbidden=("tree_summary", "FlatTree"),
    mistakes=(
        "leaves out the paths of the `None` entries",
        "returns a tuple instead of a list",
        "sorts the paths as text, which breaks an `OrderedDict`'s own order",
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


# A wrong False for a node comes from counting leaves, treedef_is_leaf or isinstance; a wrong True
# for a leaf from a test that every leaf passes too.
_COUNT_FIX = (
    "Look at the structure, not at the leaves: only a lone leaf has the structure "
    "`PyTreeDef(*)`, and `jax.tree.structure(x)` shows what `x` has."
)
_EMPTY_FIX = (
    "Counting leaves and `jax.tree_util.treedef_is_leaf` both take `None` and empty containers for "
    "leaves: compare `jax.tree.structure(x)` with `PyTreeDef(*)`, the structure of a lone leaf."
)
_REGISTRY_FIX = (
    "Ask JAX instead of listing types with `isinstance`: `jax.tree.structure(x)` knows every "
    "registered class, and it is `PyTreeDef(*)` only for a lone leaf."
)
_LEAF_FIX = (
    "A lone leaf, whatever it is, has the structure `PyTreeDef(*)`: compare "
    "`jax.tree.structure(x)` with the structure of a value you know is a leaf, such as `0`."
)
_NODE_WHY = {
    "none": Steps(
        idea="`None` is a node: an empty subtree with no children, which is why "
        "`jax.tree.leaves(None)` is `[]`.",
        fix=_EMPTY_FIX,
        reread=PITFALL_1,
    ),
    "empty": Steps(
        idea="An empty container is still a node: it just has no children, so it holds no leaves.",
        fix=_EMPTY_FIX,
    ),
    "single": Steps(
        idea=(
            "A container holding a single leaf is still a node: `[x]` and `x` both have one "
            "leaf, but not the same structure."
        ),
        fix=_COUNT_FIX,
    ),
    "container": Steps(
        idea="Lists, tuples and dicts are nodes, whatever they hold.", fix=_COUNT_FIX
    ),
    "namedtuple": Steps(idea="A namedtuple is a node: each field is a child.", fix=_COUNT_FIX),
    "ordered": Steps(
        idea="An `OrderedDict` is a node; its children keep their insertion order.", fix=_COUNT_FIX
    ),
    "shape": Steps(
        idea="`x.shape` is a plain tuple, and a tuple is a node whatever it means to you: JAX sees "
        "the dimensions as its leaves.",
        fix=_COUNT_FIX,
    ),
    "registered": Steps(
        idea="JAX decides what is a node from its registry: a class registered with JAX (here with "
        "`register_dataclass`) is a node, though it is no list, tuple or dict.",
        fix=_REGISTRY_FIX,
    ),
    "partial": Steps(
        idea=(
            "`jax.tree_util.Partial` is registered with JAX as a node: its bound arguments "
            "are its children."
        ),
        fix=_REGISTRY_FIX,
    ),
    "array": Steps(
        idea="An array is one leaf, however many elements it holds: JAX does not look inside it.",
        fix=_LEAF_FIX,
    ),
    "number": Steps(idea="A Python number is a leaf.", fix=_LEAF_FIX),
    "string": Steps(idea="A string is a leaf: JAX does not look inside it.", fix=_LEAF_FIX),
    "set": Steps(idea="A set is not a registered pytree node, so it is a leaf.", fix=_LEAF_FIX),
    "opaque": Steps(
        idea="An instance of a class JAX has not been told about is a leaf, whatever it holds.",
        fix=_LEAF_FIX,
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
        ("an empty `OrderedDict`", collections.OrderedDict(), "empty"),
        ("a list of one leaf", [a], "single"),
        ("a tuple holding only `None`", (None,), "single"),
        ("a dict", {"w": a, "b": b}, "container"),
        ("a namedtuple", Layer(w=a, b=b), "namedtuple"),
        ("a registered dataclass", RegisteredLayer(w=a, b=b), "registered"),
        (
            "a `jax.tree_util.Partial` with a bound array",
            jax.tree_util.Partial(np.multiply, arr),
            "partial",
        ),
        ("an `OrderedDict`", collections.OrderedDict(b=a, a=b), "ordered"),
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


def _explained_bool(name: str, why: dict[str, Steps], facts: dict[str, str] | None = None) -> Judge:
    """:func:`judge_bool`, and for a wrong True or False the mistake its kind of input reveals,
    with the fact ``facts`` holds about that kind of input, if any, in what went wrong."""

    def judge(got: Any, expected: Any, case: Case) -> str | Mistake | None:
        problem = judge_bool(got, expected, case)
        if problem is None or not isinstance(to_python(got), bool):
            return problem
        kind = case.info["kind"]
        fact = f", {facts[kind]}" if facts and kind in facts else ""
        return why[kind].mistake(
            f"`{name}` returned `{to_python(got)}`, expected `{expected}`{fact}."
        )

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
        (
            "Whether something is a node is JAX's decision, made from its registry, not from the "
            "type or the number of leaves: `None` and empty containers are nodes with no leaves, "
            "and `[x]` is a node with one."
        ),
        (
            "Compare `jax.tree.structure(x)` with the structure of a lone leaf, `PyTreeDef(*)`, "
            "for example `jax.tree.structure(0)`."
        ),
    ),
    reread=WHICH_NODES,
    mistakes=(
        "asks `treedef_is_leaf`, which calls `None` and empty containers leaves",
        "decides by counting leaves",
        "decides with `isinstance`, which misses registered classes",
    ),
)


# --- 01.replace_leaves -----------------------------------------------------------------------


def _replace_leaves(tree: Any, values: list[Any]) -> Any:
    treedef = jax.tree_util.tree_structure(tree)
    return jax.tree_util.tree_unflatten(treedef, list(values))


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
            "new values that are tuples, lists, dicts and `None`",
        ),
        case(
            [leaf(), None, (leaf(), {"z": leaf(), "a": None})], "a list with `None` subtrees", True
        ),
        case(Layer(w=leaf(), b=(leaf(), leaf())), "a namedtuple", False),
        case(collections.OrderedDict(z=leaf(), a=[leaf()]), "an `OrderedDict`", True),
        case(leaf(), "a single leaf", False),
    ]
    for i in range(3):
        tree = {"head": random_tree(rng, depth=3), "emb": random_tree(rng, depth=2), "b": leaf()}
        cases.append(case(tree, f"random tree {i + 1}, {describe(tree, 100)}", i % 2 == 0))
    dicts, other = "dicts and lists with None", "namedtuples, OrderedDicts and a single leaf"
    odd = "new values that are trees themselves"
    return in_parts(cases, [dicts, odd, dicts, other, other, other] + ["random trees"] * 3)


_judge_tree = tree_judge()


def _judge_replace(got: Any, expected: Any, case: Case) -> str | Mistake | None:
    problem = _judge_tree(got, expected, case)
    if problem is None:
        return None
    mine, theirs = rebuild_tree(got), rebuild_tree(expected)
    values = case.args[1]
    if structure_found(problem):
        if isinstance(mine, list) and len(mine) == len(values) and not isinstance(theirs, list):
            return Mistake(
                f"returned a list of {len(mine)} items, as long as `values`, where a tree shaped "
                f"like `tree` was expected; {problem}",
                "The result takes its structure from `tree`: its containers, their keys and its "
                "`None` subtrees. `values` only supplies the leaves that fill it.",
                "Take the structure of `tree` with `jax.tree.structure`, a `PyTreeDef`, and fill "
                "it with `values` using `jax.tree.unflatten`.",
                reread=PYTREEDEF,
            )
        return problem
    mine_leaves, their_leaves = jax.tree.leaves(mine), jax.tree.leaves(theirs)
    if sorted(map(describe, mine_leaves)) == sorted(map(describe, their_leaves)):
        return Mistake(
            problem + " The values are all there, but in another order.",
            "The leaves are filled in flatten order, the order `jax.tree.leaves` lists them, which "
            "sorts a dict's keys; the order the keys were written in does not count.",
            "Let JAX place the values: `jax.tree.unflatten` fills a `PyTreeDef` in flatten "
            "order, so there is no need to walk the containers yourself.",
            reread=PITFALL_4,
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
        (
            "A tree is its structure plus its leaves in flatten order; you can keep the structure "
            "and put in new leaves. The new values are used as they are, even when a value is "
            "itself a tuple, a list or `None`."
        ),
        (
            "`jax.tree.unflatten` takes a `PyTreeDef`, here the one `jax.tree.structure` gives for "
            "`tree`, and a list of leaves: pass `values` as it is, without flattening it first."
        ),
    ),
    reread=APART_AND_BACK,
    mistakes=(
        "returns the new values instead of a tree",
        "fills the leaves in insertion order, not in flatten order (dict keys sorted)",
    ),
)


# --- 01.same_structure -----------------------------------------------------------------------

# A wrong True comes from comparing too little (the leaf counts, or whether a map succeeds); a
# wrong False from comparing too much (the leaves, or the keys as written).
_TOO_LITTLE = (
    "Compare the two `PyTreeDef`s that `jax.tree.structure` gives for `a` and for `b`, with "
    "`==`: they hold the node types, the keys and their order, which leaf counts and a trial "
    "`jax.tree.map` do not check."
)
_TOO_MUCH = (
    "Compare only what remains without the leaves: the `PyTreeDef`s that `jax.tree.structure` "
    "gives for `a` and for `b`, with `==`. It sorts dict keys and ignores every leaf for you."
)
_MAP_ACCEPTS = "though `jax.tree.map` accepts this pair"
_SAME_WHY = {
    "list_tuple": Steps(
        idea="A list and a tuple are different node types, even with the same leaves: the node "
        "type is part of the structure.",
        fix=_TOO_LITTLE,
        reread=PITFALL_14,
    ),
    "namedtuple_tuple": Steps(
        idea="A namedtuple is a node type of its own, recorded with its class in the structure: it "
        "is not a tuple.",
        fix=_TOO_LITTLE,
        reread=PITFALL_14,
    ),
    "dict_order": Steps(
        idea="A dict is flattened in sorted key order, so the order its keys were inserted in is "
        "not part of its structure.",
        fix=_TOO_MUCH,
        reread=PITFALL_4,
    ),
    "ordered_order": Steps(
        idea="An `OrderedDict` keeps its key order, and that order is part of its structure.",
        fix=_TOO_LITTLE,
        reread=PITFALL_4,
    ),
    "dict_ordered": Steps(
        idea="A dict and an `OrderedDict` are different node types, even with the same keys.",
        fix=_TOO_LITTLE,
        reread=PITFALL_4,
    ),
    "shapes": Steps(
        idea="The structure is what remains once the leaves are taken away: their values, shapes "
        "and dtypes do not count.",
        fix=_TOO_MUCH,
    ),
    "leaf_kinds": Steps(
        idea="A Python number and an array are both leaves, so each leaves the same mark, `*`, in "
        "the structure.",
        fix=_TOO_MUCH,
    ),
    "none_leaf": Steps(
        idea=(
            "`None` is an empty subtree, not a leaf, so a `None` where the other tree has a "
            "leaf is another structure."
        ),
        fix=_TOO_LITTLE,
        reread=PITFALL_1,
    ),
    "leaf_none": Steps(
        idea=(
            "`None` is an empty subtree, not a leaf, so a `None` where the other tree has a "
            "leaf is another structure, even where `jax.tree.map` hands that `None` to `f` as "
            "it is."
        ),
        fix=_TOO_LITTLE,
        reread=PITFALL_1,
    ),
    "deeper": Steps(
        idea="A leaf where the other tree has a tuple is another structure. `jax.tree.map` asks "
        "less: its later trees may go deeper than the first, so a map that succeeds does not prove "
        "two structures equal.",
        fix=_TOO_LITTLE,
    ),
    "extra_key": Steps(idea="The keys of a dict are part of its structure.", fix=_TOO_LITTLE),
    "same": Steps(
        idea="Two trees that differ only in their leaves have the same structure.", fix=_TOO_MUCH
    ),
    "none_both": Steps(
        idea="`None` in the same place in both trees is the same empty subtree: the structures "
        "match.",
        fix=_TOO_MUCH,
        reread=PITFALL_1,
    ),
    "length": Steps(
        idea="Lists of different lengths are different structures: the number of children is part "
        "of a node.",
        fix=_TOO_LITTLE,
    ),
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
            "two `OrderedDict`s with the same keys in different orders",
            collections.OrderedDict(w=x, b=y),
            collections.OrderedDict(b=y, w=x),
            "ordered_order",
        ),
        (
            "a dict and an `OrderedDict` with the same keys",
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
            "`None` where the other tree has a leaf",
            {"w": x, "b": None},
            {"w": x, "b": z},
            "none_leaf",
        ),
        ("a leaf where the other tree has `None`", (x, z), (x, None), "leaf_none"),
        ("a leaf where the other tree has a tuple", [x], [(x, z)], "deeper"),
        ("a dict with an extra key", {"w": x}, {"w": x, "b": y}, "extra_key"),
        ("`None` in the same place in both trees", [None, x], [None, y], "none_both"),
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
    judge=_explained_bool(
        "same_structure", _SAME_WHY, {"leaf_none": _MAP_ACCEPTS, "deeper": _MAP_ACCEPTS}
    ),
    hints=(
        (
            "Two trees have the same structure when what remains after taking the leaves away is "
            "the same: the node types, their keys and their order. The leaves' values, shapes and "
            "types do not count."
        ),
        "`jax.tree.structure` gives a `PyTreeDef`, and two `PyTreeDef`s compare with `==`.",
    ),
    reread=PYTREEDEF,
    forbidden=("tree_diff", "tree_allclose", "assert_trees_close"),
    mistakes=(
        "compares the numbers of leaves",
        "accepts any pair that `jax.tree.map` accepts, a prefix included",
    ),
)


EXERCISES = (COUNT_PARAMS, LEAF_PATHS, IS_NODE, REPLACE_LEAVES, SAME_STRUCTURE)
