"""Exercises of lesson 09, working by key path.

Every case is a model whose top-level keys are its groups (``"embed"``, ``"encoder"``,
``"encoder_norm"``, ...), with ``None`` subtrees and namedtuple layers, and NumPy leaves, so that
the references compile nothing. Names are key paths written ``keystr(path, simple=True,
separator="/")``: ``"encoder/0/w"``.
"""

import functools
from collections.abc import Callable
from typing import Any

import jax
import numpy as np
from jax.tree_util import keystr

from .._leaves import leaf_size, same_structure
from .._paths import leaf_name
from ._kit import (
    Layer,
    call_tree,
    call_value,
    judge_equal,
    matching_variant,
    missing_return,
    random_array,
    tree_judge,
)
from ._plain import describe, rebuild_tree, tree_plain
from ._spec import Case, Exercise


def _groups(rng: np.random.Generator, kind: int) -> dict[str, Any]:
    """A model: its top-level keys are its groups; one group name is a prefix of another's."""
    d, h = int(rng.integers(2, 4)), int(rng.integers(2, 5))
    f = functools.partial(random_array, rng)
    if kind == 0:
        return {
            "embed": {"w": f(5, d), "pos": f(4, d)},
            "encoder": [{"w": f(d, h), "b": f(h), "w_mean": f(h)}, Layer(w=f(h, d), b=None)],
            "encoder_norm": {"scale": f(d)},
            "head": Layer(w=f(d, 2), b=f(2)),
            "extra": None,
        }
    if kind == 1:
        return {
            "backbone": {"blocks": [Layer(w=f(d, d), b=f(d)) for _ in range(2)], "pos": f(3, d)},
            "backbone_head": {"w": f(d, h), "scale": f(h)},
            "cache": None,
            "cls": {"w": f(h, 3), "b": None},
        }
    return {
        "head": {"w": f(d, 1)},
        "decoder": (Layer(w=f(d, d), b=f(d)), {"w_mean": f(d), "scale": f(d)}),
        "decoder_out": Layer(w=f(d, h), b=f(h)),
        "state": {"pos": f(2, d), "unused": None},
    }


# --- typical names, written wrong --------------------------------------------------------------


def _default_name(path: Any) -> str:
    return keystr(path)


def _by_name(
    params: Any, rule: Callable[[str, Any], Any], name: Callable[[Any], str] = leaf_name
) -> Any:
    return jax.tree.map_with_path(lambda path, leaf: rule(name(path), leaf), params)


# --- 09.decay_mask ----------------------------------------------------------------------------


def _decay_mask(params: Any) -> Any:
    return jax.tree.map_with_path(lambda path, leaf: leaf_name(path).split("/")[-1] == "w", params)


def _mask_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for kind, label in (
        (0, "a model with a positional table and a w_mean vector"),
        (1, "a backbone of namedtuple blocks"),
        (2, "a tuple of layers"),
    ):
        params = _groups(rng, kind)
        cases.append(Case((params,), label=label, shown=f"params {describe(params, 120)}"))
    f = functools.partial(random_array, rng)
    # Names that end in "w" without their last part being "w".
    params = {
        "conv": {"w": f(3, 2), "dw": f(3, 2), "b": f(2)},
        "shadow": f(2, 2),
        "table": {"row": f(4), "w": f(4, 2)},
        "extra": None,
    }
    label = "names that end in w: conv/dw, shadow, table/row"
    cases.append(Case((params,), label=label, shown=f"params {describe(params, 120)}"))
    return cases


