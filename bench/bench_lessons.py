"""Time every lesson and solution notebook from a fresh kernel, and show where the time goes.

    .venv/bin/python bench/bench_lessons.py                  # every notebook, once
    .venv/bin/python bench/bench_lessons.py --repeats 3      # the median of three runs each
    .venv/bin/python bench/bench_lessons.py notebooks/06_*.ipynb
    .venv/bin/python bench/bench_lessons.py --in-process     # no kernels: one IPython shell

Each notebook runs top to bottom in a new kernel, as ``make notebooks`` runs it, and nothing is
written. The time is from the first code cell's start to the last one's end (the kernel's start
is shown apart), against the course's promise of 8 s on a laptop CPU; the slowest cells say where
to look. The machine's load is shown, since these machines are shared: compare runs of one
invocation, not of two. A notebook whose cell fails (with ``COURSE_STRICT_CHECKS=1``, a self-check
that does not pass) is a FAILED row with the reason, the others still run, and the exit status is 1.

With ``--in-process`` the notebooks run one after another in this process, where no kernel can
start (a machine without inet sockets, such as the device tool's TPU machine, where also one
program at a time may hold the chip), each in a new IPython shell in its own folder, with JAX's
configuration restored after it. JAX's backend then starts once, before the first notebook, and
its start is shown apart: the cells' seconds are the cells' alone, where a kernel's first JAX cell
includes the backend's start. A cell tagged ``raises-exception`` may raise there; any other that
raises fails its notebook.
"""

import argparse
import functools
import logging
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from course_tools._notebook_files import cell_label, read_notebook
from course_tools.authoring.execute import (
    NotebookExecutionError,
    Timing,
    execute_in_process,
    execute_notebook,
)

TARGET_S = 8.0
SLOWEST = 3


def first_line(source: str, width: int = 32) -> str:
    """The cell's first line of code (comments and magics skipped), shortened."""
    lines = [line.strip() for line in source.splitlines()]
    line = next((x for x in lines if x and not x.startswith(("#", "%"))), "")
    return line if len(line) <= width else line[: width - 1] + "…"


def start_backend() -> float:
    """Start JAX's backends here, with lesson 07's 8 CPU devices (its first cell asks XLA for them
    before JAX starts, too late in a shared process); the seconds it took (JAX is imported
    already, by the course's tools)."""
    started = time.monotonic()
    import jax

    jax.config.update("jax_num_cpu_devices", 8)
    jax.devices()
    return time.monotonic() - started


def backend_start_elsewhere() -> float:
    """The seconds a new process takes to import JAX and start its backend, as a kernel does."""
    code = (
        "import time; started = time.monotonic(); import jax; jax.devices(); "
        "print(time.monotonic() - started)"
    )
    said = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(said.stdout.split()[-1])


