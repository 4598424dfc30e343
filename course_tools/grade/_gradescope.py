"""The grader as a Gradescope autograder: the bundle that ``course-grade --gradescope-autograder``
writes, and the ``results.json`` its ``run_autograder`` writes for each submission.

The bundle (``autograder.zip``) holds at its root ``setup.sh``, which Gradescope runs once to build
the image (it installs the course's locked environment, then the course, into the image's
``python3``), ``run_autograder``, which Gradescope runs for each submission, ``requirements.txt``
(``uv.lock`` exported, as Binder gets it), ``gradescope.json`` (the lessons and grading options)
and ``course/`` (the package and the solution notebooks the canary grades).

``python3 -m course_tools.grade --gradescope-run`` grades every ``.ipynb`` under
``$AUTOGRADER_ROOT/submission`` (``AUTOGRADER_ROOT`` defaults to ``/autograder``) with the same
grader, sandbox, limits and canary as a class run, and writes ``$AUTOGRADER_ROOT/results/
results.json`` in Gradescope's format (gradescope-autograders.readthedocs.io, "Autograder
Specifications"): a total ``score``, ``execution_time``, an ``output`` with the notes, and one test
per exercise (``name``, ``score``, ``max_score``, ``status``, ``output``: the lines the student's
feedback file has for it, ``visibility``). When the canary fails, every submission gets score 0
and a result hidden from the student (top-level ``visibility: hidden``) whose ``output`` tells the
instructor that the grading environment is broken, and why.
"""

from __future__ import annotations

import json
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from course_lib.checks import Exercise, exercises, lessons

from .._course import COURSE_LIB, solutions_folder
from .book import ExerciseResult, best_exercises, exercise_feedback
from .intake import UsageError

REQUIREMENTS = COURSE_LIB.parent / "binder" / "requirements.txt"
"""``uv.lock`` for pip, as ``make lock`` writes it for Binder: what ``setup.sh`` installs."""
CONFIG = "gradescope.json"

SETUP = """\
#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image (course_tools/grade/
# _gradescope.py wrote it). It installs the course's locked environment, then the course, into the
# image's own python3, which run_autograder then uses.
set -euo pipefail
cd /autograder/source
python3 -c 'import sys; raise SystemExit(0 if sys.version_info >= (3, 11) else "the course \
needs Python 3.11 or newer, this image has " + sys.version.split()[0] + ": choose an Ubuntu \
24.04 base image in the autograder settings")'
python3 -m pip --version >/dev/null 2>&1 || apt-get install -y -qq python3-pip
# The image's Python is the one to install into: pip may, although the system marks it managed.
export PIP_BREAK_SYSTEM_PACKAGES=1 PIP_ROOT_USER_ACTION=ignore
python3 -m pip install --no-cache-dir -r requirements.txt
# Editable, so that the canary finds the solutions beside course_lib, in /autograder/source/course.
python3 -m pip install --no-cache-dir --no-deps --editable ./course
"""
RUN = """\
#!/usr/bin/env bash
# Gradescope runs this for every submission (course_tools/grade/_gradescope.py wrote it).
cd "$(dirname "$0")"
exec python3 -m course_tools.grade --gradescope-run
"""


