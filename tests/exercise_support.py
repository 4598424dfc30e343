"""What the self-check tests of every lesson share (tests/checks/test_checks*.py).

pytest puts tests/ on ``sys.path`` for its test modules (tests/ has no ``__init__.py``), so a test
module imports this one by name, as test_properties.py imports strategies.py.

* :class:`LessonChecks`: the tests every lesson has, run on its own answers by a subclass, say
  ``class TestLesson02(LessonChecks)`` with ``ids``, ``right`` and ``wrong`` set.
* Helpers for the tests each lesson writes itself: :func:`stub`, :func:`check_output`,
  :func:`repeated_check_output`, :func:`successive_reports`, :func:`self_check_verdict` (an
  answer judged once per test process), :func:`nodes`, :func:`has_none`, :func:`fingerprint`.
* :func:`grading_verdict`: an answer judged on a seed's grading cases as the grader judges it, the
  reference's results worked out once per test process (:func:`grading_references`).

Four private names are imported, for want of public ones: ``probe_all`` (what a submission's
kernel runs, which the grading tests run in this process), ``_report`` (what a failed self-check
prints, for :func:`successive_reports`), and ``as_float32`` and ``tree_plain`` (how a case is
written down, for :func:`fingerprint`). The private names of the lesson modules, ``_kit`` and
``_evaluate`` are read so that no report may show one (:func:`assert_no_internals`).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import jax
import pytest

import course_lib as cl
from course_lib import checks
from course_lib.checks import (
    _evaluate,
    _kit,
    check,
    get_exercise,
    judge_outcomes,
    reference_results,
)
from course_lib.checks._evaluate import probe_all  # the kernel side of grading: no public name
from course_lib.checks._kit import as_float32
from course_lib.checks._plain import tree_plain
from course_lib.checks._selfcheck import _report  # what check prints for a verdict: no public name
from course_tools._notebook_files import markdown_headings, read_notebook

ROOT = Path(__file__).resolve().parents[1]

STUB_MESSAGE = "Write your answer here, then run the check."
"""What the exercise notebooks' stubs raise."""


def stub(*args: object, **kwargs: object) -> None:
    """An exercise as the exercise notebook hands it out: not attempted yet."""
    raise NotImplementedError(STUB_MESSAGE)


def answer_id(x: Any) -> str | None:
    """A parametrized test's id for an answer: the function's qualified name (pytest's own id for
    anything else)."""
    return getattr(x, "__qualname__", None) if callable(x) else None


def check_output(
    exercise_id: str, answer: Callable[..., Any], capsys: pytest.CaptureFixture[str]
) -> str:
    """What ``check(exercise_id, answer)`` prints."""
    check(exercise_id, answer)
    return capsys.readouterr().out


def self_check_verdict(exercise_id: str, answer: Callable[..., Any]) -> checks.Verdict:
    """The self-check's verdict on ``answer``, judged once per test process (it is
    deterministic): the tests of a wrong answer's mistake and of its hints share it."""
    if (exercise_id, answer) not in _verdicts:
        _verdicts[exercise_id, answer] = checks.evaluate(get_exercise(exercise_id), answer)
    return _verdicts[exercise_id, answer]


def successive_reports(
    exercise_id: str, answer: Callable[..., Any], times: int = 3
) -> tuple[checks.Verdict, list[str]]:
    """The verdict on ``answer`` (:func:`self_check_verdict`), and what ``check(exercise_id,
    answer)`` prints for it the first ``times`` times from fresh hints."""
    verdict = self_check_verdict(exercise_id, answer)
    checks.reset_hints()
    exercise = get_exercise(exercise_id)
    return verdict, [_report(exercise, verdict)[0].text for _ in range(times)]


