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
    missing_return,
    random_array,
    structure_difference,
    tree_judge,
)
from ._mistakes import Variant, first_mistake
from ._plain import describe, rebuild_tree, tree_plain
from ._sections import (
    CONTAINERS_AND_LEAVES,
    FREEZING,
    KEY_PATHS_AND_NAMES,
    MASKS,
    PARTITION,
    PITFALL_23,
    PITFALL_26,
    RATE_PER_GROUP,
    SGD_UPDATE,
)
from ._spec import Case, Exercise, Mistake


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
        (0, "a model with a positional table and a `w_mean` vector"),
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
    label = "names that end in w: `conv/dw`, `shadow`, `table/row`"
    cases.append(Case((params,), label=label, shown=f"params {describe(params, 120)}"))
    return cases


def _mask_variants(params: Any, name: str, value: Any, ndim: int) -> list[Variant]:
    """Typical wrong masks of ``params``, each told at the first wrong leaf: its name, what the
    answer put there, and the parameter's number of dimensions."""
    last = name.split("/")[-1]
    default_format = Mistake(
        f"no leaf is `True`, not even {name!r}, whose last key is `'w'`.",
        "`keystr`'s default format writes a key path as `\"['encoder'][0]['w']\"`, with brackets "
        "and quotes and no slashes, so a rule written for names such as `'encoder/0/w'` matches "
        "nothing (Pitfall 26).",
        "Write the name with `keystr(path, simple=True, separator='/')` before the rule reads it.",
        reread=PITFALL_26,
    )
    ending = Mistake(
        f"the leaf {name!r} got `True`, but its name only ends in `'w'`: its last part is "
        f"{last!r}.",
        "The rule is about the last key of the path, compared whole: `'dw'`, `'shadow'` and "
        "`'row'` end in the letter w, but none of them is the key `'w'`.",
        "Split the name on `'/'` and compare its last part with `==`: `name.split('/')[-1] == "
        "'w'`.",
        reread=MASKS,
    )
    substring = Mistake(
        f"the leaf {name!r} got `True`, but `'w'` only occurs in its last part, {last!r}.",
        "A substring test accepts every key that contains the letter, such as `'w_mean'`; "
        "the rule asks for the key `'w'` exactly.",
        "Compare the last part of the name with `==` rather than testing with `in`: "
        "`name.split('/')[-1] == 'w'`.",
        reread=MASKS,
    )
    by_rank = Mistake(
        f"the leaf {name!r}, with {ndim} dimension{'' if ndim == 1 else 's'}, got "
        f"{describe(value)}: the mask follows the number of dimensions, not the names.",
        "Weight decay here is a rule on names: the leaves whose last key is `'w'` take it, and a "
        "matrix with another name, such as the positional table `'pos'`, does not.",
        "Decide from the key path, not the leaf: `map_with_path` hands `f` the path, and the "
        "last part of the name decides.",
        reread=MASKS,
    )
    wrong_rules: list[tuple[Mistake, Callable[[str, Any], Any], Callable[[Any], str]]] = [
        (default_format, lambda name, leaf: name.split("/")[-1] == "w", keystr),
        (ending, lambda name, leaf: name.endswith("w"), leaf_name),
        (substring, lambda name, leaf: "w" in name.split("/")[-1], leaf_name),
        (by_rank, lambda name, leaf: np.ndim(leaf) >= 2, leaf_name),
    ]
    return [
        Variant(mistake=mistake, build=functools.partial(_by_name, params, rule, naming))
        for mistake, rule, naming in wrong_rules
    ]


