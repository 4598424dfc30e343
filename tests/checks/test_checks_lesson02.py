"""Lesson 02 self-checks: not attempted, incorrect with the targeted hint, correct; cases and the
guard."""

from __future__ import annotations

import collections
import re
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from exercise_support import (
    LessonChecks,
    has_none,
    nodes,
    repeated_check_output,
    successive_reports,
)
from jax_wording import WORDINGS, withhold_jax_wording

import course_lib as cl
from course_lib.checks import evaluate, get_exercise

pytestmark = pytest.mark.usefixtures("fresh_checks")

LESSON_02 = (
    "02.sgd_step",
    "02.average_trees",
    "02.make_sgd_step",
    "02.global_norm",
    "02.clip_by_global_norm",
    "02.stack_trees",
)


# --- right answers, written as a learner would ---------------------------------------------------


def sgd_step(params, grads, lr):
    return jax.tree.map(lambda p, g: p - lr * g, params, grads)


def average_trees(trees):
    return jax.tree.map(lambda *leaves: sum(leaves) / len(leaves), *trees)


def make_sgd_step(loss_fn):
    @jax.jit
    def step(params, batch, lr):
        loss, grads = jax.value_and_grad(loss_fn)(params, batch)
        return jax.tree.map(lambda p, g: p - lr * g, params, grads), loss

    return step


def global_norm(tree):
    return jnp.sqrt(sum(jnp.vdot(leaf, leaf) for leaf in jax.tree.leaves(tree)))


def clip_by_global_norm(grads, max_norm):
    norm = global_norm(grads)
    return jax.tree.map(lambda g: g * jnp.minimum(1.0, max_norm / norm), grads)


def stack_trees(trees):
    return jax.tree.map(lambda *leaves: jnp.stack(leaves), *trees)


# Right answers written differently from the references.


def sgd_by_flatten(params, grads, lr):
    leaves, treedef = jax.tree_util.tree_flatten(params)
    return treedef.unflatten(  # type: ignore[attr-defined]  # jaxlib leaves PyTreeDef untyped
        [p - lr * g for p, g in zip(leaves, treedef.flatten_up_to(grads), strict=True)]  # type: ignore[attr-defined]  # jaxlib leaves PyTreeDef untyped
    )


def sgd_optax_style(params, grads, lr):
    updates = jax.tree_util.tree_map(lambda g: -lr * g, grads)
    return jax.tree_util.tree_map(
        lambda p, u: jnp.asarray(p + u).astype(jnp.asarray(p).dtype), params, updates
    )


def average_with_numpy(trees):
    return jax.tree.map(
        lambda *leaves: np.mean(np.stack([np.asarray(x) for x in leaves]), axis=0), *trees
    )


def make_sgd_step_with_grad_then_loss(loss_fn):
    def step(params, batch, lr):
        grads = jax.grad(loss_fn)(params, batch)
        loss = loss_fn(params, batch)
        leaves, treedef = jax.tree_util.tree_flatten(params)
        return treedef.unflatten(  # type: ignore[attr-defined]  # jaxlib leaves PyTreeDef untyped
            [p - lr * g for p, g in zip(leaves, treedef.flatten_up_to(grads), strict=True)]  # type: ignore[attr-defined]  # jaxlib leaves PyTreeDef untyped
        ), loss

    return jax.jit(step)


def global_norm_by_leaves_loop(tree):
    total = jnp.zeros(())
    for leaf in jax.tree_util.tree_leaves(tree):
        total = total + jnp.sum(jnp.square(jnp.asarray(leaf, jnp.float32)))
    return jnp.sqrt(total)


def clip_optax_style(grads, max_norm):
    norm = global_norm_by_leaves_loop(grads)
    trigger = norm < max_norm
    factor = jnp.where(trigger, 1.0, max_norm / jnp.where(trigger, 1.0, norm))
    return jax.tree.map(lambda g: (g * factor).astype(jnp.asarray(g).dtype), grads)


def stack_with_numpy(trees):
    return jax.tree.map(lambda *leaves: np.stack([np.asarray(x) for x in leaves]), *trees)


