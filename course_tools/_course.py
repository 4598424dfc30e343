"""Where the course's own files are: the ``course_lib`` package the tools work with, and the
instructor's solution notebooks: those of the checkout around it, or the folder that
``course-grade --solutions DIR`` names for a grader installed with ``pip install .``.

Found without importing ``course_lib`` (which imports JAX), so that authoring tools stay quick.

>>> (COURSE_LIB / "__init__.py").is_file() and COURSE_LIB.name == "course_lib"
True
>>> solution_notebook("02", Path("/nonexistent")) is None
True
>>> os.environ[SOLUTIONS_VARIABLE] = "/srv/course/solutions"
>>> solutions_folder()
PosixPath('/srv/course/solutions')
>>> del os.environ[SOLUTIONS_VARIABLE]
>>> solutions_folder() == SOLUTIONS
True
"""

import importlib.util
import os
from pathlib import Path


def _course_lib_folder() -> Path:
    spec = importlib.util.find_spec("course_lib")
    if spec is None or spec.origin is None:
        raise ImportError("course_lib is not importable: install the course (make lab) first")
    return Path(spec.origin).resolve().parent


COURSE_LIB = _course_lib_folder()
"""The folder of the ``course_lib`` package this process imports; graded kernels import it too."""
SOLUTIONS = COURSE_LIB.parent / "solutions"
"""The course's solution notebooks, beside ``course_lib`` in a checkout (absent in a wheel)."""
SOLUTIONS_VARIABLE = "COURSE_SOLUTIONS"
"""The environment variable that names another solutions folder; ``course-grade --solutions DIR``
sets it for its run (graded kernels never see it: they get a few named variables only)."""


def solutions_folder() -> Path:
    """The solution notebooks the grader's canary and its report read: the folder named by
    ``$COURSE_SOLUTIONS`` where it is set, else `SOLUTIONS`."""
    named = os.environ.get(SOLUTIONS_VARIABLE)
    return Path(named) if named else SOLUTIONS


def solution_notebook(lesson: str, folder: Path | None = None) -> Path | None:
    """The solution notebook of ``lesson`` (``"02"``) in ``folder`` (default: `solutions_folder`),
    if it has exactly one."""
    folder = solutions_folder() if folder is None else folder
    found = sorted(folder.glob(f"{lesson}_*.ipynb")) if folder.is_dir() else []
    return found[0] if len(found) == 1 else None
