"""Grading: submissions judged by running them in the sandbox against the course's reference.

* ``_settings.py``: :class:`Settings` (what the grades depend on, recorded in the gradebook) and
  :class:`RunOptions` (how the run goes), both frozen and computed once.
* ``_grader.py``: one submission, from its bytes: plan its cells, run them in a fenced kernel,
  probe each exercise there, judge the outcomes here.
* ``_jaxcache.py``: the compilation cache a lesson's kernels share read-only, filled once by the
  course's solution notebook.
* ``_batch.py``: :class:`Batch`, the one interface of a batch, and :class:`LocalBatch`, the batch
  on this machine; ``_cluster.py``: :class:`ClusterBatch`, the batch on a Dask cluster.
"""

from ._batch import Batch as Batch
from ._batch import LocalBatch as LocalBatch
from ._batch import OnResult as OnResult
from ._batch import grade_all as grade_all
from ._batch import stop_signals_to as stop_signals_to
from ._cluster import ClusterBatch as ClusterBatch
from ._cluster import SchedulerError as SchedulerError
from ._cluster import check_address as check_address
from ._cluster import connect as connect
from ._grader import CANARY_STUDENT as CANARY_STUDENT
from ._grader import Context as Context
from ._grader import full_marks as full_marks
from ._grader import grade_canary as grade_canary
from ._grader import grade_submission as grade_submission
from ._settings import RunOptions as RunOptions
from ._settings import Settings as Settings
