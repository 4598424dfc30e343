"""Fair judging, in the learner's process: what is called counts (never names), no cascades between
exercises, partial credit by named parts that a trivial answer never earns.

The grader-side versions of these (kernels, code cell numbers, ``--forbid``) are in
test_grade_judging.py."""

from __future__ import annotations

import itertools
import textwrap
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pytest
from exercise_support import grading_verdict as grade

from course_lib.checks import (
    all_exercises,
    evaluate,
    get_exercise,
    judge_outcomes,
    reference_results,
)
from course_lib.checks._evaluate import probe_all  # the kernel side of grading: no public name

pytestmark = pytest.mark.usefixtures("fresh_checks")

PRELUDE = (
    "import functools\nimport jax\nimport jax.numpy as jnp\nimport numpy as np\nimport "
    "optax\nimport course_lib as cl\n"
)


def notebook(tmp_path: Path, source: str, name: str = "cells") -> dict[str, Any]:
    """The namespace of a learner's code, run from a file (as a kernel runs a cell: a real file and
    line)."""
    path = tmp_path / f"{name}.py"
    path.write_text(PRELUDE + textwrap.dedent(source))
    module = types.ModuleType(name)
    module.__file__ = str(path)
    exec(compile(path.read_text(), str(path), "exec"), module.__dict__)
    return module.__dict__


# --- names cost nothing; calls into other libraries are allowed unless forbidden ------------------

OPTAX_ANSWERS = """
def make_sgd_step(loss_fn):
    @jax.jit
    def step(params, batch, lr):
        loss, grads = jax.value_and_grad(loss_fn)(params, batch)
        opt = optax.sgd(lr)
        updates, _ = opt.update(grads, opt.init(params), params)
        return optax.apply_updates(params, updates), loss

    return step


_sgd = optax.sgd


def make_sgd_step_bound(loss_fn):
    @jax.jit
    def step(params, batch, lr):
        loss, grads = jax.value_and_grad(loss_fn)(params, batch)
        opt = _sgd(lr)
        updates, _ = opt.update(grads, opt.init(params), params)
        return optax.apply_updates(params, updates), loss

    return step


def average_trees(trees):
    total = functools.reduce(optax.tree_utils.tree_add, trees)
    return optax.tree_utils.tree_scale(1 / len(trees), total)
"""


def test_optax_is_allowed_by_default_inline_or_bound_outside(tmp_path: Path) -> None:
    cells = notebook(tmp_path, OPTAX_ANSWERS)
    inline, bound = (
        grade("02.make_sgd_step", cells["make_sgd_step"]),
        grade("02.make_sgd_step", cells["make_sgd_step_bound"]),
    )
    assert (inline.status, inline.points) == (bound.status, bound.points) == ("passed", 3), (
        inline.message + bound.message
    )
    assert grade("02.average_trees", cells["average_trees"]).status == "passed"


def test_a_forbidden_package_is_flagged_with_the_line_and_the_function_reached(
    tmp_path: Path,
) -> None:
    cells = notebook(tmp_path, OPTAX_ANSWERS)
    for name in ("make_sgd_step", "make_sgd_step_bound"):
        verdict = grade("02.make_sgd_step", cells[name], packages=("optax",))
        assert (
            verdict.status == "flagged" and verdict.points == 0 and verdict.points_if_allowed == 3
        )
        assert "`make_sgd_step` calls `optax." in verdict.message
        line = "opt = optax.sgd(lr)" if name == "make_sgd_step" else "opt = _sgd(lr)"
        assert (
            f"of cells.py: `{line}`): `optax` may not be used in this exercise." in verdict.message
        ), verdict.message
        assert verdict.flags[0]["reached"].endswith(".sgd") and verdict.flags[0]["kind"] == "module"
    average = grade("02.average_trees", cells["average_trees"], packages=("optax",))
    assert (
        average.status == "flagged"
        and "`total = functools.reduce(optax.tree_utils.tree_add, trees)`" in average.message
    )
    assert "tree_add" in average.flags[0]["reached"]


def test_numpy_forbidden_is_the_learners_numpy_not_jaxs(tmp_path: Path) -> None:
    cells = notebook(
        tmp_path,
        """
        def global_norm(tree):
            return jnp.sqrt(sum(jnp.sum(jnp.square(leaf)) for leaf in jax.tree.leaves(tree)))

        def global_norm_numpy(tree):
            squares = [jnp.sum(jnp.square(np.asarray(leaf))) for leaf in jax.tree.leaves(tree)]
            return jnp.sqrt(sum(squares))
    """,
    )
    assert grade("02.global_norm", cells["global_norm"], packages=("numpy",)).status == "passed"
    flagged = grade("02.global_norm", cells["global_norm_numpy"], packages=("numpy",))
    assert flagged.status == "flagged" and "numpy.asarray" in flagged.message


