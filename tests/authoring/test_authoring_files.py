"""Reading and writing notebooks for the authoring tools: no random ids, nbformat's exact bytes."""

from __future__ import annotations

import io
import json
import os
import stat
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from course_lib._atomic import write_text_atomic
from course_tools._notebook_files import NotebookError, notebook_text, read_notebook


def _raw_notebook(cells: list[dict], minor: int = 5) -> str:
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": minor})


def test_read_notebook_gives_idless_cells_positional_ids(tmp_path: Path) -> None:
    path = tmp_path / "old.ipynb"
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": "# A"},
        {"cell_type": "markdown", "id": "cell-1", "metadata": {}, "source": "taken"},
        {"cell_type": "markdown", "metadata": {}, "source": "b"},
        {"cell_type": "markdown", "metadata": {}, "source": "c"},
    ]
    path.write_text(_raw_notebook(cells))
    ids = [cell.id for cell in read_notebook(path).cells]
    assert ids == ["cell-0", "cell-1", "cell-2", "cell-3"]
    assert [cell.id for cell in read_notebook(path).cells] == ids  # the same on every read


def test_read_notebook_leaves_v44_notebooks_without_ids(tmp_path: Path) -> None:
    path = tmp_path / "v44.ipynb"
    path.write_text(_raw_notebook([{"cell_type": "markdown", "metadata": {}, "source": "x"}], 4))
    assert "id" not in read_notebook(path).cells[0]


def test_read_notebook_duplicate_ids_are_an_error(tmp_path: Path) -> None:
    path = tmp_path / "dup.ipynb"
    cell = {"cell_type": "markdown", "id": "same", "metadata": {}, "source": "x"}
    path.write_text(_raw_notebook([cell, cell]))
    with pytest.raises(NotebookError, match="dup.ipynb: cell 1: duplicate cell id 'same'"):
        read_notebook(path)


@pytest.mark.parametrize("text", ["{not json", "[]", '{"nbformat": 3, "worksheets": []}'])
def test_read_notebook_unreadable_is_an_error(tmp_path: Path, text: str) -> None:
    path = tmp_path / "bad.ipynb"
    path.write_text(text)
    with pytest.raises(NotebookError, match="bad.ipynb"):
        read_notebook(path)


def test_read_notebook_schema_violation_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.ipynb"
    cell = {"cell_type": "markdown", "id": "a", "metadata": {}, "source": "x", "bogus": 1}
    path.write_text(_raw_notebook([cell]))
    with pytest.raises(NotebookError, match="bad.ipynb: not a valid notebook"):
        read_notebook(path)


def test_a_path_names_the_file_and_bytes_give_the_bare_reason(tmp_path: Path) -> None:
    path = tmp_path / "v3.ipynb"
    path.write_text('{"nbformat": 3, "nbformat_minor": 0, "worksheets": []}')
    with pytest.raises(NotebookError) as from_bytes:
        read_notebook(path.read_bytes())
    with pytest.raises(NotebookError) as from_path:
        read_notebook(path)
    assert str(from_bytes.value).startswith("the notebook is in format 3.0")
    assert str(from_path.value) == f"{path}: {from_bytes.value}"
    with pytest.raises(NotebookError, match="missing.ipynb: cannot read the notebook"):
        read_notebook(tmp_path / "missing.ipynb")


def test_schema_false_reads_what_grading_needs_of_an_off_schema_notebook() -> None:
    cells = [
        {"cell_type": "code", "id": "same", "source": ["x = 1\n", "y = 2"], "outputs": 7},
        {"cell_type": "markdown", "id": "same", "metadata": ["not", "a", "mapping"]},
        {"cell_type": "code", "metadata": {"course": {"exercise": "01.is_node"}}, "source": ""},
    ]
    data = json.dumps({"cells": cells, "nbformat": 4, "nbformat_minor": 5}).encode()
    with pytest.raises(NotebookError, match="duplicate cell id 'same'"):
        read_notebook(data)
    nb = read_notebook(data, schema=False)
    assert [cell.source for cell in nb.cells] == ["x = 1\ny = 2", "", ""]
    assert [cell.metadata for cell in nb.cells] == [{}, {}, {"course": {"exercise": "01.is_node"}}]
    assert nb.metadata == {} and [cell.id for cell in nb.cells] == ["same", "same", "cell-2"]


def test_a_byte_order_mark_is_not_an_error(tmp_path: Path) -> None:
    path = tmp_path / "bom.ipynb"
    text = _raw_notebook([{"cell_type": "markdown", "id": "a", "metadata": {}, "source": "x"}])
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())
    assert read_notebook(path).cells[0].source == "x"


def test_notebook_text_matches_nbformat_write() -> None:
    nb = new_notebook(
        cells=[
            new_markdown_cell("# Ünïcode · title\n\ntwo\nlines", id="t"),
            new_code_cell("1", id="c"),
        ]
    )
    buffer = io.StringIO()
    nbformat.write(nb, buffer)
    assert notebook_text(nb) == buffer.getvalue()


def test_write_text_atomic_keeps_mode_and_leaves_no_temp_files(tmp_path: Path) -> None:
    path = tmp_path / "nb.ipynb"
    path.write_text("old")
    os.chmod(path, 0o640)
    write_text_atomic(path, "new · text\n")
    assert path.read_bytes() == "new · text\n".encode()
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nb.ipynb"]


def test_write_text_atomic_new_file_follows_umask(tmp_path: Path) -> None:
    umask = os.umask(0o022)
    try:
        write_text_atomic(tmp_path / "sub" / "new.ipynb", "x")
    finally:
        os.umask(umask)
    assert stat.S_IMODE((tmp_path / "sub" / "new.ipynb").stat().st_mode) == 0o644
