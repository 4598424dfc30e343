"""Generate the exercise notebooks from the solution notebooks.

``solutions/NN_stem.ipynb`` is the only hand-edited copy of an exercise notebook;
``exercises/NN_stem.ipynb`` is written from it by this module (``make exercises``)::

    python -m course_tools.authoring.exercises [--check] [--root DIR] [SOLUTION ...]

With no SOLUTION, every ``solutions/*.ipynb`` under ``--root`` (default: the working directory)
is used, and exercise notebooks whose solution notebook is gone are reported (``--check``) or
removed (when they carry the generated banner). A solution at ``.../solutions/NAME`` always
generates ``.../exercises/NAME``.

What the exercise version is, cell by cell:

* In a code cell, each region from a line ``### BEGIN SOLUTION`` to a line ``### END SOLUTION``
  (markers may be indented and are matched as whole stripped lines) becomes one line
  ``raise NotImplementedError("...")`` at the indentation of the BEGIN marker. A nested BEGIN,
  an END without a BEGIN, a BEGIN without an END, a line that looks like a marker but is not
  exactly one, and a marker outside a code cell are errors naming the notebook and the cell;
  then nothing at all is written.
* Every code cell loses its outputs, execution count and execution timing (outputs of
  solution cells would give answers away). Other cell metadata stays, such as
  ``{"course": {"exercise": "02.sgd_step"}}``, and so do nbformat cell ids.
* Cells tagged ``solution-only`` (cell metadata ``tags``) are dropped.
* The notebook's saved widget state (``metadata.widgets``) is dropped, for the same reason as
  outputs.
* A banner cell goes first, marked ``{"course": {"banner": true}}`` with cell id
  ``exercise-banner``; it says the file is generated and where edits belong, and ends in the
  notebook's "Open in Colab" badge when pyproject.toml names the course's repository
  (`course_tools.authoring.launch`). Banner cells found
  in the source are dropped first, so regenerating never stacks them.

Files are written atomically, in exactly the format ``nbformat.write`` uses, and only when their
bytes change, so regenerating is byte-for-byte idempotent.

``--check`` writes nothing and exits 1 when an exercise notebook is missing, differs from what
would be generated, or has no solution. Exit status 2 means a solution notebook has an error.
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from nbformat import NotebookNode
from nbformat.v4 import new_markdown_cell

from course_lib._atomic import write_text_atomic

from .._notebook_files import (
    NotebookError,
    cell_label,
    display_path,
    has_cell_ids,
    notebook_text,
    read_notebook,
)
from ._options import add_root_option
from .launch import colab_badge, repository, with_badge

__all__ = [
    "BANNER_ID",
    "BEGIN_MARKER",
    "END_MARKER",
    "SOLUTION_ONLY_TAG",
    "STUB_MESSAGE",
    "MarkerError",
    "clear_solutions",
    "exercise_path",
    "is_banner",
    "main",
    "make_exercise",
]

BEGIN_MARKER = "### BEGIN SOLUTION"
END_MARKER = "### END SOLUTION"
STUB_MESSAGE = "Write your answer here, then run the check."
SOLUTION_ONLY_TAG = "solution-only"
BANNER_ID = "exercise-banner"

# A comment that reads like a marker ("## BEGIN SOLUTION", "###end solution", ...): a line
# containing one must be exactly a marker, so a mistyped marker cannot leak a solution.
_MARKER_LIKE = re.compile(r"#+\s*(BEGIN|END)[\s_-]*SOLUTION", re.IGNORECASE)


class MarkerError(ValueError):
    """Solution markers that don't pair up; ``line`` is the 1-based line in the cell."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.line = line


