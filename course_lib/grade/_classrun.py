"""One run over a class: grade what is not yet graded, journal each result, merge, write.

The gradebook a run writes depends only on the notebooks, the students and the options, never on
the order results arrived or on whether the run was resumed: grading the same class in one go, or
interrupted and resumed, writes the same bytes.
"""

import asyncio
import dataclasses
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._answers import answer_sheet, outside_errors
from ._classbook import LatePolicy, build_class
from ._classfiles import write_class
from ._cluster import SchedulerError
from ._exports import lms_files
from ._forked import ForkServer
from ._gradebook import SubmissionResult, summary_table
from ._intake import Intake, Student
from ._record import Graded, Journal, Record, digest
from ._submissions import Submission, UsageError
from ._tables import OverrideRow

if TYPE_CHECKING:  # importing the grader loads nbclient: only when grading starts
    from ._grader import Options

EXIT_OK, EXIT_USAGE, EXIT_OUTPUT, EXIT_INTERRUPTED = 0, 2, 3, 130


def record_students(record: Record) -> dict[str, Student]:
    """The students an earlier gradebook listed."""
    names = {f.name for f in dataclasses.fields(Student)}
    return {
        key: Student(**{k: v for k, v in data.items() if k in names})
        for key, data in record.students.items()
    }


@dataclass
class ClassRun:
    """Everything one run needs besides the grading options."""

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
    scheduler: str = ""  # a Dask scheduler's address, or local:N; empty: grade on this machine
    scheduler_timeout: float = 30.0  # seconds to wait for the scheduler to answer
    forks: ForkServer | None = None  # a local run's fork server, started before the slow imports


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def read_submission(sub: Submission) -> bytes:
    """The submission's bytes, or none when it cannot be read (grading reports that)."""
    try:
        return sub.path.read_bytes()
    except OSError:
        return b""  # grading reports the unreadable file; the journal keys it as empty


def run_class(run: ClassRun, options: "Options") -> int:
    """Grade, merge and write; returns the exit status."""
    if not run.scheduler:
        return _run_class(run, options, None)
    from ._cluster import connect

    try:
        with connect(run.scheduler, run.scheduler_timeout) as client:
            return _run_class(run, options, client)
    except SchedulerError as error:
        run.journal.close()
        print(f"course-grade: error: {error}", file=sys.stderr)
        return EXIT_USAGE


def _run_class(run: ClassRun, options: "Options", client: Any) -> int:
    from ._cluster import describe
    from ._grader import grade_all

    start = time.monotonic()
    quiet = options.quiet
    digests = {(s.student, s.notebook): digest(read_submission(s)) for s in run.chosen}
    resumed, kept = {}, 0
    todo = []
    for sub in run.chosen:
        sha = digests[(sub.student, sub.notebook)]
        done = run.journal.done(sub.student, sub.notebook, sha)
        before = run.record.graded.get((sub.student, sub.notebook))
        if done is not None:
            resumed[done.key] = done
        elif before is not None and before.sha256 == sha and sub.student not in run.forced:
            kept += 1  # graded before from the same bytes and settings: the record's result stands
        else:
            todo.append(sub)
    fresh: dict[tuple[str, str], Graded] = {}

    def finished(sub: Submission, result: SubmissionResult) -> None:
        sheet = answer_sheet(read_submission(sub), sub.notebook)
        graded = Graded(
            result,
            digests[(sub.student, sub.notebook)],
            sheet.answers,
            outside_errors(result.notes, sheet.exercise_cells),
        )
        run.journal.append(graded)
        fresh[graded.key] = graded

    if not quiet:
        again = f"; {len(resumed)} from the journal of the interrupted run" if resumed else ""
        again += f"; {kept} unchanged since {run.out / 'gradebook.json'}" if kept else ""
        where = (
            f"on the Dask cluster at {run.scheduler} ({describe(client)})"
            if client is not None
            else f"{options.jobs} at a time"
        )
        print(f"grading {len(todo)} notebook(s), {where}{again}", file=sys.stderr)
    previous = signal.signal(
        signal.SIGTERM, _interrupt
    )  # while the loop runs, grade_all cancels it more gently
    try:
        if client is not None:
            from ._cluster import grade_on_cluster

            results = grade_on_cluster(client, todo, options, finished)
        else:
            results = asyncio.run(grade_all(todo, options, finished, run.forks))
    except SchedulerError as error:
        run.journal.close()
        print(
            f"course-grade: error: {error}; "
            f"the notebooks graded so far are kept in {run.journal.path} for --resume",
            file=sys.stderr,
        )
        return EXIT_USAGE
    except (KeyboardInterrupt, asyncio.CancelledError):
        run.journal.close()
        stopped = (
            "the cluster's unfinished tasks were cancelled"
            if client is not None
            else "every kernel was stopped"
        )
        print(
            f"course-grade: interrupted; {stopped}. "
            f"{run.journal.kept()} finished notebook(s) are kept in "
            f"{run.journal.path}: run the same command with --resume to grade the rest",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    except OSError as error:
        run.journal.close()
        print(
            f"course-grade: error: cannot write the journal {run.journal.path}: "
            f"{error.strerror or error}",
            file=sys.stderr,
        )
        return EXIT_OUTPUT
    finally:
        signal.signal(signal.SIGTERM, previous)
    graded = {**run.record.graded, **resumed, **fresh}
    students = {**record_students(run.record), **run.intake.students}
    try:
        book = build_class(
            students, list(graded.values()), run.overrides, run.policy, run.overrides_source
        )
    except UsageError as error:
        print(
            f"course-grade: error: {error} (the graded notebooks are kept in {run.journal.path}: "
            "fix the file and run again with --resume)",
            file=sys.stderr,
        )
        run.journal.close()
        return EXIT_USAGE
    extra = lms_files(book, run.formats, run.assignment)
    if run.report:
        from ._report import report_html

        extra["report.html"] = report_html(book)
    try:
        write_class(run.out, book, options.settings(), extra, run.record.feedback)
    except OSError as error:
        print(
            f"course-grade: error: cannot write the gradebook in {run.out}: "
            f"{error.strerror or error}",
            file=sys.stderr,
        )
        return EXIT_OUTPUT
    run.journal.remove()
    if not quiet:
        print(summary_table(results))
        print(
            f"\ngraded {len(results)} notebook(s) in {time.monotonic() - start:.1f} s; "
            f"{len(book.rows)} student(s) in "
            f"{run.out / 'gradebook.csv'}; also gradebook.json, report.html and feedback/"
        )
    return EXIT_OK
