"""Likely grader faults: more than half of a lesson's graded notebooks failing one exercise with
one and the same error (not the same wrong answer) says more about the grading environment than
about the class."""

from collections import Counter, defaultdict

from ._results import SubmissionResult

_FAILED = ("error", "timeout")
MAX_PER_LESSON = 3  # exercise sentences shown per lesson; a whole-notebook error replaces them


def likely_grader_faults(results: list[SubmissionResult]) -> list[str]:
    """One sentence per (lesson, exercise, error) that more than half of the lesson's notebooks,
    and at least two, share; where whole notebooks failed alike, that sentence alone, and at most
    :data:`MAX_PER_LESSON` exercises otherwise.

    >>> from course_tools.grade.book import ExerciseResult
    >>> broken = ExerciseResult("02.sgd_step", "sgd_step", "error", 0, 2, "PermissionError: x")
    >>> fine = ExerciseResult("02.sgd_step", "sgd_step", "passed", 2, 2, "")
    >>> notebooks = [SubmissionResult(s, "02.ipynb", "", "02", "graded", "", [e])
    ...              for s, e in (("a", broken), ("b", broken), ("c", fine))]
    >>> likely_grader_faults(notebooks)  # doctest: +NORMALIZE_WHITESPACE
    ['2 of 3 notebooks of lesson 02 failed 02.sgd_step with the same error: PermissionError: x']
    """
    per_lesson: Counter[str] = Counter()
    shared: defaultdict[tuple[str, str, str], set[tuple[str, str]]] = defaultdict(set)
    for result in results:
        if result.lesson is None:
            continue
        per_lesson[result.lesson] += 1
        who = (result.student, result.notebook)
        if result.status == "error" and result.message:
            shared[(result.lesson, "the notebook", result.message)].add(who)
        for exercise in result.exercises:
            if exercise.status in _FAILED and exercise.message:
                shared[(result.lesson, exercise.id, exercise.message)].add(who)
    found: defaultdict[str, list[str]] = defaultdict(list)
    for (lesson, what, message), notebooks in sorted(shared.items()):
        count, total = len(notebooks), per_lesson[lesson]
        if count >= 2 and 2 * count > total:
            found[lesson].append(
                f"{count} of {total} notebooks of lesson {lesson} failed {what} with the same "
                f"error: {message}"
            )
    faults = []
    for lesson, sentences in sorted(found.items()):
        whole = [s for s in sentences if " failed the notebook " in s]
        shown = whole or sentences[:MAX_PER_LESSON]
        faults += shown
        if len(sentences) > len(shown):
            faults.append(
                f"lesson {lesson}: {len(sentences) - len(shown)} more exercise(s) failed the same "
                "way"
            )
    return faults
