"""Re-executing notebooks: each test starts a real kernel (about a second or two)."""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from course_tools._notebook_files import notebook_text
from course_tools.authoring import execute
from course_tools.authoring.launch import setup_source

# A lesson's setup cell: it lets a cell declare the error it shows.
SETUP = setup_source(None, lesson=True)


def _write(path: Path, *cells: nbformat.NotebookNode) -> Path:
    nb = new_notebook(cells=list(cells))
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    path.write_text(notebook_text(nb), encoding="utf-8")
    return path


def test_execute_notebook_runs_in_its_folder_and_writes_outputs(tmp_path: Path) -> None:
    (tmp_path / "data.txt").write_text("from the notebook's folder")
    path = _write(
        tmp_path / "tiny.ipynb",
        new_markdown_cell("# Tiny", id="title"),
        new_code_cell("x = 20", id="a"),
        new_code_cell("open('data.txt').read()", id="b"),
        new_code_cell("x + 22", id="c", metadata={"course": {"exercise": "00.answer"}}),
    )
    timing = execute.execute_notebook(path, cell_timeout=60)

    nb = nbformat.read(path, as_version=4)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert [cell.execution_count for cell in code] == [1, 2, 3]
    assert code[1].outputs[0].data["text/plain"] == '"from the notebook\'s folder"'
    assert code[2].outputs[0].data["text/plain"] == "42"
    assert code[2].metadata == {"course": {"exercise": "00.answer"}}
    assert all("execution" not in cell.metadata for cell in code)
    assert path.read_text(encoding="utf-8") == notebook_text(nb)
    assert timing.total >= timing.cells >= 0


@pytest.mark.skipif(sys.platform == "win32", reason="zmq has no unix sockets on Windows")
def test_execute_notebook_kernel_uses_unix_sockets_in_a_folder_removed_after(
    tmp_path: Path,
) -> None:
    """TCP ports picked as free can be taken before the kernel binds them (make compat's two
    executions once lost a kernel that way); unix sockets in a private folder cannot collide."""
    path = _write(
        tmp_path / "transport.ipynb",
        new_code_cell(
            "import json, ipykernel.connect\n"
            "where = ipykernel.connect.get_connection_file()\n"
            "print(json.load(open(where))['transport'], where)",
            id="a",
        ),
    )
    execute.execute_notebook(path, cell_timeout=60)

    transport, connection_file = nbformat.read(path, as_version=4).cells[0].outputs[0].text.split()
    assert transport == "ipc"
    assert not Path(connection_file).parent.exists()


def test_execute_notebook_shows_a_declared_error_and_runs_on(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "lesson.ipynb",
        new_code_cell(SETUP, id="setup"),
        new_code_cell("# Raises ZeroDivisionError\nprint('first')\n1 / 0", id="a"),
        new_code_cell("'still running'", id="b"),
    )
    execute.execute_notebook(path, cell_timeout=60)
    cells = nbformat.read(path, as_version=4).cells
    shown = {output.name: output.text for output in cells[1].outputs}
    assert shown == {"stdout": "first\n", "stderr": "ZeroDivisionError: division by zero\n"}
    assert cells[2].outputs[0].data["text/plain"] == "'still running'"


def test_execute_notebook_failure_leaves_file_untouched(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "broken.ipynb",
        new_code_cell("x = 1", id="a"),
        new_code_cell(
            "def f():\n    raise ValueError('boom')\nf()",
            id="b",
            metadata={"course": {"exercise": "01.f"}},
        ),
        new_code_cell("x", id="c"),
    )
    before = path.read_bytes()
    with pytest.raises(execute.NotebookExecutionError) as caught:
        execute.execute_notebook(path, cell_timeout=60)
    message = str(caught.value)
    assert "broken.ipynb: cell 1 (exercise 01.f): ValueError: boom" in message
    assert "raise ValueError('boom')" in message  # the traceback comes along
    assert "\x1b[" not in message
    assert path.read_bytes() == before


