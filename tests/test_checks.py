"""Self-checks: not attempted, incorrect with the right hint, correct; hints, strict mode, the guard, plain data."""

from __future__ import annotations

import collections
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from exercise_support import LessonChecks, has_none, nodes, repeated_check_output, stub

import course_lib as cl
from course_lib import checks
from course_lib.checks import (
    CheckFailedError,
    Exercise,
    _wire,
    check,
    evaluate,
    get_exercise,
    progress,
)
from course_lib.checks._evaluate import judge_outcomes, probe_all, reference_results
from course_lib.checks._guard import standing_in, watch
from course_lib.checks._kit import call_value, compile_report, judge_compiles, random_tree
from course_lib.checks._plain import describe, rebuild_tree, tree_plain

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


def count_forgetting_return(tree):
    sum(int(np.size(leaf)) for leaf in jax.tree.leaves(tree))


def count_with_course_version(tree):
    return cl.tree_size(tree)


def count_with_hidden_course_version(tree):
    sneaky = getattr(cl, "tree_" + "size")
    try:
        return sneaky(tree)
    except BaseException:  # noqa: BLE001 (swallowing the refusal gains nothing)
        return sum(int(np.size(leaf)) for leaf in jax.tree.leaves(tree))


def leaf_paths(tree):
    pairs = jax.tree_util.tree_leaves_with_path(tree, is_leaf=lambda x: x is None)
    return [jax.tree_util.keystr(path) for path, _ in pairs]


def leaf_paths_without_none(tree):
    return [jax.tree_util.keystr(path) for path, _ in jax.tree_util.tree_leaves_with_path(tree)]


def leaf_paths_as_tuple(tree):
    return tuple(leaf_paths(tree))


def is_node(x):
    return jax.tree.structure(x) != jax.tree.structure(0)


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
    return jax.tree.structure(a) == jax.tree.structure(b)


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
    return treedef.num_nodes > 1 or treedef.num_leaves != 1


def replace_by_tree_util_unflatten(tree, values):
    _, treedef = jax.tree_util.tree_flatten(tree)
    return jax.tree_util.tree_unflatten(treedef, list(values))


def same_structure_by_flatten(a, b):
    return jax.tree_util.tree_flatten(a)[1] == jax.tree_util.tree_flatten(b)[1]


def same_structure_by_strings(a, b):
    return str(jax.tree.structure(a)) == str(jax.tree.structure(b))


def same_structure_with_course_version(a, b):
    return not cl.tree_diff(a, b)


RIGHT = {
    "01.count_params": count_params,
    "01.leaf_paths": leaf_paths,
    "01.is_node": is_node,
    "01.replace_leaves": replace_leaves,
    "01.same_structure": same_structure,
}

WRONG = [
    ("01.count_params", count_leaves, "the number of leaves"),
    ("01.count_params", count_with_none, "each None seems to count as a parameter"),
    ("01.count_params", count_forgetting_return, "returned None: missing `return`?"),
    ("01.leaf_paths", leaf_paths_without_none, "the paths of the None entries"),
    ("01.leaf_paths", leaf_paths_as_tuple, "returned a tuple; return a list of strings"),
    ("01.is_node", is_node_by_treedef_is_leaf, "is_node returned False, expected True"),
    ("01.is_node", is_node_by_leaf_count, "is_node returned"),
    (
        "01.replace_leaves",
        replace_returning_values,
        "list in your result, dict in the expected result",
    ),
    ("01.replace_leaves", replace_in_insertion_order, "in another order"),
    ("01.same_structure", same_leaf_count, "same_structure returned"),
    ("01.is_node", is_node_by_isinstance, "registered"),
    ("01.same_structure", same_if_map_succeeds, "jax.tree.map accepts this pair"),
]

ALSO_RIGHT = [
    ("01.count_params", count_params_by_flatten),
    ("01.leaf_paths", leaf_paths_by_flatten_with_path),
    ("01.is_node", is_node_by_all_leaves),
    ("01.is_node", is_node_by_children),
    ("01.replace_leaves", replace_by_tree_util_unflatten),
    ("01.same_structure", same_structure_by_flatten),
    ("01.same_structure", same_structure_by_strings),
]


# --- the lesson-01 exercises -----------------------------------------------------------------


class TestLesson01(LessonChecks):
    ids = LESSON_01
    points = 8
    right = RIGHT
    wrong = WRONG
    also_right = ALSO_RIGHT
    grading_seeds = (0, 1, 2)


