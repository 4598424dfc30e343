"""Reading the instructor's CSV files: the roster and the overrides, each row with its line number.

A file that cannot be read, lacks a required column, or has a row with an empty required field
raises :class:`~course_lib.grade._submissions.UsageError` naming the file, the line and the problem.
"""

import csv
import io
import math
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from ._submissions import UsageError


@dataclass(frozen=True)
class RosterRow:
    """One enrolled student."""

    id: str
    name: str
    email: str = ""
    section: str = ""


@dataclass(frozen=True)
class OverrideRow:
    """One manual grade: ``points`` for ``exercise`` of ``student``, with the instructor's comment."""

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
        raise UsageError(f"{what} {path}: the header needs the column(s) {', '.join(missing)} (it has: {', '.join(header) or 'nothing'})")
    rows = []
    for record in reader:
        line = reader.line_num
        row = {(k or "").strip().lower(): unicodedata.normalize("NFC", (v or "").strip()) for k, v in record.items() if isinstance(v, str)}
        if not any(row.values()):
            continue
        empty = [c for c in required if not row.get(c)]
        if empty:
            raise UsageError(f"{what} {path}, line {line}: {', '.join(empty)} is empty")
        rows.append((line, row))
    return rows


def read_roster(path: Path) -> list[RosterRow]:
    """The students listed in a roster CSV (columns ``id,name``, optional ``email,section``)."""
    out, seen = [], {}
    for line, row in _rows(path, "roster", ("id", "name")):
        if row["id"] in seen:
            raise UsageError(f"roster {path}, line {line}: the id {row['id']!r} is already on line {seen[row['id']]}")
        seen[row["id"]] = line
        out.append(RosterRow(row["id"], row["name"], row.get("email", ""), row.get("section", "")))
    return out


def read_overrides(path: Path) -> list[OverrideRow]:
    """The rows of an overrides CSV (``student,exercise,points,comment``); points are checked for being numbers here."""
    out = []
    for line, row in _rows(path, "overrides", ("student", "exercise", "points")):
        try:
            points = float(row["points"])
        except ValueError:
            points = math.nan
        if not math.isfinite(points):
            raise UsageError(f"overrides {path}, line {line}: points {row['points']!r} is not a number")
        out.append(OverrideRow(line, row["student"], row["exercise"], points, row.get("comment", "")))
    return out
