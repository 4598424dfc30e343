#!/usr/bin/env python
"""Benchmark: what confining every kernel (``course_tools/grade/sandbox/_launcher.py``) costs.

Run it from the repository root: ``.venv/bin/python bench/bench_sandbox.py`` (``--help`` lists the
options). Two measurements, each with the sandbox on and off, interleaved so that a burst of load
from another job lands on both:

* **class**: the real CLI grading a class of 40 lesson-02 notebooks (20 solved, 20 blank) with
  ``--jobs 2``, in ABBA order (off, on, on, off for one pair); seconds per notebook from the wall
  time of each run.
* **kernel**: one kernel at a time in this process: start it, run ``import jax``, stop it; the
  median of ``--kernels`` rounds per mode, which shows the fixed cost per kernel without the noise
  of a whole batch.
* **launcher**: ``python -c pass`` run directly and through the launcher with a kernel's policy
  (Landlock rules, fork, no capabilities, exec): the launcher's own cost, median of 20 each.

It prints a table and writes the numbers to ``bench/results/bench_sandbox.json`` (git-ignored).
It is a benchmark, not a test: it always exits 0 when it ran.
"""

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "bench_sandbox.json"
STEM = "02_mapping_and_sgd.ipynb"


def make_class(folder: Path, solved: int, blank: int) -> None:
    """``solved`` copies of the solution, ``blank`` of the exercise notebook, one per student."""
    for i in range(solved + blank):
        source = ROOT / ("solutions" if i < solved else "exercises") / STEM
        (folder / f"student{i:02d}").mkdir(parents=True)
        shutil.copy(source, folder / f"student{i:02d}" / STEM)


def grade_class(folder: Path, out: Path, sandbox: str, jobs: int) -> tuple[float, dict]:
    """Seconds the CLI took, and the gradebook's ``grader`` section."""
    shutil.rmtree(out, ignore_errors=True)
    command = [
        sys.executable,
        "-m",
        "course_tools.grade",
        str(folder),
        "--out",
        str(out),
        "--jobs",
        str(jobs),
        "--quiet",
        "--sandbox",
        sandbox,
    ]
    start = time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    seconds = time.monotonic() - start
    if result.returncode != 0:
        sys.exit(f"grading failed ({result.returncode}): {result.stderr[-2000:]}")
    book = json.loads((out / "gradebook.json").read_text())
    return seconds, book


async def kernel_round(confined: bool) -> float:
    """Seconds to start one kernel, import JAX in it and stop it."""
    from course_tools.grade.sandbox import kernel_env
    from course_tools.grade.sandbox._kernel import Confinement, Limits, Sandbox

    work = Path(tempfile.mkdtemp(prefix="bench-sandbox-"))
    try:
        start = time.monotonic()
        sandbox = Sandbox(
            str(work), kernel_env(work), Limits(), Confinement(landlock=True) if confined else None
        )
        await sandbox.start()
        result = await sandbox.run("import jax, jax.numpy as jnp, numpy as np", 120)
        await sandbox.stop()
        if result.status != "ok":
            sys.exit(f"the kernel round failed: {result}")
        return time.monotonic() - start
    finally:
        shutil.rmtree(work, ignore_errors=True)


def launcher_rounds(rounds: int = 20) -> dict[str, list[float]]:
    """Seconds to run ``python -c pass`` directly and through the launcher, interleaved."""
    from course_tools._course import COURSE_LIB
    from course_tools.grade.sandbox import _launcher

    work = tempfile.mkdtemp(prefix="bench-sandbox-")
    policy = {
        "landlock": True,
        "read": _launcher.readable_paths(str(COURSE_LIB)),
        "write": [work],
        "devices": _launcher.DEVICES,
        "bind_ports": [1],
        "cgroup": None,
    }
    command = [sys.executable, "-c", "pass"]
    times: dict[str, list[float]] = {"off": [], "on": []}
    for _ in range(rounds):
        for mode, argv in (("off", command), ("on", _launcher.launcher_command(policy, command))):
            start = time.perf_counter()
            subprocess.run(argv, check=True)
            times[mode].append(time.perf_counter() - start)
    shutil.rmtree(work, ignore_errors=True)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument(
        "--pairs", type=int, default=1, help="ABBA pairs of class runs (default 1: four runs)"
    )
    parser.add_argument(
        "--kernels", type=int, default=10, help="kernel rounds per mode (default 10)"
    )
    parser.add_argument("--jobs", type=int, default=2, help="--jobs of the class runs (default 2)")
    parser.add_argument(
        "--json", type=Path, default=RESULTS, help=f"where to write the results (default {RESULTS})"
    )
    args = parser.parse_args()
    from course_tools.grade.sandbox._launcher import sandbox_level

    level = sandbox_level()
    print(f"sandbox: {json.dumps(level)}", file=sys.stderr)
    print(f"load average at start: {os.getloadavg()}", file=sys.stderr)
    n = 40
    runs: dict[str, list[float]] = {"on": [], "off": []}
    with tempfile.TemporaryDirectory(prefix="bench-sandbox-") as base:
        folder = Path(base) / "class"
        make_class(folder, n // 2, n // 2)
        for pair in range(args.pairs):
            for mode in ("off", "on", "on", "off"):
                seconds, book = grade_class(folder, Path(base) / "out", mode, args.jobs)
                points = sum(s["points"] for s in book["submissions"])
                assert book["grader"]["sandbox"]["sandbox"] == (
                    "off" if mode == "off" else level["sandbox"]
                )
                assert points == (n // 2) * sum(e["points"] for e in book["exercises"].values()), (
                    points
                )
                runs[mode].append(seconds)
                print(
                    f"class run {pair + 1}, sandbox {mode}: {seconds:.1f} s ({seconds / n:.2f} s "
                    "per notebook)",
                    file=sys.stderr,
                )
    kernels: dict[str, list[float]] = {"on": [], "off": []}
    for _ in range(args.kernels):
        for mode in ("off", "on"):
            kernels[mode].append(asyncio.run(kernel_round(mode == "on")))
    launcher = launcher_rounds()
    print(f"load average at end: {os.getloadavg()}", file=sys.stderr)

    per_notebook = {m: statistics.mean(runs[m]) / n for m in runs}
    per_kernel = {m: statistics.median(kernels[m]) for m in kernels}
    per_launch = {m: statistics.median(launcher[m]) for m in launcher}
    print(f"\n{'':34}{'sandbox off':>12}{'sandbox on':>12}{'cost':>10}")
    rows = [
        ("class of 40, s per notebook", per_notebook, 2),
        ("one kernel: start, import jax, stop", per_kernel, 2),
        ("python -c pass, direct / launched", per_launch, 3),
    ]
    for label, seconds, digits in rows:
        off, on = seconds["off"], seconds["on"]
        print(f"{label:34}{off:>12.{digits}f}{on:>12.{digits}f}{on - off:>+10.{digits}f}")
    print(
        f"\nclass runs (s): off {[round(x, 1) for x in runs['off']]}, on "
        f"{[round(x, 1) for x in runs['on']]}"
    )
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(
        json.dumps(
            {
                "sandbox": level,
                "class_runs_s": runs,
                "kernel_rounds_s": kernels,
                "launcher_rounds_s": launcher,
                "jobs": args.jobs,
                "notebooks": n,
            },
            indent=1,
        )
    )
    print(f"results written to {args.json}")


if __name__ == "__main__":
    main()