def _judge_bool_tree(
    got: Any, expected: Any, case: Case, variants: list[tuple[str, Callable[[], Any]]]
) -> str | None:
    problem = missing_return(got, expected, "the function")
    if problem:
        return problem
    mine, theirs = rebuild_tree(got), rebuild_tree(expected)
    if not same_structure(mine, theirs):
        return tree_judge(dtypes=False)(got, expected, case)
    wrong = [
        (leaf_name(path), leaf)
        for (path, leaf), want in zip(
            jax.tree_util.tree_leaves_with_path(mine), jax.tree.leaves(theirs), strict=True
        )
        if not isinstance(leaf, (bool, np.bool_)) or bool(leaf) != want
    ]
    if not wrong:
        return None
    hint = matching_variant(mine, variants, rebuilt=True)
    if hint:
        return hint
    name, leaf = wrong[0]
    wanted = not leaf if isinstance(leaf, bool) else "True or False"
    return f"the leaf at {name!r} is {describe(leaf)}, expected {wanted}."


def _judge_mask(got: Any, expected: Any, case: Case) -> str | None:
    (params,) = case.args
    variants = [
        (
            "no leaf is True: keystr(path) writes \"['encoder'][0]['w']\", which no name rule "
            "matches; "
            "write the name with keystr(path, simple=True, separator='/').",
            lambda: _by_name(params, lambda name, leaf: name.split("/")[-1] == "w", _default_name),
        ),
        (
            "a leaf whose name only ends in 'w' (such as 'conv/dw' or 'shadow') got True: its "
            "last part is not 'w'.",
            lambda: _by_name(params, lambda name, leaf: name.endswith("w")),
        ),
        (
            "a leaf whose name only contains a 'w' (such as 'w_mean') got True: compare the last "
            "part of the name, "
            "name.split('/')[-1] == 'w'.",
            lambda: _by_name(params, lambda name, leaf: "w" in name.split("/")[-1]),
        ),
        (
            "the mask follows the number of dimensions, not the names: a positional table ('pos') "
            "is a matrix "
            "that takes no decay here. Decide by the last key of the path.",
            lambda: _by_name(params, lambda name, leaf: np.ndim(leaf) >= 2),
        ),
    ]
    return _judge_bool_tree(got, expected, case, variants)


DECAY_MASK = Exercise(
    id="09.decay_mask",
    name="decay_mask",
    title="A weight-decay mask by key path",
    points=2,
    cases=_mask_cases,
    reference=_decay_mask,
    probe=call_tree,
    judge=_judge_mask,
    hints=(
        "jax.tree.map_with_path(f, params) calls f(path, leaf) for every leaf and keeps the "
        "structure, None included.",
        "jax.tree_util.keystr(path, simple=True, separator='/') gives names such as 'encoder/0/w'.",
        "A leaf takes decay when the last part of its name is exactly 'w': name.split('/')[-1] == "
        "'w'.",
    ),
    forbidden=("tree_mask", "tree_labels"),
    mistakes=(
        "writes the rule against `keystr`'s default format (Pitfall 26)",
        "looks for a substring instead of the last part of the name",
        "decides by the number of dimensions, not by the names",
        "drops the `None` subtrees, so the mask's structure differs (Pitfall 23)",
    ),
)


# --- 09.freeze_group --------------------------------------------------------------------------


def _freeze_group(params: Any, grads: Any, lr: float, frozen: str) -> Any:
    def step(path: Any, p: Any, g: Any) -> Any:
        if leaf_name(path).split("/")[0] == frozen:
            return p
        return p - lr * g

    return jax.tree.map_with_path(step, params, grads)


def _freeze_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for kind, frozen in ((0, "encoder"), (1, "backbone"), (2, "decoder")):
        params = _groups(rng, kind)
        grads = jax.tree.map(lambda p: random_array(rng, *np.shape(p)), params)
        lr = float(rng.choice([0.1, 0.5, 0.25]))
        shown = f"params {describe(params, 100)}; grads alike; lr={lr}; frozen={frozen!r}"
        cases.append(
            Case(
                (params, grads, lr, frozen),
                label=f"freeze {frozen!r}, next to {frozen + '_...'!r}",
                shown=shown,
            )
        )
    return cases


