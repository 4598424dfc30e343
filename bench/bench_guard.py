"""What the run-time guard costs: each exercise's probe with the watch, without, with packages.

Run from the repository root: ``.venv/bin/python bench/bench_guard.py [--lesson 02] [--repeat 3]``.
For each exercise of the lesson, the solution-style answers of ``tests/test_checks_lessonNN.py``
are probed on the grading cases (``probe_all``) three ways, best of ``--repeat`` runs each:
``off`` (the watch replaced by one that records nothing and sets no profile hook), ``on`` (as
graded: course functions and references watched) and ``+packages`` (``optax`` and ``numpy``
forbidden too, so C calls are looked at). Reference results are not included; compiling is.
"""

import argparse
import contextlib
import importlib
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import jax

from course_lib.checks import _evaluate, exercises
from course_lib.checks._guard import Watch


@contextlib.contextmanager
def _no_watch(forbidden: Any = (), packages: Any = ()) -> Iterator[Watch]:
    yield Watch({}, {}, ())


def _timed(exercise: Any, answer: Any, packages: tuple[str, ...], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        jax.clear_caches()
        cases = exercise.make_cases("grade", 0)
        start = time.perf_counter()
        _evaluate.probe_all(exercise, answer, cases, packages=packages)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lesson", default="02", help="two-digit lesson (default: 02)")
    parser.add_argument(
        "--repeat", type=int, default=3, help="runs per way, the best is kept (default: 3)"
    )
    args = parser.parse_args()
    answers = importlib.import_module(f"test_checks_lesson{args.lesson}").RIGHT
    watch = _evaluate.watch
    print(f"{'exercise':<28}{'off':>9}{'on':>9}{'+packages':>11}")
    totals = [0.0, 0.0, 0.0]
    for exercise in exercises(args.lesson):
        answer = answers[exercise.id]
        _evaluate.watch = _no_watch  # type: ignore[assignment]  # timed without the watch
        try:
            off = _timed(exercise, answer, (), args.repeat)
        finally:
            _evaluate.watch = watch
        on = _timed(exercise, answer, (), args.repeat)
        more = _timed(exercise, answer, ("optax", "numpy"), args.repeat)
        for i, seconds in enumerate((off, on, more)):
            totals[i] += seconds
        print(f"{exercise.id:<28}{off:>8.3f}s{on:>8.3f}s{more:>10.3f}s")
    print(f"{'total':<28}{totals[0]:>8.3f}s{totals[1]:>8.3f}s{totals[2]:>10.3f}s")


if __name__ == "__main__":
    main()