def test_cases_have_none_subtrees_and_several_containers() -> None:
    for exercise_id in ("01.count_params", "01.leaf_paths", "01.replace_leaves"):
        trees = [case.args[0] for case in get_exercise(exercise_id).make_cases("grade")]
        kinds = {type(node).__name__ for tree in trees for node in nodes(tree)}
        assert {"dict", "list", "tuple", "OrderedDict"} <= kinds, exercise_id
        assert has_none(trees)
        assert any(hasattr(node, "_fields") for tree in trees for node in nodes(tree))


# --- hints, output, strict mode ---------------------------------------------------------------


def test_hints_are_revealed_one_per_failed_check(capsys: pytest.CaptureFixture[str]) -> None:
    outputs = []
    for _ in range(4):
        check("01.count_params", count_leaves)
        outputs.append(capsys.readouterr().out)
    assert (
        "hint 1/3" in outputs[0]
        and "hint 2/3" not in outputs[0]
        and "run this check again" in outputs[0]
    )
    assert "hint 2/3" in outputs[1] and "hint 3/3" not in outputs[1]
    assert "hint 3/3" in outputs[2] and "no more hints" in outputs[2]
    assert outputs[3] == outputs[2]
    for out in outputs:
        assert (
            "jax.tree.leaves(tree)" not in out.split("hint 1/3")[0]
        )  # the targeted part names no solution


def test_check_output_is_deterministic(capsys: pytest.CaptureFixture[str]) -> None:
    text = repeated_check_output(
        capsys,
        [
            ("01.replace_leaves", replace_in_insertion_order),
            ("01.is_node", is_node_by_treedef_is_leaf),
        ],
    )
    assert "0x" not in text


def test_check_never_prints_the_reference_source(capsys: pytest.CaptureFixture[str]) -> None:
    for exercise_id, answer, _ in WRONG:
        for _ in range(4):
            check(exercise_id, answer)
    out = capsys.readouterr().out
    assert "tree_leaves_with_path(tree, is_leaf" not in out
    assert "jax.tree.unflatten(jax.tree.structure" not in out


