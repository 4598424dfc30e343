"""Grading on a Dask cluster: one task per submission, checked JSON back, every file written here.

``course-grade --scheduler tcp://host:8786`` (or ``local:N`` for a ``LocalCluster`` of N workers)
sends each notebook's bytes (read once, by the class run) to a worker, which grades them exactly as
a local run does: a fenced kernel per submission (``_grader.grade_submission``), reference answers
computed once per worker and seed. Only the result's JSON text comes back; the client checks it
against the gradebook's schema (:meth:`SubmissionResult.checked`) and that it is the result of the
submission it sent, then journals it and hands it to the class run, which writes the same files a
local run writes.

Faults: a task whose worker dies is run again on another worker once (the scheduler's
``allowed-failures``, 1 here; ``worker-saturation`` 1.0 so that a death is counted only against
the task that was running); a second death ends it as ``KilledWorker``, which the client records
as an ``error`` for that notebook. A task that raises is retried once (``retries=1``). Each
finished task is journalled once, when it arrives.
"""

import asyncio
import atexit
import dataclasses
import hashlib
import json
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import CancelledError
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax

from ..book import SubmissionResult, settings_differences
from ..intake import Snapshot, Submission
from ..sandbox import SandboxLevel
from ._batch import OnResult, Progress
from ._grader import Context, canary_snapshot, error_result, grade_submission
from ._settings import RunOptions, Settings

ALLOWED_FAILURES = 1  # a worker dying under a task: the task is run once more elsewhere
# A task per worker thread, none sent ahead to wait there: a worker that dies is then blamed only
# for the notebook it was grading (the scheduler counts a death against every task it had sent).
WORKER_SATURATION = 1.0
IN_FLIGHT_PER_THREAD = (
    2  # tasks submitted ahead per worker thread: notebooks' bytes wait here, not there
)
_ADDRESS = re.compile(r"(tcp|tls)://(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.\-]+):(\d{1,5})")
_LOCAL = re.compile(r"local:(\d+)")


class SchedulerError(Exception):
    """The cluster cannot be used: a bad address, a scheduler not answering, mixed settings."""


def check_address(text: str) -> str:
    """The scheduler address as given, if it has the form Dask needs; else :class:`SchedulerError`.

    >>> check_address("tcp://10.0.0.5:8786")
    'tcp://10.0.0.5:8786'
    >>> check_address("local:2")
    'local:2'
    >>> check_address("10.0.0.5")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    course_tools.grade.grading._cluster.SchedulerError: '10.0.0.5' is not a scheduler address: give tcp://...
    """
    local = _LOCAL.fullmatch(text)
    if local and int(local[1]) >= 1:
        return text
    address = _ADDRESS.fullmatch(text)
    if address and 0 < int(address[3]) < 65536:
        return text
    raise SchedulerError(
        f"{text!r} is not a scheduler address: give tcp://HOST:PORT (tls://HOST:PORT), "
        "or local:N for N workers on this machine"
    )


def task_key(snapshot: Snapshot, settings: dict[str, Any]) -> str:
    """The task's key: the same submission, bytes and settings always get the same key.

    >>> sub = Submission(Path("a.ipynb"), "ann", "01_x.ipynb")
    >>> task_key(Snapshot(sub, b"{}"), {"seed": 0})[:13]
    'course-grade-'
    """
    sub = snapshot.submission
    text = json.dumps([sub.student, sub.notebook, snapshot.sha256, settings], sort_keys=True)
    return "course-grade-" + hashlib.sha256(text.encode()).hexdigest()[:32]


# --- on the worker ---

_CONTEXTS: dict[str, Context] = {}  # one grading context (scratch folder, references) per settings
_LEVELS: dict[bool, SandboxLevel] = {}  # this worker's own sandbox level, probed once
_WORKER_LOCK = threading.Lock()


def _worker_settings(client_settings: Settings) -> Settings:
    """The client's settings with this worker's own sandbox level, probed once per process."""
    enabled = client_settings.sandbox.enabled
    with _WORKER_LOCK:
        if enabled not in _LEVELS:
            _LEVELS[enabled] = SandboxLevel.probe(enabled)
    return dataclasses.replace(client_settings, sandbox=_LEVELS[enabled])