def test_an_exercise_may_forbid_a_package_itself(tmp_path: Path) -> None:
    cells = notebook(tmp_path, OPTAX_ANSWERS)
    exercise = get_exercise("02.average_trees")
    strict = type(exercise)(**{**exercise.__dict__, "forbidden_modules": ("optax",)})
    cases = strict.make_cases("grade")
    verdict = judge_outcomes(
        strict,
        probe_all(strict, cells["average_trees"], cases),
        reference_results(strict, cases),
        cases,
    )
    assert verdict.status == "flagged"


# A lax.scan carry with a field named `momentum`, like the course's function: no use of it.
CARRY_NAMED_MOMENTUM = """from typing import NamedTuple


class Carry(NamedTuple):
    params: object
    momentum: object


def train_loop(loss_fn, params, batches, lr, beta):
    def body(carry, batch):
        loss, grads = jax.value_and_grad(loss_fn)(carry.params, batch)
        momentum = jax.tree.map(lambda v, g: beta * v + g, carry.momentum, grads)
        params = jax.tree.map(lambda p, v: (p - lr * v).astype(p.dtype), carry.params, momentum)
        return Carry(params=params, momentum=momentum), loss

    start = Carry(params=params, momentum=jax.tree.map(jnp.zeros_like, params))
    end, losses = jax.lax.scan(body, start, batches)
    return end.params, end.momentum, losses
"""

ADAM_AND_SCAN = (
    CARRY_NAMED_MOMENTUM
    + """

class AdamState(NamedTuple):
    count: jax.Array
    mu: object
    nu: object


def adam_init(params):
    zeros = optax.tree_utils.tree_zeros_like
    return AdamState(
        count=jnp.zeros((), jnp.int32),
        mu=zeros(params),
        nu=optax.tree_utils.tree_zeros_like(params),
    )
"""
)


def test_optax_zeros_and_a_carry_field_named_momentum_pass(tmp_path: Path) -> None:
    cells = notebook(tmp_path, ADAM_AND_SCAN)
    init = grade("06.adam_init", cells["adam_init"])
    assert init.status == "passed", init.message
    loop = grade("06.train_loop", cells["train_loop"])
    assert loop.status == "passed", loop.message


# --- the course's own functions and the references are still caught -------------------------------


def test_course_functions_are_flagged_through_an_alias_from_another_cell_or_getattr(
    tmp_path: Path,
) -> None:
    cells = notebook(
        tmp_path,
        """
        course_sgd = cl.sgd

        def make_sgd_step(loss_fn):
            @jax.jit
            def step(params, batch, lr):
                loss, grads = jax.value_and_grad(loss_fn)(params, batch)
                opt = course_sgd(lr, donate=False)
                return opt.update(grads, opt.init(params), params)[0], loss
            return step

        def average_trees(trees):
            add = getattr(cl, "tree_" + "add")
            return jax.tree.map(lambda x: x / len(trees), functools.reduce(add, trees))
    """,
    )
    step = grade("02.make_sgd_step", cells["make_sgd_step"])
    assert (
        step.status == "flagged"
        and "calls `cl.sgd` (line " in step.message
        and "`opt = course_sgd(lr, donate=False)`" in step.message
    )
    average = grade("02.average_trees", cells["average_trees"])
    assert average.status == "flagged" and "calls `cl.tree_add` (line " in average.message


# --- no cascades ---------------------------------------------------------------------------------

CASCADE = """
def sgd_step(params, grads, lr):
    return jax.tree.map(lambda p, g: p + lr * g, params, grads)


def make_sgd_step(loss_fn):
    @jax.jit
    def step(params, batch, lr):
        loss, grads = jax.value_and_grad(loss_fn)(params, batch)
        return sgd_step(params, grads, lr), loss

    return step


def global_norm(tree):
    return float(jnp.sqrt(sum(jnp.sum(jnp.square(leaf)) for leaf in jax.tree.leaves(tree))))


def clip_by_global_norm(grads, max_norm):
    norm = global_norm(grads)
    scale = jnp.where(norm > max_norm, max_norm / jnp.where(norm > 0, norm, 1.0), 1.0)
    return jax.tree.map(lambda g: g * scale, grads)
"""


def test_a_wrong_helper_costs_points_once_in_its_own_exercise(tmp_path: Path) -> None:
    cells = notebook(tmp_path, CASCADE)
    wrong = grade("02.sgd_step", cells["sgd_step"])
    assert wrong.status == "failed" and wrong.points == 0 and "you added the step" in wrong.message
    assert grade("02.make_sgd_step", cells["make_sgd_step"]).status == "passed"
    assert cells["sgd_step"].__code__.co_filename.endswith(
        "cells.py"
    )  # the learner's own, put back
    norm = grade("02.global_norm", cells["global_norm"])
    assert (
        norm.status == "failed" and norm.points == 0.75
    )  # right on every part but the one under jit
    assert "under `jax.jit` it raised" in norm.message and "`float()`, `.item()`" in norm.message
    clip = grade("02.clip_by_global_norm", cells["clip_by_global_norm"])
    assert clip.status == "passed", clip.message