def repeated_check_output(
    capsys: pytest.CaptureFixture[str], answers: Sequence[tuple[str, Callable[..., Any]]]
) -> str:
    """What checking ``answers`` in turn prints, asserted to be the same the second time (from fresh
    hints)."""
    texts = []
    for _ in range(2):
        checks.reset_hints()
        for exercise_id, answer in answers:
            check(exercise_id, answer)
        texts.append(capsys.readouterr().out)
    assert texts[0] == texts[1]
    return texts[0]


_references: dict[tuple[str, int], list[Any]] = {}
_verdicts: dict[tuple[str, Callable[..., Any]], checks.Verdict] = {}
"""The self-check's verdict on each answer a test has judged (:func:`self_check_verdict`)."""


def grading_references(exercise_id: str, seed: int) -> list[Any]:
    """The reference's results on the grading cases of ``seed`` (plain data), worked out once per
    test process, as the grader works them out once per run: the cases are the same for a seed
    (``test_cases_are_deterministic_and_grading_differs``)."""
    if (exercise_id, seed) not in _references:
        exercise = get_exercise(exercise_id)
        cases = exercise.make_cases("grade", seed)
        _references[exercise_id, seed] = reference_results(exercise, cases)
    return _references[exercise_id, seed]


def grading_verdict(
    exercise_id: str, answer: Callable[..., Any], seed: int = 0, packages: tuple[str, ...] = ()
) -> Any:
    """The verdict on ``answer`` for the grading cases of ``seed`` (cases of its own), judged as the
    grader judges (stand-ins from ``answer``'s globals; ``packages`` as the grader's option)."""
    exercise = get_exercise(exercise_id)
    cases = exercise.make_cases("grade", seed)
    outcomes = probe_all(exercise, answer, cases, packages=packages)
    return judge_outcomes(exercise, outcomes, grading_references(exercise_id, seed), cases)


def assert_grading_passes(
    exercise_id: str, answer: Callable[..., Any], seeds: Iterable[int]
) -> None:
    """``answer`` passes the grading cases of each seed, judged as the grader judges."""
    for seed in seeds:
        verdict = grading_verdict(exercise_id, answer, seed)
        assert verdict.status == "passed", verdict.message


# --- the cases ------------------------------------------------------------------------------------


def nodes(tree: Any) -> list[Any]:
    """Every node of ``tree`` (not ``None``, not the leaves), the root first."""
    if tree is None:
        return []
    flat = jax.tree_util.default_registry.flatten_one_level(tree)
    if flat is None:
        return []
    return [tree, *(n for child in flat[0] for n in nodes(child))]


def has_none(trees: Iterable[Any]) -> bool:
    """Whether one of ``trees`` holds a ``None`` subtree."""
    return any(
        x is None for tree in trees for x in jax.tree.leaves(tree, is_leaf=lambda x: x is None)
    )


def fingerprint(case: checks.Case) -> str:
    """Everything a case holds but its functions, as text: equal texts, equal cases (bfloat16 leaves
    as float32)."""
    inputs = [a for a in case.args if not callable(a)], dict(case.kwargs), dict(case.info)
    return repr((case.label, case.shown, tree_plain(jax.tree.map(as_float32, inputs))))


NEXT_STEPS = (
    "run the check again for a hint",
    "run the check again for the fix",
    "that was the last hint",
)
"""How the header of a failed check's first, second and third report ends."""


SEVERAL_MISTAKES = {
    ("04.static_and_traced", "split_by_key_paths"),
    ("06.restore_checkpoint", "restore_sorted_names"),
    ("07.shardings_from_rules", "shardings_dropping_none"),
    ("08.guarded_step", "guarded_with_python_if"),
}
"""Wrong answers with more than one mistake: the fix of the first leads to the next hint, not to a
pass, so they have no entry in ``fixed``."""