ALSO_RIGHT: list[tuple[str, Callable[..., Any]]] = [
    ("02.sgd_step", sgd_by_flatten),
    ("02.sgd_step", sgd_optax_style),
    ("02.average_trees", average_with_numpy),
    ("02.make_sgd_step", make_sgd_step_with_grad_then_loss),
    ("02.global_norm", global_norm_by_leaves_loop),
    ("02.clip_by_global_norm", clip_optax_style),
    ("02.stack_trees", stack_with_numpy),
]


RIGHT: dict[str, Callable[..., Any]] = {
    "02.sgd_step": sgd_step,
    "02.average_trees": average_trees,
    "02.make_sgd_step": make_sgd_step,
    "02.global_norm": global_norm,
    "02.clip_by_global_norm": clip_by_global_norm,
    "02.stack_trees": stack_trees,
}


# --- typical wrong answers ------------------------------------------------------------------------


def sgd_adding(params, grads, lr):
    return jax.tree.map(lambda p, g: p + lr * g, params, grads)


def sgd_leaves(params, grads, lr):
    return [
        p - lr * g for p, g in zip(jax.tree.leaves(params), jax.tree.leaves(grads), strict=True)
    ]


def sgd_without_lr(params, grads, lr):
    return jax.tree.map(lambda p, g: p - g, params, grads)


def sgd_returning_step(params, grads, lr):
    return jax.tree.map(lambda g: -lr * g, grads)


def sgd_swapped_arguments(params, grads, lr):
    return jax.tree.map(lambda g, p: p - lr * g, params, grads)


def sgd_with_course_version(params, grads, lr):
    return cl.tree_add_scale(params, -lr, grads)


def sgd_forgetting_return(params, grads, lr):
    jax.tree.map(lambda p, g: p - lr * g, params, grads)


def average_summing(trees):
    return jax.tree.map(lambda *leaves: sum(leaves), *trees)


def average_per_tree(trees):
    return [jax.tree.map(lambda leaf: leaf / len(trees), tree) for tree in trees]


def average_first_tree(trees):
    return trees[0]


def average_running(trees):
    mean = trees[0]
    for tree in trees[1:]:
        mean = jax.tree.map(lambda a, b: (a + b) / 2, mean, tree)
    return mean


def average_inside_leaves(trees):
    return jax.tree.map(
        lambda *leaves: sum(jnp.mean(leaf) for leaf in leaves) / len(leaves), *trees
    )


def make_step_not_jitted(loss_fn):
    grad = jax.jit(jax.value_and_grad(loss_fn))

    def step(params, batch, lr):
        loss, grads = grad(params, batch)
        return jax.tree.map(lambda p, g: p - lr * g, params, grads), loss

    return step


def make_step_static_lr(loss_fn):
    def step(params, batch, lr):
        loss, grads = jax.value_and_grad(loss_fn)(params, batch)
        return jax.tree.map(lambda p, g: p - lr * g, params, grads), loss

    return jax.jit(step, static_argnames="lr")


def make_step_climbing(loss_fn):
    @jax.jit
    def step(params, batch, lr):
        loss, grads = jax.value_and_grad(loss_fn)(params, batch)
        return jax.tree.map(lambda p, g: p + lr * g, params, grads), loss

    return step


def make_step_params_only(loss_fn):
    @jax.jit
    def step(params, batch, lr):
        grads = jax.grad(loss_fn)(params, batch)
        return jax.tree.map(lambda p, g: p - lr * g, params, grads)

    return step


def make_step_loss_after(loss_fn):
    @jax.jit
    def step(params, batch, lr):
        grads = jax.grad(loss_fn)(params, batch)
        new = jax.tree.map(lambda p, g: p - lr * g, params, grads)
        return new, loss_fn(new, batch)

    return step


def make_step_with_course_optimizer(loss_fn):
    @jax.jit
    def step(params, batch, lr):
        loss, grads = jax.value_and_grad(loss_fn)(params, batch)
        return cl.tree_add_scale(params, -lr, grads), loss

    return step


def helper_using_the_course(params, grads, lr):
    return cl.tree_add_scale(params, -lr, grads)