def test_the_self_check_judges_each_exercise_on_its_own_too(tmp_path: Path) -> None:
    cells = notebook(tmp_path, CASCADE)
    assert (
        evaluate(get_exercise("02.clip_by_global_norm"), cells["clip_by_global_norm"]).status
        == "passed"
    )
    assert evaluate(get_exercise("02.global_norm"), cells["global_norm"]).status == "failed"
    assert cells["global_norm"].__code__.co_filename.endswith("cells.py")


# --- partial credit ------------------------------------------------------------------------------


def sgd_for_dicts_and_lists(params: Any, grads: Any, lr: Any) -> Any:
    """Right for dicts, lists and None; namedtuples, tuples and OrderedDicts come back as lists."""
    if params is None:
        return None
    if type(params) is dict:
        return {key: sgd_for_dicts_and_lists(params[key], grads[key], lr) for key in params}
    if isinstance(params, (list, tuple)):
        return [sgd_for_dicts_and_lists(p, g, lr) for p, g in zip(params, grads, strict=True)]
    if isinstance(params, dict):
        return {key: sgd_for_dicts_and_lists(params[key], grads[key], lr) for key in params}
    return params - lr * grads


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_half_right_answer_gets_exactly_its_parts_share(seed: int) -> None:
    verdict = grade("02.sgd_step", sgd_for_dicts_and_lists, seed)
    assert verdict.parts == (
        ("dicts and lists with None", True),
        ("namedtuples, OrderedDicts and floats", False),
        ("random trees", False),
    )
    assert (verdict.status, verdict.points, verdict.max_points) == ("failed", 0.67, 2)
    assert (
        "Right: dicts and lists with None (0.67/2 points); not yet: namedtuples, "
        "OrderedDicts and floats, random trees."
    ) in verdict.message
    assert verdict.passed_cases[:2] == (True, True) and verdict.passed_cases[2] is False


def test_the_self_check_shows_partial_points(capsys: pytest.CaptureFixture[str]) -> None:
    from course_lib.checks import check

    check("02.sgd_step", sgd_for_dicts_and_lists)
    out = capsys.readouterr().out
    assert out.startswith("02.sgd_step: incorrect (0.67/2 points)"), out


def _raise(*args: Any, **kwargs: Any) -> Any:
    raise ValueError("a trivial answer that always refuses")


TRIVIAL: dict[str, Callable[..., Any]] = {
    "its first input": lambda *a, **k: a[0] if a else None,
    "its last input": lambda *a, **k: a[-1] if a else None,
    "all its inputs": lambda *a, **k: a,
    "None": lambda *a, **k: None,
    "zeros like its first input": lambda *a, **k: jax.tree.map(np.zeros_like, a[0]) if a else 0,
    "an empty dict": lambda *a, **k: {},
    "an empty list": lambda *a, **k: [],
    "an empty tuple": lambda *a, **k: (),
    "0": lambda *a, **k: 0,
    "1": lambda *a, **k: 1,
    "0.0": lambda *a, **k: 0.0,
    "True": lambda *a, **k: True,
    "False": lambda *a, **k: False,
    "an empty string": lambda *a, **k: "",
    "an exception": _raise,
    "a function returning its first input": lambda *a, **k: lambda *b, **kk: b[0] if b else None,
    "a function returning a pair of its first input and 0": lambda *a, **k: (
        lambda *b, **kk: (b[0] if b else None, 0.0)
    ),
    "an empty class": lambda *a, **k: type("Nothing", (), {}),
}


@pytest.mark.slow
@pytest.mark.parametrize("exercise_id", [e.id for e in all_exercises()])
def test_a_trivial_answer_earns_nothing_on_any_exercise(exercise_id: str) -> None:
    """Every trivial answer, on the grading cases (of two seeds where there are parts): 0 points,
    never passed."""
    earned = {}
    has_parts = any(case.part for case in get_exercise(exercise_id).make_cases("grade"))
    seeds = (0, 1) if has_parts else (0,)  # all or nothing needs one seed to show it is not all
    for (what, answer), seed in itertools.product(TRIVIAL.items(), seeds):
        verdict = grade(exercise_id, answer, seed)
        earned[what, seed] = (verdict.status, verdict.points)
    assert all(points == 0 and status != "passed" for status, points in earned.values()), earned


def test_the_trivial_answers_cover_every_exercise() -> None:
    """The parametrised test above reaches every graded exercise of every lesson (44 in lessons
    01–09)."""
    from course_lib.checks import exercises, lessons

    assert list(lessons()) == ["01", "02", "03", "04", "05", "06", "07", "08", "09"]
    assert [e.id for e in all_exercises()] == [
        e.id for lesson in lessons() for e in exercises(lesson)
    ]
    assert len(all_exercises()) == 44
