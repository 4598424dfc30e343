"""Lesson 01's exercises: its right answers, its typical wrong answers and the hint each gets.

The answers are written as a learner writes them, so they are not annotated. The checks API tests
(tests/checks/test_checks.py) and the guard's tests (tests/checks/test_guard.py) use them too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np
import pytest
from exercise_support import LessonChecks, has_none, nodes

from course_lib.checks import get_exercise

pytestmark = pytest.mark.usefixtures("fresh_checks")

LESSON_01 = (
    "01.count_params",
    "01.leaf_paths",
    "01.is_node",
    "01.replace_leaves",
    "01.same_structure",
)


# --- answers, right and wrong --------------------------------------------------------------------


def count_params(tree):
    return sum(int(np.size(leaf)) for leaf in jax.tree.leaves(tree))


def count_leaves(tree):
    return len(jax.tree.leaves(tree))


def count_with_none(tree):
    return sum(int(np.size(leaf)) for leaf in jax.tree.leaves(tree, is_leaf=lambda x: x is None))


def count_skipping_numbers(tree):
    return sum(leaf.size for leaf in jax.tree.leaves(tree) if hasattr(leaf, "size"))


def count_by_dot_size(tree):
    return sum(leaf.size for leaf in jax.tree.leaves(tree))


def count_forgetting_return(tree):
    sum(int(np.size(leaf)) for leaf in jax.tree.leaves(tree))


def leaf_paths(tree):
    pairs = jax.tree_util.tree_leaves_with_path(tree, is_leaf=lambda x: x is None)
    return [jax.tree_util.keystr(path) for path, _ in pairs]


def leaf_paths_without_none(tree):
    return [jax.tree_util.keystr(path) for path, _ in jax.tree_util.tree_leaves_with_path(tree)]


def leaf_paths_as_tuple(tree):
    return tuple(leaf_paths(tree))


def leaf_paths_sorted(tree):
    return sorted(leaf_paths(tree))


def is_node(x):
    return jax.tree.structure(x) != jax.tree.structure(0)  # type: ignore[operator]  # jaxlib leaves PyTreeDef untyped


def is_node_by_treedef_is_leaf(x):
    return not jax.tree_util.treedef_is_leaf(jax.tree.structure(x))


def is_node_by_leaf_count(x):
    return len(jax.tree.leaves(x)) != 1


def replace_leaves(tree, values):
    return jax.tree.unflatten(jax.tree.structure(tree), values)


def replace_returning_values(tree, values):
    return values


def replace_in_insertion_order(tree, values):
    rest = iter(values)

    def fill(node):
        if node is None:
            return None
        if isinstance(node, dict):
            return type(node)((k, fill(v)) for k, v in node.items())
        if isinstance(node, tuple) and hasattr(node, "_fields"):
            return type(node)(*(fill(v) for v in node))
        if isinstance(node, (list, tuple)):
            return type(node)(fill(v) for v in node)
        return next(rest)

    return fill(tree)


def same_structure(a, b):
    return jax.tree.structure(a) == jax.tree.structure(b)  # type: ignore[operator]  # jaxlib leaves PyTreeDef untyped


def same_leaf_count(a, b):
    return len(jax.tree.leaves(a)) == len(jax.tree.leaves(b))


def same_if_map_succeeds(a, b):
    try:
        jax.tree.map(lambda *_: None, a, b)
    except (ValueError, TypeError):
        return False
    return True


def is_node_by_isinstance(x):
    return x is None or isinstance(x, (list, tuple, dict))


# Right answers written differently from the references.


def count_params_by_flatten(tree):
    leaves, _ = jax.tree_util.tree_flatten(tree)
    return int(sum(np.asarray(leaf).size for leaf in leaves))


def leaf_paths_by_flatten_with_path(tree):
    pairs, _ = jax.tree_util.tree_flatten_with_path(tree, is_leaf=lambda x: x is None)
    return [jax.tree_util.keystr(path) for path, _ in pairs]


def is_node_by_all_leaves(x):
    return not jax.tree_util.all_leaves([x])


def is_node_by_children(x):
    treedef = jax.tree.structure(x)
    return treedef.num_nodes > 1 or treedef.num_leaves != 1  # type: ignore[attr-defined]  # jaxlib leaves PyTreeDef untyped


def replace_by_flattening_values(tree, values):
    return jax.tree.unflatten(jax.tree.structure(tree), jax.tree.leaves(values))


def replace_by_tree_util_unflatten(tree, values):
    _, treedef = jax.tree_util.tree_flatten(tree)
    return jax.tree_util.tree_unflatten(treedef, list(values))


def same_structure_by_flatten(a, b):
    return jax.tree_util.tree_flatten(a)[1] == jax.tree_util.tree_flatten(b)[1]  # type: ignore[operator]  # jaxlib leaves PyTreeDef untyped


def same_structure_by_strings(a, b):
    return str(jax.tree.structure(a)) == str(jax.tree.structure(b))


RIGHT: dict[str, Callable[..., Any]] = {
    "01.count_params": count_params,
    "01.leaf_paths": leaf_paths,
    "01.is_node": is_node,
    "01.replace_leaves": replace_leaves,
    "01.same_structure": same_structure,
}

WRONG: list[tuple[str, Callable[..., Any], str]] = [
    ("01.count_params", count_leaves, "the number of leaves"),
    ("01.count_params", count_with_none, "each `None` seems to count as a parameter"),
    ("01.count_params", count_skipping_numbers, "Python numbers were not counted"),
    ("01.count_params", count_by_dot_size, "`leaf.size` fails on a Python float"),
    (
        "01.count_params",
        count_forgetting_return,
        "`count_params` returned `None`: missing `return`?",
    ),
    ("01.leaf_paths", leaf_paths_without_none, "the paths of the `None` entries"),
    (
        "01.leaf_paths",
        leaf_paths_as_tuple,
        "returned a tuple of 4 paths, where a list was expected",
    ),
    ("01.leaf_paths", leaf_paths_sorted, "the right paths in another order"),
    ("01.is_node", is_node_by_treedef_is_leaf, "`is_node` returned `False`, expected `True`"),
    ("01.is_node", is_node_by_leaf_count, "`is_node` returned"),
    (
        "01.replace_leaves",
        replace_returning_values,
        "list in your result, dict in the expected result",
    ),
    ("01.replace_leaves", replace_in_insertion_order, "in another order"),
    (
        "01.replace_leaves",
        replace_by_flattening_values,
        "For new values that are tuples, lists, dicts and `None`: `replace_leaves` raised "
        "`ValueError`",
    ),
    ("01.same_structure", same_leaf_count, "`same_structure` returned"),
    ("01.is_node", is_node_by_isinstance, "registered"),
    ("01.same_structure", same_if_map_succeeds, "`jax.tree.map` accepts this pair"),
]

# Each wrong answer with the fix its last hint gives, applied as written.


def count_elements(tree):
    return sum(np.size(leaf) for leaf in jax.tree.leaves(tree))


def leaf_paths_as_list(tree):
    return list(tuple(leaf_paths(tree)))


FIXED: list[tuple[str, Callable[..., Any], Callable[..., Any]]] = [
    ("01.count_params", count_leaves, count_elements),
    ("01.count_params", count_with_none, count_params),
    ("01.count_params", count_skipping_numbers, count_elements),
    ("01.count_params", count_by_dot_size, count_elements),
    ("01.count_params", count_forgetting_return, count_params),
    ("01.leaf_paths", leaf_paths_without_none, leaf_paths),
    ("01.leaf_paths", leaf_paths_as_tuple, leaf_paths_as_list),
    ("01.leaf_paths", leaf_paths_sorted, leaf_paths),
    ("01.is_node", is_node_by_treedef_is_leaf, is_node),
    ("01.is_node", is_node_by_leaf_count, is_node),
    ("01.is_node", is_node_by_isinstance, is_node),
    ("01.replace_leaves", replace_returning_values, replace_leaves),
    ("01.replace_leaves", replace_in_insertion_order, replace_leaves),
    ("01.replace_leaves", replace_by_flattening_values, replace_leaves),
    ("01.same_structure", same_leaf_count, same_structure),
    ("01.same_structure", same_if_map_succeeds, same_structure),
]

ALSO_RIGHT: list[tuple[str, Callable[..., Any]]] = [
    ("01.count_params", count_params_by_flatten),
    ("01.leaf_paths", leaf_paths_by_flatten_with_path),
    ("01.is_node", is_node_by_all_leaves),
    ("01.is_node", is_node_by_children),
    ("01.replace_leaves", replace_by_tree_util_unflatten),
    ("01.same_structure", same_structure_by_flatten),
    ("01.same_structure", same_structure_by_strings),
]


# --- the lesson-01 exercises -----------------------------------------------------------------


NAMED: dict[str, dict[str, str]] = {
    "01.count_params": {
        "counts the leaves, not the elements in them": "the number of leaves",
        "counts each `None` as a parameter": "each `None` seems to count as a parameter",
        "leaves out the Python numbers, which have no `.size`": "Python numbers were not counted",
        "calls `.size` on a Python number": "`leaf.size` fails on a Python float",
        "forgets `return`": "`count_params` returned `None`: missing `return`?",
    },
    "01.leaf_paths": {
        "leaves out the paths of the `None` entries": "the paths of the `None` entries",
        "returns a tuple instead of a list": (
            "returned a tuple of 4 paths, where a list was expected"
        ),
        "sorts the paths as text, which breaks an `OrderedDict`'s own order": (
            "the right paths in another order"
        ),
    },
    "01.is_node": {
        "asks `treedef_is_leaf`, which calls `None` and empty containers leaves": (
            "`is_node` returned `False`, expected `True`"
        ),
        "decides by counting leaves": "`is_node` returned",
        "decides with `isinstance`, which misses registered classes": "registered",
    },
    "01.replace_leaves": {
        "returns the new values instead of a tree": (
            "list in your result, dict in the expected result"
        ),
        "fills the leaves in insertion order, not in flatten order (dict keys sorted)": (
            "in another order"
        ),
    },
    "01.same_structure": {
        "compares the numbers of leaves": "`same_structure` returned",
        "accepts any pair that `jax.tree.map` accepts, a prefix included": (
            "`jax.tree.map` accepts this pair"
        ),
    },
}
"""Each mistake an exercise names (``Exercise.mistakes``), with the text that the hint of its wrong
answer in ``WRONG`` pins."""


class TestLesson01(LessonChecks):
    ids = LESSON_01
    points = 8
    right = RIGHT
    wrong = WRONG
    named = NAMED
    also_right = ALSO_RIGHT
    fixed = FIXED
    grading_seeds = (0, 1, 2)


def test_cases_have_none_subtrees_and_several_containers() -> None:
    for exercise_id in ("01.count_params", "01.leaf_paths", "01.replace_leaves"):
        trees = [case.args[0] for case in get_exercise(exercise_id).make_cases("grade")]
        kinds = {type(node).__name__ for tree in trees for node in nodes(tree)}
        assert {"dict", "list", "tuple", "OrderedDict"} <= kinds, exercise_id
        assert has_none(trees)
        assert any(hasattr(node, "_fields") for tree in trees for node in nodes(tree))
