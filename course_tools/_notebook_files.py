"""Reading and writing notebook files: the one reader of the authoring tools and the grader.

`read_notebook` takes a path (the authoring tools) or the bytes of a file (the grader, which
reads a submission once and never again) and returns an nbformat node, or raises
`NotebookError` with a message that says plainly what is wrong, for a student as for an author.
Nothing random creeps in: a cell without an id gets one derived from its position, where
nbformat would invent a random one. The authoring tools rewrite committed notebooks, so what
they write must be exactly what ``nbformat.write`` (and JupyterLab) would write
(`notebook_text`), and files don't churn.

nbformat is imported when first needed: its schema validator takes seconds to import, and
``import course_tools.grade`` (the grader's command line) stays fast without it.
"""

from __future__ import annotations

import json
import os
import re
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nbformat import NotebookNode

__all__ = [
    "MAX_NOTEBOOK_BYTES",
    "NotebookError",
    "cell_label",
    "course_metadata",
    "display_path",
    "has_cell_ids",
    "markdown_headings",
    "notebook_text",
    "read_notebook",
]

MAX_NOTEBOOK_BYTES = 50 * 1024 * 1024


class NotebookError(Exception):
    """A file that is not a notebook the course's tools can work with; the message says why.

    Read from a path, the message starts with the file's name (and names the cell where one is
    at fault); read from bytes, it is the bare reason, as a gradebook quotes it.
    """


def display_path(path: str | os.PathLike[str]) -> str:
    """``path`` relative to the working directory when it lies below it, else as given.

    >>> import os
    >>> display_path(os.path.join(os.getcwd(), "solutions", "01_x.ipynb"))
    'solutions/01_x.ipynb'
    """
    path = Path(path)
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return str(path)


def has_cell_ids(nb: NotebookNode) -> bool:
    """Whether the notebook's format (4.5 and later) gives every cell an ``id``."""
    minor = nb.get("nbformat_minor")
    return nb.get("nbformat") == 4 and isinstance(minor, int) and minor >= 5


def course_metadata(node: dict[str, Any]) -> dict[str, Any]:
    """The ``course`` metadata of a notebook or a cell; empty when missing or not a mapping.

    >>> from nbformat.v4 import new_code_cell
    >>> course_metadata(new_code_cell("", metadata={"course": {"check": "01.count"}}))
    {'check': '01.count'}
    >>> course_metadata({"metadata": {"course": "01"}})
    {}
    """
    metadata = node.get("metadata")
    course = metadata.get("course") if isinstance(metadata, dict) else None
    return course if isinstance(course, dict) else {}


def cell_label(cell: NotebookNode, index: int) -> str:
    """How the authoring tools' messages name a cell: its index, and its exercise id if any.

    >>> from nbformat.v4 import new_code_cell
    >>> cell_label(new_code_cell("", metadata={"course": {"exercise": "02.sgd_step"}}), 7)
    'cell 7 (exercise 02.sgd_step)'
    >>> cell_label(new_code_cell(""), 0)
    'cell 0'
    """
    exercise = course_metadata(cell).get("exercise")
    return f"cell {index} (exercise {exercise})" if exercise else f"cell {index}"


def read_notebook(source: str | os.PathLike[str] | bytes, *, schema: bool = True) -> NotebookNode:
    """The nbformat-4 notebook in the file at ``source`` (a path, or the file's bytes).

    Raises `NotebookError` for an empty, oversized or non-UTF-8 file, JSON that is not a
    notebook, other format versions, and cells that are not cells. Cells of a format 4.5
    notebook that lack an id get ids derived from their position, the same on every read.

    ``schema=True`` (the authoring tools, which write the notebook back) also rejects
    duplicate cell ids and anything else nbformat's schema forbids. ``schema=False`` (the
    grader) checks only what grading reads, so a notebook some editor saved a little off the
    schema is still graded; missing ``source`` and ``metadata`` then read as empty.

    >>> nb = read_notebook(b'{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": '
    ...                    b'[{"cell_type": "code", "source": ["x = 1\\\\n", "x"]}]}', schema=False)
    >>> nb.cells[0].id, nb.cells[0].source, nb.cells[0].metadata
    ('cell-0', 'x = 1\\nx', {})
    >>> read_notebook(b'{"nbformat": 4, "cells": {}}')
    Traceback (most recent call last):
    ...
    course_tools._notebook_files.NotebookError: the notebook has no list of cells
    """
    if isinstance(source, bytes):
        data, where = source, ""
    else:
        where = display_path(source)
        try:
            data = Path(source).read_bytes()
        except OSError as error:
            raise NotebookError(f"{where}: cannot read the notebook: {error}") from None
    raw = _notebook_json(data, where)
    import nbformat

    nb = nbformat.from_dict(raw)
    for cell in nb.cells:
        if isinstance(cell.get("source"), list):
            cell.source = "".join(cell.source)
    if has_cell_ids(nb):
        _give_cells_ids(nb, where, schema)
    if not schema:
        for node in (nb, *nb.cells):
            if not isinstance(node.get("metadata"), dict):
                node.metadata = nbformat.NotebookNode()
        for cell in nb.cells:
            cell.setdefault("source", "")
        return nb
    _validate(nb, where)
    # What nbformat's own reader does after parsing: outputs as one string, no transient keys.
    from nbformat.v4.rwbase import rejoin_lines, strip_transient

    return strip_transient(rejoin_lines(nb))