def _judge_mask(got: Any, expected: Any, case: Case) -> str | Mistake | None:
    problem = missing_return(got, expected, "the function")
    if problem:
        return problem
    mine, theirs = rebuild_tree(got), rebuild_tree(expected)
    if not same_structure(mine, theirs):
        return Mistake(
            str(tree_judge(dtypes=False)(got, expected, case)),
            "A mask must have the structure of `params` exactly, `None` subtrees included: "
            "`optax` pairs it with the params leaf by leaf, and refuses a tree that differs "
            "(Pitfall 23).",
            "Build the mask from `params` with `jax.tree.map_with_path`, which keeps every "
            "container and `None` subtree, rather than assembling a new dict.",
            reread=PITFALL_23,
        )
    wrong = [
        (leaf_name(path), leaf)
        for (path, leaf), want in zip(
            jax.tree_util.tree_leaves_with_path(mine), jax.tree.leaves(theirs), strict=True
        )
        if not isinstance(leaf, (bool, np.bool_)) or bool(leaf) != want
    ]
    if not wrong:
        return None
    name, leaf = wrong[0]
    (params,) = case.args
    ndims = {leaf_name(path): np.ndim(x) for path, x in jax.tree_util.tree_leaves_with_path(params)}
    variants = _mask_variants(params, name, leaf, ndims.get(name, 0))
    mistake = first_mistake(mine, variants, rebuilt=True)
    if mistake:
        return mistake
    wanted = not leaf if isinstance(leaf, bool) else "`True` or `False`"
    return f"the leaf at {name!r} is {describe(leaf)}, expected {wanted}."


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
        (
            "A mask is a tree of bools shaped like the params, made by a rule on each leaf's name; "
            "the rule reads the last part of the name exactly, not its ending."
        ),
        (
            "`jax.tree.map_with_path(f, params)` hands `f` each leaf's path: write it with "
            "`keystr(path, simple=True, separator='/')` and compare its last part, "
            "`name.split('/')[-1]`, with `'w'`."
        ),
    ),
    reread=MASKS,
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


def _freeze_probe(fn: Callable[..., Any], case: Case) -> dict[str, Any]:
    """What ``fn`` returns on the case, and whether it freezes a leaf when ``frozen`` is written
    in keystr's default format instead (``"['encoder']"``, or a whole name such as
    ``"['encoder']['w']"``): an answer that reads names in that format does, one that ignores
    ``frozen`` never does."""
    params, grads, lr, frozen = case.args
    paths = [path for path, _ in jax.tree_util.tree_leaves_with_path(params)]
    whole = [keystr(path) for path in paths if leaf_name(path).split("/")[0] == frozen][:1]
    default_format = False
    for written in [f"[{frozen!r}]", *whole]:
        try:
            moved = fn(params, grads, lr, written)
            kept = [
                np.array_equal(np.asarray(a), np.asarray(b))
                for a, b in zip(jax.tree.leaves(moved), jax.tree.leaves(params), strict=True)
            ]
        except Exception:  # noqa: BLE001 (an answer that fails here is judged on the case alone)
            continue
        default_format = default_format or any(kept)
    return {"tree": call_tree(fn, case), "default_format": default_format}