def _worker_context(settings: Settings, options: RunOptions) -> Context:
    """This worker's context for these settings: reference answers are computed once per worker."""
    key = json.dumps(settings.recorded(), sort_keys=True)
    with _WORKER_LOCK:
        if key not in _CONTEXTS:
            jax.config.update(
                "jax_platforms", "cpu"
            )  # references computed as a local run computes them
            scratch = Path(tempfile.mkdtemp(prefix="course-grade-worker-"))
            atexit.register(shutil.rmtree, scratch, True)
            ctx = Context(settings, options, scratch)
            ctx.warm_up()
            atexit.register(ctx.close)  # run before the folder is removed (last in, first out)
            _CONTEXTS[key] = ctx
        return _CONTEXTS[key]


def grade_task(
    data: bytes, student: str, notebook: str, settings: Settings, options: RunOptions
) -> str:
    """Grade one submission here: the JSON of ``{"result", "seconds"}`` or of ``{"refused"}``.

    A worker whose own settings differ from the client's (another ``course_lib``, no Landlock where
    the client has it) refuses: a gradebook never records a sandbox it did not get.
    """
    mine = _worker_settings(settings)
    if mine.recorded() != settings.recorded():
        return json.dumps({"refused": settings_differences(settings.recorded(), mine.recorded())})
    ctx = _worker_context(mine, dataclasses.replace(options, quiet=True))
    snapshot = Snapshot(Submission(Path(notebook), student, notebook), data)
    started = time.monotonic()
    try:
        result = asyncio.run(grade_submission(snapshot, ctx))
    except Exception as error:  # noqa: BLE001 (a grader bug is that notebook's error, as in a local run)
        result = error_result(
            snapshot.submission, None, f"internal grader error: {type(error).__name__}: {error}"
        )
    return json.dumps({"result": result.to_json(), "seconds": time.monotonic() - started})


# --- on the client ---


@contextmanager
def connect(
    address: str, timeout: float, settings: Settings, options: RunOptions
) -> Iterator["ClusterBatch"]:
    """The batch on the Dask cluster at ``address`` (``local:N`` starts a ``LocalCluster``), shut
    when the block ends.

    Raises :class:`SchedulerError` when the scheduler cannot be reached within ``timeout`` seconds.
    """
    # distributed is optional (the ``cluster`` extra): imported only when a cluster is asked for.
    import dask
    from distributed import Client, LocalCluster

    local = _LOCAL.fullmatch(address)
    config = {
        "distributed.scheduler.allowed-failures": ALLOWED_FAILURES,
        "distributed.scheduler.worker-saturation": WORKER_SATURATION,
    }
    with dask.config.set(config):
        cluster = None
        try:
            if local:
                cluster = LocalCluster(
                    n_workers=int(local[1]),
                    threads_per_worker=1,
                    processes=True,
                    dashboard_address="127.0.0.1:0",
                    host="127.0.0.1",
                )
                client = Client(cluster, timeout=timeout)
            else:
                client = Client(address, timeout=timeout)
        except (OSError, TimeoutError, ValueError) as error:
            if cluster is not None:
                cluster.close()
            raise SchedulerError(
                f"no Dask scheduler answered at {address} within {timeout:g} s "
                f"({type(error).__name__}: {error}); "
                "check the address and that the scheduler runs and can be reached from here"
            ) from None
    try:
        yield ClusterBatch(client, address, settings, options)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def describe(client: Any) -> str:
    """Workers and threads the cluster has now, for the first progress line."""
    workers = client.scheduler_info(n_workers=-1)["workers"]
    threads = sum(w.get("nthreads", 1) for w in workers.values())
    return f"{len(workers)} worker(s), {threads} thread(s)"


def _killed(sub: Submission, error: BaseException) -> SubmissionResult:
    from distributed import KilledWorker

    if isinstance(error, KilledWorker):
        message = (
            "every Dask worker that graded this notebook died while grading it "
            f"({ALLOWED_FAILURES + 1} tried), "
            "so it was not graded; grade it alone on one machine to see why"
        )
    elif isinstance(error, (CancelledError, asyncio.CancelledError)):
        message = (
            "the Dask scheduler cancelled the task grading this notebook (was it restarted?); "
            "run again with --resume"
        )
    else:
        message = f"grading failed on the Dask worker twice: {type(error).__name__}: {error}"
    return error_result(sub, None, message)