class CompileLog(logging.Handler):
    """XLA's compiles in this process, each with the code cell it happened in: JAX logs every
    compile's seconds and function name when ``jax_log_compiles`` is on."""

    FINISHED = re.compile(r"Finished XLA compilation of (.+) in ([0-9.]+) sec")

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.cell = -1
        self.compiles: list[tuple[int, str, float]] = []
        import jax

        jax.config.update("jax_log_compiles", True)
        logger = logging.getLogger("jax")
        logger.addHandler(self)
        logger.setLevel(logging.WARNING)  # where jax_log_compiles logs; JAX's debug stays off
        logger.propagate = False  # the notebooks' own output stays as it was

    def emit(self, record: logging.LogRecord) -> None:
        if found := self.FINISHED.search(record.getMessage()):
            self.compiles.append((self.cell, found[1], float(found[2])))

    def summary(self, count: int) -> str:
        """The compiles since the last summary: how many, their seconds, the slowest."""
        compiles, self.compiles = self.compiles, []
        slowest = sorted(compiles, key=lambda c: -c[2])[:count]
        return f"{len(compiles)} compiles, {sum(c[2] for c in compiles):.1f} s; slowest: " + (
            ", ".join(f"cell {cell} {name} {seconds:.2f}" for cell, name, seconds in slowest)
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: lessons and solutions")
    parser.add_argument("--repeats", type=int, default=1, help="runs per notebook (median shown)")
    parser.add_argument(
        "--in-process", action="store_true", help="run in this process's IPython shell, no kernels"
    )
    parser.add_argument(
        "--compiles",
        type=int,
        default=0,
        metavar="N",
        help="with --in-process: each notebook's compiles and seconds, and its N slowest",
    )
    args = parser.parse_args()
    paths = args.notebooks or [
        *sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")),
        *sorted((ROOT / "solutions").glob("[0-9][0-9]_*.ipynb")),
    ]
    load = os.getloadavg()[0]
    execute: Callable[[Path], Timing] = lambda path: execute_notebook(path, write=False)
    log = None
    if args.in_process:
        os.environ.setdefault("MPLBACKEND", "Agg")
        log = CompileLog() if args.compiles else None
        execute = functools.partial(
            execute_in_process,
            before_cell=None if log is None else lambda index: setattr(log, "cell", index),
        )
        print(f"JAX's backend started in {start_backend():.1f} s, apart.\n")
    else:
        print(
            f"JAX's backend starts in {backend_start_elsewhere():.1f} s in a new process (imports "
            "included): each kernel's first JAX cell includes it.\n"
        )
    start = "notebook's run" if args.in_process else "kernel start"
    print(f"| notebook | cells (s) | with {start} (s) | slowest cells (s) | <= 8 s |")
    print("|---|---|---|---|---|")
    missed = 0
    failed = []
    compiled = []
    differing = []
    for path in paths:
        name = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        try:
            runs = [execute(path) for _ in range(args.repeats)]
        except NotebookExecutionError as error:
            failed.append(name)
            reason = " ".join(str(error).split())[:300].replace("|", "/")
            print(f"| {name} | FAILED | | {reason} | |", flush=True)
            continue
        cells = statistics.median(r.cells for r in runs)
        total = statistics.median(r.total for r in runs)
        per_cell: dict[int, list[float]] = {}
        for run in runs:
            for index, seconds in run.per_cell:
                per_cell.setdefault(index, []).append(seconds)
        nb = read_notebook(path)
        slowest = sorted(per_cell, key=lambda i: -statistics.median(per_cell[i]))[:SLOWEST]
        shown = "; ".join(
            f"{cell_label(nb.cells[i], i)} `{first_line(nb.cells[i].source)}` "
            f"{statistics.median(per_cell[i]):.1f}"
            for i in slowest
        )
        ok = cells <= TARGET_S
        missed += not ok
        print(
            f"| {name} | {cells:.1f} | {total:.1f} | {shown} | {'yes' if ok else 'NO'} |",
            flush=True,
        )
        if log:
            compiled.append(f"- {name}: {log.summary(args.compiles)}")
        if args.in_process and runs[0].differing:
            differing += [
                f"- {name}, {cell_label(nb.cells[i], i)}: {' '.join(text.split())[:160]!r}"
                for i, text in runs[0].differing
            ]
    print(
        f"\n{len(paths)} notebooks, median of {args.repeats} run(s) each; {missed} over "
        f"{TARGET_S:g} s; {len(failed)} failed; load (1 min) before {load:.2f}, after "
        f"{os.getloadavg()[0]:.2f}"
    )
    if compiled:
        print("\nXLA compiles (of every run):\n" + "\n".join(compiled))
    if args.in_process:
        print(
            "\nPrinted text other than the committed outputs (strict nbval's sanitizing; cells "
            "that display, or may raise, left out): "
            + ("\n" + "\n".join(differing) if differing else "none")
        )
    if failed:
        print("Failed: " + " ".join(map(str, failed)), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
