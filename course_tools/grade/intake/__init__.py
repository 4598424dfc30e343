"""Intake: what was handed in, by whom, and what it holds. Nothing here runs a notebook.

* ``_students.py``: finding a class's students and notebooks in folders, Canvas and Moodle
  downloads and their zips (``_lms.py`` reads LMS file names, ``_unzip.py`` opens zips safely);
  applying the roster and submission times.
* ``_submissions.py``: a submission, and its bytes read once (:class:`Snapshot`).
* ``_reading.py``: a notebook's lesson and exercise cells, and the plan of cells a kernel runs.
* ``_tables.py``: the roster, overrides and submission-times CSV files.
* ``_names.py``: names compared the way file systems and people compare them, and feedback folders.
* ``_usage.py``: :class:`UsageError`, for input the instructor must fix (every wing raises it).
"""

from ._names import folding as folding
from ._names import safe_name as safe_name
from ._names import student_folders as student_folders
from ._reading import Plan as Plan
from ._reading import PlannedCell as PlannedCell
from ._reading import detect_lesson as detect_lesson
from ._reading import filename_lesson as filename_lesson
from ._reading import plan_cells as plan_cells
from ._reading import without_checks as without_checks
from ._students import Intake as Intake
from ._students import Student as Student
from ._students import apply_times as apply_times
from ._students import find_class as find_class
from ._students import find_submissions as find_submissions
from ._submissions import Snapshot as Snapshot
from ._submissions import Submission as Submission
from ._submissions import read_once as read_once
from ._tables import OverrideRow as OverrideRow
from ._tables import RosterRow as RosterRow
from ._tables import read_overrides as read_overrides
from ._tables import read_roster as read_roster
from ._tables import read_submission_times as read_submission_times
from ._usage import UsageError as UsageError
