"""``report.html``: how the class did, in one self-contained page for the instructor.

Pass rate per exercise, totals by range, the most frequent hint per exercise, notebooks with
errors outside the exercise cells, students without a graded notebook, late students, and the
similarity section (see ``_similarity``). Every count is of students, not notebooks. The two
charts are tables whose shares are written as text, with a bar drawn behind each; nothing in the
page depends on the time or on random ids, so the same gradebook gives the same bytes.
"""

import html
import math
from collections import Counter
from collections.abc import Sequence

from course_lib.checks import code_spans_html

from ..._course import solutions_folder
from ._answers import solution_regions
from ._classbook import ClassBook, StudentRow
from ._faults import likely_grader_faults
from ._results import format_points
from ._similarity import similar_pairs, solution_copies

MAX_PAIRS = 100
_STYLE = (
    "body{font-family:sans-serif;max-width:60em;margin:2em auto;color:#222}"
    "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.2em "
    ".5em;text-align:left;vertical-align:top}"
    "th{background:#f3f3f3}.num{text-align:right}"
    "td.bar{min-width:12em;background:linear-gradient(to right,#c5d6ea var(--share),transparent 0)}"
    ".fault{border:2px solid #b00;background:#fff4f4;padding:0 1em}"
)


def _share(part: int, whole: int) -> str:
    """A table cell that writes ``part / whole`` as a percentage, with a bar of that width behind
    it: the text alone tells the share.

    >>> _share(2, 3)
    "<td class='bar' style='--share:67%'>67%</td>"
    >>> _share(0, 0)
    '<td>no one submitted</td>'
    """
    if not whole:
        return "<td>no one submitted</td>"
    percent = round(100 * part / whole)
    return f"<td class='bar' style='--share:{percent}%'>{percent}%</td>"


