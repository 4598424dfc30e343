"""Reading and writing notebook files the same way every time.

The authoring tools rewrite committed notebooks, so two things matter: the bytes they write
must be exactly what ``nbformat.write`` (and JupyterLab) would write, so files don't churn;
and nothing random may creep in (``nbformat`` invents random cell ids when a cell lacks one).
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import nbformat
from nbformat import NotebookNode
from nbformat.warnings import DuplicateCellId, MissingIDFieldWarning

from .._atomic import write_text_atomic

__all__ = [
    "NotebookError",
    "cell_label",
    "display_path",
    "has_cell_ids",
    "notebook_text",
    "read_notebook",
    "write_text_atomic",
]


class NotebookError(Exception):
    """A notebook file the tools cannot work with; the message names the file (and cell)."""


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
    return (nb.nbformat, nb.nbformat_minor) >= (4, 5)


def cell_label(cell: NotebookNode, index: int) -> str:
    """How messages name a cell: its index, and its exercise id when it has one.

    >>> from nbformat.v4 import new_code_cell
    >>> cell_label(new_code_cell("", metadata={"course": {"exercise": "02.sgd_step"}}), 7)
    'cell 7 (exercise 02.sgd_step)'
    >>> cell_label(new_code_cell(""), 0)
    'cell 0'
    """
    course = cell.get("metadata", {}).get("course", {})
    exercise = course.get("exercise") if isinstance(course, dict) else None
    return f"cell {index} (exercise {exercise})" if exercise else f"cell {index}"


def read_notebook(path: str | os.PathLike[str]) -> NotebookNode:
    """Read an nbformat-4 notebook, giving id-less cells ids derived from their position.

    Raises `NotebookError` (naming the file) for unreadable JSON, other format versions,
    duplicate cell ids and schema violations, instead of nbformat's habit of logging the
    problem and repairing it with random ids.
    """
    path = Path(path)
    where = display_path(path)
    try:
        nb = nbformat.reader.reads(path.read_text(encoding="utf-8"))
    except Exception as error:  # unreadable file, not JSON, unknown format version, ...
        raise NotebookError(f"{where}: cannot read the notebook: {error}") from None
    if nb.get("nbformat") != 4:
        raise NotebookError(f"{where}: nbformat {nb.get('nbformat')} notebook; expected 4")
    if has_cell_ids(nb):
        seen: set[str] = set()
        for index, cell in enumerate(nb.cells):
            if "id" in cell:
                if cell.id in seen:
                    raise NotebookError(
                        f"{where}: {cell_label(cell, index)}: duplicate cell id {cell.id!r}"
                    )
                seen.add(cell.id)
        for index, cell in enumerate(nb.cells):
            if "id" not in cell:
                candidate, suffix = f"cell-{index}", 0
                while candidate in seen:
                    suffix += 1
                    candidate = f"cell-{index}-{suffix}"
                cell["id"] = candidate
                seen.add(candidate)
    _validate(nb, where)
    return nb


def _validate(nb: NotebookNode, where: str) -> None:
    with warnings.catch_warnings():
        # nbformat "repairs" missing or duplicate cell ids with random ones, and only warns.
        warnings.simplefilter("error", MissingIDFieldWarning)
        warnings.simplefilter("error", DuplicateCellId)
        try:
            nbformat.validate(nb)
        except (nbformat.ValidationError, MissingIDFieldWarning, DuplicateCellId) as error:
            first_line = str(error).strip().splitlines()[0]
            raise NotebookError(f"{where}: not a valid notebook: {first_line}") from None


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
    _validate(nb, where)
    text = nbformat.writes(nb)
    return text if text.endswith("\n") else text + "\n"
