"""Lesson 09 self-checks: a decay mask, a frozen group, a partition, rates and counts per group."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np
import optax
import pytest
from exercise_support import LessonChecks, has_none
from jax.tree_util import keystr

from course_lib.checks import get_exercise

pytestmark = pytest.mark.usefixtures("fresh_checks")

LESSON_09 = (
    "09.decay_mask",
    "09.freeze_group",
    "09.split_by_mask",
    "09.group_sgd",
    "09.count_by_group",
)


def _name(path: Any) -> str:
    return jax.tree_util.keystr(path, simple=True, separator="/")


def _key(entry: Any) -> str:
    """A key-path entry's name from the key classes themselves, as a learner may write it."""
    if isinstance(entry, jax.tree_util.DictKey):
        return str(entry.key)
    if isinstance(entry, jax.tree_util.SequenceKey):
        return str(entry.idx)
    if isinstance(entry, jax.tree_util.GetAttrKey):
        return entry.name
    return str(entry)


# --- 09.decay_mask -------------------------------------------------------------------------------


def decay_mask(params):
    return jax.tree.map_with_path(lambda path, leaf: _name(path).split("/")[-1] == "w", params)


def decay_mask_by_flatten(params):
    with_paths, treedef = jax.tree_util.tree_flatten_with_path(params)
    return jax.tree.unflatten(treedef, [_key(path[-1]) == "w" for path, _ in with_paths])


def decay_mask_default_keystr(params):
    return jax.tree.map_with_path(
        lambda path, leaf: jax.tree_util.keystr(path).endswith("/w"), params
    )


def decay_mask_substring(params):
    return jax.tree.map_with_path(lambda path, leaf: "w" in _name(path).split("/")[-1], params)


def decay_mask_endswith(params):
    return jax.tree.map_with_path(
        lambda path, leaf: jax.tree_util.keystr(path, simple=True, separator="/").endswith("w"),
        params,
    )


def decay_mask_by_ndim(params):
    return jax.tree.map(lambda leaf: leaf.ndim >= 2, params)


def decay_mask_dropping_none(params):
    return {k: jax.tree.map(lambda leaf: True, v) for k, v in params.items() if v is not None}


# --- 09.freeze_group ------------------------------------------------------------------------------


def freeze_group(params, grads, lr, frozen):
    return jax.tree.map_with_path(
        lambda path, p, g: p if _name(path).split("/")[0] == frozen else p - lr * g, params, grads
    )


def freeze_group_by_dict(params, grads, lr, frozen):
    return {
        k: v if k == frozen else jax.tree.map(lambda p, g: p - lr * g, v, grads[k])
        for k, v in params.items()
    }


def freeze_group_with_selective_transform(params, grads, lr, frozen):
    # optax's freeze_mask is True where a leaf is frozen.
    freeze_mask = {k: jax.tree.map(lambda _: k == frozen, v) for k, v in params.items()}  # noqa: B023
    tx = optax.selective_transform(optax.sgd(lr), freeze_mask=freeze_mask)
    updates, _ = tx.update(grads, tx.init(params), params)
    return optax.apply_updates(params, updates)


def freeze_group_with_optax(params, grads, lr, frozen):
    labels = {
        k: jax.tree.map(lambda _: "frozen" if k == frozen else "train", v)  # noqa: B023 (called at once)
        for k, v in params.items()
    }
    tx = optax.partition({"train": optax.sgd(lr), "frozen": optax.set_to_zero()}, labels)
    updates, _ = tx.update(grads, tx.init(params), params)
    return optax.apply_updates(params, updates)


def freeze_group_startswith(params, grads, lr, frozen):
    return jax.tree.map_with_path(
        lambda path, p, g: p if _name(path).startswith(frozen) else p - lr * g, params, grads
    )


def freeze_group_nothing(params, grads, lr, frozen):
    return jax.tree.map(lambda p, g: p - lr * g, params, grads)


def freeze_group_inverted(params, grads, lr, frozen):
    return jax.tree.map_with_path(
        lambda path, p, g: p - lr * g if _name(path).split("/")[0] == frozen else p, params, grads
    )


