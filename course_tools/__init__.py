"""course_tools: the course's tools for instructors and authors, kept apart from ``course_lib``.

``course_lib`` is what a notebook imports; this package is what an instructor or an author runs.
It imports ``course_lib`` (its public names, ``course_lib.checks`` and two shared helpers); nothing
in ``course_lib`` imports it, and a graded kernel cannot read it.

* ``grade/``: the autograder, ``course-grade`` (``python -m course_tools.grade``), in four wings:
  ``intake/``, ``sandbox/``, ``book/`` and ``grading/``, under the command line.
* ``authoring/``: the exercise generator, navigation cells, notebook re-execution, the site, Binder
  files and the compatibility runs (``make exercises``, ``make navigation``, ...).
* ``_notebook_files.py``: reading and writing notebook files, for both; ``_course.py``: where the
  course's ``course_lib`` and solution notebooks are.
"""
