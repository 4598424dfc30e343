"""The book: what a class's grades are, and the files that say them. It knows no kernels: it
reads results and writes files.

* ``_results.py``: one notebook's results (:class:`SubmissionResult`, :class:`ExerciseResult`),
  checked when they come back from a Dask worker, and the texts made from them.
* ``_journal.py``: the journal of an unfinished run (``--resume``) and the record of earlier runs
  (``gradebook.json``), refused when graded with other settings.
* ``_classbook.py``: one row per student (best notebook per exercise, overrides, lateness from
  ``_lateness.py``).
* ``_files.py``: ``gradebook.csv``, ``gradebook.json`` and the feedback files, written atomically;
  ``_exports.py``: the Canvas and Moodle layouts.
* ``_faults.py``: likely grader faults, one error shared by most of a lesson's notebooks.
* ``_report.py``: ``report.html``, with ``_answers.py`` (a notebook's answers, normalised) and
  ``_similarity.py`` (answers alike, or copied from the solutions).
"""

from ._answers import answer_sheet as answer_sheet
from ._answers import outside_errors as outside_errors
from ._classbook import ClassBook as ClassBook
from ._classbook import LatePolicy as LatePolicy
from ._classbook import best_exercises as best_exercises
from ._classbook import build_class as build_class
from ._classbook import find_student as find_student
from ._classbook import resolve_overrides as resolve_overrides
from ._exports import FORMATS as FORMATS
from ._exports import lms_files as lms_files
from ._faults import likely_grader_faults as likely_grader_faults
from ._files import write_class as write_class
from ._journal import Graded as Graded
from ._journal import Journal as Journal
from ._journal import Record as Record
from ._journal import read_record as read_record
from ._journal import settings_differences as settings_differences
from ._lateness import parse_due as parse_due
from ._report import report_html as report_html
from ._results import ExerciseResult as ExerciseResult
from ._results import SubmissionResult as SubmissionResult
from ._results import exercise_feedback as exercise_feedback
from ._results import summary_table as summary_table
