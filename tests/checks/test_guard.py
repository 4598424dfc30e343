"""The guard against the course's own answers (``course_lib.checks._guard``).

Most tests go through the public ``evaluate``; ``watch`` and ``standing_in`` have no public name,
and these tests are about that module, so they import it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_checks_lesson01 import count_with_none

import course_lib as cl
from course_lib.checks import evaluate, get_exercise
from course_lib.checks._guard import library_dirs, standing_in, watch

pytestmark = pytest.mark.usefixtures("fresh_checks")


def count_with_course_version(tree: Any) -> int:
    return cl.tree_size(tree)


def count_with_hidden_course_version(tree: Any) -> int:
    sneaky = getattr(cl, "tree_" + "size")
    try:
        return sneaky(tree)
    except BaseException:  # noqa: BLE001 (swallowing the refusal gains nothing)
        return sum(int(np.size(leaf)) for leaf in jax.tree.leaves(tree))


def same_structure_with_course_version(a: Any, b: Any) -> bool:
    return not cl.tree_diff(a, b)


def test_course_version_is_flagged_at_run_time_however_it_is_reached() -> None:
    exercise = get_exercise("01.count_params")
    direct = evaluate(exercise, count_with_course_version)
    assert direct.status == "flagged" and direct.points == 0
    assert (
        "`count_params` calls `cl.tree_size` (line " in direct.message
        and "`return cl.tree_size(tree)`" in direct.message
    )
    hidden = evaluate(exercise, count_with_hidden_course_version)
    assert hidden.status == "flagged" and "`return sneaky(tree)`" in hidden.message
    aliased = evaluate(
        exercise, cl.tree_size
    )  # the course's function itself, bound to the learner's name
    assert (
        aliased.status == "flagged" and "`count_params` is `cl.tree_size` itself" in aliased.message
    )
    assert cl.tree_size({"a": jnp.ones(3)}) == 3


def test_the_reference_answer_is_flagged() -> None:
    exercise = get_exercise("01.count_params")
    aliased = evaluate(exercise, exercise.reference)
    assert aliased.status == "flagged"
    assert (
        "`count_params` is the course's reference answer, "
        "`course_lib.checks._lesson01._count_params` itself"
    ) in aliased.message

    def wrapped(tree: Any) -> Any:
        return get_exercise("01.count_params").reference(tree)

    called = evaluate(exercise, wrapped)
    assert called.status == "flagged" and "calls the course's reference answer" in called.message
    hidden = evaluate(exercise, lambda tree: getattr(exercise, "refer" + "ence")(tree))
    assert hidden.status == "flagged" and "reference answer" in hidden.message
    assert sys.getprofile() is None  # the watch is gone afterwards


def test_names_cost_nothing_only_calls_count() -> None:
    def count_params(tree: Any) -> int:
        tree_size = "a variable named like the course's function"  # noqa: F841 (the name is the test)
        sizes = {"tree_size": [int(np.size(leaf)) for leaf in jax.tree.leaves(tree)]}
        return sum(sizes["tree_size"])

    assert evaluate(get_exercise("01.count_params"), count_params).status == "passed"


def test_switching_the_watch_off_is_flagged() -> None:
    def count_params(tree: Any) -> int:
        sys.setprofile(None)
        return cl.tree_size(tree)

    verdict = evaluate(get_exercise("01.count_params"), count_params)
    assert verdict.status == "flagged" and "switched off the grader's watch" in verdict.message
    assert sys.getprofile() is None


def test_same_structure_may_not_use_tree_diff() -> None:
    verdict = evaluate(get_exercise("01.same_structure"), same_structure_with_course_version)
    assert verdict.status == "flagged" and "cl.tree_diff" in verdict.message


def test_watch_sees_classes_by_their_methods() -> None:
    def flatten(tree: Any) -> cl.FlatTree:
        return cl.FlatTree.from_tree(tree)

    with watch(["FlatTree"]) as seen:
        flatten({"a": jnp.ones(2)})
    assert [flag["reached"] for flag in seen.flags] == ["cl.FlatTree"]
    assert seen.flags[0]["text"] == "return cl.FlatTree.from_tree(tree)"


def test_a_stand_in_is_the_courses_own_call_and_is_put_back() -> None:
    reference = get_exercise("01.count_params").reference
    namespace: dict[str, Any] = {"count_params": count_with_none}
    exec(
        "def total(trees):\n    return sum(count_params(t) for t in trees)", namespace
    )  # the learner's code
    with (
        watch(["tree_size"]) as seen,
        standing_in(namespace, {"count_params": reference}) as names,
    ):
        assert (
            namespace["total"]([[1.0, None], {"a": jnp.ones(3)}]) == 4
        )  # the reference, standing in
    assert names == ["count_params"] and seen.flags == []
    assert namespace["count_params"] is count_with_none
    with watch() as seen:
        namespace["count_params"] = reference
        namespace["total"]([[1.0]])
    assert [flag["kind"] for flag in seen.flags] == [
        "reference"
    ]  # called by the learner, it counts


def test_packages_installed_outside_pythons_prefix_are_libraries(tmp_path: Path) -> None:
    """A TPU machine's own JAX lies in a folder on PYTHONPATH, outside sys.prefix: its calls into
    NumPy are JAX's, not the learner's, so a folder of installed distributions is a library's."""
    (tmp_path / "jax-0.10.2.dist-info").mkdir()
    learners = tmp_path.parent / "homework"
    dirs = library_dirs([str(tmp_path), str(learners)])
    assert os.path.join(os.path.realpath(tmp_path), "") in dirs
    assert not any(os.path.realpath(learners).startswith(d) for d in dirs)
