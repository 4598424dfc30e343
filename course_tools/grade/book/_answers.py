"""The answers in a notebook, normalised for comparison: what the similarity report reads.

An answer is the source of an exercise cell with comments, docstrings and layout taken out (parsed
and printed back by :mod:`ast`), so two cells that differ only there compare equal. The course's own
answers are the regions between ``### BEGIN SOLUTION`` and ``### END SOLUTION`` in ``solutions/``.
"""

import ast
import re
import textwrap
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from ..._notebook_files import NotebookError, course_metadata, read_notebook
from ..intake import detect_lesson, plan_cells

_COMMENT = re.compile(r"#.*$", re.MULTILINE)
_SPACE = re.compile(r"\s+")


@dataclass
class AnswerSheet:
    """A notebook's answers by exercise id, and the indexes of its exercise cells."""

    answers: dict[str, str] = field(default_factory=dict)
    exercise_cells: list[int] = field(default_factory=list)


def _drop_docstrings(tree: ast.AST) -> None:
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(body, list)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]  # type: ignore[attr-defined]  # a def or class node


def normalise(source: str) -> str:
    """``source`` without comments, docstrings and layout.

    >>> answer = normalise("def f(x):\\n    '''doc'''\\n    return  x+1  # add one")
    >>> answer == normalise("def f(x): return x + 1")
    True
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return _SPACE.sub(" ", _COMMENT.sub("", source)).strip()
    _drop_docstrings(tree)
    return ast.unparse(tree)


def lines_of(normalised: str) -> tuple[str, ...]:
    """The stripped, non-blank lines of a normalised answer (to find a solution region inside it).

    >>> lines_of(normalise("def f(a, b):\\n    return a+b"))
    ('def f(a, b):', 'return a + b')
    """
    return tuple(line.strip() for line in normalised.splitlines() if line.strip())


def answer_sheet(data: bytes, notebook: str) -> AnswerSheet:
    """The answers of the notebook in ``data``; an empty sheet for a file that is not a gradable
    notebook."""
    try:
        nb = read_notebook(data, schema=False)
    except NotebookError:
        return AnswerSheet()
    lesson = detect_lesson(nb, notebook)
    if lesson is None:
        return AnswerSheet()
    plan = plan_cells(nb, lesson)
    sources = {c.index: c.source for c in plan.cells}
    answers = {
        e: normalise(sources[i]) for e, i in sorted(plan.exercise_cells.items()) if i in sources
    }
    return AnswerSheet(answers, sorted(set(plan.exercise_cells.values())))


@cache
def solution_regions(folder: Path) -> dict[str, tuple[str, ...]]:
    """The course's answer region of each exercise (its code lines), read from the solution
    notebooks in ``folder``; empty when there are none."""
    regions: dict[str, tuple[str, ...]] = {}
    for path in sorted(folder.glob("[0-9][0-9]_*.ipynb")):
        try:
            cells = read_notebook(path, schema=False).cells
        except NotebookError:
            continue
        for cell in cells:
            exercise = course_metadata(cell).get("exercise")
            source = cell.source
            _, begin, rest = source.partition("### BEGIN SOLUTION")
            region, end, _ = rest.partition("### END SOLUTION")
            if isinstance(exercise, str) and begin and end:
                regions[exercise] = lines_of(normalise(textwrap.dedent(region)))
    return regions


_CELL_NOTE = re.compile(r"\bcell (\d+)\b")


def outside_errors(notes: list[str], exercise_cells: list[int]) -> list[str]:
    """The notes about cells that failed outside the exercise cells (a broken import, a stray loop).

    >>> outside_errors(["cell 3 raised NameError: x", "cell 7 raised KeyError"], [7])
    ['cell 3 raised NameError: x']
    """
    found = []
    for note in notes:
        match = _CELL_NOTE.search(note)
        if match and int(match[1]) not in exercise_cells:
            found.append(note)
    return found
