"""Makes a Python started with this folder on ``PYTHONPATH`` import the ``course_lib`` around it.

The grader starts every kernel so: a kernel then imports the grader's own ``course_lib``, never
another copy that its interpreter could also find (an editable install of another checkout, say).
Standard library only; Python's ``site`` imports it at start-up, before any notebook code.
"""

import importlib.util
import os
import sys
from importlib.machinery import ModuleSpec

COURSE_LIB = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class _ThisCourseLib:
    """A meta-path finder that answers for ``course_lib`` alone, with the folder above."""

    @staticmethod
    def find_spec(name: str, path: object = None, target: object = None) -> ModuleSpec | None:
        if name != "course_lib":
            return None
        return importlib.util.spec_from_file_location(
            name, os.path.join(COURSE_LIB, "__init__.py"), submodule_search_locations=[COURSE_LIB]
        )


sys.meta_path.insert(0, _ThisCourseLib())
