"""A lesson cell that declares the error it shows: run in an IPython shell as a lesson's setup cell
leaves it, the error is printed and the next cell runs; anything else fails as it should."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from IPython.core.interactiveshell import ExecutionResult, InteractiveShell

from course_lib._shown_errors import declared_cell, declared_error, run_showing_error
from course_tools.authoring.launch import setup_source


@pytest.fixture
def shell() -> Iterator[InteractiveShell]:
    """A fresh IPython shell that has run a lesson's setup cell."""
    InteractiveShell.clear_instance()
    shell = InteractiveShell.instance()
    assert shell.run_cell(setup_source(None, lesson=True)).success
    yield shell
    InteractiveShell.clear_instance()


def run(shell: InteractiveShell, source: str) -> ExecutionResult:
    return shell.run_cell(source, store_history=True)


def test_the_declared_error_is_printed_as_the_minimal_traceback_and_the_next_cell_runs(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    result = run(shell, "# Raises KeyError\nseen = 'before'\n{'w': 1}['b']")
    assert result.success and result.error_in_exec is None
    assert capsys.readouterr().err == "KeyError: 'b'\n"
    assert shell.user_ns["seen"] == "before"  # the cell ran in the notebook's namespace
    assert run(shell, "print(seen)").success
    assert capsys.readouterr().out == "before\n"


def test_a_subclass_of_the_declared_error_is_shown_under_its_own_name(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(shell, "# Raises LookupError\n[][0]").success
    assert capsys.readouterr().err == "IndexError: list index out of range\n"


@pytest.mark.parametrize(
    ("source", "shown"),
    [("{}['k']", "KeyError: 'k'\n"), ("int('x')", "ValueError: invalid literal")],
    ids=["first", "second"],
)
def test_a_cell_may_declare_the_errors_it_shows_on_different_releases(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str], source: str, shown: str
) -> None:
    assert run(shell, f"# Raises KeyError or ValueError\n{source}").success
    assert capsys.readouterr().err.startswith(shown)
    result = run(shell, "# Raises KeyError or ValueError\n1 / 0")
    assert isinstance(result.error_in_exec, ZeroDivisionError)


def test_a_declared_cell_that_raises_nothing_fails(shell: InteractiveShell) -> None:
    result = run(shell, "# Raises TypeError\nlen([1])")
    assert isinstance(result.error_in_exec, AssertionError)
    assert str(result.error_in_exec) == (
        "This cell was meant to raise TypeError and raised nothing. To run it as an ordinary cell, "
        'delete its first line, "# Raises TypeError".'
    )


def test_an_error_of_another_type_is_raised_as_it_is(shell: InteractiveShell) -> None:
    result = run(shell, "# Raises TypeError\n1 / 0")
    assert isinstance(result.error_in_exec, ZeroDivisionError)


def test_the_cell_runs_exactly_as_written(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    """The code runs as the learner reads it: an indented multi-line string keeps its spaces, and a
    function defined in the cell shows its lines in a traceback, as any cell's does."""
    source = (
        "# Raises ValueError\n"
        'table = """\n'
        "  w  | 3\n"
        "\tb  | 1\n"
        '"""\n'
        "def check(text):\n"
        "    raise ValueError(repr(text))\n"
        "check(table)\n"
    )
    assert run(shell, source).success
    assert shell.user_ns["table"] == "\n  w  | 3\n\tb  | 1\n"
    assert capsys.readouterr().err == "ValueError: '\\n  w  | 3\\n\\tb  | 1\\n'\n"
    shell.run_line_magic("xmode", "context")
    run(shell, "check(1)")
    assert "raise ValueError(repr(text))" in re.sub(r"\x1b\[[0-9;]*m", "", capsys.readouterr().out)


def test_a_declared_cell_shows_no_value_for_its_last_line(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    """Jupyter shows a cell's last value; a declared cell is meant to fail before it has one, and
    if it does not, the failure is the missing error, not the value."""
    result = run(shell, "# Raises TypeError\n6 * 7")
    assert result.result is None and isinstance(result.error_in_exec, AssertionError)
    assert "42" not in capsys.readouterr().out


def test_running_the_setup_cell_again_registers_the_transformer_once(
    shell: InteractiveShell,
) -> None:
    before = len(shell.input_transformers_post)
    assert run(shell, setup_source(None, lesson=True)).success
    assert len(shell.input_transformers_post) == before


def test_without_the_setup_cell_the_comment_is_a_comment_and_the_error_is_raised() -> None:
    InteractiveShell.clear_instance()
    bare = InteractiveShell.instance()
    try:
        assert isinstance(run(bare, "# Raises KeyError\n{}['k']").error_in_exec, KeyError)
    finally:
        InteractiveShell.clear_instance()


@pytest.mark.parametrize(
    ("first_line", "name"),
    [
        ("# Raises TypeError", "TypeError"),
        ("# Raises   TooManyCompilesError  ", "TooManyCompilesError"),
        ("#Raises TypeError", None),
        ("# Raises lr", None),
        ("# Raises typeError", None),
        ("# Raises TypeError  or\tInvalidInputException", "TypeError or InvalidInputException"),
        ("# Raises TypeError or", None),
        ("# Raises a TypeError when the shapes differ", None),
        ("# raises TypeError", None),
        ("x = 1  # Raises TypeError", None),
    ],
)
def test_only_a_first_line_that_is_the_declaration_alone_declares(
    first_line: str, name: str | None
) -> None:
    assert declared_error(first_line + "\nf(x)") == name
    assert declared_error("x = 1\n" + first_line) is None


def test_other_cells_pass_through_the_transformer_untouched() -> None:
    lines = ["# Raises a question\n", "x = 1\n"]
    assert declared_cell(lines) is lines


def test_run_showing_error_without_ipython_prints_to_stderr(
    capsys: pytest.CaptureFixture[str],
) -> None:
    namespace: dict[str, object] = {}
    run_showing_error("RuntimeError", "x = 3\nraise RuntimeError()", namespace)
    assert capsys.readouterr().err == "RuntimeError\n"
    assert namespace["x"] == 3
