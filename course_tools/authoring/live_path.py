"""A lesson's live path, what a workshop teaches of it, and the minutes its session takes.

Each lesson is written for self-study and is longer than a workshop has time for. The parts a
workshop skips are its *going-further* sections, marked in the notebook so that a reader and a
test both see them:

* a going-further section is a run of cells that all carry the cell tag `GOING_FURTHER_TAG`;
* its first cell is a markdown cell whose first line is a heading that begins
  `GOING_FURTHER_HEADING` (``### Going further: the persistent cache``);
* the cell after it, if any, is a markdown cell that starts with a heading, so that a reader
  sees where the live path resumes;
* no live code cell uses a name that only a going-further cell defined
  (`names_from_going_further`), so a workshop that skips them still runs.

Everything else is the **live path**. The session it takes is computed, never typed, by the
rule of `session_time`: its words read at `WORDS_PER_MINUTE`, `MINUTES_PER_CODE_CELL` for each
code cell run and read, and each core exercise's ``Exercise.minutes``. An exercise is *optional*
when the section its hints send the learner back to (``Exercise.reread``) is going further:
fast finishers do it, the room does not wait for it. `SESSION_BUDGETS` caps each lesson's
session, and ``tests/authoring/test_live_path.py`` holds every lesson to it;
``python -m course_tools.authoring.live_path`` prints each lesson's live path against its budget.

>>> from nbformat.v4 import new_notebook, new_markdown_cell, new_code_cell
>>> nb = new_notebook(cells=[
...     new_markdown_cell("# 01 Leaves\\n\\n" + "word " * 200), new_code_cell("x = 1"),
...     new_markdown_cell("### Going further: more", metadata={"tags": ["going-further"]}),
...     new_code_cell("y = 2", metadata={"tags": ["going-further"]})])
>>> live_path(nb)
LivePath(words=202, code_cells=1, going_further=('Going further: more',))
"""

from __future__ import annotations

import argparse
import ast
import math
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from nbformat import NotebookNode

from course_lib.checks import Exercise, exercises

from .._notebook_files import (
    NotebookError,
    cell_label,
    course_metadata,
    display_path,
    markdown_headings,
    read_notebook,
)
from .launch import with_badge

__all__ = [
    "GOING_FURTHER_HEADING",
    "GOING_FURTHER_TAG",
    "MINUTES_PER_CODE_CELL",
    "SESSION_BUDGETS",
    "WORDS_PER_MINUTE",
    "LivePath",
    "SessionTime",
    "going_further_sections",
    "live_path",
    "main",
    "names_from_going_further",
    "optional_exercises",
    "session_time",
]

GOING_FURTHER_TAG = "going-further"
"""The cell tag every cell of a going-further section carries."""
GOING_FURTHER_HEADING = "Going further:"
"""How the heading that opens a going-further section begins."""
WORDS_PER_MINUTE = 100
"""Words of a lesson a room reads and talks over in a minute: half a reader's pace alone."""
MINUTES_PER_CODE_CELL = 1
"""Minutes to run a code cell and read its output with the room."""
SESSION_BUDGETS = {
    "01": 75,
    "02": 90,
    "03": 90,
    "04": 90,
    "05": 95,
    "06": 105,
    "07": 120,
    "08": 100,
    "09": 95,
}
"""The longest session each lesson may take, live path and core exercises, in minutes. A lesson
that grows past its budget moves a section to going further, or makes the case for more time."""
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_WORD = re.compile(r"\w")
_HEADING_LINE = re.compile(r"#{1,6} ")


@dataclass(frozen=True)
class LivePath:
    """What a workshop does of a lesson: the words it reads, the code cells it runs, and the
    headings of the going-further sections it skips."""

    words: int
    code_cells: int
    going_further: tuple[str, ...]


@dataclass(frozen=True)
class SessionTime:
    """A lesson's session by the rule of `session_time`: the minutes of each part, and the whole
    rounded up to 5 minutes."""

    reading: int
    running: int
    exercises: int

    @property
    def minutes(self) -> int:
        """The session's length: its parts' sum, rounded up to a multiple of 5 minutes."""
        return 5 * math.ceil((self.reading + self.running + self.exercises) / 5)


def _tagged(cell: NotebookNode) -> bool:
    return GOING_FURTHER_TAG in cell.get("metadata", {}).get("tags", [])


def _generated(cell: NotebookNode) -> bool:
    """The cells `make navigation` writes (setup, navigation, contents): no part of the lesson."""
    return any(course_metadata(cell).get(kind) for kind in ("setup", "navigation", "contents"))


