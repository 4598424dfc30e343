"""Re-execute notebooks in place, each in a fresh kernel, and report how long each took.

::

    python -m course_tools.authoring.execute [--timeout S] [--notebook-timeout S] [--no-write] NB..

For each notebook in turn: start a new ``python3`` kernel in the notebook's folder, run every
code cell top to bottom (no cell may take longer than ``--timeout`` seconds, default 120, and
the whole notebook no longer than ``--notebook-timeout``, default 600), shut the kernel down,
and on success write the notebook back atomically, in ``nbformat.write``'s format (``--no-write``
only checks: `make compat` runs the course this way on other JAX releases). No cell may raise.
A lesson cell that shows an error on purpose declares it on its first line, ``# Raises TypeError``
(`course_lib._shown_errors`): it must raise that error, which it prints, and it fails when it
raises nothing, so a lesson whose error went away on some JAX release fails here. Its output must
show the error, and no cell may be tagged ``raises-exception``, which Jupyter honours on Run All
but Colab does not. On a failure the notebook file is left untouched and the notebook, cell and
error are reported; the remaining notebooks still run, and the exit status is 1.

One line per notebook reports the wall time, kernel start and shutdown included, the time
from the first cell starting to the last cell finishing (this is how lesson timings are
measured), and how many self-checks said "passed". Each kernel talks to this process over unix
sockets in its own temporary folder, never over TCP ports: a port picked as free can be taken by
another kernel before this one binds it, and `make compat` starts kernels two at a time.
"""

from __future__ import annotations

import argparse
import configparser
import contextlib
import io
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from nbformat import NotebookNode

from .._notebook_files import (
    NotebookError,
    cell_label,
    display_path,
    notebook_text,
    read_notebook,
)

__all__ = [
    "DEFAULT_CELL_TIMEOUT",
    "DEFAULT_NOTEBOOK_TIMEOUT",
    "NotebookExecutionError",
    "Timing",
    "error_cell_problems",
    "execute_in_process",
    "execute_notebook",
    "main",
    "passed_checks",
]

DEFAULT_CELL_TIMEOUT = 120.0
DEFAULT_NOTEBOOK_TIMEOUT = 600.0
RAISES_TAG = "raises-exception"
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# What a self-check prints when an answer passes: "02.sgd_step: passed (2/2 points, 6 cases)".
_PASSED = re.compile(r"^\d\d\.\w+: passed \(", re.MULTILINE)


class NotebookExecutionError(Exception):
    """A notebook did not run cleanly; the message names the notebook, the cell and the error."""


@dataclass(frozen=True)
class Timing:
    """Seconds spent on one notebook (in all, and from the first cell's start to the last's end),
    the number of self-checks that said "passed", each code cell's seconds by its index, and (run
    in-process) the cells whose printed text differs from the notebook's committed outputs."""

    total: float
    cells: float
    checks_passed: int = 0
    per_cell: tuple[tuple[int, float], ...] = ()
    # In-process runs: (index, text) of each cell that printed other text than committed.
    differing: tuple[tuple[int, str], ...] = ()


def passed_checks(nb: NotebookNode) -> int:
    """How many self-checks in ``nb``'s outputs said "passed": printed (a terminal's text), or
    shown as a panel whose plain text says so (a notebook's).

    >>> from nbformat.v4 import new_notebook, new_code_cell, new_output
    >>> said = new_output("stream", name="stdout", text="02.sgd_step: passed (2/2 points)")
    >>> panel = new_output("display_data", data={"text/plain": "02.tree_sum: passed (1/1 point)"})
    >>> passed_checks(new_notebook(cells=[new_code_cell("check(...)", outputs=[said, panel])]))
    2
    """
    return sum(
        len(_PASSED.findall(output.get("text", "") or output.get("data", {}).get("text/plain", "")))
        for cell in nb.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
        if output.get("output_type") in ("stream", "display_data")
    )


class _NotebookTimeoutError(Exception):
    pass


