"""Writing the class gradebook: ``gradebook.csv``, ``gradebook.json`` and the feedback folders.

Each file is replaced atomically, and only when its bytes change, so a re-run that grades one
student leaves every other student's files untouched. Feedback files an earlier run wrote that
no longer belong to anyone (a student's folder renamed to tell two names apart) are removed.
"""

import csv
import io
import json
from pathlib import Path
from typing import Any

from course_lib._atomic import write_text_atomic

from ..intake import safe_name, student_folders
from ._classbook import ClassBook, StudentRow
from ._results import feedback_text, format_points, round_points

SUMMARY = "_summary.txt"
CSV_HEAD = ["student", "name", "section", "email", "status", "submitted", "late_by_hours"]
CSV_TAIL = ["points", "late_penalty", "total", "max_points", "notes"]


def gradebook_csv(book: ClassBook) -> str:
    """One row per student: who, status, lateness, points per exercise, points, penalty, total,
    maximum."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    ids = [e.id for e in book.exercises]
    writer.writerow([*CSV_HEAD, *ids, *CSV_TAIL])
    for row in book.rows:
        s = row.student
        late = (
            row.late.hours()
            if row.late and row.late.seconds is not None
            else ("late" if row.late else "")
        )
        cells = [format_points(row.exercise_points(i)) for i in ids]
        writer.writerow(
            [
                s.key,
                s.name,
                s.section,
                s.email,
                row.status,
                s.submitted or "",
                late,
                *cells,
                format_points(row.points),
                format_points(row.penalty),
                format_points(row.total),
                format_points(row.max_points),
                row.note(),
            ]
        )
    return out.getvalue()


def feedback_files(book: ClassBook) -> dict[str, str]:
    """Relative path -> text of every feedback file: one per notebook and a summary per student."""
    files: dict[str, str] = {}
    for row in book.rows:
        stems = student_folders(
            {g.result.notebook: g.result.notebook.removesuffix(".ipynb") for g in row.graded}
        )
        overrides = {e: (o.points, o.comment) for e, o in row.overrides.items()}
        for g in row.graded:
            mine = {e.id: overrides[e.id] for e in g.result.exercises if e.id in overrides}
            files[f"feedback/{row.folder}/{safe_name(stems[g.result.notebook])}.txt"] = (
                feedback_text(g.result, row.student.name, mine)
            )
        files[f"feedback/{row.folder}/{SUMMARY}"] = summary_text(book, row)
    return files


def summary_text(book: ClassBook, row: StudentRow) -> str:
    """A student's total, lateness and points per exercise."""
    s = row.student
    lines = [
        f"{s.name} ({s.key})" + (f", section {s.section}" if s.section else ""),
        f"Total: {format_points(row.total)} / {format_points(row.max_points)}",
    ]
    if row.penalty:
        lines.append(
            f"  {format_points(row.points)} points, less {format_points(row.penalty)} for being "
            f"{row.late.describe() if row.late else 'late'}"
        )
    elif row.late:
        lines.append(f"  {row.late.describe()[0].upper()}{row.late.describe()[1:]}")
    if not row.graded:
        lines += ["", f"No notebook of yours was graded: {row.note()}."]
    lines.append("")
    for e in book.exercises:
        given = row.overrides.get(e.id)
        extra = (
            f" (set by your instructor{': ' + given.comment if given and given.comment else ''})"
            if given
            else ""
        )
        lines.append(
            f"{e.id} ({e.name}): "
            f"{format_points(row.exercise_points(e.id))}/{format_points(e.points)}{extra}"
        )
    if row.graded:
        lines += ["", "Notebooks graded: " + ", ".join(g.result.notebook for g in row.graded)]
    return "\n".join(lines) + "\n"


def gradebook_json(
    book: ClassBook,
    settings: dict[str, Any],
    feedback: dict[str, list[str]],
    canary: dict[str, Any] | None = None,
) -> str:
    """The record: settings, the canary's result, late policy, exercises, students (with their
    grade) and every graded notebook."""
    students = []
    for row in book.rows:
        grade = {
            "status": row.status,
            "points": round_points(row.points),
            "late_penalty": round_points(row.penalty),
            "total": round_points(row.total),
            "max_points": round_points(row.max_points),
            "late_by_seconds": row.late.seconds if row.late else None,
            "late": row.late is not None,
            "exercises": {e.id: round_points(row.exercise_points(e.id)) for e in book.exercises},
            "overrides": {
                e: {"points": round_points(o.points), "comment": o.comment}
                for e, o in sorted(row.overrides.items())
            },
        }
        students.append(
            {
                **row.student.to_json(),
                "folder": row.folder,
                "feedback": feedback[row.student.key],
                "grade": grade,
            }
        )
    document = {
        "grader": settings,
        **({"canary": canary} if canary is not None else {}),
        "class": book.policy.to_json(),
        "exercises": {
            e.id: {"name": e.name, "title": e.title, "points": e.points} for e in book.exercises
        },
        "students": students,
        "submissions": [g.to_json() for row in book.rows for g in row.graded],
    }
    return json.dumps(document, indent=1, ensure_ascii=False) + "\n"


def write_if_changed(path: Path, text: str) -> None:
    """Replace ``path`` atomically with ``text``, unless it already holds exactly that."""
    try:
        if path.read_text(encoding="utf-8") == text:
            return
    except (OSError, UnicodeDecodeError):
        pass
    write_text_atomic(path, text)


def write_class(
    out: Path,
    book: ClassBook,
    settings: dict[str, Any],
    extra: dict[str, str],
    stale: set[str],
    canary: dict[str, Any] | None = None,
) -> None:
    """Feedback first, then the extra files (LMS layouts, report), then the two gradebooks; old
    feedback removed last. ``canary`` is what the run's canary found (``gradebook.json`` keeps
    it)."""
    files = feedback_files(book)
    for relative, text in files.items():
        write_if_changed(out / relative, text)
    by_student = {
        row.student.key: sorted(f for f in files if f.startswith(f"feedback/{row.folder}/"))
        for row in book.rows
    }
    for relative, text in extra.items():
        write_if_changed(out / relative, text)
    write_if_changed(out / "gradebook.json", gradebook_json(book, settings, by_student, canary))
    write_if_changed(out / "gradebook.csv", gradebook_csv(book))
    for relative in sorted(stale - set(files)):
        path = out / relative
        if relative.startswith("feedback/") and ".." not in Path(relative).parts:
            path.unlink(missing_ok=True)
            try:
                path.parent.rmdir()
            except OSError:
                pass
