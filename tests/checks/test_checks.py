"""The checks API: check (hints, output, strict mode), progress, evaluate, the exercise registry.

The answers are lesson 01's (tests/checks/test_checks_lesson01.py).
"""

from __future__ import annotations

import functools
from typing import Any
from unittest import mock

import jax
import numpy as np
import pytest
from exercise_support import repeated_check_output, stub
from test_checks_lesson01 import (
    WRONG,
    count_leaves,
    count_params,
    count_with_none,
    is_node,
    is_node_by_leaf_count,
    is_node_by_treedef_is_leaf,
    replace_in_insertion_order,
    same_structure,
)

from course_lib import checks
from course_lib.checks import (
    CheckFailedError,
    Exercise,
    check,
    evaluate,
    get_exercise,
    progress,
)
from course_lib.checks._selfcheck import _report, globals_read
from course_lib.checks._spec import Verdict

pytestmark = pytest.mark.usefixtures("fresh_checks")


# --- hints, output, strict mode ---------------------------------------------------------------


def test_each_failed_check_adds_a_hint_and_keeps_what_it_showed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """What went wrong, then the same with the idea and the section to reread under it, then with
    the fix under that too, each under a one-line header; a fourth check shows the third again."""
    outputs = []
    for _ in range(4):
        check("01.count_params", count_leaves)
        outputs.append(capsys.readouterr().out)
    header = "01.count_params: incorrect (0/2 points); "
    assert outputs[0].startswith(f"{header}run the check again for a hint\n")
    assert "returned 2, the number of leaves" in outputs[0] and "idea" not in outputs[0]
    diagnosis = outputs[0].split("\n", 1)[1]
    idea = (
        "  hint 1/2, the idea: A parameter is one entry of an array: a leaf holds as many "
        'parameters as it has elements. (reread lesson 01, "Containers and leaves")\n'
    )
    fix = (
        "  hint 2/2, the fix: Add up the element counts of the leaves instead of counting the "
        "leaves (a `(3, 2)` array holds 6).\n"
    )
    assert outputs[1] == f"{header}run the check again for the fix\n{diagnosis}{idea}"
    assert outputs[2] == f"{header}that was the last hint\n{diagnosis}{idea}{fix}"
    assert outputs[3] == outputs[2]


