"""The autograder: ``python -m course_lib.grade PATH... [--out DIR] [--timeout S] [--jobs N]``.

It runs outside the learners' kernels. For each submitted notebook it starts a fresh ``python3``
kernel (nbclient) in a scratch folder holding a copy, runs the notebook's cells under per-cell,
per-notebook and memory limits (check and progress calls left out), asks the kernel to call each
exercise's function on inputs generated now from the grading seed, reads the plain-data results
back, and judges them here against reference results computed here once per exercise. It never
imports what a notebook defined, and trusts nothing the notebook printed.

Modules: ``_submissions.py`` (finding and planning notebooks; ``course_lib._notebook_files``
reads them), ``_kernel.py`` (the fenced kernel),
``_confine.py`` (the launcher that confines it: Landlock, capabilities, process cap and cleanup),
``_jaxcache.py`` (the compilation cache its kernels share read-only), ``_grader.py`` (one
submission, and the batch), ``_cluster.py`` (the batch on a Dask cluster), ``_gradebook.py``
(results of one notebook),
``_cli.py`` (arguments and exit status). The class: ``_intake.py`` (finding students and notebooks,
with ``_lms.py`` for LMS file names and ``_unzip.py`` for downloads), ``_tables.py`` (roster and
overrides CSV), ``_names.py`` (feedback folder names), ``_record.py`` (journal and earlier
gradebook), ``_classrun.py`` (one run), ``_classbook.py`` (one row per student), ``_due.py``
(lateness), ``_classfiles.py`` and ``_exports.py`` (the files, LMS layouts), ``_report.py``,
``_answers.py`` and ``_similarity.py`` (the class report).

Importing this package stays quick (the command line's start-up): grading itself, ``Options`` and
``grade_all`` in ``_grader.py``, loads nbclient and nbformat, which take seconds to import.
"""

from ._cli import main as main
from ._gradebook import ExerciseResult as ExerciseResult
from ._gradebook import SubmissionResult as SubmissionResult
from ._submissions import Submission as Submission
from ._submissions import find_submissions as find_submissions
