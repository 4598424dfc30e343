"""Grades as data: one exercise, one submitted notebook, their JSON form, and a notebook's feedback
text.

The class-wide files (one row per student, feedback folders, LMS layouts) are in ``_classbook.py``.
Nothing here depends on time or on the order submissions finished.
"""

import dataclasses
from dataclasses import asdict, dataclass, field
from typing import Any

from course_lib.checks import Exercise, exercises, round_points

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

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "ExerciseResult":
        """The result written by ``asdict`` (fields this version does not know are ignored)."""
        return cls(**{f.name: data[f.name] for f in dataclasses.fields(cls) if f.name in data})


@dataclass
class SubmissionResult:
    """One submitted notebook: ``status`` is ``graded``, or ``error`` when it could not be run at
    all."""

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
        data["points"], data["max_points"] = (
            round_points(self.points),
            round_points(self.max_points),
        )
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "SubmissionResult":
        """The result :meth:`to_json` wrote (the derived ``points`` and ``max_points`` are
        recomputed)."""
        known = {f.name for f in dataclasses.fields(cls)} - {"exercises"}
        result = cls(**{k: v for k, v in data.items() if k in known})
        result.exercises = [ExerciseResult.from_json(e) for e in data.get("exercises", [])]
        return result

    @classmethod
    def checked(cls, data: Any) -> "SubmissionResult":
        """:meth:`from_json` for data from elsewhere (a Dask worker): ``ValueError`` unless it has
        the schema.

        >>> ann = {"student": "ann", "notebook": "01_x.ipynb", "status": "graded"}
        >>> SubmissionResult.checked(ann).status
        'graded'
        >>> SubmissionResult.checked({**ann, "status": "great"})
        Traceback (most recent call last):
        ...
        ValueError: status 'great' is not graded or error
        """
        if not isinstance(data, dict):
            raise ValueError("a result is a JSON object")
        text = {"student": True, "notebook": True, "path": False, "message": False}
        for name, required in text.items():
            if not isinstance(data.get(name, None if required else ""), str):
                raise ValueError(f"{name} must be text")
        if data.get("lesson") is not None and not isinstance(data["lesson"], str):
            raise ValueError("lesson must be text or null")
        if data.get("status") not in ("graded", "error"):
            raise ValueError(f"status {data.get('status')!r} is not graded or error")
        if not _texts(data.get("notes", [])):
            raise ValueError("notes must be a list of texts")
        rows = data.get("exercises", [])
        if not isinstance(rows, list):
            raise ValueError("exercises must be a list")
        for row in rows:
            _check_exercise(row)
        return cls.from_json({"path": "", "lesson": None, "message": "", **data})


def _texts(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value == value


def _check_exercise(row: Any) -> None:
    """``ValueError`` unless ``row`` is an :class:`ExerciseResult` as ``asdict`` writes it."""
    if not isinstance(row, dict):
        raise ValueError("an exercise result is a JSON object")
    for name in ("id", "name", "message"):
        if not isinstance(row.get(name), str):
            raise ValueError(f"exercise {name} must be text")
    if row.get("status") not in STATUSES:
        raise ValueError(
            f"exercise status {row.get('status')!r} is not one of {', '.join(STATUSES)}"
        )
    if not (
        _number(row.get("points"))
        and isinstance(row.get("max_points"), int)
        and 0 <= row["points"] <= row["max_points"]
    ):
        raise ValueError("exercise points must be numbers from 0 to max_points")
    if row.get("points_if_allowed") is not None and not _number(row["points_if_allowed"]):
        raise ValueError("points_if_allowed must be a number or null")
    lists = {"parts": dict, "cases": bool, "flags": dict}
    for name, kind in lists.items():
        value = row.get(name, [])
        if not (isinstance(value, list) and all(isinstance(v, kind) for v in value)):
            raise ValueError(f"exercise {name} must be a list of {kind.__name__}")


def format_points(value: float) -> str:
    """Points as text: ``2`` for whole points, ``1.5`` or ``0.33`` for fractions.

    >>> format_points(2), format_points(1.50), format_points(2 / 3)
    ('2', '1.5', '0.67')
    """
    return str(round_points(value))


def graded_exercises(results: list[SubmissionResult]) -> list[Exercise]:
    """The exercises of the lessons graded in this batch, in lesson and notebook order."""
    lessons = sorted({r.lesson for r in results if r.lesson})
    return [e for lesson in lessons for e in exercises(lesson)]


def exercise_columns(results: list[SubmissionResult]) -> list[str]:
    """The exercise ids graded in this batch, in lesson and notebook order."""
    return [e.id for e in graded_exercises(results)]


_WORD = {
    "passed": "passed",
    "failed": "not yet right",
    "flagged": "flagged, 0 unless your instructor allows it",
    "not_attempted": "not attempted",
    "error": "error",
    "timeout": "timed out",
    "missing": "missing",
}


def exercise_feedback(e: ExerciseResult) -> list[str]:
    """The lines a feedback file gives one exercise: its verdict and points, then its message.

    >>> exercise_feedback(ExerciseResult("01.x", "x", "failed", 0, 2, "returned None"))
    ['01.x (x): not yet right, 0/2', '    returned None']
    """
    lines = [
        f"{e.id} ({e.name}): {_WORD.get(e.status, e.status)}, "
        f"{format_points(e.points)}/{format_points(e.max_points)}"
    ]
    if e.status != "passed" and e.message:
        lines += [f"    {line}" for line in e.message.splitlines()]
    return lines


def feedback_text(
    r: SubmissionResult, name: str, overrides: dict[str, tuple[float, str]] | None = None
) -> str:
    """What the student reads about one notebook; ``overrides`` maps exercise ids to the
    instructor's (points, comment)."""
    overrides = overrides or {}
    points = sum(overrides[e.id][0] if e.id in overrides else e.points for e in r.exercises)
    lines = [
        f"{r.notebook} by {name}",
        f"Score: {format_points(points)} / {format_points(r.max_points)}",
        "",
    ]
    if r.status != "graded":
        lines += [f"This notebook could not be graded: {r.message}", ""]
    for e in r.exercises:
        lines += exercise_feedback(e)
        if e.id in overrides:
            given, comment = overrides[e.id]
            lines.append(
                "    Your instructor set the points to "
                f"{format_points(given)}/{format_points(e.max_points)}"
                + (f": {comment}" if comment else ".")
            )
    if r.notes:
        lines += ["", "Notes from running the notebook:"]
        lines += [f"  - {note}" for note in r.notes]
    return "\n".join(lines) + "\n"


def summary_table(results: list[SubmissionResult]) -> str:
    """A plain-text table: one row per submission, then how many passed each exercise."""
    head = ["student", "notebook", "points", *STATUSES]
    rows = []
    for r in results:
        counts = {s: sum(e.status == s for e in r.exercises) for s in STATUSES}
        points = f"{format_points(r.points)}/{format_points(r.max_points)}"
        points += "" if r.status == "graded" else " (not run)"
        rows.append([r.student, r.notebook, points, *(str(counts[s] or "") for s in STATUSES)])
    widths = [max(len(str(row[i])) for row in [head, *rows]) for i in range(len(head))]
    lines = [
        "  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
        for row in [head, *rows]
    ]
    lines.insert(1, "-" * len(lines[0]))
    columns = exercise_columns(results)
    if columns:
        lines += ["", "exercise passed by"]
        for c in columns:
            done = [e for r in results for e in r.exercises if e.id == c]
            lines.append(f"  {c:<28} {sum(e.status == 'passed' for e in done)}/{len(done)}")
    return "\n".join(lines)
