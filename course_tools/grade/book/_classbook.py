"""The class gradebook: one row per student, with points per exercise across all notebooks.

For each exercise a student gets the best result among their notebooks (two notebooks of one lesson
never cost points). Overrides replace an exercise's points; the late penalty comes off the points
after that. A student without a graded notebook gets 0 and a status saying why: ``missing``
(enrolled, nothing found), ``empty``, ``archive_only``, ``no_notebook`` (see ``find_class``), or
``error`` when no notebook of theirs could be run.
"""

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from course_lib.checks import Exercise, exercises

from ..intake import OverrideRow, Student, UsageError, folding, student_folders
from ._journal import Graded
from ._lateness import Lateness, lateness, penalty
from ._results import ExerciseResult, format_points, round_points


@dataclass(frozen=True)
class LatePolicy:
    """The due time and the penalty (percent of the points per started day, at most ``cap``
    percent)."""

    due: datetime | None = None
    percent_per_day: float = 0.0
    cap: float = 100.0

    def to_json(self) -> dict[str, Any]:
        return {
            "due": self.due.isoformat() if self.due else None,
            "late_penalty_percent_per_day": round_points(self.percent_per_day),
            "late_penalty_cap_percent": round_points(self.cap),
        }


@dataclass
class StudentRow:
    """One student's line of the gradebook."""

    student: Student
    folder: str
    graded: list[Graded]
    best: dict[str, ExerciseResult]
    overrides: dict[str, OverrideRow] = field(default_factory=dict)
    late: Lateness | None = None
    status: str = ""
    points: float = 0.0
    penalty: float = 0.0
    max_points: float = 0.0

    @property
    def total(self) -> float:
        return round(self.points - self.penalty, 2)

    def exercise_points(self, exercise_id: str) -> float:
        if exercise_id in self.overrides:
            return self.overrides[exercise_id].points
        best = self.best.get(exercise_id)
        return best.points if best else 0

    def note(self) -> str:
        """Why a student has no points, or which notebooks could not be run."""
        if not self.graded:
            return self.student.detail or "no submission was found"
        return "; ".join(
            f"{g.result.notebook}: {g.result.message}"
            for g in self.graded
            if g.result.status == "error"
        )


@dataclass
class ClassBook:
    """Every student's row, the exercises graded, and the late policy used."""

    exercises: list[Exercise]
    rows: list[StudentRow]
    policy: LatePolicy

    @property
    def max_points(self) -> float:
        return sum(e.points for e in self.exercises)


def _status(student: Student, graded: list[Graded]) -> str:
    if graded:
        return "graded" if any(g.result.status == "graded" for g in graded) else "error"
    return student.status or "missing"


_UNTRIED = ("not_attempted", "missing")


def best_exercises(results: Iterable[ExerciseResult]) -> dict[str, ExerciseResult]:
    """Per exercise, the result with the most points; on a tie, an attempt over an untouched
    stub. A student's grade counts these, whichever notebooks they come from."""
    best: dict[str, ExerciseResult] = {}
    for e in results:
        held = best.get(e.id)
        if held is None or (e.points, e.status not in _UNTRIED) > (
            held.points,
            held.status not in _UNTRIED,
        ):
            best[e.id] = e
    return best


def find_student(students: dict[str, Student], text: str) -> Student | None:
    """The student ``text`` names: a key, an LMS id, or a name (unique, compared casefolded)."""
    if text in students:
        return students[text]
    same = [s for s in students.values() if s.lms_id == text or folding(s.name) == folding(text)]
    return same[0] if len(same) == 1 else None


def resolve_overrides(
    overrides: list[OverrideRow], students: dict[str, Student], listed: list[Exercise], source: str
) -> dict[tuple[str, str], OverrideRow]:
    """``{(student key, exercise id): row}``, or :class:`UsageError` naming the first bad row."""
    by_id = {e.id: e for e in listed}
    resolved: dict[tuple[str, str], OverrideRow] = {}
    for o in overrides:
        where = f"overrides {source}, line {o.line}"
        student = find_student(students, o.student)
        if student is None:
            raise UsageError(
                f"{where}: no student {o.student!r} in this gradebook (use the student column of "
                "gradebook.csv)"
            )
        exercise = by_id.get(o.exercise)
        if exercise is None:
            raise UsageError(
                f"{where}: no exercise {o.exercise!r} in this gradebook (it has: "
                f"{', '.join(by_id) or 'none'})"
            )
        if not 0 <= o.points <= exercise.points:
            raise UsageError(
                f"{where}: {format_points(o.points)} points for {o.exercise} is outside "
                f"0..{format_points(exercise.points)}"
            )
        if (student.key, o.exercise) in resolved:
            raise UsageError(
                f"{where}: {o.exercise} of {o.student!r} is already overridden on line "
                f"{resolved[(student.key, o.exercise)].line}"
            )
        resolved[(student.key, o.exercise)] = o
    return resolved


def build_class(
    students: dict[str, Student],
    graded: list[Graded],
    overrides: list[OverrideRow] | None = None,
    policy: LatePolicy = LatePolicy(),
    overrides_source: str = "",
) -> ClassBook:
    """The class gradebook from every student and every graded notebook.

    Raises :class:`UsageError` for an override row naming an unknown student or exercise, or points
    out of range.
    """
    lessons = sorted({g.result.lesson for g in graded if g.result.lesson})
    listed = [e for lesson in lessons for e in exercises(lesson)]
    mine: dict[str, list[Graded]] = {key: [] for key in students}
    for g in sorted(graded, key=lambda g: g.key):
        mine.setdefault(g.result.student, []).append(g)
    known = {key: students.get(key) or Student(key, key) for key in mine}
    folders = student_folders({key: s.name for key, s in known.items()})
    rows = {
        key: StudentRow(
            known[key],
            folders[key],
            mine[key],
            best_exercises(e for g in mine[key] for e in g.result.exercises),
        )
        for key in sorted(mine)
    }
    for (key, exercise_id), override in resolve_overrides(
        overrides or [], known, listed, overrides_source
    ).items():
        rows[key].overrides[exercise_id] = override
    total_max = sum(e.points for e in listed)
    for row in rows.values():
        row.status = _status(row.student, row.graded)
        row.points = round(sum(row.exercise_points(e.id) for e in listed), 2)
        row.max_points = total_max
        if row.graded:
            row.late = lateness(row.student.submitted, row.student.lms_late, policy.due)
            row.penalty = penalty(row.points, row.late, policy.percent_per_day, policy.cap)
    return ClassBook(listed, list(rows.values()), policy)