def _judge_freeze(got: Any, expected: Any, case: Case) -> str | Mistake | None:
    mine, theirs = got["tree"], expected["tree"]
    problem = missing_return(mine, theirs, "freeze_group") or tree_judge()(mine, theirs, case)
    if problem is None:
        return None
    params, grads, lr, frozen = case.args

    def stepped(frozen_if: Callable[[str], bool]) -> Any:
        return jax.tree.map_with_path(
            lambda path, p, g: p if frozen_if(leaf_name(path)) else p - lr * g, params, grads
        )

    others = [group for group in params if group != frozen and group.startswith(frozen)]
    default_format = Mistake(
        f"every leaf moved, those of the frozen group {frozen!r} too: your step reads each name "
        f'in `keystr`\'s default format, since given `frozen="[{frozen!r}]"` or a whole name in '
        "that format it keeps a leaf still.",
        "`keystr`'s default format writes a path as `\"['encoder'][0]['w']\"`: the part before "
        "the first `'/'` is the whole name, never a group (Pitfall 26).",
        "Write the name with `keystr(path, simple=True, separator='/')`, so that "
        "`name.split('/')[0]` is the group.",
        reread=PITFALL_26,
    )
    nothing = Mistake(
        f"every leaf moved, those of the frozen group {frozen!r} too: nothing was frozen.",
        "The step must tell each leaf's group, the first part of its name, and leave the leaves "
        "of the frozen one as they are, while every other leaf takes the SGD step.",
        "In `jax.tree.map_with_path`, write the name with `keystr(path, simple=True, "
        "separator='/')` and return `p` unchanged when its first part equals `frozen`.",
    )
    variants = [
        Variant(
            mistake=default_format if got["default_format"] else nothing,
            build=lambda: stepped(lambda name: False),
        ),
        Variant(
            mistake=Mistake(
                f"the wrong group stayed still: the leaves of {frozen!r} moved, and every other "
                "leaf kept its value.",
                "The group named by `frozen` is the one that keeps its values; every other leaf "
                "takes the SGD step.",
                "Swap the two outcomes of your test: `p` where the group is frozen, `p - lr * g` "
                "elsewhere.",
            ),
            build=lambda: stepped(lambda name: name.split("/")[0] != frozen),
        ),
    ]
    if others:  # a group whose name starts with the frozen one's: a prefix test freezes it too
        variants.append(
            Variant(
                mistake=Mistake(
                    f"the group {others[0]!r} was frozen too: its name only starts with "
                    f"{frozen!r}.",
                    f"A group is the first part of the name, compared whole: {others[0]!r} "
                    f"starts with {frozen!r} but is another group.",
                    "Compare the first part of the name with `==`, `name.split('/')[0] == "
                    "frozen`, rather than testing `name.startswith(frozen)`.",
                ),
                build=lambda: stepped(lambda name: name.startswith(frozen)),
            )
        )
    return first_mistake(rebuild_tree(mine), variants, rebuilt=True) or problem


FREEZE_GROUP = Exercise(
    id="09.freeze_group",
    name="freeze_group",
    title="An SGD step that freezes one group",
    points=2,
    cases=_freeze_cases,
    reference=_freeze_group,
    probe=_freeze_probe,
    judge=_judge_freeze,
    hints=(
        (
            "A leaf's group is the first part of its name; leaves in the frozen group keep their "
            "values and the others take an SGD step."
        ),
        (
            "`jax.tree.map_with_path(f, params, grads)` with `f(path, p, g)` returning `p` when "
            "`keystr(path, simple=True, separator='/').split('/')[0] == frozen`, else `p - lr * "
            "g`."
        ),
    ),
    reread=FREEZING,
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
        ("the weights `'w'`", lambda name: name.split("/")[-1] == "w"),
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


def _judge_split(got: Any, expected: Any, case: Case) -> str | Mistake | None:
    if "not_a_pair" in got:
        return Mistake(
            f"returned {got['not_a_pair']}, one tree, where a pair `(selected, rest)` was "
            "expected.",
            "A partition makes two trees from one: the leaves the mask selects, and the rest, "
            "each half with `None` where the other holds a leaf.",
            "Build both halves and return them together, as the tuple `(selected, rest)`.",
        )
    tree, mask = case.args
    selected, rest = rebuild_tree(got["selected"]), rebuild_tree(got["rest"])
    theirs = rebuild_tree(expected["selected"]), rebuild_tree(expected["rest"])
    swapped = Mistake(
        "the two halves are swapped: the first tree returned holds the leaves where the mask is "
        "`False`.",
        "The order of the pair is part of the answer: `selected`, the leaves where the mask is "
        "`True`, comes first, and `rest` second.",
        "Return `(selected, rest)`, `selected` keeping each leaf whose mask entry is `True`.",
    )
    found = first_mistake(
        (selected, rest), [Variant(mistake=swapped, build=lambda: theirs[::-1])], rebuilt=True
    )
    if found:
        return found
    zeros = [
        leaf is not None and np.size(leaf) > 0 and not np.any(leaf)
        for leaf in jax.tree.leaves(selected) + jax.tree.leaves(rest)
    ]
    if not same_structure(selected, theirs[0]) and any(zeros):
        paths = [
            jax.tree_util.keystr(path)
            for path, leaf in jax.tree_util.tree_leaves_with_path(selected)
            if np.size(leaf) > 0 and not np.any(leaf)
        ]
        where = f" (in `selected` at {paths[0]})" if paths else ""
        return Mistake(
            "some placeholders are zeros: where the other half holds a leaf, yours holds an "
            f"array of zeros{where}.",
            "A zero array is a leaf, which `jax.grad` would differentiate and `jit` would carry. "
            "`None` is an empty subtree, no leaf at all, and that is what a placeholder must be.",
            "Put `None` in place of each leaf that the other half holds.",
        )
    for half, want in zip((selected, rest), theirs, strict=True):
        same_leaves = [np.shape(a) for a in jax.tree.leaves(half)] == [
            np.shape(b) for b in jax.tree.leaves(want)
        ]
        if not same_structure(half, want) and same_leaves:
            lines = structure_difference(half, want)
            return Mistake(
                "the leaves are right but a container lost its keys: "
                + (lines[0] if lines else "the structures differ")
                + ".",
                "Both halves keep every container of the tree, so that they can be combined "
                "leaf by leaf; a `None` placeholder keeps the key that a dropped entry loses.",
                "Keep the tree's structure in both halves: fill its treedef with the leaves, "
                "`None` in place of each leaf the other half holds, instead of filtering the "
                "containers.",
            )
    for part in ("selected", "rest"):
        problem = tree_judge()(got[part], expected[part], case)
        if problem:
            return f"{part}: {problem}"
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
        (
            "Partitioning keeps the structure of the tree in both halves: each half holds the "
            "leaves it selects and `None` in place of the others."
        ),
        (
            "`leaves, treedef = jax.tree.flatten(tree)`; `bools = jax.tree.leaves(mask)`; "
            "`selected = jax.tree.unflatten(treedef, [x if m else None for x, m in zip(leaves, "
            "bools, strict=True)])`; `rest` the opposite; return `(selected, rest)`."
        ),
    ),
    reread=PARTITION,
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