def _judge_freeze(got: Any, expected: Any, case: Case) -> str | None:
    problem = missing_return(got, expected, "freeze_group") or tree_judge()(got, expected, case)
    if problem is None:
        return None
    params, grads, lr, frozen = case.args

    def stepped(frozen_if: Callable[[str], bool]) -> Any:
        return jax.tree.map_with_path(
            lambda path, p, g: p if frozen_if(leaf_name(path)) else p - lr * g, params, grads
        )

    hint = matching_variant(
        rebuild_tree(got),
        [
            (
                "every leaf moved: the frozen group must come back unchanged. If you compared "
                "names, note that "
                "keystr(path) writes \"['encoder'][0]['w']\"; write it with keystr(path, "
                "simple=True, separator='/').",
                lambda: stepped(lambda name: False),
            ),
            (
                "the wrong group stayed still: the group named by `frozen` keeps its values, "
                "every other leaf takes p - lr * g.",
                lambda: stepped(lambda name: name.split("/")[0] != frozen),
            ),
            (
                f"a group whose name only starts with {frozen!r} (such as {frozen + '_norm'!r}) "
                "was frozen too: compare the "
                "first part of the name, name.split('/')[0] == frozen, not "
                "name.startswith(frozen).",
                lambda: stepped(lambda name: name.startswith(frozen)),
            ),
        ],
        rebuilt=True,
    )
    return hint or problem


FREEZE_GROUP = Exercise(
    id="09.freeze_group",
    name="freeze_group",
    title="An SGD step that freezes one group",
    points=2,
    cases=_freeze_cases,
    reference=_freeze_group,
    probe=call_tree,
    judge=_judge_freeze,
    hints=(
        "jax.tree.map_with_path(f, params, grads) calls f(path, p, g) for each pair of leaves.",
        "The group of a leaf is the first part of its name: keystr(path, simple=True, "
        "separator='/').split('/')[0].",
        "Return p unchanged in the frozen group and p - lr * g everywhere else.",
    ),
    forbidden=(
        "masked",
        "multi_transform",
        "frozen",
        "sgd",
        "partition",
        "tree_mask",
        "tree_labels",
        "tree_add_scale",
    ),
    mistakes=(
        "freezes by `name.startswith`, which catches other groups too",
        "freezes nothing",
        "freezes the wrong group",
        "reads the group from `keystr`'s default format",
    ),
)


# --- 09.split_by_mask -------------------------------------------------------------------------


def _split_by_mask(tree: Any, mask: Any) -> tuple[Any, Any]:
    leaves, treedef = jax.tree.flatten(tree)
    keep = jax.tree.leaves(mask)
    selected = [leaf if k else None for leaf, k in zip(leaves, keep, strict=True)]
    rest = [None if k else leaf for leaf, k in zip(leaves, keep, strict=True)]
    return jax.tree.unflatten(treedef, selected), jax.tree.unflatten(treedef, rest)


def _split_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    rules = (
        ("the weights 'w'", lambda name: name.split("/")[-1] == "w"),
        ("everything but the first group", None),
        ("every other leaf", None),
    )
    for kind, (what, rule) in enumerate(rules):
        params = _groups(rng, kind)
        names = [leaf_name(path) for path, _ in jax.tree_util.tree_leaves_with_path(params)]
        first = names[0].split("/")[0]
        if rule is None and kind == 1:
            rule = lambda name, first=first: name.split("/")[0] != first
        picks = [rule(n) if rule else i % 2 == 0 for i, n in enumerate(names)]
        mask = jax.tree.unflatten(jax.tree.structure(params), picks)
        shown = f"tree {describe(params, 90)}; mask {describe(mask, 110)}"
        cases.append(Case((params, mask), label=f"selecting {what}", shown=shown))
    return cases


def _split_probe(fn: Callable[..., Any], case: Case) -> Any:
    result = fn(*case.args)
    if not isinstance(result, tuple) or len(result) != 2:
        return {"not_a_pair": describe(result, 80)}
    return {"selected": tree_plain(result[0]), "rest": tree_plain(result[1])}


