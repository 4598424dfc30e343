"""One run over a class: read each notebook once, grade what is not yet graded, journal each
result, merge, write.

The gradebook a run writes depends only on the notebooks, the students and the settings, never on
the order results arrived, on where they were graded (:class:`~.grading.Batch`), or on whether the
run was resumed: grading the same class in one go, or interrupted and resumed, writes the same
bytes. Nothing here prints: problems are raised, with the message the command line shows.
"""

import asyncio
import dataclasses
import signal
from dataclasses import dataclass, field
from pathlib import Path

from .book import (
    ClassBook,
    Graded,
    Journal,
    LatePolicy,
    Record,
    SubmissionResult,
    answer_sheet,
    build_class,
    lms_files,
    outside_errors,
    report_html,
    write_class,
)
from .grading import Batch, SchedulerError, Settings
from .intake import Intake, OverrideRow, Snapshot, Student, Submission, UsageError, read_once


class RunInterruptedError(Exception):
    """Ctrl-C or SIGTERM stopped the run; the journal keeps what finished, for ``--resume``."""


class OutputError(Exception):
    """A file in the output folder could not be written."""


def record_students(record: Record) -> dict[str, Student]:
    """The students an earlier gradebook listed."""
    names = {f.name for f in dataclasses.fields(Student)}
    return {
        key: Student(**{k: v for k, v in data.items() if k in names})
        for key, data in record.students.items()
    }


@dataclass
class ClassRun:
    """Everything one run needs besides the settings and the batch."""

    out: Path
    intake: Intake
    chosen: list[Submission]
    record: Record
    journal: Journal
    overrides: list[OverrideRow] = field(default_factory=list)
    overrides_source: str = ""
    policy: LatePolicy = LatePolicy()
    formats: list[str] = field(default_factory=list)
    assignment: str = ""
    report: bool = True
    forced: set[str] = field(
        default_factory=set
    )  # students named by --only: graded again even if unchanged


@dataclass
class Todo:
    """What a run grades (each notebook read once), and what it takes from before."""

    snapshots: list[Snapshot]
    resumed: dict[tuple[str, str], Graded]  # from the journal of an interrupted run
    kept: int  # unchanged since the record (gradebook.json) in the output folder


@dataclass
class Finished:
    """What a run wrote: the notebooks graded now, and the class's book."""

    results: list[SubmissionResult]
    book: ClassBook


def plan_run(run: ClassRun) -> Todo:
    """Read every chosen notebook once, and keep for grading those neither journaled nor
    recorded from the same bytes."""
    todo, resumed, kept = [], {}, 0
    for sub in run.chosen:
        snapshot = read_once(sub)
        done = run.journal.done(sub.student, sub.notebook, snapshot.sha256)
        before = run.record.graded.get((sub.student, sub.notebook))
        if done is not None:
            resumed[done.key] = done
        elif (
            before is not None
            and before.sha256 == snapshot.sha256
            and sub.student not in run.forced
        ):
            kept += 1  # graded before from the same bytes and settings: the record's result stands
        else:
            todo.append(snapshot)
    return Todo(todo, resumed, kept)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def finish_run(run: ClassRun, todo: Todo, batch: Batch, settings: Settings) -> Finished:
    """Grade ``todo`` with ``batch``, journaling each result, then merge with what was kept and
    write the output folder; the journal is removed once the gradebook is written, and closed
    (kept for ``--resume``) when anything stops the run."""
    try:
        return _finish(run, todo, batch, settings)
    finally:
        run.journal.close()


def _finish(run: ClassRun, todo: Todo, batch: Batch, settings: Settings) -> Finished:
    fresh: dict[tuple[str, str], Graded] = {}

    def finished(snapshot: Snapshot, result: SubmissionResult) -> None:
        sheet = answer_sheet(snapshot.data, snapshot.submission.notebook)
        graded = Graded(
            result,
            snapshot.sha256,
            sheet.answers,
            outside_errors(result.notes, sheet.exercise_cells),
        )
        run.journal.append(graded)
        fresh[graded.key] = graded

    journal = run.journal.path
    previous = signal.signal(
        signal.SIGTERM, _interrupt
    )  # while the loop runs, the batch cancels it more gently
    try:
        results = batch.grade(todo.snapshots, finished)
    except SchedulerError as error:
        raise SchedulerError(
            f"{error}; the notebooks graded so far are kept in {journal} for --resume"
        ) from None
    except (KeyboardInterrupt, asyncio.CancelledError):
        raise RunInterruptedError(
            f"interrupted; {batch.stopped}. {run.journal.kept()} finished notebook(s) are kept in "
            f"{journal}: run the same command with --resume to grade the rest"
        ) from None
    except OSError as error:
        raise OutputError(
            f"cannot write the journal {journal}: {error.strerror or error}"
        ) from None
    finally:
        signal.signal(signal.SIGTERM, previous)
    graded = {**run.record.graded, **todo.resumed, **fresh}
    students = {**record_students(run.record), **run.intake.students}
    try:
        book = build_class(
            students, list(graded.values()), run.overrides, run.policy, run.overrides_source
        )
    except UsageError as error:
        raise UsageError(
            f"{error} (the graded notebooks are kept in {journal}: fix the file and run again "
            "with --resume)"
        ) from None
    extra = lms_files(book, run.formats, run.assignment)
    if run.report:
        extra["report.html"] = report_html(book)
    try:
        write_class(run.out, book, settings.recorded(), extra, run.record.feedback)
    except OSError as error:
        raise OutputError(
            f"cannot write the gradebook in {run.out}: {error.strerror or error}"
        ) from None
    run.journal.remove()
    return Finished(results, book)