def test_execute_notebook_declared_cell_must_raise(tmp_path: Path) -> None:
    """A lesson whose deliberate error went away (on some JAX release) fails."""
    path = _write(
        tmp_path / "quiet.ipynb",
        new_code_cell(SETUP, id="setup"),
        new_code_cell("# Raises ZeroDivisionError\n1 / 1", id="a"),
    )
    before = path.read_bytes()
    with pytest.raises(
        execute.NotebookExecutionError,
        match="cell 1: AssertionError: This cell was meant to raise ZeroDivisionError and raised "
        "nothing",
    ):
        execute.execute_notebook(path, cell_timeout=60)
    assert path.read_bytes() == before


def test_execute_notebook_refuses_a_cell_tagged_raises_exception(tmp_path: Path) -> None:
    """Jupyter's Run All goes on past such a cell's error; Colab's stops there."""
    tagged = {"tags": ["raises-exception"]}
    path = _write(tmp_path / "tagged.ipynb", new_code_cell("1 / 0", id="a", metadata=tagged))
    before = path.read_bytes()
    with pytest.raises(
        execute.NotebookExecutionError,
        match="cell 0: tagged 'raises-exception', which Colab ignores.*'# Raises TypeError'",
    ):
        execute.execute_notebook(path, cell_timeout=60)
    assert path.read_bytes() == before


def test_execute_notebook_cell_timeout(tmp_path: Path) -> None:
    path = _write(tmp_path / "slow.ipynb", new_code_cell("import time\ntime.sleep(60)", id="a"))
    before = path.read_bytes()
    with pytest.raises(
        execute.NotebookExecutionError, match="cell 0: the cell ran past its 1 s limit"
    ):
        execute.execute_notebook(path, cell_timeout=1)
    assert path.read_bytes() == before


def test_main_reports_each_notebook_and_fails_if_any_failed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = _write(tmp_path / "good.ipynb", new_code_cell("1 + 1", id="a"))
    bad = _write(tmp_path / "bad.ipynb", new_code_cell("undefined_name", id="a"))
    assert execute.main(["--timeout", "60", str(bad), str(good)]) == 1
    captured = capsys.readouterr()
    assert "bad.ipynb: FAILED after" in captured.out
    assert "good.ipynb: " in captured.out and " s (cells " in captured.out
    assert "2 notebook(s) in" in captured.out and "1 failed" in captured.out
    assert "cell 0: NameError: name 'undefined_name' is not defined" in captured.err
    assert nbformat.read(good, as_version=4).cells[0].execution_count == 1


def test_main_without_notebooks_does_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    assert execute.main([]) == 0
    assert "No notebooks" in capsys.readouterr().out


def test_execute_in_process_lists_cells_that_print_other_than_committed(tmp_path: Path) -> None:
    stdout = nbformat.v4.new_output
    path = _write(
        tmp_path / "in_process.ipynb",
        new_code_cell(SETUP, outputs=[]),
        new_code_cell("print(6 * 7)", outputs=[stdout("stream", name="stdout", text="42\n")]),
        new_code_cell("print(6 * 9)", outputs=[stdout("stream", name="stdout", text="42\n")]),
        new_code_cell("[1, 2]", outputs=[stdout("execute_result", data={"text/plain": "[1, 2]"})]),
        new_code_cell("{'at': object()}", outputs=[]),
        new_code_cell("# Raises ZeroDivisionError\n1 / 0", outputs=[]),
    )
    timing = execute.execute_in_process(path)
    assert [index for index, _ in timing.differing] == [2, 4]
    assert timing.differing[0][1] == "54"
    assert [index for index, _ in timing.per_cell] == [0, 1, 2, 3, 4, 5]


def test_execute_in_process_names_the_first_cell_that_raised(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "raises.ipynb",
        new_code_cell(SETUP),
        new_code_cell("# Raises ZeroDivisionError\n1 / 0"),
        new_code_cell("x = 1"),
        new_code_cell("# Raises ZeroDivisionError\nx / 1"),
    )
    with pytest.raises(execute.NotebookExecutionError, match="cell 3: AssertionError: This cell"):
        execute.execute_in_process(path)