def _arrived(sub: Submission, text: str) -> tuple[SubmissionResult, float]:
    """The worker's answer for ``sub``, checked; :class:`SchedulerError` when a worker refused."""
    try:
        data = json.loads(text)
    except (TypeError, json.JSONDecodeError):
        return error_result(
            sub, None, "the Dask worker sent back something that is not a result"
        ), 0.0
    if isinstance(data, dict) and "refused" in data:
        raise SchedulerError(
            f"a Dask worker grades with other settings than this machine ({data['refused']}): "
            "give every worker the course environment this client has, with the same sandbox"
        )
    try:
        result = SubmissionResult.checked(data.get("result") if isinstance(data, dict) else None)
        seconds = float(data["seconds"])
    except (ValueError, TypeError, KeyError) as error:
        return error_result(
            sub, None, f"the Dask worker sent back a malformed result ({error})"
        ), 0.0
    if (result.student, result.notebook) != (sub.student, sub.notebook):
        return error_result(
            sub, None, "the Dask worker sent back the result of another notebook"
        ), 0.0
    return result, seconds


@dataclass
class ClusterBatch:
    """The batch on a Dask cluster (see the module's docstring); made by :func:`connect`."""

    client: Any
    address: str
    settings: Settings
    options: RunOptions
    stopped: str = "the cluster's unfinished tasks were cancelled"

    def where(self) -> str:
        return f"on the Dask cluster at {self.address} ({describe(self.client)})"

    def canary(self, lessons: list[str]) -> dict[str, SubmissionResult]:
        """Each lesson's solution graded as a task, as the submissions will be (no progress
        lines)."""
        found = {lesson: canary_snapshot(lesson) for lesson in lessons}
        snapshots = [s for s in found.values() if isinstance(s, Snapshot)]
        graded = iter(self._grade(snapshots, None, Progress(len(snapshots), quiet=True)))
        return {
            lesson: snapshot if isinstance(snapshot, SubmissionResult) else next(graded)
            for lesson, snapshot in found.items()
        }

    def grade(self, snapshots: list[Snapshot], on_result: OnResult) -> list[SubmissionResult]:
        """Grade on the cluster; results are handed to ``on_result`` (the journal) and shown as
        they arrive. Ctrl-C cancels the tasks not finished and raises :class:`KeyboardInterrupt`;
        what arrived before is kept."""
        return self._grade(snapshots, on_result, Progress(len(snapshots), self.options.quiet))

    def _grade(
        self, snapshots: list[Snapshot], on_result: OnResult | None, progress: Progress
    ) -> list[SubmissionResult]:
        from distributed import as_completed

        client, recorded = self.client, self.settings.recorded()
        results: dict[int, SubmissionResult] = {}
        threads = sum(
            w.get("nthreads", 1) for w in client.scheduler_info(n_workers=-1)["workers"].values()
        )
        window = max(8, IN_FLIGHT_PER_THREAD * threads)
        waiting = iter(enumerate(snapshots))
        which: dict[str, tuple[int, Snapshot]] = {}

        def submit() -> Any | None:
            item = next(waiting, None)
            if item is None:
                return None
            i, snapshot = item
            sub = snapshot.submission
            future = client.submit(
                grade_task,
                snapshot.data,
                sub.student,
                sub.notebook,
                self.settings,
                self.options,
                key=task_key(snapshot, recorded),
                retries=1,
                pure=False,
            )
            which[future.key] = (i, snapshot)
            return future

        first = [f for f in (submit() for _ in range(window)) if f is not None]
        pending = as_completed(first)
        try:
            for future in pending:
                i, snapshot = which.pop(future.key)
                sub = snapshot.submission
                if future.status == "finished":
                    result, seconds = _arrived(sub, future.result())
                else:
                    try:
                        error = future.exception()
                    except (CancelledError, asyncio.CancelledError) as cancelled:
                        error = cancelled
                    result, seconds = _killed(sub, error), 0.0
                result.path = sub.shown or str(sub.path)
                results[i] = result
                if on_result is not None:
                    on_result(snapshot, result)
                progress.update(result, seconds)
                following = submit()
                if following is not None:
                    pending.add(following)
        except BaseException:
            client.cancel(list(pending.futures))
            raise
        return [results[i] for i in sorted(results)]