def freeze_group_default_keystr(params, grads, lr, frozen):
    return jax.tree.map_with_path(
        lambda path, p, g: p if jax.tree_util.keystr(path).split("/")[0] == frozen else p - lr * g,
        params,
        grads,
    )


# --- 09.split_by_mask -----------------------------------------------------------------------------


def split_by_mask(tree, mask):
    selected = jax.tree.map(lambda m, x: x if m else None, mask, tree)
    rest = jax.tree.map(lambda m, x: None if m else x, mask, tree)
    return selected, rest


def split_by_mask_flatten(tree, mask):  # the last hint's fix, as it writes it
    leaves, treedef = jax.tree.flatten(tree)
    bools = jax.tree.leaves(mask)
    selected = jax.tree.unflatten(
        treedef, [x if m else None for x, m in zip(leaves, bools, strict=True)]
    )
    rest = jax.tree.unflatten(
        treedef, [None if m else x for x, m in zip(leaves, bools, strict=True)]
    )
    return (selected, rest)


def split_by_mask_swapped(tree, mask):
    return split_by_mask(tree, mask)[::-1]


def split_by_mask_zeros(tree, mask):
    return (
        jax.tree.map(lambda m, x: x if m else np.zeros_like(x), mask, tree),
        jax.tree.map(lambda m, x: np.zeros_like(x) if m else x, mask, tree),
    )


def split_by_mask_dropping(tree, mask):
    def drop(node, keep_where):
        if isinstance(node, dict):
            kept = {k: drop(v, keep_where) for k, v in node.items()}
            return {k: v for k, v in kept.items() if v is not None}
        return node

    selected, rest = split_by_mask(tree, mask)
    return drop(selected, True), drop(rest, False)


def split_by_mask_one(tree, mask):
    return split_by_mask(tree, mask)[0]


# --- 09.group_sgd ---------------------------------------------------------------------------------


def group_sgd(params, grads, rates):
    return jax.tree.map_with_path(lambda path, p, g: p - rates[_key(path[0])] * g, params, grads)


def group_sgd_with_optax(params, grads, rates):
    labels = {k: jax.tree.map(lambda _, k=k: k, v) for k, v in params.items()}
    tx = optax.partition({k: optax.sgd(rate) for k, rate in rates.items()}, labels)
    updates, _ = tx.update(grads, tx.init(params), params)
    return optax.apply_updates(params, updates)


def group_sgd_first_rate(params, grads, rates):
    rate = next(iter(rates.values()))
    return jax.tree.map(lambda p, g: p - rate * g, params, grads)


def group_sgd_uphill(params, grads, rates):
    return jax.tree.map_with_path(lambda path, p, g: p + rates[_key(path[0])] * g, params, grads)


def group_sgd_by_default_keystr(params, grads, rates):
    return jax.tree.map_with_path(
        lambda path, p, g: p - rates[keystr(path).split("/")[0]] * g, params, grads
    )


def group_sgd_second_key(params, grads, rates):
    return jax.tree.map_with_path(
        lambda path, p, g: p - rates.get(_name(path).split("/")[1], 0.0) * g, params, grads
    )


# --- 09.count_by_group ----------------------------------------------------------------------------


def count_by_group(params):
    return {group: sum(leaf.size for leaf in jax.tree.leaves(sub)) for group, sub in params.items()}


def count_by_group_with_paths(params):
    counts = dict.fromkeys(params, 0)
    for path, leaf in jax.tree_util.tree_flatten_with_path(params)[0]:
        counts[_key(path[0])] += int(np.prod(leaf.shape))
    return counts


def count_by_group_from_paths_only(params):
    counts: dict[str, int] = {}
    for path, leaf in jax.tree_util.tree_leaves_with_path(params):
        group = _name(path).split("/")[0]
        counts[group] = counts.get(group, 0) + leaf.size
    return counts


def count_by_group_leaves(params):
    return {group: len(jax.tree.leaves(sub)) for group, sub in params.items()}