def _judge_rates(got: Any, expected: Any, case: Case) -> str | Mistake | None:
    problem = missing_return(got, expected, "group_sgd") or tree_judge()(got, expected, case)
    if problem is None:
        return None
    params, grads, rates = case.args
    first_group, first = next(iter(rates.items()))
    variants = [
        Variant(
            mistake=Mistake(
                f"every leaf took the first group's rate, {first} (that of {first_group!r}).",
                "Each leaf belongs to the group named by the first part of its name, and moves "
                "by that group's entry in `rates`.",
                "Inside `jax.tree.map_with_path`, look the rate up by the leaf's own group: "
                "`rates[name.split('/')[0]]`.",
            ),
            build=lambda: jax.tree.map(lambda p, g: p - first * g, params, grads),
        ),
        Variant(
            mistake=Mistake(
                "the steps go uphill: each leaf moved by `+rate * g`.",
                "SGD moves against the gradient, the direction in which the loss falls.",
                "Subtract the step: `p - rates[group] * g`.",
                reread=SGD_UPDATE,
            ),
            build=lambda: _group_sgd(params, jax.tree.map(lambda g: -g, grads), rates),
        ),
        Variant(
            mistake=Mistake(
                "the rates were looked up by the wrong part of the name: the leaves moved by the "
                "rate of their second key, not of their group.",
                "A leaf's group is its top-level key, the first part of its name; the parts after "
                "it name the layers and the leaves inside the group.",
                "Take the first part: `keystr(path, simple=True, separator='/').split('/')[0]`.",
            ),
            build=lambda: jax.tree.map_with_path(
                lambda path, p, g: p - rates.get(leaf_name(path).split("/")[1], 0.0) * g,
                params,
                grads,
            ),
        ),
    ]
    return first_mistake(rebuild_tree(got), variants, rebuilt=True) or problem


