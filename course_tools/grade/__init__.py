"""The autograder, ``course-grade``: every submitted notebook run in a fresh, fenced kernel and
judged against the course's reference.

``python -m course_tools.grade PATH... [--out DIR] [--timeout S] [--jobs N]``. It runs outside the
learners' kernels. For each submitted notebook it starts a fresh ``python3`` kernel in a scratch
folder holding a copy, runs the notebook's cells under per-cell, per-notebook and memory limits
(check and progress calls left out), asks the kernel to call each exercise's function on inputs
generated now from the grading seed, reads the plain-data results back, and judges them here
against reference results computed here once per exercise. It never imports what a notebook
defined, and trusts nothing the notebook printed.

Four wings, each importing only those listed before it (``tests/test_layers.py`` checks this):

* ``intake/``: what was handed in and by whom (folders, LMS downloads and zips, roster,
  overrides), each notebook's bytes read once, and the plan of its cells;
* ``sandbox/``: the fenced kernel, its launcher and fork server; it knows nothing of exercises;
* ``book/``: results, the journal and record, the class's gradebook, lateness, the files, LMS
  exports and the report; it knows no kernels;
* ``grading/``: the settings, one submission, the compilation cache, and the batch (here or on a
  Dask cluster, one interface).

On top, ``_classrun.py`` runs a class (read, grade, journal, merge, write: it raises, never prints)
and ``_cli.py`` is the command line, the one module that prints errors and chooses exit codes.
"""

from ._cli import main as main
from .book import ExerciseResult as ExerciseResult
from .book import SubmissionResult as SubmissionResult
from .intake import Submission as Submission
from .intake import find_submissions as find_submissions