def error_cell_problems(nb: NotebookNode) -> list[tuple[int, str]]:
    """Each code cell of ``nb`` that shows an error the wrong way, by index, and what is wrong: a
    cell tagged ``raises-exception`` (Colab's Run All would stop there), or a cell that declares
    the error it shows and whose outputs show none.

    >>> from nbformat.v4 import new_notebook, new_code_cell, new_output
    >>> shown = new_output("stream", name="stderr", text="ZeroDivisionError: division by zero")
    >>> nb = new_notebook(cells=[
    ...     new_code_cell("# Raises ZeroDivisionError\\n1 / 0", outputs=[shown]),
    ...     new_code_cell("# Raises ZeroDivisionError\\n1 / 1"),
    ...     new_code_cell("1 / 0", metadata={"tags": [RAISES_TAG]}),
    ...     new_code_cell("1 + 1"),
    ... ])
    >>> [index for index, _ in error_cell_problems(nb)]
    [1, 2]
    """
    from course_lib._shown_errors import declared_error  # imported here: course_lib imports JAX

    problems = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        expected = declared_error(cell.source)
        if RAISES_TAG in cell.metadata.get("tags", []):
            problems.append(
                (
                    index,
                    f"tagged {RAISES_TAG!r}, which Colab ignores (its Run All stops at the error): "
                    "drop the tag and name the error on the cell's first line instead, "
                    "'# Raises TypeError'",
                )
            )
        elif expected is not None and not any(
            output.get("output_type") == "stream" and output.get("name") == "stderr"
            for output in cell.get("outputs", [])
        ):
            problems.append((index, f"declares that it raises {expected} but shows no error"))
    return problems


def execute_notebook(
    path: str | Path,
    *,
    cell_timeout: float = DEFAULT_CELL_TIMEOUT,
    notebook_timeout: float = DEFAULT_NOTEBOOK_TIMEOUT,
    kernel_name: str = "python3",
    write: bool = True,
) -> Timing:
    """Run ``path`` top to bottom in a fresh kernel and write it back; raise
    `NotebookExecutionError`.

    The file is only written when every cell ran as it should, and never with ``write=False``.
    """
    # Imported here: nbclient pulls in jupyter_client and zmq, which the other tools don't need.
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError
    from traitlets.config import Config

    path = Path(path).absolute()
    where = display_path(path)
    started = time.monotonic()
    deadline = started + notebook_timeout
    try:
        nb = read_notebook(path)
    except NotebookError as error:
        raise NotebookExecutionError(str(error)) from None
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.metadata.pop("execution", None)  # stale timings from another executor

    state: dict[str, float | int | None] = {"index": None, "first": None, "last": None}
    per_cell: list[tuple[int, float]] = []

    def on_cell_start(cell: NotebookNode, cell_index: int) -> None:
        state["index"] = cell_index
        if time.monotonic() >= deadline:
            raise _NotebookTimeoutError
        state["started"] = time.monotonic()
        if state["first"] is None and cell.cell_type == "code":
            state["first"] = state["started"]

    def on_cell_executed(cell: NotebookNode, cell_index: int, execute_reply: object) -> None:
        now = state["last"] = time.monotonic()
        began = state.get("started")
        per_cell.append((cell_index, now - began if isinstance(began, float) else 0.0))

    def timeout_for(cell: NotebookNode) -> float:
        return max(0.1, min(cell_timeout, deadline - time.monotonic()))

    sockets = tempfile.TemporaryDirectory(prefix="course-kernel-")
    connection = {"connection_file": os.path.join(sockets.name, "kernel.json")}
    if os.name == "posix":
        connection["transport"] = "ipc"
    client = NotebookClient(
        nb,
        config=Config(KernelManager=connection),  # the client makes, starts and stops the kernel
        kernel_name=kernel_name,
        timeout=cell_timeout,
        timeout_func=timeout_for,
        resources={"metadata": {"path": str(path.parent)}},
        allow_errors=False,
        record_timing=False,
        on_cell_start=on_cell_start,
        on_cell_executed=on_cell_executed,
    )

    def failure(problem: str) -> NotebookExecutionError:
        index = state["index"]
        if isinstance(index, int) and 0 <= index < len(nb.cells):
            problem = f"{cell_label(nb.cells[index], index)}: {problem}"
        return NotebookExecutionError(f"{where}: {problem}")

    try:
        with sockets:
            # No workshop room hears the course's own runs (course_lib.checks.join_room).
            client.execute(env={**os.environ, "COURSE_ROOM": "off"})
    except CellExecutionError as error:
        traceback = _ANSI.sub("", error.traceback).rstrip()
        raise failure(f"{error.ename}: {error.evalue}\n{traceback}") from None
    except (_NotebookTimeoutError, CellTimeoutError):
        if time.monotonic() >= deadline - 0.5:
            raise failure(f"the notebook ran past its {notebook_timeout:g} s limit") from None
        raise failure(f"the cell ran past its {cell_timeout:g} s limit") from None
    except DeadKernelError as error:
        raise failure(f"the kernel died ({error})") from None
    except Exception as error:  # noqa: BLE001 (nbclient raises many kinds: a kernel that won't start, a lost connection; each fails this notebook with its message)
        raise failure(f"{type(error).__name__}: {error}") from None

    wrong = error_cell_problems(nb)
    if wrong:
        said = "; ".join(f"{cell_label(nb.cells[i], i)}: {problem}" for i, problem in wrong)
        raise NotebookExecutionError(f"{where}: {said}")

    if write:
        # Imported here: course_lib imports JAX, which execute_in_process's notebooks must import
        # themselves, in their first cells, for their seconds to be a fresh kernel's.
        from course_lib._atomic import write_text_atomic

        write_text_atomic(path, notebook_text(nb, where))
    first, last = state["first"], state["last"]
    cells = float(last - first) if first is not None and last is not None else 0.0
    return Timing(
        total=time.monotonic() - started,
        cells=cells,
        checks_passed=passed_checks(nb),
        per_cell=tuple(per_cell),
    )