def _opening_heading(cell: NotebookNode) -> str | None:
    """The heading a markdown cell starts with, or None when its first line is not one."""
    lines = cell.source.lstrip("\n").splitlines()
    if cell.cell_type != "markdown" or not lines or not _HEADING_LINE.match(lines[0]):
        return None
    return markdown_headings(lines[0])[0]


def going_further_sections(nb: NotebookNode) -> tuple[tuple[int, int], ...]:
    """The notebook's going-further sections as ``(first, last)`` cell indexes, in order: each
    a longest run of cells tagged `GOING_FURTHER_TAG` (two sections in a row make one run).

    Raises `NotebookError`, naming the cell, when a run does not open with a going-further
    heading, such a heading sits in an untagged cell, or the live cell after a run does not
    start with a heading.

    >>> from nbformat.v4 import new_notebook, new_markdown_cell, new_code_cell
    >>> tag = {"tags": ["going-further"]}
    >>> going_further_sections(new_notebook(cells=[
    ...     new_markdown_cell("## Going further: x", metadata=tag),
    ...     new_code_cell("1", metadata=tag), new_markdown_cell("## Summary")]))
    ((0, 1),)
    >>> going_further_sections(new_notebook(cells=[new_code_cell("1", metadata=tag)]))
    Traceback (most recent call last):
    ...
    course_tools._notebook_files.NotebookError: cell 0: a going-further section starts with a \
markdown cell whose first line is a heading beginning 'Going further:'
    """
    cells = nb.cells
    sections: list[tuple[int, int]] = []
    for index, cell in enumerate(cells):
        heading = _opening_heading(cell) or ""
        opens = heading.startswith(GOING_FURTHER_HEADING)
        if opens and not _tagged(cell):
            raise NotebookError(
                f"{cell_label(cell, index)}: its heading opens a going-further section, so tag "
                f"it, and every cell of the section, {GOING_FURTHER_TAG!r}"
            )
        if not _tagged(cell):
            continue
        if sections and sections[-1][1] == index - 1:
            sections[-1] = (sections[-1][0], index)
            continue
        if not opens:
            raise NotebookError(
                f"{cell_label(cell, index)}: a going-further section starts with a markdown cell "
                f"whose first line is a heading beginning {GOING_FURTHER_HEADING!r}"
            )
        sections.append((index, index))
    for _, last in sections:
        if last + 1 < len(cells):
            after = cells[last + 1]
            if not _generated(after) and _opening_heading(after) is None:
                raise NotebookError(
                    f"{cell_label(after, last + 1)}: the live path resumes here, after a "
                    "going-further section, so start the cell with a heading (or tag it "
                    f"{GOING_FURTHER_TAG!r} too)"
                )
    return tuple(sections)


def _words(markdown: str) -> int:
    """The words of a markdown cell a reader sees: no HTML comments, no bare ``#`` or ``-``."""
    return sum(1 for token in _COMMENT.sub(" ", markdown).split() if _WORD.search(token))


def live_path(nb: NotebookNode) -> LivePath:
    """The lesson's live path: the words of its markdown cells and the number of its code cells
    a learner sees (the generated cells and hidden cells left out), going-further sections
    excluded; with every going-further heading, in order."""
    skipped = going_further_sections(nb)
    words = code_cells = 0
    for index, cell in enumerate(nb.cells):
        if _generated(cell) or any(first <= index <= last for first, last in skipped):
            continue
        if cell.cell_type == "markdown":  # a Colab badge is a button, not words to read
            words += _words(with_badge(cell.source, None))
        elif cell.cell_type == "code" and not cell.metadata.get("jupyter", {}).get("source_hidden"):
            code_cells += 1
    headings = tuple(
        heading
        for first, last in skipped
        for cell in nb.cells[first : last + 1]
        if cell.cell_type == "markdown"
        for heading in markdown_headings(cell.source)
        if heading.startswith(GOING_FURTHER_HEADING)
    )
    return LivePath(words, code_cells, headings)


def _section_headings(nb: NotebookNode, sections: tuple[tuple[int, int], ...]) -> set[str]:
    return {
        heading
        for first, last in sections
        for cell in nb.cells[first : last + 1]
        if cell.cell_type == "markdown"
        for heading in markdown_headings(cell.source)
    }


def optional_exercises(nb: NotebookNode, lesson: str) -> tuple[Exercise, ...]:
    """The exercises of ``lesson`` whose hints send the learner back to (``Exercise.reread``) a
    section the live path skips: a workshop leaves them to fast finishers."""
    skipped = _section_headings(nb, going_further_sections(nb))
    return tuple(
        exercise for exercise in exercises(lesson) if exercise.reread.split(" ", 1)[1] in skipped
    )


