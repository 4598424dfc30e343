"""Where exercises are found: every ``_lessonNN.py`` module of this package lists its own.

A lesson module defines ``EXERCISES``, a tuple of :class:`~course_lib.checks.Exercise`, in the order
the notebook asks them. Modules are imported on first use, one lesson at a time.
"""

import importlib
import pkgutil
import re
from pathlib import Path

from ._spec import Exercise

_LESSON_MODULE = re.compile(r"_lesson(\d\d)")
_loaded: dict[str, tuple[Exercise, ...]] = {}


def lessons() -> list[str]:
    """Two-digit numbers of the lessons that have exercises, sorted."""
    found = []
    for module in pkgutil.iter_modules([str(Path(__file__).parent)]):
        match = _LESSON_MODULE.fullmatch(module.name)
        if match:
            found.append(match[1])
    return sorted(found)


def exercises(lesson: str) -> tuple[Exercise, ...]:
    """The exercises of one lesson (``"01"``), in notebook order; empty for a lesson without any."""
    if lesson not in _loaded:
        if lesson not in lessons():
            return ()
        module = importlib.import_module(f"{__package__}._lesson{lesson}")
        listed = tuple(module.EXERCISES)
        ids = [exercise.id for exercise in listed]
        if len(set(ids)) != len(ids):
            raise ValueError(f"_lesson{lesson}.py lists an exercise id twice: {ids}")
        for exercise in listed:
            if exercise.lesson != lesson:
                raise ValueError(
                    f"_lesson{lesson}.py lists {exercise.id}, which belongs to lesson "
                    f"{exercise.lesson}"
                )
        _loaded[lesson] = listed
    return _loaded[lesson]


def all_exercises() -> tuple[Exercise, ...]:
    """Every exercise of every lesson, in lesson order."""
    return tuple(exercise for lesson in lessons() for exercise in exercises(lesson))


def get_exercise(exercise_id: str) -> Exercise:
    """The exercise with this id; ``KeyError`` with the known ids of its lesson otherwise."""
    lesson = exercise_id.split(".", 1)[0]
    for exercise in exercises(lesson):
        if exercise.id == exercise_id:
            return exercise
    known = ", ".join(e.id for e in exercises(lesson)) or "none"
    raise KeyError(f"no exercise {exercise_id!r}; lesson {lesson} has: {known}")