# What strict nbval leaves out of a comparison (addresses, device names, timings), kept in one home.
SANITIZE_CONFIG = Path(__file__).resolve().parents[2] / "tests" / "nbval_sanitize.cfg"


def _sanitizer() -> Callable[[str], str]:
    """The nbval sanitizer's substitutions as one function of a cell's text."""
    parser = configparser.ConfigParser()
    parser.read(SANITIZE_CONFIG, encoding="utf-8")
    rules = [(re.compile(parser[s]["regex"]), parser[s]["replace"]) for s in parser.sections()]

    def sanitize(text: str) -> str:
        text = _ANSI.sub("", text)
        for pattern, replacement in rules:
            text = pattern.sub(replacement, text)
        return text.strip()

    return sanitize


def _committed_text(cell: NotebookNode) -> str:
    """What ``cell`` printed when committed: its stdout and its result's plain text."""
    parts = [
        "".join(o.text for o in cell.outputs if o.output_type == "stream" and o.name == "stdout")
    ]
    parts += [
        o.data["text/plain"]
        for o in cell.outputs
        if o.output_type == "execute_result" and "text/plain" in o.data
    ]
    return "\n".join(parts)


def execute_in_process(path: Path, before_cell: Callable[[int], None] | None = None) -> Timing:
    """Run ``path`` top to bottom in this process's IPython shell, where no kernel can start (a
    machine without inet sockets); raise `NotebookExecutionError` naming the first cell that
    raised (a cell that declares the error it shows prints it instead, as in a kernel, and raises
    only when it shows none). Nothing is written. Where this process has imported JAX, its
    configuration is restored after; where not, the notebook imports JAX in its own cell, timed
    there as in a fresh kernel, and its settings stay (run one such notebook per process).
    ``before_cell``, if given, is called with each code cell's index before it runs. The cells
    whose stdout and result differ in text from the committed outputs (as strict nbval compares
    them) are listed in ``Timing.differing``; cells that display (pictures, widgets, rich text)
    are not compared.

    >>> execute_in_process(Path("notebooks/01_what_is_a_pytree.ipynb")).cells < 60
    True
    """
    from IPython.core.interactiveshell import InteractiveShell

    # A new shell for each notebook: a reset keeps the event callbacks the last one registered.
    InteractiveShell.clear_instance()
    shell = InteractiveShell.instance()
    # A cell's result is compared, not printed as "Out[n]: ..." among what the cell printed.
    shell.displayhook.write_output_prompt = lambda: None  # type: ignore[method-assign]
    shell.displayhook.write_format_data = lambda *_: None  # type: ignore[method-assign]
    sanitize = _sanitizer()
    differing: list[tuple[int, str]] = []
    nb = read_notebook(path)
    jax = sys.modules.get("jax")
    config = {} if jax is None else dict(jax.config.values)
    folder = os.getcwd()
    per_cell: list[tuple[int, float]] = []
    started = time.monotonic()
    try:
        os.chdir(path.parent)
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code" or not cell.source.strip():
                continue
            if before_cell is not None:
                before_cell(index)
            output, errors = io.StringIO(), io.StringIO()
            began = time.monotonic()
            with contextlib.redirect_stdout(output), contextlib.redirect_stderr(errors):
                result = shell.run_cell(cell.source, store_history=True)
            per_cell.append((index, time.monotonic() - began))
            error = result.error_before_exec or result.error_in_exec
            if error is not None:
                said = (output.getvalue() + errors.getvalue()).strip()[-1500:]
                raise NotebookExecutionError(
                    f"{path.name}: {cell_label(cell, index)}: {type(error).__name__}: {error}"
                    + (f"\n{said}" if said else "")
                )
            if any(o.output_type == "display_data" for o in cell.outputs):  # a display is no text
                continue
            printed = [output.getvalue()]
            if result.result is not None:
                formatter = shell.display_formatter
                assert formatter is not None  # an InteractiveShell always has one
                printed.append(formatter.format(result.result)[0]["text/plain"])
            text = sanitize("\n".join(printed))
            if text != sanitize(_committed_text(cell)):
                differing.append((index, text))
    finally:
        os.chdir(folder)
        if jax is not None:  # undo the notebook's settings of the JAX this process had before
            for name, value in config.items():
                if jax.config.values.get(name) != value:
                    with contextlib.suppress(Exception):  # some are fixed once JAX starts
                        jax.config.update(name, value)
    elapsed = time.monotonic() - started
    return Timing(
        total=elapsed,
        cells=sum(s for _, s in per_cell),
        per_cell=tuple(per_cell),
        differing=tuple(differing),
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point; returns the exit status (0 all ran, 1 some failed)."""
    parser = argparse.ArgumentParser(
        prog="python -m course_tools.authoring.execute",
        description="Re-execute notebooks in place, one fresh kernel each, and time them.",
    )
    parser.add_argument("notebooks", nargs="*", type=Path, metavar="NB", help="notebooks to run")
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_CELL_TIMEOUT,
        metavar="S",
        help=f"longest any one cell may run, in seconds (default {DEFAULT_CELL_TIMEOUT:g})",
    )
    parser.add_argument(
        "--notebook-timeout",
        type=float,
        default=DEFAULT_NOTEBOOK_TIMEOUT,
        metavar="S",
        help=f"longest one notebook may run, in seconds (default {DEFAULT_NOTEBOOK_TIMEOUT:g})",
    )
    parser.add_argument(
        "--no-write",
        action="store_true",
        help="run and check each notebook, but leave every file as it was",
    )
    args = parser.parse_args(argv)
    if not args.notebooks:
        print("No notebooks to execute.")
        return 0

    failed: list[str] = []
    total = 0.0
    for path in args.notebooks:
        where = display_path(path)
        started = time.monotonic()
        try:
            timing = execute_notebook(
                path,
                cell_timeout=args.timeout,
                notebook_timeout=args.notebook_timeout,
                write=not args.no_write,
            )
        except NotebookExecutionError as error:
            elapsed = time.monotonic() - started
            total += elapsed
            failed.append(where)
            print(f"{where}: FAILED after {elapsed:.1f} s, file left as it was", flush=True)
            print(error, file=sys.stderr, flush=True)
            continue
        total += timing.total
        checks = f", {timing.checks_passed} self-checks passed" if timing.checks_passed else ""
        print(f"{where}: {timing.total:.1f} s (cells {timing.cells:.1f} s){checks}", flush=True)
    ran = len(args.notebooks)
    print(f"{ran} notebook(s) in {total:.1f} s; {len(failed)} failed", flush=True)
    if failed:
        print("Failed: " + " ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