def session_time(nb: NotebookNode, lesson: str) -> SessionTime:
    """The session lesson ``lesson`` takes in a workshop, by the rule: the live path's words at
    `WORDS_PER_MINUTE`, `MINUTES_PER_CODE_CELL` for each of its code cells, and
    each exercise's ``minutes`` where it is not optional, each part rounded up to whole
    minutes.

    >>> from nbformat.v4 import new_notebook, new_markdown_cell, new_code_cell
    >>> nb = new_notebook(cells=[new_markdown_cell("words " * 250), new_code_cell("1")])
    >>> time = session_time(nb, "01")
    >>> time, time.minutes
    (SessionTime(reading=3, running=1, exercises=32), 40)
    """
    path = live_path(nb)
    optional = {exercise.id for exercise in optional_exercises(nb, lesson)}
    return SessionTime(
        reading=math.ceil(path.words / WORDS_PER_MINUTE),
        running=MINUTES_PER_CODE_CELL * path.code_cells,
        exercises=sum(
            exercise.minutes for exercise in exercises(lesson) if exercise.id not in optional
        ),
    )


def _code(source: str) -> ast.Module | None:
    """A code cell's Python, its IPython magics and shell lines left out; None if it does not
    parse (the lessons' cells all do: nbval runs them)."""
    lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
    try:
        return ast.parse("\n".join(lines))
    except SyntaxError:
        return None


def _bound(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            names.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
    return names


def _used(tree: ast.Module) -> set[str]:
    return {
        node.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
    }


def names_from_going_further(nb: NotebookNode) -> list[str]:
    """Each live code cell that uses a name only an earlier going-further cell defined, as
    ``"cell 42 uses 'train'"``: a workshop that skips going further would stop there.

    >>> from nbformat.v4 import new_notebook, new_markdown_cell, new_code_cell
    >>> tag = {"tags": ["going-further"]}
    >>> names_from_going_further(new_notebook(cells=[
    ...     new_code_cell("a = 1"), new_markdown_cell("## Going further: b", metadata=tag),
    ...     new_code_cell("b = a", metadata=tag), new_markdown_cell("## Back"),
    ...     new_code_cell("a + b")]))
    ["cell 4 uses 'b'"]
    """
    skipped = going_further_sections(nb)
    live_names: set[str] = set()
    further_names: set[str] = set()
    problems = []
    for index, cell in enumerate(nb.cells):
        tree = _code(cell.source) if cell.cell_type == "code" else None
        if tree is None:
            continue
        if any(first <= index <= last for first, last in skipped):
            further_names |= _bound(tree)
            continue
        missing = (_used(tree) - _bound(tree) - live_names) & further_names
        problems += [f"cell {index} uses {name!r}" for name in sorted(missing)]
        live_names |= _bound(tree)
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    """Print each lesson's live path and session against its budget, as a markdown table; the
    exit status is 1 when a lesson is over its budget, 2 when a lesson cannot be read."""
    parser = argparse.ArgumentParser(
        prog="python -m course_tools.authoring.live_path",
        description="Each lesson's live path, the session it takes, and its budget.",
    )
    parser.add_argument(
        "root", nargs="?", default=".", type=Path, help="the course's folder (default: here)"
    )
    root = parser.parse_args(argv).root
    rows = [
        "| lesson | live path: words | code cells | core exercises | session | budget |",
        "|---|---|---|---|---|---|",
    ]
    over = []
    for path in sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        lesson = path.name[:2]
        if lesson not in SESSION_BUDGETS:
            continue
        try:
            nb = read_notebook(path)
            live, time = live_path(nb), session_time(nb, lesson)
        except NotebookError as error:
            print(f"{display_path(path)}: {error}", file=sys.stderr)
            return 2
        budget = SESSION_BUDGETS[lesson]
        core = len(exercises(lesson)) - len(optional_exercises(nb, lesson))
        rows.append(
            f"| {lesson} | {live.words:,} ({time.reading} min) | "
            f"{live.code_cells} ({time.running} min) | {core} ({time.exercises} min) | "
            f"{time.minutes} min | {budget} min{' (over)' if time.minutes > budget else ''} |"
        )
        if time.minutes > budget:
            over.append(lesson)
    print("\n".join(rows))
    if over:
        print(
            f"Over budget: {', '.join(over)}. Move a section the lesson's outcome does not need "
            "to going further, or raise the budget in SESSION_BUDGETS with the reason."
        )
    return 1 if over else 0


if __name__ == "__main__":
    raise SystemExit(main())
