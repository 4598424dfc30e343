"""Lesson cells that show an error on purpose, and let the notebook run on past it.

A lesson shows what JAX says when a rule is broken: such a cell's first line names the error it
shows, ``# Raises TypeError`` (or ``ValueError``, ...), or the errors it shows on different JAX
releases, ``# Raises TypeError or ValueError``. The lessons' setup cell registers
`declared_cell` as an IPython input transformer, so in every front end (JupyterLab, Notebook,
VS Code, Colab) the cell runs as `run_showing_error` runs it: its code, unchanged, in the
notebook's namespace; an error it declared (or a subclass) is printed to stderr as IPython's
minimal traceback shows it, ``TypeError: message``, and Run All goes on to the next cell. A cell
that raises nothing fails with an `AssertionError` saying so, and an error of another type is
raised as it is. Where the transformer is not registered the first line is a plain comment and the
cell raises its error as any cell would.

A declared cell shows no value: Jupyter displays the last line's value of a cell it runs itself,
and this one runs the code as a whole, which is meant to fail before it has a value.

>>> import io, contextlib
>>> said = io.StringIO()
>>> with contextlib.redirect_stderr(said):
...     run_showing_error("ZeroDivisionError", "x = 2\\nx / 0", {})
>>> said.getvalue()
'ZeroDivisionError: division by zero\\n'
"""

import re
import sys
from typing import Any

__all__ = ["declared_cell", "declared_error", "run_showing_error"]

# An exception's class name, as Python's own and JAX's are written: capitalised, ending in Error or
# Exception. The first line starts "# Raises " exactly, as the lessons' setup cell looks for it.
_NAME = r"[A-Z]\w*(?:Error|Exception)"
_DECLARATION = re.compile(rf"# Raises +({_NAME}(?:\s+or\s+{_NAME})*)\s*")


def declared_error(source: str) -> str | None:
    """The name of the error that a cell's first line declares it shows (names joined by " or "
    where it differs by release), or None.

    >>> declared_error("# Raises TypeError\\njax.jit(f)(1)")
    'TypeError'
    >>> declared_error("# Raises  TypeError or ValueError\\njax.vmap(f)(x)")
    'TypeError or ValueError'
    >>> declared_error("# Raises an error only sometimes") is None
    True
    >>> declared_error("# Raises lr by 10 percent") is None
    True
    """
    match = _DECLARATION.fullmatch(source.split("\n", 1)[0].strip())
    return " or ".join(match.group(1).split()[::2]) if match else None


def declared_cell(lines: list[str]) -> list[str]:
    """An IPython input transformer (``input_transformers_post``): a cell that declares its error
    becomes one call of `run_showing_error` with the cell's code as a string; other cells are
    returned as they are.

    >>> declared_cell(["x = 1\\n"])
    ['x = 1\\n']
    >>> print(declared_cell(["# Raises KeyError\\n", "{}['k']\\n"])[0][:60])
    __import__('course_lib._shown_errors', fromlist=['_']).run_s
    """
    source = "".join(lines)
    expected = declared_error(source)
    if expected is None:
        return lines
    filename = "<cell>"
    try:  # the name IPython gives a cell's code, so a traceback can show its lines
        from IPython import get_ipython

        shell = get_ipython()
        if shell is not None:
            filename = shell.compile.cache(source)
    except ImportError:
        pass
    call = f"run_showing_error({expected!r}, {source!r}, globals(), {filename!r})"
    return [f"__import__({__name__!r}, fromlist=['_']).{call}\n"]


def run_showing_error(
    expected: str, source: str, namespace: dict[str, Any], filename: str = "<cell>"
) -> None:
    """Run ``source`` in ``namespace``; print the error of type ``expected`` (by name, or a subclass
    of it; ``"A or B"``: either) that it raises as ``Type: message`` to stderr. Raise
    `AssertionError` if it raises nothing; an error of another type is raised as it is.

    >>> run_showing_error("KeyError", "total = 1 + 1", {})
    Traceback (most recent call last):
    AssertionError: This cell was meant to raise KeyError and raised nothing. To run it as an ...
    >>> run_showing_error("KeyError", "1 / 0", {})
    Traceback (most recent call last):
    ZeroDivisionError: division by zero
    """
    try:
        exec(compile(source, filename, "exec"), namespace)
    except Exception as error:
        if not set(expected.split(" or ")) & {kind.__name__ for kind in type(error).__mro__}:
            raise
        # As IPython's minimal traceback shows it: the error's type and its message.
        message = str(error)
        shown = f"{type(error).__name__}: {message}" if message else type(error).__name__
        print(shown, file=sys.stderr)
        return
    raise AssertionError(
        f"This cell was meant to raise {expected} and raised nothing. To run it as an ordinary "
        f'cell, delete its first line, "# Raises {expected}".'
    )
