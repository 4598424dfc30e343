"""Time every lesson and solution notebook from a fresh kernel, and show where the time goes.

    .venv/bin/python bench/bench_lessons.py                  # every notebook, once
    .venv/bin/python bench/bench_lessons.py --repeats 3      # the median of three runs each
    .venv/bin/python bench/bench_lessons.py notebooks/06_*.ipynb

Each notebook runs top to bottom in a new kernel, as ``make notebooks`` runs it, and nothing is
written. The time is from the first code cell's start to the last one's end (the kernel's start
is shown apart), against the course's promise of 8 s on a laptop CPU; the slowest cells say where
to look. The machine's load is shown, since these machines are shared: compare runs of one
invocation, not of two. A notebook whose cell fails (with ``COURSE_STRICT_CHECKS=1``, a self-check
that does not pass) is a FAILED row with the reason, the others still run, and the exit status is 1.
"""

import argparse
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from course_tools._notebook_files import cell_label, read_notebook
from course_tools.authoring.execute import NotebookExecutionError, execute_notebook

TARGET_S = 8.0
SLOWEST = 3


def first_line(source: str, width: int = 32) -> str:
    """The cell's first line of code (comments and magics skipped), shortened."""
    lines = [line.strip() for line in source.splitlines()]
    line = next((x for x in lines if x and not x.startswith(("#", "%"))), "")
    return line if len(line) <= width else line[: width - 1] + "…"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: lessons and solutions")
    parser.add_argument("--repeats", type=int, default=1, help="runs per notebook (median shown)")
    args = parser.parse_args()
    paths = args.notebooks or [
        *sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")),
        *sorted((ROOT / "solutions").glob("[0-9][0-9]_*.ipynb")),
    ]
    load = os.getloadavg()[0]
    print("| notebook | cells (s) | with kernel start (s) | slowest cells (s) | <= 8 s |")
    print("|---|---|---|---|---|")
    missed = 0
    failed = []
    for path in paths:
        name = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        try:
            runs = [execute_notebook(path, write=False) for _ in range(args.repeats)]
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
    print(
        f"\n{len(paths)} notebooks, median of {args.repeats} run(s) each; {missed} over "
        f"{TARGET_S:g} s; {len(failed)} failed; load (1 min) before {load:.2f}, after "
        f"{os.getloadavg()[0]:.2f}"
    )
    if failed:
        print("Failed: " + " ".join(map(str, failed)), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
