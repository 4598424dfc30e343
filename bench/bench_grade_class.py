"""Time ``course-grade`` on a class of 40: 20 solved and 20 blank notebooks of one lesson, ``--jobs 2``.

    .venv/bin/python bench/bench_grade_class.py            # lesson 02, the default
    .venv/bin/python bench/bench_grade_class.py --lesson 01 --students 40 --jobs 2

It builds the class in a temporary folder (the solution notebook for odd students, the exercise
notebook for even ones), runs the grader once as an instructor would, checks the gradebook (one
row per student, full marks for each solved notebook) and prints the wall time. Then it re-runs
into the same output folder, where every notebook is unchanged, and prints that time too.
"""

import argparse
import csv
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lesson", default="02", help="two-digit lesson number (default: 02)")
    parser.add_argument("--students", type=int, default=40)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    solved = next((ROOT / "solutions").glob(f"{args.lesson}_*.ipynb"))
    blank = ROOT / "exercises" / solved.name
    with tempfile.TemporaryDirectory() as tmp:
        folder, out = Path(tmp) / "class", Path(tmp) / "out"
        for i in range(args.students):
            (folder / f"student{i:02d}").mkdir(parents=True)
            shutil.copy(solved if i % 2 else blank, folder / f"student{i:02d}" / solved.name)
        command = [sys.executable, "-m", "course_lib.grade", str(folder), "--out", str(out), "--jobs", str(args.jobs), "--quiet"]
        timings = []
        for _ in range(2):
            start = time.monotonic()
            result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
            timings.append(time.monotonic() - start)
            if result.returncode != 0:
                sys.exit(f"course-grade failed ({result.returncode}):\n{result.stderr[-3000:]}")
        rows = list(csv.DictReader((out / "gradebook.csv").read_text().splitlines()))
        full = sum(r["points"] == r["max_points"] for r in rows)
        print(f"lesson {args.lesson}: {len(rows)} students ({full} with full marks, {args.students // 2} expected), --jobs {args.jobs}")
        print(f"first run: {timings[0]:.1f} s; re-run with nothing changed: {timings[1]:.1f} s")


if __name__ == "__main__":
    main()