def _judge_rates_raise(error: str, message: str, case: Case) -> Mistake | None:
    if error != "KeyError":
        return None
    _, _, rates = case.args
    what = f"`rates` has the keys {list(rates)}, and the key looked up was not one of them."
    if "['" in message:  # keystr's default format, ['group']['w'], for these dicts of groups
        return Mistake(
            what,
            "`keystr(path)` writes a path as Python code that would index the tree, brackets, "
            "quotes and all, such as `['group']['w']`; the groups in `rates` are plain names.",
            "Take the group from `keystr(path, simple=True, separator='/').split('/')[0]`, or "
            "from the first key of the path itself.",
            reread=PITFALL_26,
        )
    return Mistake(
        what,
        "A leaf's group is its top-level key, the first part of its name; each group has an "
        "entry in `rates`.",
        "Look the rate up by the first part: `keystr(path, simple=True, separator='/')"
        ".split('/')[0]`.",
    )


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
        (
            "Each leaf belongs to the group named by the first part of its name, and moves by that "
            "group's learning rate."
        ),
        (
            "`jax.tree.map_with_path(f, params, grads)`: `f(path, p, g)` reads the group, the "
            "first part of `keystr(path, simple=True, separator='/')`, and steps `p` by that "
            "group's rate in `rates`."
        ),
    ),
    reread=RATE_PER_GROUP,
    judge_raise=_judge_rates_raise,
    forbidden=("multi_transform", "masked", "sgd", "tree_labels", "tree_add_scale"),
    mistakes=(
        "gives every leaf the first group's rate",
        "steps uphill",
        "reads the group from the wrong part of the name",
        "looks the rate up by the whole path in `keystr`'s default format (a `KeyError`)",
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
        (0, "a model with an empty group (`None`)"),
        (1, "namedtuple blocks and an empty group"),
        (2, "a group holding a `None`"),
    ):
        params = _groups(rng, kind)
        cases.append(Case((params,), label=label, shown=f"params {describe(params, 120)}"))
    return cases


def _judge_count(got: Any, expected: Any, case: Case) -> str | Mistake | None:
    if got == expected:
        return None
    (params,) = case.args
    if isinstance(got, dict) and isinstance(expected, dict):
        missing = [k for k in expected if k not in got]
        if missing and all(expected[k] == 0 for k in missing):
            return Mistake(
                f"the groups {missing}, which hold no leaves, are missing from the result.",
                "Every top-level key is a group, also one without leaves (`None`): it has 0 "
                "parameters and still gets an entry. Walking the leaves' paths never meets such "
                "a group.",
                "Loop over `params.items()` and count the leaves of each subtree, which gives 0 "
                "for a `None` subtree.",
            )
        leaves = {k: len(jax.tree.leaves(v)) for k, v in params.items()}
        if got == leaves:
            return Mistake(
                f"those are the numbers of leaves (arrays) of the groups, {got}, not of "
                "parameters.",
                "A parameter is one element of an array: a `(3, 4)` matrix holds 12.",
                "Add up `leaf.size` over each group's leaves instead of counting the leaves.",
                reread=CONTAINERS_AND_LEAVES,
            )
        if all(isinstance(v, (int, np.integer)) for v in got.values()) and sum(got.values()) == sum(
            expected.values()
        ):
            group = next(k for k in expected if got.get(k) != expected[k])
            return Mistake(
                f"the total is right but it is shared out wrongly: {group!r} got "
                f"{got.get(group)}, expected {expected[group]}.",
                "A leaf counts toward the group at the top of its key path, the first part of "
                "its name, and toward no other.",
                "Count each group's own subtree, `params[group]`, or group the leaves by the first "
                "key of their paths.",
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
        (
            "The groups are the top-level keys; a group's count adds the elements of every leaf in "
            "its subtree, and a `None` subtree counts 0."
        ),
        (
            "Loop over `params.items()`: a group's count is the sum of `leaf.size` over "
            "`jax.tree.leaves` of its subtree, which lists nothing for `None`; return one entry "
            "per group, in `params`' order."
        ),
    ),
    reread=KEY_PATHS_AND_NAMES,
    forbidden=("tree_size", "tree_summary", "tree_bytes"),
    mistakes=(
        "leaves out a group without leaves, which has 0 parameters",
        "counts leaves instead of parameters",
        "shares the counts out to the wrong groups",
    ),
)


EXERCISES = (DECAY_MASK, FREEZE_GROUP, SPLIT_BY_MASK, GROUP_SGD, COUNT_BY_GROUP)