def _problem(where: str, message: str) -> NotebookError:
    return NotebookError(f"{where}: {message}" if where else message)


def _notebook_json(data: bytes, where: str) -> dict[str, Any]:
    """The JSON object of a notebook in ``data``, with its format and cells checked."""
    if not data.strip():
        raise _problem(where, "the file is empty")
    if len(data) > MAX_NOTEBOOK_BYTES:
        raise _problem(
            where,
            f"the file is {len(data) / 2**20:.0f} MiB, more than the "
            f"{MAX_NOTEBOOK_BYTES // 2**20} MiB a notebook may be",
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise _problem(where, "the file is not UTF-8 text, so it is not a notebook") from None
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as error:
        raise _problem(
            where,
            f"the file is not valid JSON (line {error.lineno}, column {error.colno}: "
            f"{error.msg}); it may be truncated or edited outside Jupyter",
        ) from None
    except (ValueError, RecursionError) as error:
        raise _problem(where, f"the file is not valid JSON ({type(error).__name__})") from None
    if not isinstance(raw, dict):
        raise _problem(where, f"the JSON is a {type(raw).__name__}, not a notebook")
    major, minor = raw.get("nbformat"), raw.get("nbformat_minor", 0)
    if not isinstance(major, int) or isinstance(major, bool):
        raise _problem(where, "the file has no nbformat version, so it is not a notebook")
    if major < 4:
        raise _problem(
            where,
            f"the notebook is in format {major}.{minor}, which the grader does not read: it "
            "reads format 4 (open the file in a current Jupyter and save it to convert it)",
        )
    if major > 4:
        raise _problem(
            where,
            f"the notebook is in format {major}.{minor}, newer than format 4 that the grader reads",
        )
    cells = raw.get("cells")
    if not isinstance(cells, list):
        raise _problem(where, "the notebook has no list of cells")
    for index, cell in enumerate(cells):
        if not isinstance(cell, dict) or not isinstance(cell.get("cell_type"), str):
            raise _problem(where, f"cell {index} is not a notebook cell")
        lines = cell.get("source", "")
        if not isinstance(lines, str) and not (
            isinstance(lines, list) and all(isinstance(line, str) for line in lines)
        ):
            raise _problem(where, f"cell {index} has no readable source")
    return raw


def _give_cells_ids(nb: NotebookNode, where: str, schema: bool) -> None:
    """Give id-less cells ids from their position; with ``schema``, duplicate ids are an error."""
    seen: set[str] = set()
    for index, cell in enumerate(nb.cells):
        known = cell.get("id")
        if isinstance(known, str):  # any other id is the schema's to reject
            if schema and known in seen:
                raise _problem(where, f"{cell_label(cell, index)}: duplicate cell id {known!r}")
            seen.add(known)
    for index, cell in enumerate(nb.cells):
        if "id" not in cell:
            candidate, suffix = f"cell-{index}", 0
            while candidate in seen:
                suffix += 1
                candidate = f"cell-{index}-{suffix}"
            cell["id"] = candidate
            seen.add(candidate)


def _validate(nb: NotebookNode, where: str) -> None:
    import nbformat
    from nbformat.warnings import DuplicateCellId, MissingIDFieldWarning

    with warnings.catch_warnings():
        # nbformat "repairs" missing or duplicate cell ids with random ones, and only warns.
        warnings.simplefilter("error", MissingIDFieldWarning)
        warnings.simplefilter("error", DuplicateCellId)
        try:
            nbformat.validate(nb)
        except (nbformat.ValidationError, MissingIDFieldWarning, DuplicateCellId) as error:
            first_line = str(error).strip().splitlines()[0]
            raise _problem(where, f"not a valid notebook: {first_line}") from None


_HEADING = re.compile(r"#{1,6} \S")  # a markdown heading: 1 to 6 marks, a space, text


def markdown_headings(markdown: str) -> list[str]:
    """The headings of a markdown cell's text, in order, without their ``#`` marks; a ``#`` line
    inside a fenced code block is code, not a heading.

    >>> markdown_headings("# 01 Leaves\\n#hashtag\\n```python\\n# a comment\\n```\\n## Counting")
    ['01 Leaves', 'Counting']
    """
    headings, fenced = [], False
    for line in markdown.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and _HEADING.match(line):
            headings.append(line.lstrip("#").strip())
    return headings


def notebook_text(nb: NotebookNode, where: str = "notebook") -> str:
    """The exact text ``nbformat.write`` would put in a file: sorted keys, indent 1, final newline.

    >>> from nbformat.v4 import new_notebook, new_markdown_cell
    >>> text = notebook_text(new_notebook(cells=[new_markdown_cell("# Hi", id="title")]))
    >>> print("\\n".join(text.splitlines()[:5]))
    {
     "cells": [
      {
       "cell_type": "markdown",
       "id": "title",
    >>> text.endswith("}\\n")
    True
    """
    import nbformat

    _validate(nb, where)
    text: str = nbformat.writes(nb)
    return text if text.endswith("\n") else text + "\n"