def clear_solutions(source: str, message: str = STUB_MESSAGE) -> str:
    """Replace each marked solution region of a code cell's source with a stub.

    >>> print(clear_solutions('''def double(x):
    ...     "Twice x."
    ...     ### BEGIN SOLUTION
    ...     y = x + x
    ...     return y
    ...     ### END SOLUTION'''))
    def double(x):
        "Twice x."
        raise NotImplementedError("Write your answer here, then run the check.")

    Source without markers comes back unchanged; markers that don't pair up raise:

    >>> clear_solutions("total = 0")
    'total = 0'
    >>> clear_solutions("### BEGIN SOLUTION\\n### BEGIN SOLUTION")  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    course_tools.authoring.exercises.MarkerError: line 2: nested "### BEGIN SOLUTION"
    (the region opened at line 1 is still open)
    """
    stub = f"raise NotImplementedError({json.dumps(message, ensure_ascii=False)})"
    kept: list[str] = []
    opened_at: int | None = None
    for number, line in enumerate(source.split("\n"), start=1):
        marker = line.strip()
        if marker == BEGIN_MARKER:
            if opened_at is not None:
                raise MarkerError(
                    f'line {number}: nested "{BEGIN_MARKER}" '
                    f"(the region opened at line {opened_at} is still open)",
                    number,
                )
            opened_at = number
            kept.append(line[: len(line) - len(line.lstrip())] + stub)
        elif marker == END_MARKER:
            if opened_at is None:
                raise MarkerError(
                    f'line {number}: "{END_MARKER}" without a "{BEGIN_MARKER}" before it',
                    number,
                )
            opened_at = None
        elif _MARKER_LIKE.search(line):
            raise MarkerError(
                f"line {number}: {marker!r} looks like a solution marker but is not exactly "
                f'"{BEGIN_MARKER}" or "{END_MARKER}" on a line of its own',
                number,
            )
        elif opened_at is None:
            kept.append(line)
    if opened_at is not None:
        raise MarkerError(
            f'line {opened_at}: "{BEGIN_MARKER}" has no "{END_MARKER}" after it', opened_at
        )
    return "\n".join(kept)


def is_banner(cell: NotebookNode) -> bool:
    """Whether ``cell`` is the generated banner (cell metadata ``{"course": {"banner": true}}``)."""
    course = cell.get("metadata", {}).get("course")
    return isinstance(course, dict) and course.get("banner") is True


def _banner_cell(source_name: str, with_id: bool, badge: str | None) -> NotebookNode:
    text = (
        f"*This exercise notebook is generated from `{source_name}` by `make exercises`. "
        "Course authors: make edits there; this file is overwritten.*"
    )
    cell = new_markdown_cell(
        with_badge(text, badge), metadata={"course": {"banner": True}}, id=BANNER_ID
    )
    if not with_id:
        del cell["id"]
    return cell


def make_exercise(
    solution: NotebookNode, source_name: str, where: str = "notebook", badge: str | None = None
) -> NotebookNode:
    """The exercise version of a solution notebook (see the module docstring).

    ``source_name`` is how the banner names the solution (``solutions/02_mapping_and_sgd.ipynb``);
    ``where`` is how error messages name it; ``badge``, when given, ends the banner. Raises
    `NotebookError` listing every bad cell.

    >>> from nbformat.v4 import new_notebook, new_code_cell
    >>> solution = new_notebook(cells=[
    ...     new_code_cell("x = 1\\n### BEGIN SOLUTION\\ny = 2 * x\\n### END SOLUTION", id="a"),
    ... ])
    >>> exercise = make_exercise(solution, "solutions/00_demo.ipynb")
    >>> [cell.id for cell in exercise.cells]
    ['exercise-banner', 'a']
    >>> print(exercise.cells[1].source)
    x = 1
    raise NotImplementedError("Write your answer here, then run the check.")
    """
    problems: list[str] = []
    cells: list[NotebookNode] = []
    for index, original in enumerate(solution.cells):
        if is_banner(original) or SOLUTION_ONLY_TAG in original.metadata.get("tags", []):
            continue
        cell = copy.deepcopy(original)
        try:
            if cell.cell_type == "code":
                cell.source = clear_solutions(cell.source)
                cell.outputs = []
                cell.execution_count = None
                cell.metadata.pop("execution", None)
            else:
                for number, line in enumerate(cell.source.split("\n"), start=1):
                    if _MARKER_LIKE.search(line):
                        raise MarkerError(
                            f"line {number}: solution markers work only in code cells "
                            f"(tag a {cell.cell_type} cell {SOLUTION_ONLY_TAG!r} to drop it)",
                            number,
                        )
        except MarkerError as error:
            problems.append(f"{where}: {cell_label(original, index)}: {error}")
        cells.append(cell)
    with_ids = has_cell_ids(solution)
    if with_ids:
        for cell in cells:
            if cell.id == BANNER_ID:
                problems.append(
                    f"{where}: cell with id {BANNER_ID!r}: that id is reserved for the banner"
                )
    if problems:
        raise NotebookError("\n".join(problems))
    exercise = copy.deepcopy(solution)
    exercise.metadata.pop("widgets", None)
    exercise.cells = [_banner_cell(source_name, with_ids, badge), *cells]
    return exercise


