"""Grades as data, and the files they are written to: gradebook CSV and JSON, one feedback file per notebook.

Every file is written to a temporary name in the output folder and renamed into place, so a reader
never sees half a gradebook. Nothing here depends on time or on the order submissions finished:
grading the same folder twice writes the same bytes.
"""

import csv
import io
import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from course_lib._atomic import write_text_atomic
from course_lib.checks import Exercise
from course_lib.checks._spec import round_points

STATUSES = ("passed", "failed", "flagged", "not_attempted", "error", "timeout", "missing")


@dataclass
class ExerciseResult:
    """One exercise of one submission.

    ``points`` may be a fraction (partial credit, rounded to 2 decimals). ``parts`` lists the
    exercise's named parts (``{"name", "passed"}``), ``cases`` whether each grading case was right.
    A ``flagged`` result (a forbidden call, 0 points) lists its calls in ``flags`` (``{"reached",
    "kind", "cell", "line", "text"}``) and what it would score if allowed in ``points_if_allowed``.
    """

    id: str
    name: str
    status: str
    points: int | float
    max_points: int
    message: str
    parts: list[dict[str, Any]] = field(default_factory=list)
    cases: list[bool] = field(default_factory=list)
    flags: list[dict[str, Any]] = field(default_factory=list)
    points_if_allowed: int | float | None = None


@dataclass
class SubmissionResult:
    """One submitted notebook: ``status`` is ``graded``, or ``error`` when it could not be run at all."""

    student: str
    notebook: str
    path: str
    lesson: str | None
    status: str
    message: str
    exercises: list[ExerciseResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def points(self) -> int | float:
        return round_points(sum(e.points for e in self.exercises))

    @property
    def max_points(self) -> int:
        return sum(e.max_points for e in self.exercises)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["points"], data["max_points"] = self.points, self.max_points
        return data


_UNSAFE = re.compile(r"[^A-Za-z0-9._@+-]+")


def safe_name(text: str) -> str:
    """A file name made from a student or notebook name (no folders, no hidden files)."""
    name = _UNSAFE.sub("_", text).strip("._") or "unnamed"
    return name[:120]


def graded_exercises(results: list[SubmissionResult]) -> list[Exercise]:
    """The exercises of the lessons graded in this batch, in lesson and notebook order."""
    from course_lib.checks import exercises

    lessons = sorted({r.lesson for r in results if r.lesson})
    return [e for lesson in lessons for e in exercises(lesson)]


def exercise_columns(results: list[SubmissionResult]) -> list[str]:
    """The exercise ids graded in this batch, in lesson and notebook order."""
    return [e.id for e in graded_exercises(results)]


def gradebook_csv(results: list[SubmissionResult]) -> str:
    columns = exercise_columns(results)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["student", "notebook", "lesson", "status", *columns, "points", "max_points", "message"])
    for r in results:
        by_id = {e.id: e.points for e in r.exercises}
        row = [by_id.get(c, "") for c in columns]
        writer.writerow([r.student, r.notebook, r.lesson or "", r.status, *row, r.points, r.max_points, r.message])
    return out.getvalue()


def gradebook_json(results: list[SubmissionResult], settings: dict[str, Any]) -> str:
    listed = graded_exercises(results)
    document = {
        "grader": settings,
        "exercises": {e.id: {"name": e.name, "title": e.title, "points": e.points} for e in listed},
        "submissions": [r.to_json() for r in results],
    }
    return json.dumps(document, indent=1, ensure_ascii=False) + "\n"


_WORD = {
    "passed": "passed",
    "failed": "not yet right",
    "flagged": "flagged, 0 unless your instructor allows it",
    "not_attempted": "not attempted",
    "error": "error",
    "timeout": "timed out",
    "missing": "missing",
}


def feedback_text(r: SubmissionResult) -> str:
    lines = [f"{r.notebook} by {r.student}", f"Score: {r.points} / {r.max_points}", ""]
    if r.status != "graded":
        lines += [f"This notebook could not be graded: {r.message}", ""]
    for e in r.exercises:
        lines.append(f"{e.id} ({e.name}): {_WORD.get(e.status, e.status)}, {e.points}/{e.max_points}")
        if e.status != "passed" and e.message:
            lines += [f"    {line}" for line in e.message.splitlines()]
    if r.notes:
        lines += ["", "Notes from running the notebook:"]
        lines += [f"  - {note}" for note in r.notes]
    return "\n".join(lines) + "\n"


def feedback_path(out: Path, r: SubmissionResult) -> Path:
    stem = r.notebook[:-6] if r.notebook.endswith(".ipynb") else r.notebook
    return out / "feedback" / safe_name(r.student) / f"{safe_name(stem)}.txt"


def write_all(out: Path, results: list[SubmissionResult], settings: dict[str, Any]) -> None:
    """Feedback files first, then the two gradebooks, each replaced atomically."""
    for r in results:
        write_text_atomic(feedback_path(out, r), feedback_text(r))
    write_text_atomic(out / "gradebook.json", gradebook_json(results, settings))
    write_text_atomic(out / "gradebook.csv", gradebook_csv(results))


def summary_table(results: list[SubmissionResult]) -> str:
    """A plain-text table: one row per submission, then how many passed each exercise."""
    head = ["student", "notebook", "points", *STATUSES]
    rows = []
    for r in results:
        counts = {s: sum(e.status == s for e in r.exercises) for s in STATUSES}
        points = f"{r.points}/{r.max_points}" if r.status == "graded" else f"{r.points}/{r.max_points} (not run)"
        rows.append([r.student, r.notebook, points, *(str(counts[s] or "") for s in STATUSES)])
    widths = [max(len(str(row[i])) for row in [head, *rows]) for i in range(len(head))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip() for row in [head, *rows]]
    lines.insert(1, "-" * len(lines[0]))
    columns = exercise_columns(results)
    if columns:
        lines += ["", "exercise passed by"]
        for c in columns:
            done = [e for r in results for e in r.exercises if e.id == c]
            lines.append(f"  {c:<28} {sum(e.status == 'passed' for e in done)}/{len(done)}")
    return "\n".join(lines)