def count_by_group_last_key(params):
    counts = dict.fromkeys(params, 0)
    first = next(iter(params))
    for _, leaf in jax.tree_util.tree_leaves_with_path(params):
        counts[first] += leaf.size
    return counts


RIGHT: dict[str, Callable[..., Any]] = {
    "09.decay_mask": decay_mask,
    "09.freeze_group": freeze_group,
    "09.split_by_mask": split_by_mask,
    "09.group_sgd": group_sgd,
    "09.count_by_group": count_by_group,
}

WRONG: list[tuple[str, Callable[..., Any], str]] = [
    ("09.decay_mask", decay_mask_default_keystr, "no leaf is `True`"),
    ("09.decay_mask", decay_mask_substring, "`'w'` only occurs in its last part, 'w_mean'"),
    ("09.decay_mask", decay_mask_by_ndim, "not the names"),
    ("09.decay_mask", decay_mask_dropping_none, "structure differs"),
    ("09.decay_mask", decay_mask_endswith, "its name only ends in `'w'`"),
    ("09.freeze_group", freeze_group_startswith, "its name only starts with 'encoder'"),
    ("09.freeze_group", freeze_group_nothing, "too: nothing was frozen."),
    ("09.freeze_group", freeze_group_inverted, "the wrong group stayed still"),
    (
        "09.freeze_group",
        freeze_group_default_keystr,
        "too: your step reads each name in `keystr`'s default format",
    ),
    ("09.split_by_mask", split_by_mask_swapped, "the two halves are swapped"),
    ("09.split_by_mask", split_by_mask_zeros, "some placeholders are zeros"),
    ("09.split_by_mask", split_by_mask_dropping, "a container lost its keys"),
    ("09.split_by_mask", split_by_mask_one, "where a pair `(selected, rest)` was expected"),
    ("09.group_sgd", group_sgd_first_rate, "every leaf took the first group's rate"),
    ("09.group_sgd", group_sgd_uphill, "the steps go uphill"),
    ("09.group_sgd", group_sgd_second_key, "the wrong part of the name"),
    (
        "09.group_sgd",
        group_sgd_by_default_keystr,
        "`rates` has the keys ['embed', 'encoder', 'encoder_norm', 'head', 'extra'], and the key",
    ),
    (
        "09.count_by_group",
        count_by_group_from_paths_only,
        "which hold no leaves, are missing from the result",
    ),
    ("09.count_by_group", count_by_group_leaves, "those are the numbers of leaves"),
    ("09.count_by_group", count_by_group_last_key, "shared out wrongly"),
]


# --- each wrong answer with the fix its last hint gives, applied as written -----------------------


def decay_mask_simple_keystr(params):
    return jax.tree.map_with_path(
        lambda path, leaf: (
            jax.tree_util.keystr(path, simple=True, separator="/").split("/")[-1] == "w"
        ),
        params,
    )


def group_sgd_by_group(params, grads, rates):
    return jax.tree.map_with_path(
        lambda path, p, g: p - rates[_name(path).split("/")[0]] * g, params, grads
    )


FIXED: list[tuple[str, Callable[..., Any], Callable[..., Any]]] = [
    ("09.decay_mask", decay_mask_default_keystr, decay_mask_simple_keystr),
    ("09.decay_mask", decay_mask_substring, decay_mask),
    ("09.decay_mask", decay_mask_endswith, decay_mask_simple_keystr),
    ("09.decay_mask", decay_mask_by_ndim, decay_mask),
    ("09.decay_mask", decay_mask_dropping_none, decay_mask),
    ("09.freeze_group", freeze_group_startswith, freeze_group),
    ("09.freeze_group", freeze_group_nothing, freeze_group),
    ("09.freeze_group", freeze_group_inverted, freeze_group),
    ("09.freeze_group", freeze_group_default_keystr, freeze_group),
    ("09.split_by_mask", split_by_mask_swapped, split_by_mask),
    ("09.split_by_mask", split_by_mask_zeros, split_by_mask),
    ("09.split_by_mask", split_by_mask_dropping, split_by_mask),
    ("09.split_by_mask", split_by_mask_one, split_by_mask),
    ("09.group_sgd", group_sgd_first_rate, group_sgd_by_group),
    ("09.group_sgd", group_sgd_uphill, group_sgd),
    ("09.group_sgd", group_sgd_second_key, group_sgd_by_group),
    ("09.group_sgd", group_sgd_by_default_keystr, group_sgd_by_group),
    ("09.count_by_group", count_by_group_from_paths_only, count_by_group),
    ("09.count_by_group", count_by_group_leaves, count_by_group),
    ("09.count_by_group", count_by_group_last_key, count_by_group),
]