def exercise_path(solution: str | Path) -> Path:
    """Where the exercise version of a solution notebook goes: the sibling ``exercises/`` folder.

    >>> exercise_path("course/solutions/02_mapping_and_sgd.ipynb").as_posix()
    'course/exercises/02_mapping_and_sgd.ipynb'
    """
    solution = Path(solution)
    if solution.parent.name != "solutions":
        raise NotebookError(f"{display_path(solution)}: not in a folder named solutions/")
    return solution.parent.parent / "exercises" / solution.name


def _generate(solution: Path) -> tuple[Path, str]:
    solution = Path(solution).absolute()
    target = exercise_path(solution)
    where = display_path(solution)
    nb = read_notebook(solution)
    source_name = f"{solution.parent.name}/{solution.name}"
    repo = repository(solution.parent.parent)
    badge = None if repo is None else colab_badge(repo, f"{target.parent.name}/{target.name}")
    return target, notebook_text(make_exercise(nb, source_name, where, badge), where)


def _is_generated(path: Path) -> bool:
    try:
        cells = read_notebook(path).cells
    except NotebookError:
        return False
    return bool(cells) and is_banner(cells[0])


def _differs(path: Path, text: str) -> bool:
    try:
        return path.read_bytes() != text.encode("utf-8")
    except FileNotFoundError:
        return True


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point; returns the exit status (0 fine, 1 stale, 2 errors)."""
    parser = argparse.ArgumentParser(
        prog="python -m course_tools.authoring.exercises",
        description="Write exercises/NAME.ipynb from solutions/NAME.ipynb, solutions removed.",
    )
    parser.add_argument(
        "solutions",
        nargs="*",
        type=Path,
        metavar="SOLUTION",
        help="solution notebooks (default: every solutions/*.ipynb under --root)",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 if any exercise notebook would change",
    )
    add_root_option(parser)
    args = parser.parse_args(argv)

    everything = not args.solutions
    if everything and not (args.root / "solutions").is_dir():
        print(
            f"There is no solutions/ folder in {args.root.resolve()}: the exercise notebooks are "
            "generated from the solution notebooks, which a student copy of the course leaves "
            "out. Nothing was written.",
            file=sys.stderr,
        )
        return 2
    solutions = args.solutions or sorted((args.root / "solutions").glob("*.ipynb"))
    planned: list[tuple[Path, str]] = []
    errors: list[str] = []
    for solution in solutions:
        try:
            planned.append(_generate(solution))
        except NotebookError as error:
            errors.append(str(error))
    if errors:
        print("\n".join(errors), file=sys.stderr)
        print("Nothing was written.", file=sys.stderr)
        return 2

    orphans: list[Path] = []
    if everything:
        expected = {target.name for target, _ in planned}
        orphans = [
            path
            for path in sorted((args.root / "exercises").glob("*.ipynb"))
            if path.name not in expected
        ]
    stale = [(target, text) for target, text in planned if _differs(target, text)]

    if args.check:
        for target, _ in stale:
            state = "differs from" if target.exists() else "is missing; expected from"
            solution = target.parent.parent / "solutions" / target.name
            print(f"{display_path(target)} {state} {display_path(solution)}")
        for orphan in orphans:
            print(f"{display_path(orphan)} has no solution notebook in solutions/")
        if stale or orphans:
            print("Run `make exercises` to regenerate the exercise notebooks.")
            return 1
        print(f"{len(planned)} exercise notebook(s) up to date.")
        return 0

    for target, text in stale:
        write_text_atomic(target, text)
        print(f"wrote {display_path(target)}")
    status = 0
    for orphan in orphans:
        if _is_generated(orphan):
            orphan.unlink()
            print(f"removed {display_path(orphan)} (its solution notebook is gone)")
        else:
            print(
                f"{display_path(orphan)} has no solution notebook and no generated banner; "
                "left alone",
                file=sys.stderr,
            )
            status = 1
    print(f"{len(planned)} exercise notebook(s): {len(stale)} written.")
    return status


if __name__ == "__main__":
    sys.exit(main())