def make_step_with_hidden_course_call(loss_fn):
    @jax.jit
    def step(params, batch, lr):
        loss, grads = jax.value_and_grad(loss_fn)(params, batch)
        return helper_using_the_course(params, grads, lr), loss

    return step


def norm_squared(tree):
    return sum(jnp.vdot(leaf, leaf) for leaf in jax.tree.leaves(tree))


def norm_of_each_leaf(tree):
    return jax.tree.map(jnp.linalg.norm, tree)


def norm_as_python_float(tree):
    return float(jnp.sqrt(sum(jnp.sum(jnp.square(leaf)) for leaf in jax.tree.leaves(tree))))


def norm_squaring_sums(tree):
    return jnp.sqrt(sum(jnp.sum(leaf) ** 2 for leaf in jax.tree.leaves(tree)))


def norm_summing_leaf_norms(tree):
    return sum(jnp.linalg.norm(jnp.ravel(leaf)) for leaf in jax.tree.leaves(tree))


def clip_each_leaf(grads, max_norm):
    def clip(g):
        norm = jnp.linalg.norm(jnp.ravel(g))
        return g * jnp.minimum(1.0, max_norm / norm)

    return jax.tree.map(clip, grads)


def clip_always(grads, max_norm):
    return jax.tree.map(lambda g: g * max_norm / global_norm(grads), grads)


def clip_upside_down(grads, max_norm):
    norm = global_norm(grads)
    return jax.tree.map(lambda g: g * jnp.where(norm > max_norm, norm / max_norm, 1.0), grads)


def clip_never(grads, max_norm):
    return grads


def clip_with_python_if(grads, max_norm):
    norm = global_norm(grads)
    if norm > max_norm:
        return jax.tree.map(lambda g: g * max_norm / norm, grads)
    return grads


def clip_dividing_by_zero(grads, max_norm):
    norm = global_norm(grads)
    return jax.tree.map(lambda g: g / norm * jnp.minimum(norm, max_norm), grads)


def clip_without_sqrt(grads, max_norm):
    squares = norm_squared(grads)
    return jax.tree.map(lambda g: g * jnp.minimum(1.0, max_norm / squares), grads)


def stack_transposing(trees):
    return jax.tree.map(lambda *leaves: list(leaves), *trees)


def stack_concatenating(trees):
    return jax.tree.map(
        lambda *leaves: jnp.concatenate([jnp.atleast_1d(x) for x in leaves]), *trees
    )


def stack_per_tree(trees):
    return [jax.tree.map(jnp.asarray, tree) for tree in trees]


def stack_last_axis(trees):
    return jax.tree.map(lambda *leaves: jnp.stack(leaves, axis=-1), *trees)


