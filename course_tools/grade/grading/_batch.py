"""A batch: many submissions graded together, here (:class:`LocalBatch`) or on a Dask cluster
(``_cluster.ClusterBatch``), behind one interface (:class:`Batch`) that the class run uses."""

import asyncio
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ..book import SubmissionResult
from ..intake import Snapshot
from ..sandbox import ForkServer
from ._grader import Context, error_result, grade_canary, grade_submission
from ._settings import RunOptions, Settings

OnResult = Callable[[Snapshot, SubmissionResult], None]
"""Called with each result as soon as it is ready (the class run journals it there)."""


class Batch(Protocol):
    """Grades snapshots and hands each result to ``on_result`` as it arrives; results come back in
    the order of the snapshots. Ctrl-C or SIGTERM stops it (:class:`KeyboardInterrupt` or
    :class:`asyncio.CancelledError`), keeping what was handed over before."""

    stopped: str  # what an interruption did, for the message that follows it

    def where(self) -> str:
        """Where the notebooks are graded, for the first progress line."""
        ...

    def canary(self, lessons: list[str]) -> dict[str, SubmissionResult]:
        """Grade the course's solution notebook of each lesson where the submissions will be
        graded, in the same sandbox and limits (``_grader.grade_canary``)."""
        ...

    def grade(self, snapshots: list[Snapshot], on_result: OnResult) -> list[SubmissionResult]:
        """Grade every snapshot."""
        ...


class Progress:
    """One line on stderr per graded notebook (none when quiet)."""

    def __init__(self, total: int, quiet: bool) -> None:
        self.total, self.done, self.quiet, self.start = total, 0, quiet, time.monotonic()

    def update(self, result: SubmissionResult, seconds: float) -> None:
        self.done += 1
        if self.quiet:
            return
        width = 20
        filled = round(width * self.done / self.total)
        bar = "#" * filled + "." * (width - filled)
        score = f"{result.points}/{result.max_points}" if result.status == "graded" else "error"
        count = f"{self.done:>{len(str(self.total))}}/{self.total}"
        print(
            f"[{bar}] {count}  {result.student}/{result.notebook}: {score} ({seconds:.1f} s)",
            file=sys.stderr,
            flush=True,
        )


@dataclass
class LocalBatch:
    """The batch on this machine, ``options.jobs`` notebooks at a time, in one grading context
    (scratch folder, reference results, fork server, compilation cache) from the canary to the last
    notebook; :meth:`close` ends it.

    ``forks``, a fork server started earlier (the command line starts one before its slow imports),
    is used and closed instead of a new one.
    """

    settings: Settings
    options: RunOptions
    forks: ForkServer | None = None
    stopped: str = "every kernel was stopped"
    _context: Context | None = field(default=None, init=False)

    def where(self) -> str:
        return f"{self.options.jobs} at a time"

    def context(self) -> Context:
        """The batch's grading context, made at first use."""
        if self._context is None:
            scratch = Path(tempfile.mkdtemp(prefix="course-grade-"))
            self._context = Context(self.settings, self.options, scratch, forks=self.forks)
            self._context.warm_up()
        return self._context

    def canary(self, lessons: list[str]) -> dict[str, SubmissionResult]:
        ctx = self.context()

        async def every() -> list[SubmissionResult]:
            gate = asyncio.Semaphore(max(1, self.options.jobs))

            async def one(lesson: str) -> SubmissionResult:
                async with gate:
                    return await grade_canary(lesson, ctx)

            return list(await asyncio.gather(*(one(lesson) for lesson in lessons)))

        return dict(zip(lessons, asyncio.run(every()), strict=True))

    def grade(self, snapshots: list[Snapshot], on_result: OnResult) -> list[SubmissionResult]:
        return asyncio.run(grade_all(snapshots, self.context(), on_result))

    def close(self) -> None:
        """End the fork server and remove the scratch folder."""
        if self._context is not None:
            self._context.close()
            shutil.rmtree(self._context.scratch, ignore_errors=True)
            self._context = None
        elif self.forks is not None:
            self.forks.close()


def listened_signals() -> tuple[signal.Signals, ...]:
    """The stop signals (SIGINT, SIGTERM) a run here may handle: none off the main thread, and not
    one this process was started with ignored. A script's background job starts with SIGINT
    ignored, so that Ctrl-C stops the script and not the job; the grader keeps that.

    >>> import signal
    >>> previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    >>> listened_signals()
    (<Signals.SIGTERM: 15>,)
    >>> _ = signal.signal(signal.SIGINT, previous)
    """
    if threading.current_thread() is not threading.main_thread():
        return ()
    return tuple(
        s for s in (signal.SIGINT, signal.SIGTERM) if signal.getsignal(s) is not signal.SIG_IGN
    )


@contextmanager
def stop_signals_to(
    handler: Callable[..., object], loop: asyncio.AbstractEventLoop | None = None
) -> Iterator[None]:
    """While the block runs, the stop signals (:func:`listened_signals`) go to ``handler``: a
    signal handler, or with ``loop``, a callback that loop runs. Each signal's handler from before
    is put back afterwards."""
    signals = listened_signals()
    previous = {signum: signal.getsignal(signum) for signum in signals}
    for signum in signals:
        if loop is None:
            signal.signal(signum, handler)
        else:
            loop.add_signal_handler(signum, handler)
    try:
        yield
    finally:
        for signum, before in previous.items():
            if loop is not None:
                loop.remove_signal_handler(signum)
            signal.signal(signum, before)


async def grade_all(
    snapshots: list[Snapshot], ctx: Context, on_result: OnResult | None = None
) -> list[SubmissionResult]:
    """Grade every snapshot in ``ctx``, ``ctx.options.jobs`` at a time; results in the order of
    ``snapshots``.

    Ctrl-C or SIGTERM stops the batch: nothing more is started, running notebooks are cancelled
    (their kernels stopped), a result that arrives after the signal is not reported (a cancelled
    kernel may have cut it short), and :class:`asyncio.CancelledError` is raised.
    """
    gate = asyncio.Semaphore(max(1, ctx.options.jobs))
    progress = Progress(len(snapshots), ctx.options.quiet)
    results: list[SubmissionResult | None] = [None] * len(snapshots)
    stopping = False

    async def one(i: int, snapshot: Snapshot) -> None:
        sub = snapshot.submission
        async with gate:
            if stopping:
                return
            started = time.monotonic()
            try:
                result = await grade_submission(snapshot, ctx)
            except Exception as error:  # noqa: BLE001 (a grader bug must not stop the batch)
                result = error_result(
                    sub, None, f"internal grader error: {type(error).__name__}: {error}"
                )
            if stopping:
                return
            result.path = sub.shown or str(sub.path)
            results[i] = result
            if on_result is not None:
                on_result(snapshot, result)
            progress.update(result, time.monotonic() - started)

    tasks = [asyncio.ensure_future(one(i, snapshot)) for i, snapshot in enumerate(snapshots)]

    def stop() -> None:
        nonlocal stopping
        stopping = True
        for task in tasks:
            task.cancel()

    with stop_signals_to(stop, asyncio.get_running_loop()):
        outcomes = await asyncio.gather(*tasks, return_exceptions=True)
    if stopping:
        raise asyncio.CancelledError
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome  # on_result failed (the journal could not be written, say)
    return [r for r in results if r is not None]