def _total_ranges(totals: list[float], top: float) -> list[tuple[str, int]]:
    """How many of ``totals`` fall in each range of points from 0 to ``top``: whole points while
    ``top`` is at most 20, else 20 equal ranges. Each range holds its lower end, the last one
    ``top`` too.

    >>> _total_ranges([0, 1.5, 2, 2], 2)
    [('0 to under 1', 1), ('1 to 2', 3)]
    >>> _total_ranges([7.5], 7.5)[-1], _total_ranges([30], 40)[-1]
    (('7 to 7.5', 1), ('38 to 40', 0))
    """
    top = max(top, 1)
    width = 1 if top <= 20 else top / 20
    count = math.ceil(top / width)
    found = Counter(min(int(total // width), count - 1) for total in totals)
    return [
        (f"{format_points(i * width)} to under {format_points((i + 1) * width)}", found[i])
        for i in range(count - 1)
    ] + [(f"{format_points((count - 1) * width)} to {format_points(top)}", found[count - 1])]


def _table(head: list[str], rows: list[list[str]], shares: Sequence[str] = ()) -> str:
    """A table of ``rows`` of text (`code` in backticks set as code); ``shares``, cells made by
    :func:`_share`, one per row, make its last column."""
    if not rows:
        return "<p>None.</p>"
    ends = shares or [""] * len(rows)
    cells = "".join(
        "<tr>" + "".join(f"<td>{code_spans_html(c)}</td>" for c in row) + end + "</tr>"
        for row, end in zip(rows, ends, strict=True)
    )
    return (
        "<table><tr>"
        + "".join(f"<th>{html.escape(h)}</th>" for h in head)
        + "</tr>"
        + cells
        + "</table>"
    )


def _who(row: StudentRow) -> str:
    return f"{row.student.name} ({row.student.key})"


def report_html(book: ClassBook) -> str:
    """The class report as one HTML page."""
    graded = [row for row in book.rows if row.graded]
    rates, hints = [], []
    for e in book.exercises:
        lesson = e.id.split(".", 1)[0]
        took = [row for row in graded if any(g.result.lesson == lesson for g in row.graded)]
        passed = sum(
            row.best.get(e.id) is not None and row.best[e.id].status == "passed" for row in took
        )
        rates.append((e.id, passed, len(took)))
        messages = Counter(
            row.best[e.id].message.splitlines()[0]
            for row in took
            if e.id in row.best
            and row.best[e.id].status not in ("passed", "not_attempted")
            and row.best[e.id].message
        )
        if messages:
            text, count = sorted(messages.items(), key=lambda kv: (-kv[1], kv[0]))[0]
            hints.append([e.id, str(count), text])
    ranges = _total_ranges([row.total for row in book.rows], book.max_points)
    statuses = Counter(row.status for row in book.rows)
    outside = [
        [_who(row), g.result.notebook, "; ".join(g.outside_errors)]
        for row in graded
        for g in row.graded
        if g.outside_errors
    ]
    absent = [[_who(row), row.status, row.note()] for row in book.rows if not row.graded]
    late = [
        [_who(row), row.late.describe(), format_points(row.penalty)]
        for row in book.rows
        if row.late
    ]
    names = {row.student.key: _who(row) for row in book.rows}
    answers: dict[str, dict[str, str]] = {}
    for row in graded:
        mine: dict[str, str] = {}
        for g in row.graded:
            attempted = {
                e.id for e in g.result.exercises if e.status not in ("not_attempted", "missing")
            }
            mine.update(
                {e: text for e, text in g.answers.items() if e in attempted and e not in mine}
            )
        answers[row.student.key] = mine
    pairs, common = similar_pairs(answers)
    copies = solution_copies(answers, solution_regions(solutions_folder()))
    faults = likely_grader_faults([g.result for row in graded for g in row.graded])
    warning = (
        "<div class='fault'><h2>Likely grader fault: check before uploading</h2><p>Most notebooks "
        "of a lesson failed in one and the same way, which points at the grading environment "
        "rather than at the students:</p><ul>"
        + "".join(f"<li>{html.escape(fault)}</li>" for fault in faults)
        + "</ul></div>"
        if faults
        else ""
    )
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>Class report</title>",
        f"<style>{_STYLE}</style></head><body><h1>Class report</h1>",
        warning,
        f"<p>{len(book.rows)} students: "
        + ", ".join(f"{n} {html.escape(s)}" for s, n in sorted(statuses.items()))
        + ". "
        f"Maximum {format_points(book.max_points)} points; mean total "
        f"{format_points(sum(r.total for r in book.rows) / len(book.rows)) if book.rows else '0'}"
        ".</p>",
        "<h2>Pass rate per exercise</h2>",
        _table(
            ["exercise", "students passed", "of students who submitted the lesson", "pass rate"],
            [[i, str(p), str(n)] for i, p, n in rates],
            [_share(p, n) for _, p, n in rates],
        ),
        "<h2>Totals</h2>",
        _table(
            [f"total points (of {format_points(book.max_points)})", "students", "of the class"],
            [[points, str(n)] for points, n in ranges],
            [_share(n, len(book.rows)) for _, n in ranges],
        ),
        "<h2>Most frequent hint per exercise</h2>",
        _table(["exercise", "students", "hint"], hints),
        "<h2>Notebooks with errors outside the exercises</h2>",
        _table(["student", "notebook", "what happened"], outside),
        "<h2>Students without a graded notebook</h2>",
        _table(["student", "status", "why"], absent),
        "<h2>Late</h2>",
        _table(["student", "lateness", "penalty"], late),
        "<h2>Similar answers (for review; grades are not changed)</h2>",
        "<p>Answers are compared without comments, docstrings and layout. Short answers are often "
        "the same by chance.</p>",
        _table(
            ["student", "student", "exercises (similarity)"],
            [
                [
                    names.get(p.a, p.a),
                    names.get(p.b, p.b),
                    ", ".join(
                        f"{e} ({'identical' if r == 1.0 else format_points(r)})"
                        for e, r in p.matches
                    ),
                ]
                for p in pairs[:MAX_PAIRS]
            ],
        ),
        f"<p>{len(pairs) - MAX_PAIRS} more pairs, with fewer matching exercises, are not shown.</p>"
        if len(pairs) > MAX_PAIRS
        else "",
        "<h3>Answers shared by many students</h3>",
        _table(
            ["exercise", "students with one same answer"],
            [
                [e, "; ".join(", ".join(names.get(s, s) for s in group) for group in groups)]
                for e, groups in sorted(common.items())
            ],
        ),
        "<h3>Answers that contain the course's solution (solutions/)</h3>",
        _table(
            ["student", "exercises"], [[names.get(s, s), ", ".join(ex)] for s, ex in copies.items()]
        ),
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"