def screen_lines(text: str, width: int = 100) -> int:
    """How many lines ``text`` takes on a screen ``width`` columns wide, long lines wrapped.

    >>> screen_lines("one\\n" + "x" * 150)
    3
    """
    return sum(max(1, -(-len(line) // width)) for line in text.splitlines())


def _course_private_names() -> set[str]:
    """The private functions and classes of the course's check modules (``_probe_train``)."""
    modules = [_kit, _evaluate] + [
        importlib.import_module(f"course_lib.checks._lesson{lesson}") for lesson in checks.lessons()
    ]
    return {
        name
        for module in modules
        for name in vars(module)
        if name.startswith("_") and not name.startswith("__") and len(name) > 2
    }


_INTERNAL = re.compile(
    r"\.py\b|<locals>|jax\._src|jaxlib|\bStatic\(|\bPlaceholder\b|ArrayImpl|Tracer\b"
)
_PRIVATE_NAMES = _course_private_names()


def assert_no_internals(report: str) -> None:
    """A report names no course file or line, no private name of the course's checks and no class
    internal to JAX."""
    found = _INTERNAL.search(report)
    assert found is None, (found[0], report)
    words = set(re.findall(r"\b_\w+", report))
    assert not words & _PRIVATE_NAMES, (words & _PRIVATE_NAMES, report)


def _headings() -> set[str]:
    """Every lesson section, as ``"NN Heading"`` (the heading's text after its ``#`` marks)."""
    found: set[str] = set()
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        for cell in read_notebook(path).cells:
            if cell.cell_type == "markdown":
                found.update(f"{path.name[:2]} {h}" for h in markdown_headings(cell.source))
    return found


HEADINGS = _headings()


def assert_section_exists(reread: str) -> None:
    """A hint's section to reread is a heading of its lesson, as written there."""
    assert reread in HEADINGS, f"no lesson section {reread!r}"


# --- the tests every lesson has -------------------------------------------------------------------


class LessonChecks:
    """The tests every lesson's exercises get, run on the answers a subclass names.

    ``ids`` lists the lesson's exercises in notebook order, ``points`` their total; ``right`` maps
    each id to a right answer, ``stubs`` to what the exercise notebook hands out (:func:`stub` by
    default); ``wrong`` lists ``(id, typical wrong answer, text its hint must hold)``;
    ``also_right`` lists ``(id, right answer)`` pairs written differently from the reference
    (tree_util loops, flatten/unflatten, casts as optax writes them, NumPy): each must pass.
    ``fixed`` lists ``(id, wrong answer, the same answer with its last hint, the fix, applied
    exactly as written)``: each must pass, or the fix does not work as written.
    ``named`` links each mistake an exercise names to its wrong answer: ``{exercise id: {named
    mistake: the text the wrong answer's row in ``wrong`` pins}}``.
    ``grading_seeds`` are the grader's seeds the right answers are judged on.
    Tests that take ``exercise_id`` run once per exercise, the hint test once per wrong answer.
    Each exercise's ``mistakes`` (what the facilitator's guide says its check recognises) are
    linked by ``named`` to wrong answers of the table, one each.
    """

    ids: tuple[str, ...] = ()
    points: int = 0
    right: Mapping[str, Callable[..., Any]] = {}
    stubs: Mapping[str, Callable[..., Any]] = {}
    wrong: Sequence[tuple[str, Callable[..., Any], str]] = ()
    also_right: Sequence[tuple[str, Callable[..., Any]]] = ()
    fixed: Sequence[tuple[str, Callable[..., Any], Callable[..., Any]]] = ()
    named: Mapping[str, Mapping[str, str]] = {}
    grading_seeds: tuple[int, ...] = (0, 1)

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        if "hint" in metafunc.fixturenames:
            metafunc.parametrize(("exercise_id", "answer", "hint"), self.wrong, ids=answer_id)
        elif "fixed" in metafunc.fixturenames:
            # A fix that turns the answer into the lesson's right answer passes in
            # test_check_correct: only the other fixes are judged here.
            rows = [row for row in self.fixed if row[2] is not self.right[row[0]]]
            metafunc.parametrize(("exercise_id", "answer", "fixed"), rows, ids=answer_id)
        elif "other_right" in metafunc.fixturenames:
            metafunc.parametrize(("exercise_id", "other_right"), self.also_right, ids=answer_id)
        elif "exercise_id" in metafunc.fixturenames:
            metafunc.parametrize("exercise_id", self.ids)

    def test_lesson_has_its_exercises(self) -> None:
        listed = checks.exercises(self.ids[0][:2])
        assert [e.id for e in listed] == list(self.ids)
        assert sum(e.points for e in listed) == self.points
        for exercise in listed:
            assert len(exercise.hints) == 2
            assert_section_exists(exercise.reread)
            assert all(hasattr(cl, name) for name in exercise.forbidden)
        assert set(self.right) == set(self.ids)
        assert {exercise_id for exercise_id, _, _ in self.wrong} == set(self.ids)

    def test_each_mistake_named_is_a_tested_wrong_answer(self) -> None:
        """The facilitator's guide names the mistakes each check recognises, at least one per
        exercise; ``named`` links each to the wrong answer of the table whose hint names it (by
        the text the table pins), a wrong answer of its own, which the check judges wrong with
        that text."""
        exercises = checks.exercises(self.ids[0][:2])
        assert set(self.named) == {exercise.id for exercise in exercises}
        for exercise in exercises:
            named, linked = exercise.mistakes, self.named[exercise.id]
            assert len(named) >= 1 and len(set(named)) == len(named), exercise.id
            assert list(linked) == list(named), (exercise.id, set(linked) ^ set(named))
            rows = {hint: answer for i, answer, hint in self.wrong if i == exercise.id}
            assert len(set(linked.values())) == len(linked), exercise.id  # one answer each
            for mistake, hint in linked.items():
                assert mistake == " ".join(mistake.split()) and mistake[0].islower(), mistake
                assert len(mistake) <= 90 and not mistake.endswith("."), mistake
                assert hint in rows, (exercise.id, mistake, hint)
                verdict, reports = successive_reports(exercise.id, rows[hint])
                assert verdict.status in ("failed", "error"), (mistake, verdict.message)
                assert hint in "\n".join(reports), (mistake, hint, reports)

    def test_check_not_attempted(
        self, exercise_id: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        out = check_output(exercise_id, self.stubs.get(exercise_id, stub), capsys)
        assert out.startswith(f"{exercise_id}: not attempted yet"), out
        assert "hint" not in out

    def test_check_correct(self, exercise_id: str, capsys: pytest.CaptureFixture[str]) -> None:
        out = check_output(exercise_id, self.right[exercise_id], capsys)
        points = get_exercise(exercise_id).points
        assert out.startswith(f"{exercise_id}: passed ({points}/{points} point"), out

    def test_right_answer_passes_the_grading_cases(self, exercise_id: str) -> None:
        assert_grading_passes(exercise_id, self.right[exercise_id], self.grading_seeds)

    def test_other_right_answers_pass(
        self, exercise_id: str, other_right: Callable[..., Any], capsys: pytest.CaptureFixture[str]
    ) -> None:
        points = get_exercise(exercise_id).points
        out = check_output(exercise_id, other_right, capsys)
        assert out.startswith(f"{exercise_id}: passed ({points}/{points} point"), out
        assert_grading_passes(exercise_id, other_right, self.grading_seeds)

    def test_check_incorrect_gives_the_targeted_hint(
        self,
        exercise_id: str,
        answer: Callable[..., Any],
        hint: str,
    ) -> None:
        """Three failed checks: what went wrong and on which input, then the same with the idea
        and the section to reread (in this lesson or an earlier one) under it, then with the fix
        under that too, each under a one-line header; ``hint`` is in one of them. The first fits 6
        lines of 100 columns, and none names a course file, a line of it, a private name or a class
        internal to JAX. The answer is judged once, and the three reports are what ``check`` prints
        for that verdict the first, second and third time (tests/checks/test_checks.py runs
        ``check`` itself three times over)."""
        exercise = get_exercise(exercise_id)
        verdict, outs = successive_reports(exercise_id, answer)
        assert outs[0].startswith(f"{exercise_id}: incorrect ("), outs[0]
        partial = outs[0].startswith(f"{exercise_id}: incorrect ({exercise.points}/")
        assert not partial, outs[0]  # partial credit at most
        assert "\n  input: " in outs[0]
        assert verdict.idea not in outs[0] and verdict.fix not in outs[0] + outs[1], outs[:2]
        idea = f"  hint 1/2, the idea: {verdict.idea_text()}"
        fix = f"  hint 2/2, the fix: {verdict.fix}"
        kept = outs[0].splitlines()[1:]  # what went wrong stays above the hints
        assert outs[1].splitlines()[1:] == [*kept, idea], outs[1]
        assert outs[2].splitlines()[1:] == [*kept, idea, fix], outs[2]
        assert [out.splitlines()[0].rsplit("; ", 1)[1] for out in outs] == list(NEXT_STEPS)
        assert_section_exists(verdict.reread)
        assert verdict.reread[:2] <= exercise_id[:2], verdict.reread  # never a later lesson
        assert hint in "\n".join(outs), outs
        assert screen_lines(outs[0]) <= 6, outs[0]
        # Each piece of code between a pair of backticks on one line: the panel sets what a pair
        # holds as code, and shows an unpaired one as it is.
        for text in (verdict.message, verdict.idea_text(), verdict.fix):
            unpaired = [line for line in text.splitlines() if line.count("`") % 2]
            assert not unpaired, unpaired
        for out in outs:
            assert_no_internals(out)
            assert "0x" not in out, out

    def test_every_wrong_answer_has_its_fix_applied(self) -> None:
        """Each wrong answer of the table is in ``fixed`` too, apart from the few that hold more
        than one mistake, whose fix leads to the next mistake (``SEVERAL_MISTAKES``), and each
        row of ``fixed`` is the fix of a wrong answer of the table."""
        lesson = self.ids[0][:2]
        fixed = {(exercise_id, answer) for exercise_id, answer, _ in self.fixed}
        tested = {(exercise_id, answer) for exercise_id, answer, _ in self.wrong}
        assert fixed <= tested, {(i, answer.__qualname__) for i, answer in fixed - tested}
        missing = {
            (exercise_id, answer.__qualname__)
            for exercise_id, answer, _ in self.wrong
            if (exercise_id, answer) not in fixed
        }
        assert missing == {m for m in SEVERAL_MISTAKES if m[0][:2] == lesson}, missing

    def test_a_fix_applied_as_written_passes(
        self,
        exercise_id: str,
        answer: Callable[..., Any],
        fixed: Callable[..., Any],
    ) -> None:
        """A wrong answer with its fix applied passes (a fix that makes it the lesson's right
        answer is left to ``test_check_correct``)."""
        verdict = self_check_verdict(exercise_id, fixed)
        assert verdict.status == "passed", verdict.message

    def test_an_input_row_holds_no_backtick(self, exercise_id: str) -> None:
        """A case's input is one code row of the panel, set as code whole: a backtick in it would
        show as it is."""
        cases = get_exercise(exercise_id).make_cases("check")
        assert [case.shown for case in cases if "`" in (case.shown or "")] == []

    def test_cases_are_deterministic_and_grading_differs(self, exercise_id: str) -> None:
        exercise = get_exercise(exercise_id)
        one = [fingerprint(c) for c in exercise.make_cases("grade", 5)]
        assert one == [fingerprint(c) for c in exercise.make_cases("grade", 5)]
        shown = {fingerprint(c) for c in exercise.make_cases("check")}
        for seed in (0, 5):
            graded = [fingerprint(c) for c in exercise.make_cases("grade", seed)]
            assert sum(g in shown for g in graded) < len(graded) / 2, seed
