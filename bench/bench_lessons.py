"""Time every lesson and solution notebook from a fresh kernel, and show where the time goes.

    .venv/bin/python bench/bench_lessons.py                  # every notebook, once
    .venv/bin/python bench/bench_lessons.py --repeats 3      # the median of three runs each
    .venv/bin/python bench/bench_lessons.py notebooks/06_*.ipynb
    .venv/bin/python bench/bench_lessons.py --in-process     # no kernels: IPython, a process each
    .venv/bin/python bench/bench_lessons.py --slowest 10     # each notebook's ten slowest cells
    .venv/bin/python bench/bench_lessons.py --against-cpu    # each lesson on the CPU backend too

Each notebook runs top to bottom in a new kernel, as ``make notebooks`` runs it, and nothing is
written. The time is from the first code cell's start to the last one's end (the kernel's start
is shown apart), against the course's promise of 8 s on a laptop CPU; the slowest cells say where
to look. The machine's load is shown, since these machines are shared: compare runs of one
invocation, not of two. A notebook whose cell fails (with ``COURSE_STRICT_CHECKS=1``, a self-check
that does not pass) is a FAILED row with the reason, the others still run, and the exit status is 1.

With ``--in-process`` no kernel starts (a machine without inet sockets, such as a TPU host, where
also one program at a time may hold the chip): each notebook runs in a new
Python process of its own, one after another, in an IPython shell, as a kernel would run it from a
fresh start: neither JAX nor ``course_lib`` is imported before the first cell. JAX's backend starts
in the cell that first needs it, after the cells that set XLA's flags and platforms (lesson 07's),
and its start is shown apart and left out of that cell's seconds. A cell that declares the error it
shows (``# Raises TypeError``) prints it there, as in a kernel; a cell that raises fails its
notebook.

With ``--against-cpu`` each lesson (not the solutions) runs again, right after, on the same
machine's CPU backend (``JAX_PLATFORMS=cpu``), and its seconds are shown as a ratio to the CPU's:
on an accelerator the goal is a lesson at most 1.3 times its CPU backend, since the machine's
host, not the course, sets the CPU's seconds. Its slowest cells show both seconds.
"""

import argparse
import functools
import json
import logging
import os
import re
import statistics
import subprocess
import sys
from collections.abc import Callable, Iterable
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
TARGET_RATIO = 1.3  # on an accelerator: a lesson's cells against the same machine's CPU backend


def first_line(source: str, width: int = 32) -> str:
    """The cell's first line of code (comments and magics skipped), shortened."""
    lines = [line.strip() for line in source.splitlines()]
    line = next((x for x in lines if x and not x.startswith(("#", "%"))), "")
    return line if len(line) <= width else line[: width - 1] + "…"


class BackendStart(logging.Handler):
    """When JAX's backends started in this process, and in which code cell: JAX logs, at debug
    level, the start and the end of each backend's start."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.cell = -1
        self.started_in = -1
        self.seconds = 0.0
        self._began: float | None = None
        logger = logging.getLogger("jax._src.xla_bridge")
        logger.addHandler(self)
        logger.setLevel(logging.DEBUG)

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message.startswith("Initializing backend"):
            self._began = record.created
            self.started_in = self.cell
        elif message.endswith("initialized") and self._began is not None:
            self.seconds += record.created - self._began
            self._began = None


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
        os.environ["JAX_LOG_COMPILES"] = "1"  # read when the notebook imports JAX
        logger = logging.getLogger("jax")
        logger.addHandler(self)
        logger.setLevel(logging.WARNING)  # where jax_log_compiles logs; JAX's debug stays off
        logger.propagate = False  # the notebooks' own output stays as it was

    def emit(self, record: logging.LogRecord) -> None:
        if found := self.FINISHED.search(record.getMessage()):
            self.compiles.append((self.cell, found[1], float(found[2])))


def compile_summary(compiles: list[tuple[int, str, float]], count: int) -> str:
    """How many compiles, their seconds, and the ``count`` slowest with their cells."""
    slowest = sorted(compiles, key=lambda c: -c[2])[:count]
    return f"{len(compiles)} compiles, {sum(c[2] for c in compiles):.1f} s; slowest: " + (
        ", ".join(f"cell {cell} {name} {seconds:.2f}" for cell, name, seconds in slowest)
    )


def run_here(path: Path, compiles: bool) -> dict[str, object]:
    """Run one notebook in this process, which has not started JAX's backend yet: its timing,
    with the backend's start left out of the cell it happened in, and its XLA compiles."""
    if "jax" in sys.modules:
        raise RuntimeError("JAX was imported before the notebook: its imports would go untimed")
    start = BackendStart()
    log = CompileLog() if compiles else None

    def before_cell(index: int) -> None:
        start.cell = index
        if log is not None:
            log.cell = index

    timing = execute_in_process(path, before_cell=before_cell)
    per_cell = [
        (index, seconds - start.seconds if index == start.started_in else seconds)
        for index, seconds in timing.per_cell
    ]
    return {
        "total": timing.total - start.seconds,
        "cells": sum(seconds for _, seconds in per_cell),
        "per_cell": per_cell,
        "differing": list(timing.differing),
        "backend": start.seconds,
        "compiles": [] if log is None else log.compiles,
    }


