"""Time ``course-grade`` on a class: locally (warm, then fresh kernels) and on Dask clusters.

    .venv/bin/python bench/bench_grade.py                 # lesson 02, 40 students, 1 repeat
    .venv/bin/python bench/bench_grade.py --students 10 --repeats 3 --lesson 01
    .venv/bin/python bench/bench_grade.py --local-only    # the local run alone

The class is half solved (odd students get the solution notebook), half blank (the exercise
notebook). Each configuration grades it into a fresh folder ``--repeats`` times; the table shows
the median wall time, the seconds per submission, the speed-up over one Dask worker, and a
projection (not a measurement) of 5,000 submissions from the per-submission cost. The gradebook of
every run is checked: one row per student, full marks for each solved notebook.
"""

import argparse
import csv
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROJECTED = 5000


def build_class(folder: Path, lesson: str, students: int) -> None:
    solved = next((ROOT / "solutions").glob(f"{lesson}_*.ipynb"))
    blank = ROOT / "exercises" / solved.name
    for i in range(students):
        (folder / f"student{i:02d}").mkdir(parents=True)
        shutil.copy(solved if i % 2 else blank, folder / f"student{i:02d}" / solved.name)


def grade_once(folder: Path, out: Path, extra: list[str], students: int) -> float:
    command = [
        sys.executable,
        "-m",
        "course_tools.grade",
        str(folder),
        "--out",
        str(out),
        "--quiet",
        *extra,
    ]
    env = {**os.environ, "DASK_TEMPORARY_DIRECTORY": str(out.parent / "dask")}
    start = time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env)
    seconds = time.monotonic() - start
    if result.returncode != 0:
        sys.exit(
            f"course-grade {' '.join(extra)} failed ({result.returncode}):\n{result.stderr[-3000:]}"
        )
    rows = list(csv.DictReader((out / "gradebook.csv").read_text().splitlines()))
    full = sum(r["points"] == r["max_points"] for r in rows)
    if len(rows) != students or full != students // 2:
        sys.exit(
            f"course-grade {' '.join(extra)}: {len(rows)} rows, {full} full marks, "
            f"expected {students} and {students // 2}"
        )
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lesson", default="02", help="two-digit lesson number (default: 02)")
    parser.add_argument("--students", type=int, default=40, help="class size (default: 40)")
    parser.add_argument(
        "--jobs",
        type=int,
        default=None,
        help="--jobs of the local runs (default: course-grade's own, the number of cores)",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="runs per configuration; the median is shown (default: 1)",
    )
    parser.add_argument(
        "--local-only",
        action="store_true",
        help="time only the local run (no Dask clusters, no speed-up column)",
    )
    args = parser.parse_args()
    jobs = [] if args.jobs is None else ["--jobs", str(args.jobs)]
    local = f"local, --jobs {args.jobs or f'{os.cpu_count()} (default)'}"
    configs = [
        (local, jobs),
        # The canary (each lesson's solution graded first, its kernel filling the compilation
        # cache): what it costs, against a run without it that fills the cache at the 8th notebook.
        (f"{local}, --no-canary", [*jobs, "--no-canary"]),
        (f"{local}, --warm-kernels off", [*jobs, "--warm-kernels", "off"]),
    ]
    if not args.local_only:
        configs += [
            ("Dask, 1 worker", ["--scheduler", "local:1"]),
            ("Dask, 2 workers", ["--scheduler", "local:2"]),
        ]
    medians: dict[str, float] = {}
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "class"
        build_class(folder, args.lesson, args.students)
        for name, extra in configs:
            runs = []
            for r in range(args.repeats):
                runs.append(
                    grade_once(folder, Path(tmp) / f"out-{len(medians)}-{r}", extra, args.students)
                )
            medians[name] = statistics.median(runs)
    one = medians.get("Dask, 1 worker", math.nan)
    print(
        f"lesson {args.lesson}, {args.students} students (half solved), "
        f"median of {args.repeats} run(s); "
        f"load (1 min) before {load_before:.2f}, after {os.getloadavg()[0]:.2f}\n"
    )
    print(
        f"| configuration | class of {args.students} (s) | s per submission "
        f"| speed-up over 1 worker | {PROJECTED:,} submissions (projection) |"
    )
    print("|---|---|---|---|---|")
    for name, seconds in medians.items():
        each = seconds / args.students
        print(
            f"| {name} | {seconds:.1f} | {each:.2f} | {one / seconds:.2f} "
            f"| {each * PROJECTED / 3600:.1f} h |"
        )


if __name__ == "__main__":
    main()