WRONG: list[tuple[str, Callable[..., Any], str]] = [
    ("02.sgd_step", sgd_adding, "you added the step: your leaves are `p + lr * g`"),
    ("02.sgd_step", sgd_leaves, "returned a flat list of 2 leaves, where a tree shaped like"),
    ("02.sgd_step", sgd_without_lr, "the learning rate is missing"),
    ("02.sgd_step", sgd_returning_step, "you returned the step `-lr * g`, not the new parameters"),
    ("02.sgd_step", sgd_forgetting_return, "`sgd_step` returned `None`: missing `return`?"),
    ("02.sgd_step", sgd_swapped_arguments, "your leaves are `g - lr * p`"),
    ("02.average_trees", average_summing, "you returned the sum of the 3 trees"),
    ("02.average_trees", average_per_tree, "returned a list of 3 trees, one per input"),
    ("02.average_trees", average_first_tree, "you returned the first tree unchanged"),
    ("02.average_trees", average_inside_leaves, "entries inside each leaf were averaged"),
    ("02.average_trees", average_running, "a running average of pairs"),
    ("02.make_sgd_step", make_step_not_jitted, "is not jitted"),
    (
        "02.make_sgd_step",
        make_step_static_lr,
        "compiled 3 times, expected 1, once for each of the 3 learning rates: the same lr again",
    ),
    ("02.make_sgd_step", make_step_climbing, "the loss went up"),
    ("02.make_sgd_step", make_step_params_only, "where a pair `(new_params, loss)` was expected"),
    ("02.make_sgd_step", make_step_loss_after, "before the update"),
    ("02.global_norm", norm_squared, "that is the sum of squares"),
    ("02.global_norm", norm_of_each_leaf, "one value per leaf"),
    ("02.global_norm", norm_summing_leaf_norms, "the sum of the leaves' norms"),
    ("02.global_norm", norm_as_python_float, "under `jax.jit` it raised `ConcretizationTypeError`"),
    ("02.global_norm", norm_squaring_sums, "squaring the sum of each leaf"),
    ("02.clip_by_global_norm", clip_each_leaf, "you clipped each leaf by its own norm"),
    (
        "02.clip_by_global_norm",
        clip_always,
        "you scaled even though the global norm is below `max_norm`",
    ),
    (
        "02.clip_by_global_norm",
        clip_with_python_if,
        "under `jax.jit` it raised `TracerBoolConversionError`",
    ),
    ("02.clip_by_global_norm", clip_dividing_by_zero, "dividing by it gives `nan`"),
    ("02.clip_by_global_norm", clip_without_sqrt, "you used the sum of squares as the norm"),
    ("02.clip_by_global_norm", clip_upside_down, "you scaled by `norm / max_norm`"),
    ("02.clip_by_global_norm", clip_never, "nothing was clipped"),
    (
        "02.stack_trees",
        stack_transposing,
        "at `['steps']` of your result, and every other, is a list",
    ),
    (
        "02.stack_trees",
        stack_concatenating,
        "the leaf at `['w']` has shape `(6, 3)`, expected `(3, 2, 3)`: the",
    ),
    ("02.stack_trees", stack_per_tree, "returned a list of 3 trees, one per input"),
    (
        "02.stack_trees",
        stack_last_axis,
        "the leaf at `['w']` has shape `(2, 3, 3)`, expected `(3, 2, 3)`",
    ),
]


# --- each wrong answer with the fix its last hint gives, applied as written -----------------------


def average_dividing_the_sum(trees):
    return jax.tree.map(lambda *leaves: sum(leaves) / len(trees), *trees)


def make_step_jitted(loss_fn):
    def step(params, batch, lr):
        loss, grads = jax.value_and_grad(loss_fn)(params, batch)
        return jax.tree.map(lambda p, g: p - lr * g, params, grads), loss

    return jax.jit(step)


def norm_of_all_squares(tree):
    return jnp.sqrt(sum(jnp.sum(jnp.square(leaf)) for leaf in jax.tree.leaves(tree)))


def clip_with_jnp_where(grads, max_norm):
    norm = global_norm(grads)
    return jax.tree.map(lambda g: g * jnp.where(norm > max_norm, max_norm / norm, 1.0), grads)


def clip_away_from_zero(grads, max_norm):
    norm = global_norm(grads)
    return jax.tree.map(lambda g: g / jnp.maximum(norm, 1e-12) * jnp.minimum(norm, max_norm), grads)


