"""One run over a class: read each notebook once, grade what is not yet graded, journal each
result, merge, write.

The gradebook a run writes depends only on the notebooks, the students and the settings, never on
the order results arrived, on where they were graded (:class:`~.grading.Batch`), or on whether the
run was resumed: grading the same class in one go, or interrupted and resumed, writes the same
bytes. Nothing here prints: problems are raised, with the message the command line shows.
"""

import asyncio
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from .._course import COURSE_LIB
from .._notebook_files import NotebookError, read_notebook
from .book import (
    ClassBook,
    Graded,
    Journal,
    LatePolicy,
    Record,
    SubmissionResult,
    answer_sheet,
    build_class,
    likely_grader_faults,
    lms_files,
    outside_errors,
    report_html,
    write_class,
)
from .grading import Batch, SchedulerError, Settings, full_marks, stop_signals_to
from .intake import (
    Intake,
    OverrideRow,
    Snapshot,
    Student,
    Submission,
    UsageError,
    detect_lesson,
    read_once,
)


class RunInterruptedError(Exception):
    """Ctrl-C or SIGTERM stopped the run; the journal keeps what finished, for ``--resume``."""


class OutputError(Exception):
    """A file in the output folder could not be written."""


class CanaryError(Exception):
    """The course's own solution did not score full marks where the class was to be graded: the
    grading environment is at fault, and nothing was graded."""


def record_students(record: Record) -> dict[str, Student]:
    """The students an earlier gradebook listed."""
    names = {f.name for f in dataclasses.fields(Student)}
    return {
        key: Student(**{k: v for k, v in data.items() if k in names})
        for key, data in record.students.items()
    }


@dataclass(kw_only=True)
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
    """What a run wrote: the notebooks graded now, the class's book, and the likely grader faults
    it found (one error shared by most of a lesson's notebooks)."""

    results: list[SubmissionResult]
    book: ClassBook
    faults: list[str]


def lessons_to_grade(todo: Todo) -> list[str]:
    """The lessons of the notebooks a run will grade (those that can be read), in order."""
    found = set()
    for snapshot in todo.snapshots:
        try:
            notebook = read_notebook(snapshot.data, schema=False)
        except NotebookError:
            continue
        lesson = detect_lesson(notebook, snapshot.submission.notebook)
        if lesson is not None:
            found.add(lesson)
    return sorted(found)


def _first_problem(result: SubmissionResult) -> str:
    for exercise in result.exercises:
        if exercise.status != "passed":
            return f"{exercise.id} {exercise.status}: {exercise.message.rstrip('.')}"
    return (result.message or result.status).rstrip(".")


def run_canary(todo: Todo, batch: Batch) -> dict[str, object]:
    """Grade each lesson's solution where ``todo`` will be graded; what ``gradebook.json`` keeps.

    Raises :class:`CanaryError` when one does not score full marks.
    """
    lessons = lessons_to_grade(todo)
    results = batch.canary(lessons)
    for lesson in lessons:
        result = results[lesson]
        if not full_marks(result):
            scored = (
                f"scored {result.points}/{result.max_points}"
                if result.status == "graded"
                else "could not be graded"
            )
            raise CanaryError(
                f"the canary failed: the course's own solution of lesson {lesson} {scored} in "
                f"this grading environment, so no student was graded (it would not be the "
                f"students' fault). The first problem: {_first_problem(result)}. Check that the "
                "kernels can run the course as the grader does (same Python environment, "
                f"course_lib at {COURSE_LIB}, a writable temporary folder), then run again; "
                "--no-canary skips this check, for debugging only"
            )
    return {
        "lessons": {
            lesson: f"{results[lesson].points}/{results[lesson].max_points}" for lesson in lessons
        }
    }


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


def finish_run(
    run: ClassRun, todo: Todo, batch: Batch, settings: Settings, canary: bool = True
) -> Finished:
    """Check the grading environment with the canary (unless ``canary`` is False: recorded), grade
    ``todo`` with ``batch``, journaling each result, then merge with what was kept and write the
    output folder; the journal is removed once the gradebook is written, and closed (kept for
    ``--resume``) when anything stops the run."""
    try:
        return _finish(run, todo, batch, settings, canary)
    finally:
        run.journal.close()


def _finish(run: ClassRun, todo: Todo, batch: Batch, settings: Settings, canary: bool) -> Finished:
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
    # SIGTERM stops the run as Ctrl-C does (KeyboardInterrupt); while the local batch's event loop
    # runs, it takes both signals and stops more gently. A signal ignored from the start stays so.
    try:
        with stop_signals_to(_interrupt):
            checked = run_canary(todo, batch) if canary else {"skipped": "--no-canary"}
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
        write_class(run.out, book, settings.recorded(), extra, run.record.feedback, checked)
    except OSError as error:
        raise OutputError(
            f"cannot write the gradebook in {run.out}: {error.strerror or error}"
        ) from None
    run.journal.remove()
    return Finished(results, book, likely_grader_faults([g.result for g in graded.values()]))