def run_in_new_process(path: Path, compiles: bool, cpu: bool) -> tuple[Timing, float, list]:
    """Run one notebook in a new Python process (`run_here` there), on the CPU backend if
    ``cpu``: its timing, its backend's start in seconds, and its compiles."""
    argv = [sys.executable, __file__, "--child", str(path)] + (["--compiles", "1"] * compiles)
    env = {**os.environ, "JAX_PLATFORMS": "cpu"} if cpu else None
    done = subprocess.run(argv, capture_output=True, text=True, env=env)
    said = json.loads(done.stdout.splitlines()[-1]) if done.stdout.strip() else {}
    if "error" in said or done.returncode:
        raise NotebookExecutionError(said.get("error") or done.stderr.strip()[-1500:])
    timing = Timing(
        total=said["total"],
        cells=said["cells"],
        per_cell=tuple(map(tuple, said["per_cell"])),
        differing=tuple(map(tuple, said["differing"])),
    )
    return timing, said["backend"], [tuple(c) for c in said["compiles"]]


def run_in_kernel(path: Path, cpu: bool) -> tuple[Timing, float, list]:
    """Run one notebook in a fresh kernel, on the CPU backend if ``cpu`` (the kernel inherits
    this process's environment): its timing."""
    before = os.environ.get("JAX_PLATFORMS")
    if cpu:
        os.environ["JAX_PLATFORMS"] = "cpu"
    try:
        return execute_notebook(path, write=False), 0.0, []
    finally:
        if before is None:
            os.environ.pop("JAX_PLATFORMS", None)
        else:
            os.environ["JAX_PLATFORMS"] = before


def is_lesson(path: Path) -> bool:
    return path.parent.name == "notebooks" and re.match(r"\d\d_", path.name) is not None


