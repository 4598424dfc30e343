"""Where the course's own files are: the ``course_lib`` package the tools work with, and the
solution notebooks of the checkout around it.

Found without importing ``course_lib`` (which imports JAX), so that authoring tools stay quick.

>>> (COURSE_LIB / "__init__.py").is_file() and COURSE_LIB.name == "course_lib"
True
>>> solution_notebook("02", Path("/nonexistent")) is None
True
"""

import importlib.util
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


def solution_notebook(lesson: str, folder: Path = SOLUTIONS) -> Path | None:
    """The solution notebook of ``lesson`` (``"02"``), if ``folder`` has exactly one."""
    found = sorted(folder.glob(f"{lesson}_*.ipynb")) if folder.is_dir() else []
    return found[0] if len(found) == 1 else None