def _course_files() -> dict[str, Path]:
    """What ``pip install ./course`` needs, and the solutions the canary grades (those of
    `solutions_folder`, which ``--solutions`` sets): bundle path to file."""
    root = COURSE_LIB.parent
    files = {f"course/{name}": root / name for name in ("pyproject.toml", "README.md")}
    for package in ("course_lib", "course_tools"):
        for path in sorted((root / package).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                files[f"course/{path.relative_to(root)}"] = path
    for path in sorted(solutions_folder().glob("[0-9][0-9]_*.ipynb")):
        files[f"course/solutions/{path.name}"] = path
    return files


def write_bundle(target: Path, chosen: Sequence[str], options: dict[str, list[str]]) -> list[str]:
    """Write the autograder zip for the lessons ``chosen`` (all with exercises when empty), with
    the grading ``options`` (option to values, as ``run_autograder`` passes them to the grader);
    returns the lessons.

    Raises :class:`UsageError` for an unknown lesson or a checkout without the files.
    """
    known = lessons()
    unknown = [lesson for lesson in chosen if lesson not in known]
    if unknown:
        raise UsageError(
            f"no lesson with exercises is called {unknown[0]!r}: give two digits among "
            + ", ".join(known)
        )
    if not REQUIREMENTS.is_file():
        raise UsageError(
            f"{REQUIREMENTS} is missing: write the bundle from a checkout of the course "
            "(`make lock` writes that file)"
        )
    picked = sorted(set(chosen)) or list(known)
    config = {"lessons": picked, "options": options}
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=target.parent, suffix=".zip", delete=False) as handle:
        temporary = Path(handle.name)
    try:
        with zipfile.ZipFile(temporary, "w", zipfile.ZIP_DEFLATED) as bundle:
            for name, text in (("setup.sh", SETUP), ("run_autograder", RUN)):
                info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
                info.external_attr = 0o100755 << 16  # executable, as Gradescope runs them
                bundle.writestr(info, text)
            bundle.writestr(CONFIG, json.dumps(config, indent=1) + "\n")
            bundle.write(REQUIREMENTS, "requirements.txt")
            for name, path in _course_files().items():
                bundle.write(path, name)
        temporary.replace(target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return picked


# --- on Gradescope ------------------------------------------------------------------------------


def _test(exercise: ExerciseResult) -> dict[str, Any]:
    return {
        "name": f"{exercise.id} ({exercise.name})",
        "score": exercise.points,
        "max_score": exercise.max_points,
        "status": "passed" if exercise.status == "passed" else "failed",
        "output": "\n".join(exercise_feedback(exercise)),
        "visibility": "visible",
    }


def _missing(exercise: Exercise) -> dict[str, Any]:
    return {
        "name": f"{exercise.id} ({exercise.name})",
        "score": 0,
        "max_score": exercise.points,
        "status": "failed",
        "output": f"No notebook of lesson {exercise.id[:2]} in the submission defines it.",
        "visibility": "visible",
    }


def results(book: dict[str, Any], chosen: list[str], seconds: float) -> dict[str, Any]:
    """``results.json`` from a run's ``gradebook.json``: one test per exercise of the lessons
    ``chosen``, each the best result among the submitted notebooks, as a class gradebook counts
    it (``book.best_exercises``)."""
    graded = [entry for entry in book["submissions"] if entry.get("lesson") in chosen]
    best = best_exercises(
        ExerciseResult.from_json(row) for entry in graded for row in entry["exercises"]
    )
    tests = [
        _test(best[e.id]) if e.id in best else _missing(e)
        for lesson in chosen
        for e in exercises(lesson)
    ]
    notes = []
    for entry in graded:
        notes.append(f"{entry['notebook']}: {entry['points']}/{entry['max_points']}")
        if entry["status"] != "graded":
            notes.append(f"  could not be graded: {entry['message']}")
        notes += [f"  {note}" for note in entry.get("notes", [])]
    ignored = sorted(e["notebook"] for e in book["submissions"] if e.get("lesson") not in chosen)
    if ignored:
        notes.append("Not graded here (another lesson's, or no lesson's): " + ", ".join(ignored))
    return {
        "score": sum(t["score"] for t in tests),
        "execution_time": round(seconds),
        "output": "\n".join(notes),
        "tests": tests,
    }


def broken(message: str, seconds: float) -> dict[str, Any]:
    """``results.json`` when the grading environment is broken: 0, hidden from the student."""
    return {
        "score": 0,
        "execution_time": round(seconds),
        "visibility": "hidden",
        "output": "The grading environment is broken, so this submission was not graded (it is "
        f"not the student's fault); fix the autograder and regrade.\n{message}",
        "tests": [],
    }
