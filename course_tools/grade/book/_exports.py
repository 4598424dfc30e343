"""The gradebook in an LMS's own import layout: Canvas's gradebook CSV, Moodle's grading worksheet.

Canvas (Grades > Import): columns ``Student, ID, SIS User ID, SIS Login ID, Section`` and one
column per assignment titled ``Name (assignment id)``, then one row per student; a second row
``Points Possible`` gives the assignment's maximum. Canvas finds the student by ``ID`` (its user id,
known for a Canvas download) or ``SIS User ID`` (the roster id otherwise), and the assignment by the
id in parentheses (without one it creates a new assignment of that name).

Moodle (Assignment > Upload grading worksheet, with "Offline grading worksheet" enabled): the
worksheet's columns ``Identifier, Full name, Email address, Status, Grade, Maximum Grade, Grade can
be changed, Last modified (submission), Last modified (grade), Feedback comments``. Moodle finds the
student by ``Identifier`` (``Participant N``, the id in a Moodle download's folder names) and reads
``Grade`` and ``Feedback comments``; the other columns are for the reader.

Both get the student's total (after overrides and late penalty); a student without a submission gets
0.
"""

from __future__ import annotations

import csv
import io
from typing import TYPE_CHECKING

from ._classbook import ClassBook, StudentRow
from ._results import format_points

if TYPE_CHECKING:
    from _csv import Writer  # what csv.writer returns; the csv module does not export its type

FORMATS = ("canvas", "moodle")
CANVAS_HEAD = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
MOODLE_HEAD = [
    "Identifier",
    "Full name",
    "Email address",
    "Status",
    "Grade",
    "Maximum Grade",
    "Grade can be changed",
    "Last modified (submission)",
    "Last modified (grade)",
    "Feedback comments",
]


def _writer() -> tuple[io.StringIO, Writer]:
    out = io.StringIO()
    return out, csv.writer(out, lineterminator="\n")


def canvas_csv(book: ClassBook, assignment: str) -> str:
    """Canvas's gradebook import CSV with one assignment column, ``assignment`` (``Name (id)``)."""
    out, writer = _writer()
    writer.writerow([*CANVAS_HEAD, assignment])
    writer.writerow(["Points Possible", "", "", "", "", format_points(book.max_points)])
    for row in book.rows:
        s = row.student
        canvas_id = s.lms_id if s.lms == "canvas" else ""
        sis = s.key if s.key != canvas_id else ""
        writer.writerow([s.name, canvas_id, sis, "", s.section, format_points(row.total)])
    return out.getvalue()


def _comment(row: StudentRow) -> str:
    words = [f"{format_points(row.total)}/{format_points(row.max_points)}"]
    if row.penalty and row.late:
        words.append(f"{format_points(row.penalty)} off for being {row.late.describe()}")
    if not row.graded:
        words.append(row.note())
    words += [
        f"{e}: set to {format_points(o.points)}" + (f" ({o.comment})" if o.comment else "")
        for e, o in sorted(row.overrides.items())
    ]
    return "; ".join(words)


def moodle_csv(book: ClassBook) -> str:
    """Moodle's offline grading worksheet, filled in."""
    out, writer = _writer()
    writer.writerow(MOODLE_HEAD)
    for row in book.rows:
        s = row.student
        identifier = f"Participant {s.lms_id}" if s.lms == "moodle" else s.key
        status = "Submitted for grading" if row.graded else "No submission"
        writer.writerow(
            [
                identifier,
                s.name,
                s.email,
                status,
                format_points(row.total),
                format_points(row.max_points),
                "Yes",
                s.submitted or "-",
                "-",
                _comment(row),
            ]
        )
    return out.getvalue()


def lms_files(book: ClassBook, formats: list[str], assignment: str) -> dict[str, str]:
    """File name -> text for each requested LMS layout."""
    files = {}
    if "canvas" in formats:
        files["gradebook-canvas.csv"] = canvas_csv(book, assignment)
    if "moodle" in formats:
        files["gradebook-moodle.csv"] = moodle_csv(book)
    return files