def _judge_split(got: Any, expected: Any, case: Case) -> str | None:
    if "not_a_pair" in got:
        return f"returned {got['not_a_pair']}; return a pair (selected, rest)."
    tree, mask = case.args
    selected, rest = rebuild_tree(got["selected"]), rebuild_tree(got["rest"])
    theirs = rebuild_tree(expected["selected"]), rebuild_tree(expected["rest"])
    if matching_variant((selected, rest), [("", lambda: theirs[::-1])], rebuilt=True) == "":
        return (
            "the two halves are swapped: selected holds the leaves where the mask is True, "
            "rest the others."
        )
    zeros = [
        leaf is not None and np.size(leaf) > 0 and not np.any(leaf)
        for leaf in jax.tree.leaves(selected) + jax.tree.leaves(rest)
    ]
    if not same_structure(selected, theirs[0]) and any(zeros):
        return (
            "some placeholders are zeros: a zero is a leaf, which jax.grad would differentiate "
            "and jit would carry. "
            "Put None where the other half has the leaf: None is an empty subtree, no leaf at all."
        )
    for half, want in zip((selected, rest), theirs, strict=True):
        same_leaves = [np.shape(a) for a in jax.tree.leaves(half)] == [
            np.shape(b) for b in jax.tree.leaves(want)
        ]
        if not same_structure(half, want) and same_leaves:
            return (
                "the leaves are right but a container lost its keys: keep every container of the "
                "tree in both halves, "
                "with None in place of each leaf the other half holds, so that the halves can be "
                "combined leaf by leaf."
            )
    for part, name in (("selected", "selected"), ("rest", "rest")):
        problem = tree_judge()(got[part], expected[part], case)
        if problem:
            return f"{name}: {problem}"
    return None


SPLIT_BY_MASK = Exercise(
    id="09.split_by_mask",
    name="split_by_mask",
    title="Partition a tree by a mask, with None placeholders",
    points=3,
    cases=_split_cases,
    reference=_split_by_mask,
    probe=_split_probe,
    judge=_judge_split,
    hints=(
        "jax.tree.flatten(tree) gives the leaves and the treedef; jax.tree.leaves(mask) the "
        "bools, in the same order.",
        "Each half is jax.tree.unflatten(treedef, new_leaves), with None in place of each leaf it "
        "does not hold.",
        "selected keeps leaf where the mask is True (None elsewhere), rest the opposite; return "
        "(selected, rest).",
    ),
    forbidden=("partition", "combine"),
    mistakes=(
        "swaps the two halves",
        "fills the placeholders with zeros instead of `None`",
        "drops keys instead of keeping `None` placeholders",
        "returns one tree instead of a pair",
    ),
)


# --- 09.group_sgd ----------------------------------------------------------------------------


def _group_sgd(params: Any, grads: Any, rates: dict[str, float]) -> Any:
    return jax.tree.map_with_path(
        lambda path, p, g: p - rates[leaf_name(path).split("/")[0]] * g, params, grads
    )


def _rates_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for kind in range(3):
        params = _groups(rng, kind)
        grads = jax.tree.map(lambda p: random_array(rng, *np.shape(p)), params)
        choices = rng.permutation([0.0, 0.01, 0.1, 0.5, 1.0])
        rates = {group: float(choices[i % len(choices)]) for i, group in enumerate(params)}
        shown = f"params {describe(params, 100)}; grads alike; rates={rates}"
        cases.append(
            Case((params, grads, rates), label=f"{len(rates)} groups, one rate each", shown=shown)
        )
    return cases


