"""Each lesson reads whole on its live path: no heading stands right under another one, and no live
prose names what only a going-further cell made (a workshop that skips those cells never saw it)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from course_lib._shown_errors import declared_error
from course_tools.authoring import navigation
from course_tools.authoring.execute import error_cell_problems
from course_tools.authoring.live_path import GOING_FURTHER_TAG, going_further_sections

ROOT = Path(__file__).resolve().parents[2]
LESSONS = [
    (path.name[:2], nbformat.read(path, as_version=4))
    for path in navigation.lesson_paths(ROOT)
    if not path.name.startswith("00")
]
_TAG = {"tags": [GOING_FURTHER_TAG]}

_HEADING = re.compile(r"#{1,6} ")
_SKIP_NOTE = "*A workshop skips this section"
_CODE_NAME = re.compile(r"`([A-Za-z_]\w*)")
_PARAGRAPH = re.compile(r"\n\s*\n|\n(?=- )")


def headings_in_a_row(nb: nbformat.NotebookNode) -> list[str]:
    """Each heading that follows another one with nothing between them but blank lines and the
    going-further section's note, as ``"cell 5: '## A' then '## B'"``."""
    problems, last = [], None
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            last = None
            continue
        fenced = False
        for line in cell.source.splitlines():
            text = line.strip()
            fenced ^= text.startswith("```")
            if fenced or not text or text.startswith(_SKIP_NOTE):
                continue
            if _HEADING.match(text) and last is not None:
                problems.append(f"cell {index}: {last!r} then {text!r}")
            last = text if _HEADING.match(text) else None
    return problems


def _tree(source: str) -> ast.Module:
    """A code cell's Python, its magics and shell lines left out."""
    lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
    return ast.parse("\n".join(lines))


def _top_level_names(source: str) -> set[str]:
    """The names a code cell leaves behind for later cells: its top-level assignments, functions,
    classes and imports (a class's fields and a function's locals are not among them)."""
    names: set[str] = set()
    for statement in _tree(source).body:
        if isinstance(statement, ast.FunctionDef | ast.ClassDef):
            names.add(statement.name)
        elif isinstance(statement, ast.Import | ast.ImportFrom):
            names.update((alias.asname or alias.name).split(".")[0] for alias in statement.names)
        else:
            for node in ast.walk(statement):
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                    names.add(node.id)
    return names


def _any_names(source: str) -> set[str]:
    """Every name a code cell binds or uses, attributes and arguments included."""
    names: set[str] = set()
    for node in ast.walk(_tree(source)):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
    return names


def prose_naming_going_further(nb: nbformat.NotebookNode) -> list[str]:
    """Each live markdown cell that names in code (```name```) what only an earlier going-further
    code cell left behind, and no live code cell mentions, as ``"cell 9 names 'probe'"``. A
    paragraph or list item that says "going further" may: it tells the reader where it is from."""
    sections = going_further_sections(nb)
    live_names: set[str] = set()
    further_names: set[str] = set()
    problems = []
    for index, cell in enumerate(nb.cells):
        skipped = any(first <= index <= last for first, last in sections)
        if cell.cell_type == "code":
            if skipped:
                further_names |= _top_level_names(cell.source)
            else:
                live_names |= _any_names(cell.source)
        elif cell.cell_type == "markdown" and not skipped:
            named = {
                name
                for part in _PARAGRAPH.split(cell.source)
                if "going further" not in part.lower()
                for name in _CODE_NAME.findall(part)
            }
            problems += [
                f"cell {index} names {name!r}"
                for name in sorted((named & further_names) - live_names)
            ]
    return problems


@pytest.mark.parametrize(
    ("cells", "found"),
    [
        ([new_markdown_cell("## A\n\n*A workshop skips this section.*\n\n## B")], 1),
        ([new_markdown_cell("## A"), new_markdown_cell("### B")], 1),
        ([new_markdown_cell("## A\n\nWhat A is about.\n\n### B")], 0),
        ([new_markdown_cell("## A"), new_code_cell("1"), new_markdown_cell("## B")], 0),
        ([new_markdown_cell("## A\n\n```\n# a comment, not a heading\n```")], 0),
    ],
    ids=["note-between", "across-cells", "a-sentence-between", "code-between", "fenced"],
)
def test_two_headings_in_a_row_are_found(cells: list[nbformat.NotebookNode], found: int) -> None:
    assert len(headings_in_a_row(new_notebook(cells=cells))) == found


def test_live_prose_may_not_name_what_only_going_further_code_bound() -> None:
    nb = new_notebook(
        cells=[
            new_markdown_cell("## Going further: a probe", metadata=_TAG),
            new_code_cell("x = 1\nclass Probe: ...\nprobe = Probe()", metadata=_TAG),
            new_markdown_cell("## Back"),
            new_code_cell("x = 2"),
            new_markdown_cell("As `probe` showed, `Probe` sees all; now `x` is 2."),
            new_markdown_cell("## Summary\n\n- `x` is 2.\n- Going further: `probe` sees all."),
        ]
    )
    assert prose_naming_going_further(nb) == ["cell 4 names 'Probe'", "cell 4 names 'probe'"]


@pytest.mark.parametrize(("lesson", "nb"), LESSONS, ids=[lesson for lesson, _ in LESSONS])
def test_no_heading_stands_right_under_another(lesson: str, nb: nbformat.NotebookNode) -> None:
    assert headings_in_a_row(nb) == [], f"lesson {lesson}: merge them, or say what the first holds"


@pytest.mark.parametrize(("lesson", "nb"), LESSONS, ids=[lesson for lesson, _ in LESSONS])
def test_live_prose_names_nothing_only_going_further_made(
    lesson: str, nb: nbformat.NotebookNode
) -> None:
    assert prose_naming_going_further(nb) == [], (
        f"lesson {lesson}: show it on the live path, or say the part is going further"
    )


@pytest.mark.parametrize(("lesson", "nb"), LESSONS, ids=[lesson for lesson, _ in LESSONS])
def test_every_deliberate_error_is_declared_and_shown_as_the_minimal_traceback(
    lesson: str, nb: nbformat.NotebookNode
) -> None:
    """A cell that shows an error names it on its first line (``# Raises TypeError``), so that Run
    All goes on past it in every front end (Colab has no cell tags), and shows it as IPython's
    minimal traceback would, its type and message (the type that this JAX raises: the declared one
    or, where releases differ, a subclass of it; the runtime holds the cell to that). No cell
    raises, and none is tagged ``raises-exception``, which Colab ignores."""
    # The runner's rules first (no tag; a declared cell shows its error), then the form it shows.
    problems = [f"cell {index}: {problem}" for index, problem in error_cell_problems(nb)]
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        declared = declared_error(cell.source)
        shown = "".join(
            o.text for o in cell.outputs if o.output_type == "stream" and o.name == "stderr"
        )
        if any(o.output_type == "error" for o in cell.outputs):
            problems.append(f"cell {index} raised an error that it does not declare")
        if declared is not None and shown and not re.match(r"[A-Z]\w*: ", shown):
            problems.append(f"cell {index} declares {declared} but shows {shown[:60]!r}")
        if declared is None and re.match(r"[A-Z]\w*(Error|Exception): ", shown):
            problems.append(f"cell {index} shows {shown[:60]!r} without declaring it")
    assert problems == [], f"lesson {lesson}"