FIXED: list[tuple[str, Callable[..., Any], Callable[..., Any]]] = [
    ("02.sgd_step", sgd_adding, sgd_step),
    ("02.sgd_step", sgd_leaves, sgd_step),
    ("02.sgd_step", sgd_without_lr, sgd_step),
    ("02.sgd_step", sgd_returning_step, sgd_step),
    ("02.sgd_step", sgd_forgetting_return, sgd_step),
    ("02.sgd_step", sgd_swapped_arguments, sgd_step),
    ("02.average_trees", average_summing, average_dividing_the_sum),
    ("02.average_trees", average_per_tree, average_trees),
    ("02.average_trees", average_first_tree, average_trees),
    ("02.average_trees", average_inside_leaves, average_dividing_the_sum),
    ("02.average_trees", average_running, average_dividing_the_sum),
    ("02.make_sgd_step", make_step_not_jitted, make_step_jitted),
    ("02.make_sgd_step", make_step_static_lr, make_step_jitted),
    ("02.make_sgd_step", make_step_climbing, make_sgd_step),
    ("02.make_sgd_step", make_step_params_only, make_sgd_step),
    ("02.make_sgd_step", make_step_loss_after, make_sgd_step),
    ("02.global_norm", norm_squared, global_norm),
    ("02.global_norm", norm_of_each_leaf, norm_of_all_squares),
    ("02.global_norm", norm_summing_leaf_norms, norm_of_all_squares),
    ("02.global_norm", norm_as_python_float, norm_of_all_squares),
    ("02.global_norm", norm_squaring_sums, norm_of_all_squares),
    ("02.clip_by_global_norm", clip_each_leaf, clip_by_global_norm),
    ("02.clip_by_global_norm", clip_always, clip_by_global_norm),
    ("02.clip_by_global_norm", clip_with_python_if, clip_with_jnp_where),
    ("02.clip_by_global_norm", clip_dividing_by_zero, clip_away_from_zero),
    ("02.clip_by_global_norm", clip_without_sqrt, clip_by_global_norm),
    ("02.clip_by_global_norm", clip_upside_down, clip_with_jnp_where),
    ("02.clip_by_global_norm", clip_never, clip_by_global_norm),
    ("02.stack_trees", stack_transposing, stack_trees),
    ("02.stack_trees", stack_concatenating, stack_trees),
    ("02.stack_trees", stack_per_tree, stack_trees),
    ("02.stack_trees", stack_last_axis, stack_trees),
]


# --- the tests ------------------------------------------------------------------------------------


NAMED: dict[str, dict[str, str]] = {
    "02.sgd_step": {
        "adds the step instead of subtracting it": (
            "you added the step: your leaves are `p + lr * g`"
        ),
        "returns a flat list of leaves": (
            "returned a flat list of 2 leaves, where a tree shaped like"
        ),
        "leaves out the learning rate": "the learning rate is missing",
        "returns the step `-lr * g` instead of the new parameters": (
            "you returned the step `-lr * g`, not the new parameters"
        ),
        "forgets `return`": "`sgd_step` returned `None`: missing `return`?",
        "swaps the function's arguments, moving the gradient by the parameters": (
            "your leaves are `g - lr * p`"
        ),
    },
    "02.average_trees": {
        "sums the trees instead of averaging them": "you returned the sum of the 3 trees",
        "returns a list of scaled trees instead of one tree": (
            "returned a list of 3 trees, one per input"
        ),
        "returns one of the trees instead of their mean": "you returned the first tree unchanged",
        "averages the entries inside each leaf": "entries inside each leaf were averaged",
        "averages two trees at a time, a running average": "a running average of pairs",
    },
    "02.make_sgd_step": {
        "does not jit the step": "is not jitted",
        "makes the learning rate static, so each new rate compiles again": (
            "compiled 3 times, expected 1, once for each of the 3 learning rates: the same lr again"
        ),
        "climbs the loss instead of descending": "the loss went up",
        "returns only the new parameters, not `(new_params, loss)`": (
            "where a pair `(new_params, loss)` was expected"
        ),
        "returns the loss after the update instead of before it": "before the update",
    },
    "02.global_norm": {
        "returns the sum of squares, without the square root": "that is the sum of squares",
        "returns one norm per leaf": "one value per leaf",
        "adds up the leaves' own norms": "the sum of the leaves' norms",
        "turns the norm into a Python `float`, which fails under `jit`": (
            "under `jax.jit` it raised `ConcretizationTypeError`"
        ),
        "squares each leaf's sum instead of each entry": "squaring the sum of each leaf",
    },
    "02.clip_by_global_norm": {
        "clips each leaf by its own norm": "you clipped each leaf by its own norm",
        "scales even when the global norm is below `max_norm`": (
            "you scaled even though the global norm is below `max_norm`"
        ),
        "uses a Python `if` on a traced value, which fails under `jit`": (
            "under `jax.jit` it raised `TracerBoolConversionError`"
        ),
        "divides by a zero norm and gets `nan`": "dividing by it gives `nan`",
        "uses the sum of squares as the norm": "you used the sum of squares as the norm",
        "scales by `norm / max_norm`, upside down": "you scaled by `norm / max_norm`",
        "returns `grads` without clipping them": "nothing was clipped",
    },
    "02.stack_trees": {
        "transposes the list instead of stacking it": (
            "at `['steps']` of your result, and every other, is a list"
        ),
        "concatenates along an existing axis": (
            "the leaf at `['w']` has shape `(6, 3)`, expected `(3, 2, 3)`: the"
        ),
        "returns a list of trees": "returned a list of 3 trees, one per input",
        "stacks along the last axis instead of a new first one": (
            "the leaf at `['w']` has shape `(2, 3, 3)`, expected `(3, 2, 3)`"
        ),
    },
}
"""Each mistake an exercise names (``Exercise.mistakes``), with the text that the hint of its wrong
answer in ``WRONG`` pins."""