def cell_medians(timings: Iterable[Timing]) -> dict[int, float]:
    """Each code cell's median seconds over runs, by its index."""
    per_cell: dict[int, list[float]] = {}
    for timing in timings:
        for index, seconds in timing.per_cell:
            per_cell.setdefault(index, []).append(seconds)
    return {index: statistics.median(seconds) for index, seconds in per_cell.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: lessons and solutions")
    parser.add_argument("--repeats", type=int, default=1, help="runs per notebook (median shown)")
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="no kernels: each notebook in an IPython shell in a new process of its own",
    )
    parser.add_argument(
        "--compiles",
        type=int,
        default=0,
        metavar="N",
        help="with --in-process: each notebook's compiles and seconds, and its N slowest",
    )
    parser.add_argument(
        "--slowest", type=int, default=3, metavar="N", help="how many of the slowest cells to show"
    )
    parser.add_argument(
        "--against-cpu",
        action="store_true",
        help=f"each lesson again on the CPU backend: the ratio, against {TARGET_RATIO:g}x",
    )
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)  # run_in_new_process's
    args = parser.parse_args()
    if args.child:
        try:
            said = run_here(args.child, compiles=bool(args.compiles))
        except NotebookExecutionError as error:
            said = {"error": str(error)}
        print(json.dumps(said))
        return 0
    paths = args.notebooks or [
        *sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")),
        *sorted((ROOT / "solutions").glob("[0-9][0-9]_*.ipynb")),
    ]
    load = os.getloadavg()[0]
    if args.in_process:
        os.environ.setdefault("MPLBACKEND", "Agg")
        execute: Callable[..., tuple[Timing, float, list]] = functools.partial(
            run_in_new_process, compiles=args.compiles > 0
        )
        print("Each notebook in a new process; JAX's backend start is shown apart.\n")
        start = "backend's start, apart"
    else:
        execute = run_in_kernel
        print(
            f"JAX's backend starts in {backend_start_elsewhere():.1f} s in a new process (imports "
            "included): each kernel's first JAX cell includes it.\n"
        )
        start = "with kernel start"
    if args.against_cpu:
        print(
            f"| notebook | cells (s) | {start} (s) | CPU cells (s) | ratio | slowest cells "
            f"(s; CPU's after /) | <= {TARGET_RATIO:g}x CPU |"
        )
        print("|---|---|---|---|---|---|---|")
    else:
        print(f"| notebook | cells (s) | {start} (s) | slowest cells (s) | <= 8 s |")
        print("|---|---|---|---|---|")
    missed = compared = 0
    failed = []
    compiled = []
    differing = []
    for path in paths:
        name = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        against_cpu = args.against_cpu and is_lesson(path)
        try:
            runs = [execute(path, cpu=False) for _ in range(args.repeats)]
            cpu_runs = [execute(path, cpu=True) for _ in range(args.repeats * against_cpu)]
        except NotebookExecutionError as error:
            failed.append(name)
            reason = " ".join(str(error).split())[:300].replace("|", "/")
            gap = " | |" if args.against_cpu else ""
            print(f"| {name} | FAILED | |{gap} {reason} | |", flush=True)
            continue
        timings = [timing for timing, _, _ in runs]
        cells = statistics.median(t.cells for t in timings)
        beside = statistics.median(
            backend if args.in_process else timing.total for timing, backend, _ in runs
        )
        per_cell, cpu_per_cell = cell_medians(timings), cell_medians(t for t, _, _ in cpu_runs)
        nb = read_notebook(path)
        slowest = sorted(per_cell, key=lambda i: -per_cell[i])[: args.slowest]
        shown = "; ".join(
            f"{cell_label(nb.cells[i], i)} `{first_line(nb.cells[i].source)}` {per_cell[i]:.1f}"
            + (f"/{cpu_per_cell[i]:.1f}" if i in cpu_per_cell else "")
            for i in slowest
        )
        if against_cpu:
            cpu_cells = statistics.median(t.cells for t, _, _ in cpu_runs)
            ratio = cells / cpu_cells
            ok = ratio <= TARGET_RATIO
            compared += 1
            missed += not ok
            row = (
                f"{cells:.1f} | {beside:.1f} | {cpu_cells:.1f} | {ratio:.2f}x | {shown} | "
                f"{'yes' if ok else 'NO'}"
            )
        elif args.against_cpu:  # a solution: no goal of its own on an accelerator
            row = f"{cells:.1f} | {beside:.1f} | - | - | {shown} | -"
        else:
            ok = cells <= TARGET_S
            missed += not ok
            row = f"{cells:.1f} | {beside:.1f} | {shown} | {'yes' if ok else 'NO'}"
        print(f"| {name} | {row} |", flush=True)
        if args.compiles:
            compiled.append(f"- {name}: {compile_summary(runs[0][2], args.compiles)}")
        if timings[0].differing:
            differing += [
                f"- {name}, {cell_label(nb.cells[i], i)}: {' '.join(text.split())[:160]!r}"
                for i, text in timings[0].differing
            ]
    goal = f"of {compared} lessons against the CPU, over {TARGET_RATIO:g}x"
    print(
        f"\n{len(paths)} notebooks, median of {args.repeats} run(s) each; {missed} "
        f"{goal if args.against_cpu else f'over {TARGET_S:g} s'}; {len(failed)} failed; load "
        f"(1 min) before {load:.2f}, after {os.getloadavg()[0]:.2f}"
    )
    if compiled:
        print("\nXLA compiles (of each notebook's first run):\n" + "\n".join(compiled))
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
