"""Reading a submitted notebook without trusting it, and deciding which cells to run.

Nothing here executes a notebook: given a notebook read from a submission's bytes (by
:func:`course_tools._notebook_files.read_notebook`, which says what is wrong with a file that is not
one), it works out the lesson and the exercise cells, and plans the cells to execute (check and
progress calls taken out).
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from course_lib._leaves import shorten
from course_lib.checks import Exercise, code_id, exercises, lessons, parse_cell

from ..._notebook_files import course_metadata

if TYPE_CHECKING:
    from nbformat import NotebookNode


def defined_names(source: str) -> set[str]:
    """Names a cell binds at top level (``def``, ``class``, assignment, import)."""
    tree = parse_cell(source)
    names: set[str] = set()
    if tree is None:
        return names
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return names


_FILENAME_LESSON = re.compile(r"(\d\d)[_\- ]")


def filename_lesson(filename: str) -> str | None:
    """The lesson a notebook's file name starts with (``02_sgd.ipynb``), if it is a lesson's.

    >>> filename_lesson("homework/01_first_trees.ipynb"), filename_lesson("first.ipynb")
    ('01', None)
    """
    match = _FILENAME_LESSON.match(Path(filename).name)
    return match[1] if match and match[1] in lessons() else None


def detect_lesson(notebook: NotebookNode, filename: str) -> str | None:
    """The lesson a notebook belongs to: its metadata, else its exercise ids, else its file name,
    else its functions."""
    known = lessons()
    meta = course_metadata(notebook)
    if meta.get("lesson") in known:
        return str(meta["lesson"])
    exercise_ids = (course_metadata(cell).get("exercise") for cell in notebook.cells)
    ids = Counter(str(id_).split(".", 1)[0] for id_ in exercise_ids if isinstance(id_, str))
    for lesson, _ in ids.most_common():
        if lesson in known:
            return lesson
    by_name = filename_lesson(filename)
    if by_name is not None:
        return by_name
    names = set().union(*(defined_names(c.source) for c in notebook.cells if c.cell_type == "code"))
    scores = {}
    for lesson in known:
        try:
            scores[lesson] = sum(e.name in names for e in exercises(lesson))
        except Exception:  # noqa: BLE001 (a lesson module that does not import cannot be this notebook's)
            scores[lesson] = 0
    best = max(scores, key=lambda lesson: scores[lesson], default=None)
    return best if best is not None and scores[best] > 0 else None


_CHECK_CALL = re.compile(r"\b(check|progress)\s*\(")
_CHECK_LINE = re.compile(r"^\s*(?:[A-Za-z_]\w*\.)*(?:check|progress)\s*\(.*$", re.MULTILINE)


def _is_check_call(node: ast.stmt) -> bool:
    if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)):
        return False
    func = node.value.func
    name = (
        func.id
        if isinstance(func, ast.Name)
        else func.attr
        if isinstance(func, ast.Attribute)
        else ""
    )
    return name in ("check", "progress")


def without_checks(source: str) -> str:
    """``source`` without its top-level ``check(...)`` and ``progress(...)`` calls."""
    if not _CHECK_CALL.search(source):
        return source
    tree = parse_cell(source)
    if tree is None:
        return _CHECK_LINE.sub("", source)
    lines = source.splitlines(keepends=True)
    drop: set[int] = set()
    for node in tree.body:
        if _is_check_call(node):
            drop.update(range(node.lineno - 1, (node.end_lineno or node.lineno)))
    return "".join(line for i, line in enumerate(lines) if i not in drop)


_FIRST_LINE_LIMIT = 24


def cell_label(number: int, source: str) -> str:
    """How a message names a code cell so that a student finds it: its number among the code cells,
    from 1, and its first line.

    >>> cell_label(4, "\\n# step\\ndef sgd_step(params, grads, lr):\\n    ...")
    'code cell 4 (`# step`)'
    >>> cell_label(5, "def sgd_step(params, grads, lr):")
    'code cell 5 (`def sgd_step(params, gra…`)'
    >>> cell_label(6, "")
    'code cell 6 (empty)'
    """
    first = next((line.strip() for line in source.splitlines() if line.strip()), "")
    if not first:
        return f"code cell {number} (empty)"
    shown = shorten(first, _FIRST_LINE_LIMIT + 1)
    return f"code cell {number} (`{shown.replace('`', chr(39))}`)"


_ENVIRONMENT = re.compile(r"\benviron\b|\bputenv\b|\bunsetenv\b|%env\b|%set_env\b")


@dataclass
class PlannedCell:
    """A code cell the grader will run; ``exercise`` is the id of the exercise it defines, if any.

    ``index`` counts every cell of the notebook from 0 (markdown too); ``number`` counts the code
    cells from 1, as a student counts them, and ``label`` names the cell in messages.
    """

    index: int
    source: str
    exercise: str | None = None
    number: int = 0
    label: str = ""


@dataclass
class Plan:
    """What to run for one submission and what the grader already knows about its exercises."""

    lesson: str
    exercises: tuple[Exercise, ...]
    cells: list[PlannedCell]
    exercise_cells: dict[str, int] = field(default_factory=dict)
    skipped_checks: int = 0

    @property
    def touches_environment(self) -> bool:
        """Whether a planned cell may change environment variables (which JAX reads when it is
        imported): such a notebook gets a fresh kernel, never one forked with JAX imported.

        >>> cell = PlannedCell(2, "os.environ['JAX_ENABLE_X64'] = '1'")
        >>> Plan("02", (), [cell]).touches_environment
        True
        """
        return any(_ENVIRONMENT.search(cell.source) for cell in self.cells)

    def cell(self, index: int) -> PlannedCell | None:
        """The planned cell at notebook index ``index``."""
        return next((cell for cell in self.cells if cell.index == index), None)

    def cell_of_code(self, code: str, line: int, text: str) -> PlannedCell | None:
        """The planned cell whose source has this :func:`~course_lib.checks._guard.code_id` (else:
        this text at this line)."""
        for cell in self.cells:
            if code and code_id(cell.source) == code:
                return cell
        for cell in self.cells:
            lines = cell.source.splitlines()
            if (
                text
                and 0 < line <= len(lines)
                and lines[line - 1].strip().startswith(text.rstrip("…"))
            ):
                return cell
        return None


def plan_cells(notebook: NotebookNode, lesson: str) -> Plan:
    """Which cells to run (check cells and check calls left out) and where each exercise is defined.

    An exercise cell is found by its ``course.exercise`` metadata, or, when that was lost, by a
    top-level definition of the exercise's name. Nothing is judged from the source: what an
    answer calls is watched while it runs (``course_lib.checks._guard``).
    """
    listed = exercises(lesson)
    ids = {e.id for e in listed}
    plan = Plan(lesson, listed, [])
    code = [(index, cell) for index, cell in enumerate(notebook.cells) if cell.cell_type == "code"]
    for number, (index, cell) in enumerate(code, 1):
        course = course_metadata(cell)
        if course.get("check") is not None:
            plan.skipped_checks += 1
            continue
        source = without_checks(cell.source)
        if not source.strip():
            plan.skipped_checks += 1
            continue
        exercise_id = course.get("exercise")
        planned = PlannedCell(
            index,
            source,
            exercise_id if exercise_id in ids else None,
            number,
            cell_label(number, cell.source),
        )
        if planned.exercise and planned.exercise not in plan.exercise_cells:
            plan.exercise_cells[planned.exercise] = index
        plan.cells.append(planned)
    for exercise in listed:
        defining = [c for c in plan.cells if exercise.name in defined_names(c.source)]
        if exercise.id not in plan.exercise_cells and defining:
            plan.exercise_cells[exercise.id] = defining[-1].index
            if defining[-1].exercise is None:
                defining[-1].exercise = exercise.id
    return plan
