"""Lesson 05 self-checks: compile counts, the hint each typical mistake gets, and right answers
passing."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from exercise_support import (
    LessonChecks,
    answer_id,
    check_output,
    has_none,
    nodes,
    successive_reports,
)
from jax_wording import WORDINGS, raising_withheld, withhold_jax_wording

from course_lib.checks import _lesson05, check, get_exercise

pytestmark = pytest.mark.usefixtures("fresh_checks")

LESSON_05 = ("05.make_step", "05.pad_to_bucket", "05.init_state", "05.make_scaled")


def sgd_tree(params, grads, lr):
    return jax.tree.map(lambda p, g: p - lr * g, params, grads)


# --- 05.make_step --------------------------------------------------------------------------------


def make_step():
    sgd = jax.jit(sgd_tree)
    return lambda params, grads, lr: sgd(params, grads, jnp.asarray(lr, dtype=jnp.float32))


def make_step_plain_jit():
    return jax.jit(sgd_tree)


def make_step_converting_inside():
    @jax.jit
    def step(params, grads, lr):
        return sgd_tree(params, grads, jnp.asarray(lr, jnp.float32))

    return step


def make_step_converting_inside_wrapped():
    @jax.jit
    def step(params, grads, lr):
        return sgd_tree(params, grads, jnp.asarray(lr, jnp.float32))

    return lambda params, grads, lr: step(params, grads, jnp.asarray(lr, jnp.float32))


def make_step_static_lr():
    return jax.jit(sgd_tree, static_argnums=2)


def make_step_numpy_lr():
    sgd = jax.jit(sgd_tree)
    return lambda params, grads, lr: sgd(params, grads, np.asarray(lr))


def make_step_without_jit():
    return lambda params, grads, lr: sgd_tree(params, grads, np.float32(lr))


def make_step_uphill():
    step = jax.jit(lambda params, grads, lr: jax.tree.map(lambda p, g: p + lr * g, params, grads))
    return lambda params, grads, lr: step(params, grads, np.float32(lr))


# --- 05.pad_to_bucket ----------------------------------------------------------------------------


def padded_to(batch, size, n, front=False):
    def pad(leaf):
        rows = (size - n, 0) if front else (0, size - n)
        return np.pad(np.asarray(leaf), [rows] + [(0, 0)] * (np.ndim(leaf) - 1))

    return jax.tree.map(pad, batch)


def batch_rows(batch):
    return len(jax.tree.leaves(batch)[0])


def pad_to_bucket(batch, buckets):
    n = batch_rows(batch)
    if n > max(buckets):
        raise ValueError("too big")
    size = min(b for b in buckets if b >= n)
    return padded_to(batch, size, n), np.arange(size) < n


def pad_with_jnp(batch, buckets):
    n = batch_rows(batch)
    size = min(b for b in buckets if b >= n)  # min() of nothing raises ValueError too
    padded = jax.tree.map(
        lambda leaf: jnp.pad(leaf, [(0, size - n)] + [(0, 0)] * (leaf.ndim - 1)), batch
    )
    return padded, jnp.arange(size) < n


def pad_nothing(batch, buckets):
    return batch, np.ones(batch_rows(batch), bool)


def pad_to_largest(batch, buckets):
    n = batch_rows(batch)
    return padded_to(batch, max(buckets), n), np.arange(max(buckets)) < n


def pad_to_first_fit(batch, buckets):
    n = batch_rows(batch)
    size = next((b for b in buckets if b >= n), None)
    if size is None:
        raise ValueError("too big")
    return padded_to(batch, size, n), np.arange(size) < n


def pad_strictly_larger(batch, buckets):
    n = batch_rows(batch)
    size = min(b for b in buckets if b > n)
    return padded_to(batch, size, n), np.arange(size) < n


def pad_float_mask(batch, buckets):
    padded, mask = pad_to_bucket(batch, buckets)
    return padded, mask.astype(np.float32)


def pad_with_float64_zeros(batch, buckets):
    n = batch_rows(batch)
    if n > max(buckets):
        raise ValueError("too big")
    size = min(b for b in buckets if b >= n)
    padded = jax.tree.map(lambda a: np.concatenate([a, np.zeros((size - n, *a.shape[1:]))]), batch)
    return padded, np.arange(size) < n


def pad_in_front(batch, buckets):
    n = batch_rows(batch)
    if n > max(buckets):
        raise ValueError("too big")
    size = min(b for b in buckets if b >= n)
    return padded_to(batch, size, n, front=True), np.arange(size) >= size - n


def pad_too_big_anyway(batch, buckets):
    n = batch_rows(batch)
    if n > max(buckets):
        return batch, np.ones(n, bool)
    return pad_to_bucket(batch, buckets)


# --- 05.init_state -------------------------------------------------------------------------------


def init_state(params):
    return {
        "params": params,
        "velocity": jax.tree.map(jnp.zeros_like, params),
        "loss_avg": jnp.zeros((), jnp.float32),
        "step": jnp.zeros((), jnp.int32),
    }


def init_params_only(params):
    return {"params": params}


def init_python_numbers(params):
    return {**init_state(params), "loss_avg": 0.0, "step": 0}


def init_without_velocity(params):
    state = init_state(params)
    del state["velocity"]
    return state


def init_half_loss_avg(params):
    return {**init_state(params), "loss_avg": jnp.zeros((), jnp.float16)}


def init_float_step(params):
    return {**init_state(params), "step": jnp.zeros(())}


# --- 05.make_scaled ------------------------------------------------------------------------------

_jitted_for: dict = {}


def make_scaled(f):
    if f not in _jitted_for:
        _jitted_for[f] = jax.jit(lambda x, factor: jax.tree.map(lambda y: factor * y, f(x)))
    return _jitted_for[f]


def _apply_scaled(f, x, factor):
    return jax.tree.map(lambda y: factor * y, f(x))


_apply_scaled_jit = jax.jit(_apply_scaled, static_argnums=0)


def make_scaled_static_f(f):
    return functools.partial(_apply_scaled_jit, f)


def make_scaled_fresh(f):
    return jax.jit(lambda x, factor: jax.tree.map(lambda y: factor * y, f(x)))


_static_factor_for: dict = {}


def make_scaled_static_factor(f):
    if f not in _static_factor_for:
        _static_factor_for[f] = jax.jit(functools.partial(_apply_scaled, f), static_argnums=1)
    return _static_factor_for[f]


_only_one: list = []


def make_scaled_ignoring_f(f):
    if not _only_one:
        _only_one.append(jax.jit(lambda x, factor: jax.tree.map(lambda y: factor * y, f(x))))
    return _only_one[0]


def make_scaled_jit_per_call(f):
    return lambda x, factor: jax.jit(lambda v: jax.tree.map(lambda y: factor * y, f(v)))(x)


# Right answers written differently from the references.

_flat_sgd = jax.jit(
    lambda params, grads, lr: jax.tree_util.tree_unflatten(
        jax.tree_util.tree_structure(params),
        [
            p - lr * g
            for p, g in zip(
                jax.tree_util.tree_leaves(params), jax.tree_util.tree_leaves(grads), strict=True
            )
        ],
    )
)


def make_step_numpy_cast():
    return lambda params, grads, lr: _flat_sgd(params, grads, np.float32(lr))


def pad_by_loop(batch, buckets):
    n = batch_rows(batch)
    for size in sorted(buckets):
        if size >= n:
            break
    else:
        raise ValueError(f"{n} rows fit no bucket of {sorted(buckets)}")

    def pad(leaf):
        out = np.zeros((size, *np.shape(leaf)[1:]), np.asarray(leaf).dtype)
        out[:n] = leaf
        return out

    mask = np.zeros(size, bool)
    mask[:n] = True
    return jax.tree_util.tree_map(pad, batch), mask


def init_state_by_tree_util(params):
    zeros = jax.tree_util.tree_map(lambda p: jnp.zeros(jnp.shape(p), jnp.result_type(p)), params)
    return {
        "step": jnp.asarray(0, dtype=jnp.int32),
        "loss_avg": jnp.asarray(0.0, dtype=jnp.float32),
        "velocity": zeros,
        "params": params,
    }


ALSO_RIGHT: list[tuple[str, Callable[..., Any]]] = [
    ("05.make_step", make_step_numpy_cast),
    ("05.pad_to_bucket", pad_by_loop),
    ("05.pad_to_bucket", pad_with_jnp),
    ("05.init_state", init_state_by_tree_util),
    ("05.make_scaled", make_scaled_static_f),
]


RIGHT: dict[str, Callable[..., Any]] = {
    "05.make_step": make_step,
    "05.pad_to_bucket": pad_to_bucket,
    "05.init_state": init_state,
    "05.make_scaled": make_scaled,
}

WRONG: list[tuple[str, Callable[..., Any], str]] = [
    ("05.make_step", make_step_plain_jit, "compiled 3 times, expected 1"),
    (
        "05.make_step",
        make_step_converting_inside,
        "Converting `lr` inside the jitted function comes too late",
    ),
    ("05.make_step", make_step_static_lr, "`lr` is a static argument"),
    ("05.make_step", make_step_without_jit, "Nothing you jitted was compiled"),
    ("05.make_step", make_step_uphill, "`step` added `lr * grads`"),
    ("05.make_step", make_step_numpy_lr, "`lr = 1` arrived as int32[] weakly typed"),
    ("05.pad_to_bucket", pad_nothing, "compiled 10 times, expected 3"),
    (
        "05.pad_to_bucket",
        pad_to_largest,
        "for a batch of 3 rows, you padded to 32, but a smaller bucket of [8, 16, 32] also holds",
    ),
    ("05.pad_to_bucket", pad_to_first_fit, "are not sorted"),
    (
        "05.pad_to_bucket",
        pad_strictly_larger,
        "for a batch of 8 rows, you padded to 16, but a smaller bucket of [8, 16, 32]",
    ),
    ("05.pad_to_bucket", pad_float_mask, "the mask has dtype `float32`"),
    ("05.pad_to_bucket", pad_with_float64_zeros, "has dtype `float64`, expected `int32`"),
    ("05.pad_to_bucket", pad_in_front, "the padding comes first"),
    (
        "05.pad_to_bucket",
        pad_too_big_anyway,
        "fits no bucket: `pad_to_bucket` returned, expected it to raise `ValueError`",
    ),
    (
        "05.init_state",
        init_params_only,
        "The state gained or lost the keys {'loss_avg', 'step', 'velocity'} after the first step",
    ),
    ("05.init_state", init_without_velocity, "gained or lost the keys {'velocity'}"),
    (
        "05.init_state",
        init_python_numbers,
        "At `state['loss_avg']` the first state held a Python number",
    ),
    ("05.init_state", init_float_step, "leaf ['step'] has dtype `float32`, expected `int32`"),
    (
        "05.init_state",
        init_half_loss_avg,
        "At `state['loss_avg']` the leaf was float16[] and `train_step` gave back float32[]",
    ),
    ("05.make_scaled", make_scaled_fresh, "compiled 6 times, expected 2"),
    ("05.make_scaled", make_scaled_jit_per_call, "a new lambda, partial or def is a new cache key"),
    ("05.make_scaled", make_scaled_static_factor, "`factor` is a static argument"),
    (
        "05.make_scaled",
        make_scaled_ignoring_f,
        "`make_scaled(energy)` gave the results of `make_scaled(squash)`",
    ),
]


# Each wrong answer with the fix its last hint gives, applied as written.


def make_step_jitted_once():
    sgd = jax.jit(sgd_tree)
    return lambda params, grads, lr: sgd(params, grads, np.float32(lr))


def make_step_downhill():
    step = jax.jit(lambda params, grads, lr: jax.tree.map(lambda p, g: p - lr * g, params, grads))
    return lambda params, grads, lr: step(params, grads, np.float32(lr))


def pad_to_smallest_bucket(batch, buckets):
    n = batch_rows(batch)
    size = min(b for b in buckets if b >= n)
    return padded_to(batch, size, n), np.arange(size) < n


def pad_with_zeros_of_the_leaf_dtype(batch, buckets):
    n = batch_rows(batch)
    if n > max(buckets):
        raise ValueError("too big")
    size = min(b for b in buckets if b >= n)
    padded = jax.tree.map(
        lambda a: np.concatenate([a, np.zeros((size - n, *a.shape[1:]), a.dtype)]), batch
    )
    return padded, np.arange(size) < n


_traced_factor_for: dict = {}


def make_scaled_traced_factor(f):
    if f not in _traced_factor_for:
        _traced_factor_for[f] = jax.jit(functools.partial(_apply_scaled, f))
    return _traced_factor_for[f]


FIXED: list[tuple[str, Callable[..., Any], Callable[..., Any]]] = [
    ("05.make_step", make_step_plain_jit, make_step),
    ("05.make_step", make_step_converting_inside, make_step_converting_inside_wrapped),
    ("05.make_step", make_step_static_lr, make_step),
    ("05.make_step", make_step_without_jit, make_step_jitted_once),
    ("05.make_step", make_step_numpy_lr, make_step),
    ("05.make_step", make_step_uphill, make_step_downhill),
    ("05.pad_to_bucket", pad_nothing, pad_to_smallest_bucket),
    ("05.pad_to_bucket", pad_to_largest, pad_to_smallest_bucket),
    ("05.pad_to_bucket", pad_to_first_fit, pad_to_smallest_bucket),
    ("05.pad_to_bucket", pad_strictly_larger, pad_to_smallest_bucket),
    ("05.pad_to_bucket", pad_float_mask, pad_to_bucket),
    ("05.pad_to_bucket", pad_with_float64_zeros, pad_with_zeros_of_the_leaf_dtype),
    ("05.pad_to_bucket", pad_in_front, pad_to_bucket),
    ("05.pad_to_bucket", pad_too_big_anyway, pad_to_bucket),
    ("05.init_state", init_params_only, init_state),
    ("05.init_state", init_without_velocity, init_state),
    ("05.init_state", init_python_numbers, init_state),
    ("05.init_state", init_float_step, init_state),
    ("05.init_state", init_half_loss_avg, init_state),
    ("05.make_scaled", make_scaled_fresh, make_scaled),
    ("05.make_scaled", make_scaled_jit_per_call, make_scaled),
    ("05.make_scaled", make_scaled_static_factor, make_scaled_traced_factor),
    ("05.make_scaled", make_scaled_ignoring_f, make_scaled),
]


NAMED: dict[str, dict[str, str]] = {
    "05.make_step": {
        "a plain `jax.jit`: Python and JAX learning rates compile separately (Pitfall 11)": (
            "compiled 3 times, expected 1"
        ),
        "converts `lr` inside the jitted function, too late": (
            "Converting `lr` inside the jitted function comes too late"
        ),
        "makes `lr` a static argument": "`lr` is a static argument",
        "does not jit at all": "Nothing you jitted was compiled",
        "adds `lr * grads` instead of subtracting it": "`step` added `lr * grads`",
    },
    "05.pad_to_bucket": {
        "does not pad, so every batch size compiles": "compiled 10 times, expected 3",
        "pads to the largest bucket instead of the smallest that fits": (
            "for a batch of 3 rows, you padded to 32, but a smaller bucket of [8, 16, 32] also "
            "holds"
        ),
        "takes the first bucket that fits, though the buckets are not sorted": "are not sorted",
        "pads a batch that already fills a bucket to the next one": (
            "for a batch of 8 rows, you padded to 16, but a smaller bucket of [8, 16, 32]"
        ),
        "makes a float mask instead of a boolean one": "the mask has dtype `float32`",
        "pads with `float64` zeros, which changes the dtype": (
            "has dtype `float64`, expected `int32`"
        ),
        "puts the padding in front": "the padding comes first",
        "returns instead of raising `ValueError` when no bucket fits": (
            "fits no bucket: `pad_to_bucket` returned, expected it to raise `ValueError`"
        ),
    },
    "05.init_state": {
        "starts with the parameters only, so later states gain keys (Pitfall 5)": (
            "The state gained or lost the keys {'loss_avg', 'step', 'velocity'} after the first "
            "step"
        ),
        "leaves out the velocity": "gained or lost the keys {'velocity'}",
        "starts with Python numbers, which are weakly typed (Pitfall 11)": (
            "At `state['loss_avg']` the first state held a Python number"
        ),
        "counts steps in a float": "leaf ['step'] has dtype `float32`, expected `int32`",
    },
    "05.make_scaled": {
        "jits a fresh function every time `make_scaled` is called": "compiled 6 times, expected 2",
        "jits a new lambda on every call (Pitfall 12)": (
            "a new lambda, partial or def is a new cache key"
        ),
        "makes `factor` a static argument": "`factor` is a static argument",
        "keeps one jitted function for every `f`": (
            "`make_scaled(energy)` gave the results of `make_scaled(squash)`"
        ),
    },
}
"""Each mistake an exercise names (``Exercise.mistakes``), with the text that the hint of its wrong
answer in ``WRONG`` pins."""


class TestLesson05(LessonChecks):
    ids = LESSON_05
    points = 10
    right = RIGHT
    wrong = WRONG
    named = NAMED
    also_right = ALSO_RIGHT
    fixed = FIXED
    grading_seeds = (1,)


@pytest.mark.parametrize(
    ("exercise_id", "answer"),
    [
        ("05.make_scaled", make_scaled),
        ("05.make_scaled", make_scaled_static_f),
        ("05.make_step", make_step),
    ],
    ids=answer_id,
)
def test_answers_that_keep_their_jitted_functions_pass_again(
    exercise_id: str, answer: Callable[..., Any], capsys: pytest.CaptureFixture[str]
) -> None:
    for _ in range(2):  # the second check finds the programs of the first in the answer's own cache
        check(exercise_id, answer)
    assert capsys.readouterr().out.count(": passed") == 2


def test_eager_operations_are_not_counted() -> None:
    exercise = get_exercise("05.pad_to_bucket")
    case = exercise.make_cases("check")[0]
    report = exercise.probe(pad_with_jnp, case)
    assert report["compiles"] == 3
    step = get_exercise("05.make_step")
    report = step.probe(make_step, step.make_cases("check")[0])
    assert (
        report["compiles"] == 1 and report["eager"] >= 1
    )  # the conversions of lr compiled eagerly


def test_miss_quoted_matches_the_advice(capsys: pytest.CaptureFixture[str]) -> None:
    check("05.make_step", make_step_plain_jit)
    out = capsys.readouterr().out
    advice, _, quoted = out.partition("where an earlier `lr` was float32[] weakly typed")
    assert "`lr = np.float32(0.052)` arrived as float32[]" in advice, out
    assert "weak_type=True" in quoted.split("input: ")[0]


@pytest.mark.parametrize("exercise_id", LESSON_05)
def test_cases_hold_none_subtrees_and_several_containers(exercise_id: str) -> None:
    trees = [
        case.args[0]
        for purpose in ("check", "grade")
        for case in get_exercise(exercise_id).make_cases(purpose)
    ]
    kinds = {
        type(node).__name__ if not hasattr(node, "_fields") else "namedtuple"
        for tree in trees
        for node in nodes(tree)
    }
    assert len(kinds & {"dict", "list", "tuple", "OrderedDict", "namedtuple"}) >= 3, kinds
    assert has_none(trees)


# --- hints that do not depend on JAX's wording ----------------------------------------------------

# Each hint that once came from reading JAX's cache-miss explanation or error message, with the
# answer that gets it: the compile counts, the static argument (an error for a JAX array), the weak
# type, the new function object, the keys and weak types of a state. The first check says what was
# measured; the second adds the idea, chosen by the same measurements.
MEASURED: list[tuple[str, Callable[..., Any], str, str]] = [
    (
        "05.make_step",
        make_step_plain_jit,
        "compiled 3 times, expected 1",
        "A Python float is weakly typed, a NumPy or JAX `float32` is not",
    ),
    (
        "05.make_step",
        make_step_converting_inside,
        "`lr = np.float32(0.052)` arrived as float32[], where an earlier `lr` was float32[] weakly",
        "Converting `lr` inside the jitted function comes too late",
    ),
    (
        "05.make_step",
        make_step_static_lr,
        "`lr` is a static argument",
        "A static argument's value is part of the cache key",
    ),
    (
        "05.make_step",
        make_step_without_jit,
        "Nothing you jitted was compiled",
        "`jax.jit` traces a function into one program",
    ),
    (
        "05.make_step",
        make_step_numpy_lr,
        "`lr = 1` arrived as int32[] weakly typed",
        "a conversion that names no dtype keeps the kinds apart",
    ),
    (
        "05.pad_to_bucket",
        pad_nothing,
        "compiled 10 times, expected 3",
        "Each new batch shape is a new program",
    ),
    (
        "05.init_state",
        init_params_only,
        "gained or lost the keys {'loss_avg', 'step', 'velocity'}",
        "a new dict key is a new structure",
    ),
    (
        "05.init_state",
        init_without_velocity,
        "gained or lost the keys {'velocity'}",
        "a new dict key is a new structure",
    ),
    (
        "05.init_state",
        init_python_numbers,
        "At `state['loss_avg']` the first state held a Python",
        "A Python number is weakly typed",
    ),
    (
        "05.init_state",
        init_half_loss_avg,
        "At `state['loss_avg']` the leaf was float16[]",
        "Each leaf's dtype and shape are part of the cache key",
    ),
    (
        "05.make_scaled",
        make_scaled_fresh,
        "what it jits is a function JAX has not seen before",
        "a new lambda, partial or def is a new cache key",
    ),
    (
        "05.make_scaled",
        make_scaled_jit_per_call,
        "what it jits is a function JAX has not seen before",
        "a new lambda, partial or def is a new cache key",
    ),
    (
        "05.make_scaled",
        make_scaled_static_factor,
        "`factor` is a static argument",
        "every new factor compiles anew",
    ),
]


@pytest.mark.parametrize("wording", WORDINGS)
@pytest.mark.parametrize(("exercise_id", "answer", "what", "idea"), MEASURED, ids=answer_id)
def test_hint_survives_jax_wording(
    exercise_id: str,
    answer: Callable[..., Any],
    what: str,
    idea: str,
    wording: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """JAX 0.11 wrote "cache miss explanation unavailable" for a static factor: what went wrong,
    and then the idea, come from the probes (repeated calls, compile counts, the inputs that
    changed) whatever JAX writes."""
    withhold_jax_wording(monkeypatch, wording, _lesson05)
    _, (out, again) = successive_reports(exercise_id, answer, 2)
    assert what in out, out
    assert "not seen before" not in out or answer in (make_scaled_fresh, make_scaled_jit_per_call)
    assert "hint 1/2, the idea: " in again and idea in again, again
    assert idea not in out


@pytest.mark.parametrize("wording", WORDINGS)
def test_static_lr_is_found_whatever_the_error_says(
    wording: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A static lr fails for a JAX array (not hashable): the hint comes from repeated calls with
    Python floats, not from JAX's "Non-hashable static arguments", here withheld at its source."""

    def make_step_static_lr_quietly():
        return raising_withheld(make_step_static_lr(), wording)

    out = check_output("05.make_step", make_step_static_lr_quietly, capsys)
    assert "`step` raised ValueError" in out and "Non-hashable" not in out, out
    assert "`lr` is a static argument" in out, out


def _sgd_with_a_flag(params, grads, lr, flag):
    return jax.tree.map(lambda p, g: p - lr * g, params, grads)


_sgd_flagged = jax.jit(_sgd_with_a_flag, static_argnums=3)


def make_step_with_a_hidden_flag():
    """Converts lr as it should, but the second call of the process passes a static flag that
    compiles a second program: a cause no probe of the check can see."""
    calls = [0]

    def step(params, grads, lr):
        calls[0] += 1
        return _sgd_flagged(params, grads, jnp.asarray(lr, jnp.float32), calls[0] == 2)

    return step


def test_a_recompilation_the_probes_cannot_explain_gets_what_they_measured(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The second call, np.float32 after a Python float, compiled again; changing the kind of lr
    alone compiles nothing new, so the hint says what was measured, not that lr is the cause."""
    out = check_output("05.make_step", make_step_with_a_hidden_flag, capsys)
    assert "compiled 2 times, expected 1" in out, out
    assert (
        "compiled again. Its `lr` was float32[], the `lr` of an earlier call float32[] weakly"
        in out
    )
    assert "that change alone, tried on its own, compiled nothing new" in out
    assert "Pitfall" not in out and "`lr` is a static argument" not in out
