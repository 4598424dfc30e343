"""Lesson 02 self-checks: not attempted, incorrect with the targeted hint, correct; cases and the guard."""

from __future__ import annotations

import collections
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

import course_lib as cl
from course_lib import checks
from course_lib.checks import check, evaluate, get_exercise
from course_lib.checks import _wire
from course_lib.checks._evaluate import judge_outcomes, probe_all, reference_results
from course_lib.checks._plain import tree_plain

ROOT = Path(__file__).resolve().parents[1]
LESSON_02 = (
    "02.sgd_step",
    "02.average_trees",
    "02.make_sgd_step",
    "02.global_norm",
    "02.clip_by_global_norm",
    "02.stack_trees",
)


@pytest.fixture(autouse=True)
def _fresh_checks(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("COURSE_STRICT_CHECKS", raising=False)
    checks.set_strict(None)
    checks.reset_hints()
    yield
    checks.set_strict(None)
    checks.reset_hints()


def stub(*args: object) -> None:
    raise NotImplementedError("Write your solution here, then run the check below.")


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


RIGHT = {
    "02.sgd_step": sgd_step,
    "02.average_trees": average_trees,
    "02.make_sgd_step": make_sgd_step,
    "02.global_norm": global_norm,
    "02.clip_by_global_norm": clip_by_global_norm,
    "02.stack_trees": stack_trees,
}


# --- typical wrong answers -------------------------------------------------------------------------


def sgd_adding(params, grads, lr):
    return jax.tree.map(lambda p, g: p + lr * g, params, grads)


def sgd_leaves(params, grads, lr):
    return [p - lr * g for p, g in zip(jax.tree.leaves(params), jax.tree.leaves(grads))]


def sgd_without_lr(params, grads, lr):
    return jax.tree.map(lambda p, g: p - g, params, grads)


def sgd_with_course_version(params, grads, lr):
    return cl.tree_add_scale(params, -lr, grads)


def sgd_forgetting_return(params, grads, lr):
    jax.tree.map(lambda p, g: p - lr * g, params, grads)


def average_summing(trees):
    return jax.tree.map(lambda *leaves: sum(leaves), *trees)


def average_per_tree(trees):
    return [jax.tree.map(lambda leaf: leaf / len(trees), tree) for tree in trees]


def average_inside_leaves(trees):
    return jax.tree.map(lambda *leaves: sum(jnp.mean(leaf) for leaf in leaves) / len(leaves), *trees)


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


def norm_summing_leaf_norms(tree):
    return sum(jnp.linalg.norm(jnp.ravel(leaf)) for leaf in jax.tree.leaves(tree))


def clip_each_leaf(grads, max_norm):
    def clip(g):
        norm = jnp.linalg.norm(jnp.ravel(g))
        return g * jnp.minimum(1.0, max_norm / norm)

    return jax.tree.map(clip, grads)


def clip_always(grads, max_norm):
    return jax.tree.map(lambda g: g * max_norm / global_norm(grads), grads)


def clip_with_python_if(grads, max_norm):
    norm = global_norm(grads)
    if norm > max_norm:
        return jax.tree.map(lambda g: g * max_norm / norm, grads)
    return grads


def clip_dividing_by_zero(grads, max_norm):
    norm = global_norm(grads)
    return jax.tree.map(lambda g: g / norm * jnp.minimum(norm, max_norm), grads)


def stack_transposing(trees):
    return jax.tree.map(lambda *leaves: list(leaves), *trees)


def stack_concatenating(trees):
    return jax.tree.map(lambda *leaves: jnp.concatenate([jnp.atleast_1d(x) for x in leaves]), *trees)


def stack_per_tree(trees):
    return [jax.tree.map(jnp.asarray, tree) for tree in trees]


def stack_last_axis(trees):
    return jax.tree.map(lambda *leaves: jnp.stack(leaves, axis=-1), *trees)


WRONG = [
    ("02.sgd_step", sgd_adding, "you added the step"),
    ("02.sgd_step", sgd_leaves, "returned a flat list of"),
    ("02.sgd_step", sgd_without_lr, "the learning rate is missing"),
    ("02.sgd_step", sgd_forgetting_return, "returned None: missing `return`?"),
    ("02.average_trees", average_summing, "the sum of the"),
    ("02.average_trees", average_per_tree, "returned a list of 3 trees"),
    ("02.average_trees", average_inside_leaves, "not the entries inside one leaf"),
    ("02.make_sgd_step", make_step_not_jitted, "is not jitted"),
    ("02.make_sgd_step", make_step_static_lr, "compiled 3 times, expected 1: see the cache-miss explanation"),
    ("02.make_sgd_step", make_step_climbing, "the loss went up"),
    ("02.make_sgd_step", make_step_params_only, "it must return a pair (new_params, loss)"),
    ("02.make_sgd_step", make_step_loss_after, "before the update"),
    ("02.global_norm", norm_squared, "that is the sum of squares"),
    ("02.global_norm", norm_of_each_leaf, "one value per leaf"),
    ("02.global_norm", norm_summing_leaf_norms, "the sum of the leaves' norms"),
    ("02.clip_by_global_norm", clip_each_leaf, "you clipped each leaf by its own norm"),
    ("02.clip_by_global_norm", clip_always, "you scaled even though the global norm is below max_norm"),
    ("02.clip_by_global_norm", clip_with_python_if, "under jax.jit it raised TracerBoolConversionError"),
    ("02.clip_by_global_norm", clip_dividing_by_zero, "dividing by it gives nan"),
    ("02.stack_trees", stack_transposing, "that is a transpose"),
    ("02.stack_trees", stack_concatenating, "jnp.concatenate joins along an existing axis"),
    ("02.stack_trees", stack_per_tree, "returned a list of 3 trees"),
    ("02.stack_trees", stack_last_axis, "stack along a new first axis"),
]


# --- the tests --------------------------------------------------------------------------------------


def test_lesson02_has_its_exercises() -> None:
    assert [e.id for e in checks.exercises("02")] == list(LESSON_02)
    assert sum(e.points for e in checks.exercises("02")) == 12
    for exercise in checks.exercises("02"):
        assert len(exercise.hints) == 3
        assert all(hasattr(cl, name) for name in exercise.forbidden)


@pytest.mark.parametrize("exercise_id", LESSON_02)
def test_check_not_attempted(exercise_id: str, capsys: pytest.CaptureFixture[str]) -> None:
    check(exercise_id, stub)
    out = capsys.readouterr().out
    assert out.startswith(f"{exercise_id}: not attempted yet")
    assert "hint" not in out


@pytest.mark.parametrize("exercise_id", LESSON_02)
def test_check_correct(exercise_id: str, capsys: pytest.CaptureFixture[str]) -> None:
    check(exercise_id, RIGHT[exercise_id])
    points = get_exercise(exercise_id).points
    assert capsys.readouterr().out.startswith(f"{exercise_id}: passed ({points}/{points} point")


@pytest.mark.parametrize("exercise_id", LESSON_02)
def test_right_answer_passes_the_grading_cases(exercise_id: str) -> None:
    exercise = get_exercise(exercise_id)
    for seed in range(2):
        cases = exercise.make_cases("grade", seed)
        outcomes = probe_all(exercise, RIGHT[exercise_id], cases)
        verdict = judge_outcomes(exercise, outcomes, reference_results(exercise, cases), cases)
        assert verdict.status == "passed", verdict.message


@pytest.mark.parametrize(("exercise_id", "answer", "hint"), WRONG, ids=lambda x: getattr(x, "__name__", None))
def test_check_incorrect_gives_the_targeted_hint(exercise_id: str, answer, hint: str, capsys: pytest.CaptureFixture[str]) -> None:
    check(exercise_id, answer)
    out = capsys.readouterr().out
    assert out.startswith(f"{exercise_id}: incorrect (0/"), out
    assert hint in out, out
    assert "input: " in out
    assert "hint 1/3" in out and "hint 2/3" not in out


def test_the_course_update_is_refused_in_the_code_and_while_the_step_runs() -> None:
    static = evaluate(get_exercise("02.sgd_step"), sgd_with_course_version)
    assert static.status == "failed" and "cl.tree_add_scale (found in your code)" in static.message
    inside = evaluate(get_exercise("02.make_sgd_step"), make_step_with_course_optimizer)
    assert inside.status == "failed" and "cl.tree_add_scale (found in your code)" in inside.message
    hidden = evaluate(get_exercise("02.make_sgd_step"), make_step_with_hidden_course_call)
    assert hidden.status == "failed" and "cl.tree_add_scale (called while step ran)" in hidden.message
    assert cl.tree_add_scale({"a": 1.0}, 2.0, {"a": 1.0}) == {"a": 3.0}  # restored afterwards


def _nodes(tree):
    if tree is None:
        return []
    flat = jax.tree_util.default_registry.flatten_one_level(tree)
    if flat is None:
        return []
    return [tree, *(n for child in flat[0] for n in _nodes(child))]


@pytest.mark.parametrize("exercise_id", ["02.sgd_step", "02.average_trees", "02.clip_by_global_norm", "02.stack_trees"])
def test_cases_have_none_subtrees_and_several_containers(exercise_id: str) -> None:
    trees = [case.args[0] for case in get_exercise(exercise_id).make_cases("grade")]
    nodes = {type(node).__name__ for tree in trees for node in _nodes(tree)}
    assert {"dict", "list", "tuple"} <= nodes, nodes
    assert any(isinstance(node, collections.OrderedDict) for tree in trees for node in _nodes(tree))
    assert any(hasattr(node, "_fields") for tree in trees for node in _nodes(tree))
    assert any(x is None for tree in trees for x in jax.tree.leaves(tree, is_leaf=lambda x: x is None))


def _fingerprint(case: checks.Case) -> str:
    return _wire.dumps(tree_plain(list(case.args)))


@pytest.mark.parametrize("exercise_id", LESSON_02)
def test_cases_are_deterministic_and_grading_differs(exercise_id: str) -> None:
    exercise = get_exercise(exercise_id)
    one = [_fingerprint(c) for c in exercise.make_cases("grade", 5)]
    assert one == [_fingerprint(c) for c in exercise.make_cases("grade", 5)]
    shown = {_fingerprint(c) for c in exercise.make_cases("check")}
    assert sum(g in shown for g in one) < max(1, len(one) / 2)


def test_self_check_output_is_deterministic(capsys: pytest.CaptureFixture[str]) -> None:
    texts = []
    for _ in range(2):
        checks.reset_hints()
        check("02.clip_by_global_norm", clip_each_leaf)
        check("02.make_sgd_step", make_step_static_lr)
        texts.append(capsys.readouterr().out)
    assert texts[0] == texts[1]
    assert "0x" not in texts[0]
    assert "CACHE MISS" in texts[0]  # the compile-count hint quotes JAX's explanation


@pytest.mark.slow
def test_grader_gives_the_solution_full_marks_and_the_exercise_version_zero(tmp_path: Path) -> None:
    name = "02_mapping_and_sgd.ipynb"
    for student, folder in (("solution", "solutions"), ("blank", "exercises")):
        (tmp_path / "class" / student).mkdir(parents=True)
        shutil.copy(ROOT / folder / name, tmp_path / "class" / student / name)
    command = [sys.executable, "-m", "course_lib.grade", str(tmp_path / "class"), "--out", str(tmp_path / "out"), "--quiet"]
    subprocess.run(command, check=True, capture_output=True, timeout=600, cwd=ROOT)
    book = {s["student"]: s for s in json.loads((tmp_path / "out" / "gradebook.json").read_text())["submissions"]}
    assert [e["status"] for e in book["solution"]["exercises"]] == ["passed"] * len(LESSON_02)
    assert book["solution"]["points"] == book["solution"]["max_points"] == 12
    assert [e["status"] for e in book["blank"]["exercises"]] == ["not_attempted"] * len(LESSON_02)
    assert book["blank"]["points"] == 0
