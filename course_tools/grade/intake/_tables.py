"""Reading the instructor's CSV files: the roster and the overrides, each row with its line number.

A file that cannot be read, lacks a required column, or has a row with an empty required field
raises :class:`UsageError` naming the file, the line and the problem.
"""

import csv
import io
import math
import unicodedata
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from ._usage import UsageError


@dataclass(frozen=True)
class RosterRow:
    """One enrolled student."""

    id: str
    name: str
    email: str = ""
    section: str = ""


@dataclass(frozen=True)
class OverrideRow:
    """One manual grade: ``points`` for ``exercise`` of ``student``, with the instructor's
    comment."""

    line: int
    student: str
    exercise: str
    points: float
    comment: str


def _rows(path: Path, what: str, required: tuple[str, ...]) -> list[tuple[int, dict[str, str]]]:
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except OSError as error:
        raise UsageError(f"{what} {path}: cannot be read ({error.strerror or error})") from None
    except UnicodeDecodeError:
        raise UsageError(f"{what} {path}: is not UTF-8 text (save it as 'CSV UTF-8')") from None
    reader = csv.DictReader(io.StringIO(text))
    header = [h.strip().lower() for h in reader.fieldnames or []]
    missing = [c for c in required if c not in header]
    if missing:
        raise UsageError(
            f"{what} {path}: the header needs the column(s) {', '.join(missing)} (it has: "
            f"{', '.join(header) or 'nothing'})"
        )
    rows = []
    for record in reader:
        line = reader.line_num
        row = {
            (k or "").strip().lower(): unicodedata.normalize("NFC", (v or "").strip())
            for k, v in record.items()
            if isinstance(v, str)
        }
        if not any(row.values()):
            continue
        empty = [c for c in required if not row.get(c)]
        if empty:
            raise UsageError(f"{what} {path}, line {line}: {', '.join(empty)} is empty")
        rows.append((line, row))
    return rows


def read_roster(path: Path) -> list[RosterRow]:
    """The students listed in a roster CSV (columns ``id,name``, optional ``email,section``)."""
    out: list[RosterRow] = []
    seen: dict[str, int] = {}
    for line, row in _rows(path, "roster", ("id", "name")):
        if row["id"] in seen:
            raise UsageError(
                f"roster {path}, line {line}: the id {row['id']!r} is already on line "
                f"{seen[row['id']]}"
            )
        seen[row["id"]] = line
        out.append(RosterRow(row["id"], row["name"], row.get("email", ""), row.get("section", "")))
    return out


def read_overrides(path: Path) -> list[OverrideRow]:
    """The rows of an overrides CSV (``student,exercise,points,comment``); points are checked for
    being numbers here."""
    out = []
    for line, row in _rows(path, "overrides", ("student", "exercise", "points")):
        try:
            points = float(row["points"])
        except ValueError:
            points = math.nan
        if not math.isfinite(points):
            raise UsageError(
                f"overrides {path}, line {line}: points {row['points']!r} is not a number"
            )
        out.append(
            OverrideRow(line, row["student"], row["exercise"], points, row.get("comment", ""))
        )
    return out


MOODLE_TIME = (
    "%A, %d %B %Y, %I:%M %p"  # "Wednesday, 2 December 2026, 8:30 AM", the worksheet's English form
)


def _moment(text: str) -> datetime:
    for parse in (datetime.fromisoformat, lambda t: datetime.strptime(t, MOODLE_TIME)):
        try:
            when = parse(text)
        except ValueError:
            continue
        return when if when.tzinfo else when.astimezone()
    raise ValueError(text)


def read_submission_times(path: Path) -> dict[str, str]:
    """Student id -> ISO submission time, from ``student,submitted`` (ISO 8601) or a Moodle grading
    worksheet.

    In a worksheet the id is the number of ``Participant N`` and the time is ``Last modified
    (submission)``; a ``-`` (no submission) is skipped. Times without an offset are local time.
    """
    try:
        header = path.read_text(encoding="utf-8-sig").splitlines()[:1]
    except (OSError, UnicodeDecodeError) as error:
        raise UsageError(f"submission times {path}: cannot be read ({error})") from None
    moodle = bool(header) and "identifier" in header[0].lower()
    required = ("identifier", "last modified (submission)") if moodle else ("student", "submitted")
    times = {}
    for line, row in _rows(path, "submission times", required[:1]):
        text = row.get(required[1], "")
        if not text or text == "-":
            continue
        student = (
            row[required[0]].removeprefix("Participant ").strip() if moodle else row[required[0]]
        )
        try:
            times[student] = _moment(text).isoformat(timespec="seconds")
        except ValueError:
            raise UsageError(
                f"submission times {path}, line {line}: {text!r} is not a time (ISO 8601, or "
                f"Moodle's '{MOODLE_TIME}')"
            ) from None
    return times