@pytest.mark.parametrize("switch", ["env_ci", "env_course", "set_strict", "argument"])
def test_strict_mode_raises(
    switch: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    kwargs = {}
    if switch == "env_ci":
        monkeypatch.setenv("CI", "true")
    elif switch == "env_course":
        monkeypatch.setenv("COURSE_STRICT_CHECKS", "1")
    elif switch == "set_strict":
        checks.set_strict(True)
    else:
        kwargs = {"strict": True}
    with pytest.raises(CheckFailedError, match="incorrect") as failed:
        check("01.count_params", count_leaves, **kwargs)
    assert "the number of leaves" in str(failed.value)
    with pytest.raises(CheckFailedError, match="not attempted"):
        check("01.leaf_paths", stub, **kwargs)
    check("01.is_node", is_node, **kwargs)
    assert "passed" in capsys.readouterr().out


def test_strict_can_be_turned_off_under_ci(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("COURSE_STRICT_CHECKS", "0")
    check("01.count_params", count_leaves)
    assert "incorrect" in capsys.readouterr().out


def test_progress_summarises_the_callers_functions(capsys: pytest.CaptureFixture[str]) -> None:
    namespace = {
        "count_params": count_params,
        "leaf_paths": stub,
        "is_node": is_node_by_leaf_count,
        "progress": progress,
    }
    exec("progress('01')", namespace)
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "Lesson 01: 1 of 5 exercises passed, 2/8 points"
    assert "passed         01.count_params" in out
    assert "not attempted  01.leaf_paths" in out
    assert "incorrect      01.is_node" in out
    assert "missing        01.replace_leaves" in out
    assert "hint" not in out
    checks.set_strict(True)
    with pytest.raises(CheckFailedError):
        exec("progress('01')", namespace)


def test_unknown_exercise_names_the_known_ones() -> None:
    with pytest.raises(KeyError, match="01.count_params"):
        check("01.count_parameters", count_params)


def test_not_a_function(capsys: pytest.CaptureFixture[str]) -> None:
    check("01.count_params", 42)
    assert "expected the function count_params, got 42" in capsys.readouterr().out


# --- the guard against the course's own answers -------------------------------------------------


def test_course_version_is_flagged_at_run_time_however_it_is_reached() -> None:
    exercise = get_exercise("01.count_params")
    direct = evaluate(exercise, count_with_course_version)
    assert direct.status == "flagged" and direct.points == 0
    assert (
        "count_params calls cl.tree_size (line " in direct.message
        and "`return cl.tree_size(tree)`" in direct.message
    )
    hidden = evaluate(exercise, count_with_hidden_course_version)
    assert hidden.status == "flagged" and "`return sneaky(tree)`" in hidden.message
    aliased = evaluate(
        exercise, cl.tree_size
    )  # the course's function itself, bound to the learner's name
    assert aliased.status == "flagged" and "count_params is cl.tree_size itself" in aliased.message
    assert cl.tree_size({"a": jnp.ones(3)}) == 3


def test_the_reference_answer_is_flagged() -> None:
    from course_lib.checks import _lesson01

    exercise = get_exercise("01.count_params")
    aliased = evaluate(exercise, _lesson01._count_params)
    assert aliased.status == "flagged"
    assert (
        "count_params is the course's reference answer, course_lib.checks._lesson01._count_params itself"
        in aliased.message
    )

    def wrapped(tree):
        return get_exercise("01.count_params").reference(tree)

    called = evaluate(exercise, wrapped)
    assert called.status == "flagged" and "calls the course's reference answer" in called.message
    hidden = evaluate(exercise, lambda tree: getattr(exercise, "refer" + "ence")(tree))
    assert hidden.status == "flagged" and "reference answer" in hidden.message
    import sys

    assert sys.getprofile() is None  # the watch is gone afterwards


def test_names_cost_nothing_only_calls_count() -> None:
    def count_params(tree):
        tree_size = "a variable named like the course's function"  # noqa: F841
        sizes = {"tree_size": [int(np.size(leaf)) for leaf in jax.tree.leaves(tree)]}
        return sum(sizes["tree_size"])

    assert evaluate(get_exercise("01.count_params"), count_params).status == "passed"


def test_switching_the_watch_off_is_flagged() -> None:
    import sys

    def count_params(tree):
        sys.setprofile(None)
        return cl.tree_size(tree)

    verdict = evaluate(get_exercise("01.count_params"), count_params)
    assert verdict.status == "flagged" and "switched off the grader's watch" in verdict.message
    assert sys.getprofile() is None


def test_same_structure_may_not_use_tree_diff() -> None:
    verdict = evaluate(get_exercise("01.same_structure"), same_structure_with_course_version)
    assert verdict.status == "flagged" and "cl.tree_diff" in verdict.message


def test_watch_sees_classes_by_their_methods() -> None:
    def flatten(tree):
        return cl.FlatTree.from_tree(tree)

    with watch(["FlatTree"]) as seen:
        flatten({"a": jnp.ones(2)})
    assert [flag["reached"] for flag in seen.flags] == ["cl.FlatTree"]
    assert seen.flags[0]["text"] == "return cl.FlatTree.from_tree(tree)"


def test_a_stand_in_is_the_courses_own_call_and_is_put_back() -> None:
    from course_lib.checks import _lesson01

    namespace = {"count_params": count_with_none}
    exec(
        "def total(trees):\n    return sum(count_params(t) for t in trees)", namespace
    )  # the learner's code
    with (
        watch(["tree_size"]) as seen,
        standing_in(namespace, {"count_params": _lesson01._count_params}) as names,
    ):
        assert (
            namespace["total"]([[1.0, None], {"a": jnp.ones(3)}]) == 4
        )  # the reference, standing in
    assert names == ["count_params"] and seen.flags == []
    assert namespace["count_params"] is count_with_none
    with watch() as seen:
        namespace["count_params"] = _lesson01._count_params
        namespace["total"]([[1.0]])
    assert [flag["kind"] for flag in seen.flags] == [
        "reference"
    ]  # called by the learner, it counts


# --- plain data, trees and the wire --------------------------------------------------------------


def test_wire_round_trip_keeps_types() -> None:
    value = {
        "list": [1, 2.5, None, True],
        "tuple": ("a", b"raw", 1 + 2j),
        (1, "k"): np.arange(6, dtype=np.int32).reshape(2, 3),
        "special": [float("nan"), float("inf")],
        "scalar": np.float32(1.5),
    }
    back = _wire.loads(_wire.dumps(value))
    assert type(back["tuple"]) is tuple and type(back["list"]) is list
    np.testing.assert_array_equal(back[(1, "k")], value[(1, "k")])
    assert back[(1, "k")].dtype == np.int32 and back["scalar"].dtype == np.float32
    assert np.isnan(back["special"][0]) and back["special"][1] == float("inf")


@pytest.mark.parametrize(
    "text",
    [
        "{",
        "[1, 2]",
        '{"x": 1}',
        '{"a": ["|O8", [1], "AAAAAAAAAAA="]}',
        '{"a": ["<f4", [3], "AAAAAA=="]}',
        '{"f": "1e400"}',
        "NaN",
        '{"d": [[{"l": []}, 1]]}',
    ],
)
def test_wire_rejects_malformed_reports(text: str) -> None:
    with pytest.raises(_wire.WireError):
        _wire.loads(text)


def test_wire_refuses_objects() -> None:
    with pytest.raises(_wire.WireError):
        _wire.dumps({"f": print})


def test_tree_plain_round_trip_keeps_structure() -> None:
    Pair = collections.namedtuple("Pair", "left right")
    tree = {
        "b": [1.0, None, (jnp.ones((2, 3)),)],
        "a": Pair(jnp.int32(3), None),
        "o": collections.OrderedDict(z=1, y=2),
    }
    rebuilt = rebuild_tree(_wire.loads(_wire.dumps(tree_plain(tree))))
    assert str(jax.tree.structure(rebuilt)).replace("Pair", "P") == str(
        jax.tree.structure(tree)
    ).replace("Pair", "P")
    assert [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_leaves_with_path(rebuilt)] == [
        jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_leaves_with_path(tree)
    ]
    assert not cl.tree_diff(rebuilt, rebuild_tree(tree_plain(tree)))


def test_describe_is_short_and_stable() -> None:
    tree = {"w": [jnp.ones((3, 2)), 1.5], "b": None, "c": np.zeros(2, np.int32)}
    assert describe(tree) == "{'w': [f32[3,2], 1.5], 'b': None, 'c': i32[2]}"
    assert len(describe(list(range(1000)))) == 160


def test_random_tree_is_deterministic() -> None:
    one = random_tree(np.random.default_rng(3), depth=4)
    two = random_tree(np.random.default_rng(3), depth=4)
    assert describe(one, 10_000) == describe(two, 10_000)


# --- the framework for later lessons: compile counts, exceptions, custom exercises ---------------


def _compile_probe(fn, case):
    step = fn()
    inputs = [jnp.ones(n) for n in case.args[0]]
    return compile_report(lambda: [step(x) for x in inputs])


def _jit_once():
    return jax.jit(lambda x: 2 * x)


COMPILES = Exercise(
    id="05.toy_compiles",
    name="make_step",
    title="a toy compile-count exercise",
    points=1,
    cases=lambda rng: [
        checks.Case(((4, 4, 4),), label="three calls with the same shape"),
        checks.Case(((2, 3, 5),), label="three shapes"),
    ],
    reference=_jit_once,
    probe=_compile_probe,
    judge=judge_compiles,
    hints=("Compile once.",),
)


def test_compile_count_hint_quotes_the_cache_miss_explanation() -> None:
    expected = reference_results(COMPILES, COMPILES.make_cases("check"))

    def make_step():
        return jax.jit(lambda x, pad=(): 2 * x)

    outcomes = probe_all(COMPILES, make_step, COMPILES.make_cases("check"))
    assert (
        judge_outcomes(COMPILES, outcomes, expected, COMPILES.make_cases("check")).status
        == "passed"
    )

    def recompiles_every_call():
        return lambda x: jax.jit(lambda y: 2 * y)(x)

    cases = COMPILES.make_cases("check")
    verdict = judge_outcomes(
        COMPILES, probe_all(COMPILES, recompiles_every_call, cases), expected, cases
    )
    assert verdict.status == "failed"
    assert "compiled 3 times, expected 1: see the cache-miss explanation below." in verdict.message
    assert "CACHE MISS" in verdict.message or "cache miss" in verdict.message.lower()


def test_exception_in_learner_code_is_an_error_with_its_line() -> None:
    def broken(tree):
        return 1 / 0

    verdict = evaluate(get_exercise("01.count_params"), broken)
    assert verdict.status == "error"
    assert "count_params raised ZeroDivisionError: division by zero (line" in verdict.message


def test_unreadable_result() -> None:
    verdict = evaluate(get_exercise("01.count_params"), lambda tree: object())
    assert verdict.status == "failed" and "which the check cannot compare" in verdict.message


def test_exercise_spec_is_validated() -> None:
    good = {
        "name": "f",
        "title": "t",
        "points": 1,
        "cases": lambda rng: [],
        "reference": len,
        "probe": call_value,
        "judge": lambda g, e, c: None,
    }
    with pytest.raises(ValueError, match="must look like"):
        Exercise(id="1.f", **good)
    with pytest.raises(ValueError, match="points"):
        Exercise(id="01.f", **{**good, "points": 0})
    with pytest.raises(ValueError, match="no cases"):
        Exercise(id="01.f", **good).make_cases("check")


def test_partial_and_lambda_answers_are_judged(capsys: pytest.CaptureFixture[str]) -> None:
    check("01.same_structure", functools.partial(same_structure))
    check("01.is_node", lambda x: jax.tree.structure(x) != jax.tree.structure(0))
    out = capsys.readouterr().out
    assert out.count("passed") == 2