NAMED: dict[str, dict[str, str]] = {
    "09.decay_mask": {
        "writes the rule against `keystr`'s default format (Pitfall 26)": "no leaf is `True`",
        "looks for a substring instead of the last part of the name": (
            "`'w'` only occurs in its last part, 'w_mean'"
        ),
        "decides by the number of dimensions, not by the names": "not the names",
        "drops the `None` subtrees, so the mask's structure differs (Pitfall 23)": (
            "structure differs"
        ),
    },
    "09.freeze_group": {
        "freezes by `name.startswith`, which catches other groups too": (
            "its name only starts with 'encoder'"
        ),
        "freezes nothing": "too: nothing was frozen.",
        "freezes the wrong group": "the wrong group stayed still",
        "reads the group from `keystr`'s default format": (
            "too: your step reads each name in `keystr`'s default format"
        ),
    },
    "09.split_by_mask": {
        "swaps the two halves": "the two halves are swapped",
        "fills the placeholders with zeros instead of `None`": "some placeholders are zeros",
        "drops keys instead of keeping `None` placeholders": "a container lost its keys",
        "returns one tree instead of a pair": "where a pair `(selected, rest)` was expected",
    },
    "09.group_sgd": {
        "gives every leaf the first group's rate": "every leaf took the first group's rate",
        "steps uphill": "the steps go uphill",
        "reads the group from the wrong part of the name": "the wrong part of the name",
        "looks the rate up by the whole path in `keystr`'s default format (a `KeyError`)": (
            "`rates` has the keys ['embed', 'encoder', 'encoder_norm', 'head', 'extra'], and the "
            "key"
        ),
    },
    "09.count_by_group": {
        "leaves out a group without leaves, which has 0 parameters": (
            "which hold no leaves, are missing from the result"
        ),
        "counts leaves instead of parameters": "those are the numbers of leaves",
        "shares the counts out to the wrong groups": "shared out wrongly",
    },
}
"""Each mistake an exercise names (``Exercise.mistakes``), with the text that the hint of its wrong
answer in ``WRONG`` pins."""


class TestLesson09(LessonChecks):
    ids = LESSON_09
    points = 11
    right = RIGHT
    wrong = WRONG
    named = NAMED
    fixed = FIXED
    # Written differently (flatten/unflatten, the key classes, optax): fair grading accepts them.
    also_right = [
        ("09.decay_mask", decay_mask_by_flatten),
        ("09.freeze_group", freeze_group_by_dict),
        ("09.freeze_group", freeze_group_with_optax),
        ("09.freeze_group", freeze_group_with_selective_transform),
        ("09.split_by_mask", split_by_mask_flatten),
        ("09.group_sgd", group_sgd_with_optax),
        ("09.count_by_group", count_by_group_with_paths),
    ]


@pytest.mark.parametrize("exercise_id", LESSON_09)
def test_cases_hold_none_subtrees(exercise_id: str) -> None:
    for purpose in ("check", "grade"):
        assert has_none([case.args[0] for case in get_exercise(exercise_id).make_cases(purpose)])


def test_every_case_has_a_group_named_like_a_prefix_of_another() -> None:
    """The startswith mistake shows: a group's name extends the frozen one in every freeze case."""
    for case in get_exercise("09.freeze_group").make_cases("grade", 3):
        params, _, _, frozen = case.args
        assert any(group != frozen and group.startswith(frozen) for group in params)