def _judge_rates(got: Any, expected: Any, case: Case) -> str | None:
    problem = missing_return(got, expected, "group_sgd") or tree_judge()(got, expected, case)
    if problem is None:
        return None
    params, grads, rates = case.args
    first = next(iter(rates.values()))
    hint = matching_variant(
        rebuild_tree(got),
        [
            (
                "every leaf took the first group's rate: look the rate up by each leaf's own "
                "group, rates[group].",
                lambda: jax.tree.map(lambda p, g: p - first * g, params, grads),
            ),
            (
                "the steps go uphill: p - rate * g, not p + rate * g.",
                lambda: _group_sgd(params, jax.tree.map(lambda g: -g, grads), rates),
            ),
            (
                "the rates were looked up by the wrong part of the name: the group is the first "
                "part, "
                "keystr(path, simple=True, separator='/').split('/')[0], the top-level key.",
                lambda: jax.tree.map_with_path(
                    lambda path, p, g: p - rates.get(leaf_name(path).split("/")[1], 0.0) * g,
                    params,
                    grads,
                ),
            ),
        ],
        rebuilt=True,
    )
    return hint or problem


GROUP_SGD = Exercise(
    id="09.group_sgd",
    name="group_sgd",
    title="SGD with a learning rate per group",
    points=2,
    cases=_rates_cases,
    reference=_group_sgd,
    probe=call_tree,
    judge=_judge_rates,
    hints=(
        "jax.tree.map_with_path(f, params, grads) calls f(path, p, g) for each pair of leaves.",
        "The group of a leaf is its top-level key, the first part of keystr(path, simple=True, "
        "separator='/').",
        "Each leaf becomes p - rates[group] * g.",
    ),
    forbidden=("multi_transform", "masked", "sgd", "tree_labels", "tree_add_scale"),
    mistakes=(
        "gives every leaf the first group's rate",
        "steps uphill",
        "reads the group from the wrong part of the name",
    ),
)


# --- 09.count_by_group -----------------------------------------------------------------------


def _count_by_group(params: dict[str, Any]) -> dict[str, int]:
    return {
        group: sum(leaf_size(leaf) or 0 for leaf in jax.tree.leaves(sub))
        for group, sub in params.items()
    }


def _count_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for kind, label in (
        (0, "a model with an empty group (None)"),
        (1, "namedtuple blocks and an empty group"),
        (2, "a group holding a None"),
    ):
        params = _groups(rng, kind)
        cases.append(Case((params,), label=label, shown=f"params {describe(params, 120)}"))
    return cases


def _judge_count(got: Any, expected: Any, case: Case) -> str | None:
    if got == expected:
        return None
    (params,) = case.args
    if isinstance(got, dict) and isinstance(expected, dict):
        missing = [k for k in expected if k not in got]
        if missing and all(expected[k] == 0 for k in missing):
            return (
                f"the groups {missing} are missing: a group without leaves (None) has 0 "
                "parameters, and it is still a "
                "group. Loop over params.items(), not over the leaves' paths."
            )
        leaves = {k: len(jax.tree.leaves(v)) for k, v in params.items()}
        if got == leaves:
            return (
                "those are the numbers of leaves (arrays); count the numbers in them: "
                "sum of leaf.size."
            )
        if all(isinstance(v, (int, np.integer)) for v in got.values()) and sum(got.values()) == sum(
            expected.values()
        ):
            return (
                "the total is right but it is shared out wrongly: a leaf's group is its "
                "top-level key."
            )
    return judge_equal(got, expected, case)


COUNT_BY_GROUP = Exercise(
    id="09.count_by_group",
    name="count_by_group",
    title="Count the parameters of each top-level group",
    points=2,
    cases=_count_cases,
    reference=_count_by_group,
    probe=call_value,
    judge=_judge_count,
    hints=(
        "The groups are the top-level keys of params; each value is a subtree.",
        "jax.tree.leaves(subtree) lists a group's arrays (none for a None subtree); leaf.size is "
        "the count of one.",
        "Return {group: sum(leaf.size for leaf in jax.tree.leaves(sub)) for group, sub in "
        "params.items()}.",
    ),
    forbidden=("tree_size", "tree_summary", "tree_bytes"),
    mistakes=(
        "leaves out a group without leaves, which has 0 parameters",
        "counts leaves instead of parameters",
        "shares the counts out to the wrong groups",
    ),
)


EXERCISES = (DECAY_MASK, FREEZE_GROUP, SPLIT_BY_MASK, GROUP_SGD, COUNT_BY_GROUP)
