"""Finding submissions, reading them without trusting them, and deciding which cells to run.

Nothing here executes a notebook: it reads bytes, checks they are a notebook the grader can run,
works out the lesson and the exercise cells, and plans the cells to execute (check and progress
calls taken out).
"""

import ast
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from course_lib._leaves import shorten
from course_lib.checks import Exercise, exercises, lessons
from course_lib.checks._guard import code_id, parse_cell

MAX_NOTEBOOK_BYTES = 50 * 1024 * 1024


class UsageError(Exception):
    """The grader cannot run with these arguments."""


class NotebookProblem(Exception):
    """The file is not a notebook the grader can run; the message says why, for the student."""


@dataclass(frozen=True)
class Submission:
    """One submitted notebook: where it is, whose it is (the student key), and how the gradebook names it.

    ``shown`` is the path the gradebook records: for a notebook extracted from a zip, the zip's path and
    the member's, not the scratch folder it was read from.
    """

    path: Path
    student: str
    notebook: str
    shown: str = ""

    @property
    def label(self) -> str:
        return f"{self.student}/{self.notebook}"


def hidden_part(part: str) -> bool:
    """True for a path part the grader skips: hidden files and folders, caches, checkpoints."""
    return part.startswith(".") or part == "__pycache__" or part.endswith("-checkpoint.ipynb")


def find_submissions(paths: list[str]) -> list[Submission]:
    """Every submission under ``paths``, sorted by student and notebook (see ``_intake`` for the layouts).

    A file is one submission by the student named after its folder. A folder with notebooks of its
    own is one student's (notebooks in its subfolders too); a folder with only subfolders is a
    class, one student per subfolder. Hidden files and folders (``.ipynb_checkpoints``) are skipped.
    A ``.zip`` needs :func:`course_lib.grade._intake.find_class`, which keeps its extracted files.
    """
    from ._intake import find_class

    intake = find_class(paths)
    if intake.scratch:
        intake.close()
        raise UsageError(
            "a .zip download needs find_class (its notebooks live in a scratch folder while graded)"
        )
    return intake.submissions


@dataclass
class Cell:
    """A notebook cell as the grader sees it."""

    index: int
    cell_type: str
    source: str
    metadata: dict[str, Any]

    @property
    def course(self) -> dict[str, Any]:
        course = self.metadata.get("course")
        return course if isinstance(course, dict) else {}


@dataclass
class Notebook:
    """The parts of a submitted notebook the grader uses."""

    cells: list[Cell]
    metadata: dict[str, Any]


def _source(value: Any, index: int) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(line, str) for line in value):
        return "".join(value)
    raise NotebookProblem(f"cell {index} has no readable source")


def read_notebook(data: bytes) -> Notebook:
    """The notebook in ``data``, or :class:`NotebookProblem` saying plainly what is wrong."""
    if not data.strip():
        raise NotebookProblem("the file is empty")
    if len(data) > MAX_NOTEBOOK_BYTES:
        raise NotebookProblem(
            f"the file is {len(data) / 2**20:.0f} MiB, more than the {MAX_NOTEBOOK_BYTES // 2**20} MiB a notebook may be"
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise NotebookProblem("the file is not UTF-8 text, so it is not a notebook") from None
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as error:
        raise NotebookProblem(
            f"the file is not valid JSON (line {error.lineno}, column {error.colno}: {error.msg}); "
            "it may be truncated or edited outside Jupyter"
        ) from None
    except (ValueError, RecursionError) as error:
        raise NotebookProblem(f"the file is not valid JSON ({type(error).__name__})") from None
    if not isinstance(raw, dict):
        raise NotebookProblem(f"the JSON is a {type(raw).__name__}, not a notebook")
    major, minor = raw.get("nbformat"), raw.get("nbformat_minor", 0)
    if not isinstance(major, int) or isinstance(major, bool):
        raise NotebookProblem("the file has no nbformat version, so it is not a notebook")
    if major != 4:
        if major < 4:
            raise NotebookProblem(
                f"the notebook is in format {major}.{minor}, which the grader does not read: it reads format 4 "
                "(open the file in a current Jupyter and save it to convert it)"
            )
        raise NotebookProblem(
            f"the notebook is in format {major}.{minor}, newer than format 4 that the grader reads"
        )
    cells = raw.get("cells")
    if not isinstance(cells, list):
        raise NotebookProblem("the notebook has no list of cells")
    out = []
    for index, cell in enumerate(cells):
        if not isinstance(cell, dict) or not isinstance(cell.get("cell_type"), str):
            raise NotebookProblem(f"cell {index} is not a notebook cell")
        metadata = cell.get("metadata")
        out.append(
            Cell(
                index,
                cell["cell_type"],
                _source(cell.get("source", ""), index),
                metadata if isinstance(metadata, dict) else {},
            )
        )
    metadata = raw.get("metadata")
    return Notebook(out, metadata if isinstance(metadata, dict) else {})


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


def detect_lesson(notebook: Notebook, filename: str) -> str | None:
    """The lesson a notebook belongs to: its metadata, else its exercise ids, else its file name, else its functions."""
    known = lessons()
    meta = notebook.metadata.get("course")
    if isinstance(meta, dict) and meta.get("lesson") in known:
        return str(meta["lesson"])
    ids = Counter(
        str(cell.course["exercise"]).split(".", 1)[0]
        for cell in notebook.cells
        if isinstance(cell.course.get("exercise"), str)
    )
    for lesson, _ in ids.most_common():
        if lesson in known:
            return lesson
    match = _FILENAME_LESSON.match(Path(filename).name)
    if match and match[1] in known:
        return match[1]
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
    """How a message names a code cell so that a student finds it: its number among the code cells, from 1, and its first line.

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

    def cell(self, index: int) -> PlannedCell | None:
        """The planned cell at notebook index ``index``."""
        return next((cell for cell in self.cells if cell.index == index), None)

    def cell_of_code(self, code: str, line: int, text: str) -> PlannedCell | None:
        """The planned cell whose source has this :func:`~course_lib.checks._guard.code_id` (else: this text at this line)."""
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


def plan_cells(notebook: Notebook, lesson: str) -> Plan:
    """Which cells to run (check cells and check calls left out) and where each exercise is defined.

    An exercise cell is found by its ``course.exercise`` metadata, or, when that was lost, by a
    top-level definition of the exercise's name. Nothing is judged from the source: what an
    answer calls is watched while it runs (``course_lib.checks._guard``).
    """
    listed = exercises(lesson)
    ids = {e.id for e in listed}
    plan = Plan(lesson, listed, [])
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    for number, cell in enumerate(code, 1):
        if cell.course.get("check") is not None:
            plan.skipped_checks += 1
            continue
        source = without_checks(cell.source)
        if not source.strip():
            plan.skipped_checks += 1
            continue
        exercise_id = cell.course.get("exercise")
        planned = PlannedCell(
            cell.index,
            source,
            exercise_id if exercise_id in ids else None,
            number,
            cell_label(number, cell.source),
        )
        if planned.exercise and planned.exercise not in plan.exercise_cells:
            plan.exercise_cells[planned.exercise] = cell.index
        plan.cells.append(planned)
    for exercise in listed:
        defining = [c for c in plan.cells if exercise.name in defined_names(c.source)]
        if exercise.id not in plan.exercise_cells and defining:
            plan.exercise_cells[exercise.id] = defining[-1].index
            if defining[-1].exercise is None:
                defining[-1].exercise = exercise.id
    return plan