def test_another_mistake_starts_again_at_what_went_wrong(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The hints follow the mistake the check found: after two failures of one kind, the first
    failure of another kind says what went wrong, and the hints start again from there."""
    for _ in range(2):
        check("01.count_params", count_leaves)
    capsys.readouterr()
    check("01.count_params", count_with_none)
    out = capsys.readouterr().out
    assert "each `None` seems to count" in out and "hint 1/2" not in out, out
    check("01.count_params", count_with_none)
    out = capsys.readouterr().out
    assert "hint 1/2, the idea: `None` is an empty subtree" in out, out


def test_a_mistake_with_the_same_idea_and_another_fix_starts_again() -> None:
    """Two mistakes of one exercise may share an idea and differ in their fix: the second is
    another mistake, so its first failure says what went wrong rather than jumping to its fix."""
    exercise = get_exercise("01.count_params")

    def failure(what: str, fix: str) -> Verdict:
        idea = "A parameter is one entry of an array."
        return Verdict(
            status="failed",
            points=0,
            max_points=2,
            message=what,
            idea=idea,
            fix=fix,
            mistake=True,
        )

    first = failure("returned 2, the number of leaves", "Add up the element counts.")
    other = failure("returned 9, one too many", "Leave the None subtrees out.")
    assert _report(exercise, first)[1] == 0 and _report(exercise, first)[1] == 1
    report, step = _report(exercise, other)
    assert step == 0 and "returned 9, one too many" in report.text, report


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


def counting(answer: Any) -> tuple[Any, list[int]]:
    """``answer``, and a list that grows by one at each of its calls."""
    calls: list[int] = []

    def counted(*args: Any) -> Any:
        calls.append(1)
        return answer(*args)

    return counted, calls


def test_progress_shows_a_checked_function_s_verdict_without_running_it_again(
    capsys: pytest.CaptureFixture[str],
) -> None:
    right, right_calls = counting(count_params)
    wrong, wrong_calls = counting(count_leaves)
    check("01.count_params", right)
    check("01.is_node", wrong)  # not 01.is_node's answer: judged, and kept, as incorrect
    ran = len(right_calls), len(wrong_calls)
    assert ran[0] > 0 and ran[1] > 0
    capsys.readouterr()
    exec("progress('01')", {"count_params": right, "is_node": wrong, "progress": progress})
    out = capsys.readouterr().out
    assert "passed         01.count_params" in out
    assert "incorrect      01.is_node" in out
    assert (len(right_calls), len(wrong_calls)) == ran


def test_progress_judges_a_name_redefined_since_its_check(
    capsys: pytest.CaptureFixture[str],
) -> None:
    check("01.count_params", count_params)
    redefined, calls = counting(count_leaves)
    capsys.readouterr()
    exec("progress('01')", {"count_params": redefined, "progress": progress})
    assert "incorrect      01.count_params" in capsys.readouterr().out
    assert calls
    again, calls_again = counting(count_params)
    check("01.count_params", again)
    checked = len(calls_again)
    checks.reset_hints()  # as a fresh kernel: nothing kept
    exec("progress('01')", {"count_params": again, "progress": progress})
    assert "passed         01.count_params" in capsys.readouterr().out
    assert len(calls_again) > checked


NOTEBOOK = """
import jax
import numpy as np

def size(leaf):
    return int(np.size(leaf))

def count_params(tree):
    return sum(size(leaf) for leaf in jax.tree.leaves(tree))
"""


@pytest.mark.parametrize(
    "change",
    [
        "def size(leaf):\n    return 1",  # the helper redefined
        "class np:\n    size = staticmethod(lambda leaf: 1)",  # a global the helper reads rebound
    ],
)
def test_progress_judges_again_a_function_whose_globals_changed(
    change: str, capsys: pytest.CaptureFixture[str]
) -> None:
    namespace: dict[str, Any] = {"check": check, "progress": progress}
    exec(NOTEBOOK, namespace)
    exec("check('01.count_params', count_params)", namespace)  # as a cell calls it
    assert "passed" in capsys.readouterr().out
    exec(change, namespace)
    exec("progress('01')", namespace)
    assert "incorrect      01.count_params" in capsys.readouterr().out


CUSTOM_VJP = """
import jax
import jax.numpy as jnp
LIMIT = 1.0

@jax.custom_vjp
def clipped(x):
    return x

clipped.defvjp(lambda x: (x, None), lambda _, g: (jnp.clip(g, -LIMIT, LIMIT),))
"""

WRAPPED = """
import functools

def logged(f):
    @functools.wraps(f)
    def wrapper(*args):
        return f(*args)
    return wrapper

@logged
def decorated(tree):
    return count_params(tree)

jitted = jax.jit(count_params)
partial = functools.partial(count_params)
unused = 1
"""


HIDDEN_HELPERS = {
    "in a dict": "SIZES = {'of': size}\n"
    "def count_params(t):\n    return sum(SIZES['of'](x) for x in jax.tree.leaves(t))",
    "a default": "def count_params(t, of=size):\n    return sum(of(x) for x in jax.tree.leaves(t))",
    "a partial's": "count_params = functools.partial("
    "lambda of, t: sum(map(of, jax.tree.leaves(t))), size)",
    "a method's": "class C:\n    def __call__(self, t):\n"
    "        return sum(map(size, jax.tree.leaves(t)))\ncount_params = C()",
    "a static method's": "class C:\n    @staticmethod\n    def of(x):\n        return size(x)\n"
    "def count_params(t):\n    return sum(map(C.of, jax.tree.leaves(t)))",
}


@pytest.mark.parametrize("where", list(HIDDEN_HELPERS))
def test_progress_finds_a_helper_where_the_function_keeps_it(
    where: str, capsys: pytest.CaptureFixture[str]
) -> None:
    namespace: dict[str, Any] = {"__name__": "__main__", "check": check, "progress": progress}
    exec(NOTEBOOK + "import functools\n" + HIDDEN_HELPERS[where], namespace)
    exec("check('01.count_params', count_params)", namespace)  # as a cell calls it
    assert "passed" in capsys.readouterr().out
    exec("np = None\nprogress('01')", namespace)  # the helper's np.size now fails
    assert "incorrect      01.count_params" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("name", "read"),
    [
        ("count_params", ["jax", "np", "size"]),
        ("jitted", ["jax", "np", "size"]),
        ("partial", ["jax", "np", "size"]),
        ("decorated", ["count_params", "jax", "np", "size"]),
    ],
)
def test_globals_read_follows_helpers_and_wrappers(name: str, read: list[str]) -> None:
    namespace: dict[str, Any] = {}
    exec(NOTEBOOK + WRAPPED, namespace)
    assert sorted(globals_read(namespace[name], namespace) or {}) == read


def test_globals_read_is_none_for_what_it_cannot_see_into() -> None:
    namespace: dict[str, Any] = {}
    exec(NOTEBOOK, namespace)
    assert globals_read(len, namespace) == {}  # Python's own: reads nothing of the notebook
    assert globals_read(mock.Mock(), namespace) is None  # every attribute, __wrapped__ too
    assert globals_read(np.vectorize(namespace["size"]), namespace) is None


def test_globals_read_starts_from_the_notebook_s_namespace() -> None:
    """A partial's library function, met first, does not make the library's globals the ones
    that count."""
    namespace: dict[str, Any] = {}
    exec(
        NOTEBOOK + "import functools, jax.numpy as jnp\n"
        "bound = functools.partial(lambda reduce, t: reduce(size(t)), jnp.sum)",
        namespace,
    )
    assert sorted(globals_read(namespace["bound"], namespace) or {}) == ["np", "size"]


def test_globals_read_follows_a_custom_vjp_s_rules() -> None:
    namespace: dict[str, Any] = {}
    exec(CUSTOM_VJP, namespace)
    assert sorted(globals_read(namespace["clipped"], namespace) or {}) == ["LIMIT", "jnp"]


def test_unknown_exercise_names_the_known_ones() -> None:
    with pytest.raises(KeyError, match="01.count_params"):
        check("01.count_parameters", count_params)


def test_not_a_function(capsys: pytest.CaptureFixture[str]) -> None:
    check("01.count_params", 42)  # type: ignore[arg-type]  # a learner's mistake, on purpose
    assert "expected the function `count_params`, got 42" in capsys.readouterr().out


# --- exceptions, unreadable results, custom exercises -------------------------------------------


def test_exception_in_learner_code_is_an_error_with_its_line() -> None:
    def broken(tree: Any) -> float:
        return 1 / 0

    verdict = evaluate(get_exercise("01.count_params"), broken)
    assert verdict.status == "error"
    assert "`count_params` raised `ZeroDivisionError`: division by zero (line" in verdict.message


def test_unreadable_result() -> None:
    verdict = evaluate(get_exercise("01.count_params"), lambda tree: object())
    assert verdict.status == "failed" and "which the check cannot compare" in verdict.message


def test_exercise_spec_is_validated() -> None:
    good: dict[str, Any] = {
        "name": "f",
        "title": "t",
        "points": 1,
        "cases": lambda rng: [],
        "reference": len,
        "probe": lambda fn, case: fn(*case.args),
        "judge": lambda g, e, c: None,
        "hints": ("the idea", "the fix"),
        "reread": "01 Containers and leaves",
    }
    with pytest.raises(ValueError, match="must look like"):
        Exercise(id="1.f", **good)
    with pytest.raises(ValueError, match="points"):
        Exercise(id="01.f", **{**good, "points": 0})
    with pytest.raises(ValueError, match="the idea and the fix"):
        Exercise(id="01.f", **{**good, "hints": ("one", "two", "three")})
    with pytest.raises(ValueError, match="must name a section as 'NN Heading'"):
        Exercise(id="01.f", **{**good, "reread": "Containers and leaves"})
    with pytest.raises(ValueError, match="no cases"):
        Exercise(id="01.f", **good).make_cases("check")


def test_partial_and_lambda_answers_are_judged(capsys: pytest.CaptureFixture[str]) -> None:
    check("01.same_structure", functools.partial(same_structure))
    check("01.is_node", lambda x: jax.tree.structure(x) != jax.tree.structure(0))  # type: ignore[operator]  # jaxlib leaves PyTreeDef untyped
    out = capsys.readouterr().out
    assert out.count("passed") == 2