class TestLesson02(LessonChecks):
    ids = LESSON_02
    points = 12
    right = RIGHT
    wrong = WRONG
    named = NAMED
    also_right = ALSO_RIGHT
    fixed = FIXED


def test_the_course_update_is_flagged_where_it_is_called_even_while_the_step_runs() -> None:
    direct = evaluate(get_exercise("02.sgd_step"), sgd_with_course_version)
    assert direct.status == "flagged" and direct.points == 0
    line = sgd_with_course_version.__code__.co_firstlineno + 1
    assert (
        f"`sgd_step` calls `cl.tree_add_scale` (line {line} of test_checks_lesson02.py: "
        "`return cl.tree_add_scale(params, -lr, grads)`)"
    ) in direct.message
    assert (
        direct.points_if_allowed == 2
    )  # the course's function gives the right answer: an override may allow it
    inside = evaluate(get_exercise("02.make_sgd_step"), make_step_with_course_optimizer)
    assert (
        inside.status == "flagged"
        and "`make_sgd_step` calls `cl.tree_add_scale` (line " in inside.message
    )
    hidden = evaluate(get_exercise("02.make_sgd_step"), make_step_with_hidden_course_call)
    assert (
        hidden.status == "flagged"
        and "`return cl.tree_add_scale(params, -lr, grads)`" in hidden.message
    )
    assert cl.tree_add_scale({"a": 1.0}, 2.0, {"a": 1.0}) == {"a": 3.0}


@pytest.mark.parametrize(
    "exercise_id", ["02.sgd_step", "02.average_trees", "02.clip_by_global_norm", "02.stack_trees"]
)
def test_cases_have_none_subtrees_and_several_containers(exercise_id: str) -> None:
    trees = [case.args[0] for case in get_exercise(exercise_id).make_cases("grade")]
    kinds = {type(node).__name__ for tree in trees for node in nodes(tree)}
    assert {"dict", "list", "tuple"} <= kinds, kinds
    assert any(isinstance(node, collections.OrderedDict) for tree in trees for node in nodes(tree))
    assert any(hasattr(node, "_fields") for tree in trees for node in nodes(tree))
    assert has_none(trees)


def test_self_check_output_is_deterministic(capsys: pytest.CaptureFixture[str]) -> None:
    text = repeated_check_output(
        capsys,
        [("02.clip_by_global_norm", clip_each_leaf), ("02.make_sgd_step", make_step_static_lr)],
    )
    assert "0x" not in text
    # JAX's own line about the input that changed, which every release words as now … before …
    assert re.search(r"JAX's cache miss explanation: .*\bnow\b.* and before ", text), text


@pytest.mark.parametrize("wording", WORDINGS)
def test_a_static_lr_is_found_whatever_jax_says(
    wording: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A static learning rate is found by calling the step again (the same call compiles nothing,
    another rate compiles anew), never by reading JAX's explanation of the miss, which JAX 0.11
    gave as "cache miss explanation unavailable"."""
    withhold_jax_wording(monkeypatch, wording)
    _, (first, second) = successive_reports("02.make_sgd_step", make_step_static_lr, 2)
    assert "so lr's value is part of the cache key" in first, first
    assert "A static argument is part of the key" in second, second
