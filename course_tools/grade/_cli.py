"""``python -m course_tools.grade`` and the ``course-grade`` console script."""

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import jax

from course_lib.checks import all_exercises

from .._course import SOLUTIONS_VARIABLE, solutions_folder
from ._classrun import (
    CanaryError,
    ClassRun,
    OutputError,
    RunInterruptedError,
    Todo,
    finish_run,
    plan_run,
    record_students,
)
from ._gradescope import CONFIG as GRADESCOPE_CONFIG
from ._gradescope import broken as gradescope_broken
from ._gradescope import results as gradescope_results
from ._gradescope import write_bundle
from .book import (
    FORMATS,
    Journal,
    LatePolicy,
    Record,
    find_student,
    parse_due,
    read_record,
    resolve_overrides,
    summary_table,
)
from .grading import (
    Batch,
    LocalBatch,
    RunOptions,
    SchedulerError,
    Settings,
    check_address,
    connect,
)
from .intake import (
    Intake,
    OverrideRow,
    Submission,
    UsageError,
    apply_times,
    find_class,
    read_overrides,
    read_roster,
    read_submission_times,
)
from .sandbox import ForkServer, SandboxLevel

EXIT_OK, EXIT_USAGE, EXIT_OUTPUT, EXIT_INTERRUPTED = 0, 2, 3, 130


def _positive(kind: Callable[[str], float]) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{text} must be more than 0")
        return value

    return parse


def _nonnegative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} must be 0 or more")
    return value


def _scheduler(text: str) -> str:
    try:
        return check_address(text)
    except SchedulerError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _percent(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"{text} is not a percentage from 0 to 100")
    return value


DESCRIPTION = """\
Grade exercise notebooks of the pytree course. PATH is a notebook, a folder of one student's
notebooks, a class folder with one subfolder per student, or an LMS download: a Canvas
"Download submissions" folder or .zip (files named lastfirst_[LATE_]userid_submissionid_name),
or a Moodle "Download all submissions" folder or .zip (folders Full Name_id_assignsubmission_file_).
Each notebook runs in its own fresh kernel; its functions are called on inputs generated now and
compared with the course's reference.

From the LMS download to the LMS upload:
  1. Download the submissions (and the class list as a roster CSV: id,name,email,section).
  2. course-grade submissions.zip --roster roster.csv --due 2026-12-01T23:59 \\
       --format canvas --out grades
  3. Read grades/report.html (pass rates, common hints, notebooks with errors, similar answers).
  4. Fix what needs a human in overrides.csv (student,exercise,points,comment) and re-run step 2
     with --overrides overrides.csv: only the gradebook and changed feedback files are rewritten.
  5. Re-grade one student after a fix with --only STUDENT; other rows and files stay as they are.
  6. Upload grades/gradebook-canvas.csv (or gradebook-moodle.csv) to the LMS; hand each student
     their folder grades/feedback/<name>/.
If a run is interrupted (Ctrl-C, SIGTERM), what it finished is kept in grades/journal.jsonl:
run the same command with --resume to grade only the rest.
"""

EPILOG = """\
Writes DIR/gradebook.csv (one row per student: points per exercise, total, maximum, status,
lateness), DIR/gradebook.json (every notebook's results: the record later runs keep),
DIR/report.html, DIR/feedback/<student>/<notebook>.txt and _summary.txt, and
DIR/gradebook-<lms>.csv per --format.
Student statuses: graded, error (no notebook could run), missing (on the roster, nothing found),
empty, archive_only, no_notebook.
Exit status: 0 when grading ran (whatever the scores), 2 for bad arguments or input files (roster,
overrides, a refused zip, a journal or gradebook from other settings), 3 when the output folder
cannot be written, 130 when interrupted (finished notebooks kept for --resume).
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="course-grade",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="a notebook, a folder of notebooks or of student folders, or an LMS download (folder "
        "or .zip); with --gradescope-autograder, the lessons it grades (two digits; default: all)",
    )
    parser.add_argument(
        "--out",
        default="grades",
        metavar="DIR",
        help="where to write the gradebook and feedback (default: grades)",
    )
    parser.add_argument(
        "--timeout",
        type=_positive(float),
        default=30.0,
        metavar="S",
        help="seconds one cell may run (default: 30)",
    )
    parser.add_argument(
        "--notebook-timeout",
        type=_positive(float),
        default=None,
        metavar="S",
        help="seconds a whole notebook may run, its exercises' probes included (default: 10 x "
        "--timeout)",
    )
    parser.add_argument(
        "--jobs",
        type=_positive(int),
        default=os.cpu_count() or 1,
        metavar="N",
        help="notebooks graded at once (default: the number of cores)",
    )
    parser.add_argument(
        "--memory-mb",
        type=_positive(int),
        default=2048,
        metavar="MB",
        help="memory one notebook's kernel may use (default: 2048)",
    )
    parser.add_argument(
        "--compile-cache-after",
        type=_nonnegative_int,
        default=8,
        metavar="N",
        help="a compilation cache that kernels read and cannot write, filled by the canary's "
        "kernel, or with --no-canary by the course's solution run at a lesson's N-th notebook "
        "(default: 8; 0: no cache)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        metavar="N",
        help="seed of the grading inputs (default: 0; same seed, same grades)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress lines, no summary table")
    parser.add_argument(
        "--gradescope-autograder",
        metavar="ZIP",
        help="write a Gradescope autograder (setup.sh, run_autograder, the course) to ZIP instead "
        "of grading; it grades each submission as this command would, with --timeout, "
        "--notebook-timeout, --memory-mb, --seed and --forbid as given here",
    )
    parser.add_argument("--gradescope-run", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--solutions",
        type=Path,
        metavar="DIR",
        help="the instructor's solution notebooks (solutions/ of the course's checkout), which the "
        "canary grades and the report compares answers with (default: solutions/ beside the "
        "grader's course_lib, as in a checkout); needed by a grader installed with pip install .",
    )
    parser.add_argument(
        "--no-canary",
        action="store_true",
        help="for debugging the grader only: skip the canary (each lesson's own solution graded "
        "first, where the class will be, which must score full marks); recorded in gradebook.json",
    )
    parser.add_argument(
        "--require-sandbox",
        action="store_true",
        help="refuse to grade (exit 2) unless every kernel can be confined: Landlock for files, "
        "TCP and signals, and a socket filter for UDP, raw and unix sockets",
    )
    parser.add_argument(
        "--sandbox",
        choices=("on", "off"),
        default="on",
        help="off: run kernels unconfined, to measure what the sandbox costs (default: on)",
    )
    parser.add_argument(
        "--warm-kernels",
        choices=("on", "off"),
        default="on",
        help="off: start each kernel as a fresh Python instead of forking it from a process of the "
        "run that has already imported JAX; grades are the same (default: on)",
    )
    parser.add_argument(
        "--forbid",
        action="append",
        default=[],
        metavar="PACKAGE",
        help="flag any call into this package (say optax) made by an answer; repeatable (default: "
        "every package is allowed)",
    )
    # --- a Dask cluster ---
    cluster = parser.add_argument_group(
        "a Dask cluster (docs/grader.md: Slurm, Kubernetes, dask-gateway)"
    )
    cluster.add_argument(
        "--scheduler",
        type=_scheduler,
        metavar="ADDRESS",
        help="grade on the Dask cluster at ADDRESS (tcp://host:8786), or local:N for N workers "
        "here; --jobs is then unused",
    )
    cluster.add_argument(
        "--scheduler-timeout",
        type=_positive(float),
        default=30.0,
        metavar="S",
        help="seconds to wait for the scheduler to answer before giving up with exit status 2 "
        "(default: 30)",
    )
    # --- the class: roster, re-runs, overrides, due dates, LMS formats ---
    group = parser.add_argument_group("the class")
    group.add_argument(
        "--roster",
        type=Path,
        metavar="CSV",
        help="the class list (columns id,name; optional email,section): absent students are "
        "listed as missing",
    )
    group.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="STUDENT",
        help="grade only this student (key, LMS id or name; repeatable); other rows are kept",
    )
    group.add_argument(
        "--overrides",
        type=Path,
        metavar="CSV",
        help="manual grades (columns student,exercise,points,comment), applied on every run and "
        "shown in the feedback",
    )
    group.add_argument(
        "--resume",
        action="store_true",
        help="finish an interrupted run: grade only the notebooks its journal lacks",
    )
    group.add_argument(
        "--due",
        type=parse_due,
        metavar="TIME",
        help="due time, ISO 8601 (2026-12-01T23:59, or with an offset +01:00); without an offset "
        "it is local time (TZ)",
    )
    group.add_argument(
        "--submission-times",
        type=Path,
        metavar="CSV",
        help="submission times from the LMS: a Moodle grading worksheet, or columns "
        "student,submitted (ISO 8601)",
    )
    group.add_argument(
        "--late-penalty",
        type=_percent,
        default=0.0,
        metavar="PCT",
        help="percent of the points taken off per started day late (default: 0, lateness only "
        "recorded)",
    )
    group.add_argument(
        "--late-cap",
        type=_percent,
        default=100.0,
        metavar="PCT",
        help="the most percent a late penalty takes off (default: 100)",
    )
    group.add_argument(
        "--format",
        action="append",
        default=[],
        choices=FORMATS,
        help="also write the LMS's import layout: gradebook-canvas.csv, gradebook-moodle.csv "
        "(repeatable)",
    )
    group.add_argument(
        "--assignment",
        default="pytree course exercises",
        metavar="NAME",
        help="the Canvas column title, 'Name (assignment id)' to match an existing assignment",
    )
    # --- end of the class block ---
    return parser


def _check_output(out: Path) -> str | None:
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out, prefix=".write-test-"):
            pass
    except OSError as error:
        return f"cannot write to the output folder {out}: {error.strerror or error}"
    return None


def _usage(parser: argparse.ArgumentParser, message: str) -> int:
    parser.print_usage(sys.stderr)
    print(f"course-grade: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def _select(intake: Intake, only: list[str]) -> list[Submission]:
    if not only:
        return intake.submissions
    keys = set()
    for text in only:
        student = find_student(intake.students, text)
        if student is None:
            raise UsageError(
                f"--only {text}: no such student (give the student column of gradebook.csv, an "
                "LMS id or a full name)"
            )
        keys.add(student.key)
    chosen = [s for s in intake.submissions if s.student in keys]
    if not chosen:
        raise UsageError(f"--only {' '.join(only)}: no notebook of that student was found")
    return chosen


def _sandbox_problem(level: SandboxLevel, required: bool) -> str | None:
    """Warn (stderr) when kernels will not be fully confined; the refusal message when that was
    not allowed."""
    if level.name == "landlock" and level.network == "closed":
        return None
    if level.name == "landlock":
        problem = (
            f"the kernels' files, TCP and signals are confined but not every socket (network: "
            f"{level.network}): a notebook could send UDP or reach a unix socket"
        )
        consequence = "a notebook could reach a service on this machine"
    else:
        problem = level.reason
        consequence = "every notebook can read and write whatever this user can"
    if required:
        return (
            f"--require-sandbox was given but the kernels cannot be confined ({problem}); "
            "nothing was graded"
        )
    print(f"course-grade: warning: {problem}; {consequence}", file=sys.stderr)
    return None


NO_SOLUTIONS = (
    "no solutions folder: pass --solutions DIR (the instructor's solutions/ from the course's "
    "checkout)"
)


def _solutions_problem(named: Path | None, canary: bool) -> str | None:
    """What stops the canary from finding the solution notebooks, if anything."""
    if named is not None:
        if not (named.is_dir() and any(named.glob("[0-9][0-9]_*.ipynb"))):
            return (
                f"--solutions {named}: no solution notebook (NN_stem.ipynb) there; give the "
                "instructor's solutions/ folder from the course's checkout"
            )
        return None
    return NO_SOLUTIONS if canary and not solutions_folder().is_dir() else None


@contextlib.contextmanager
def _solutions_named(named: Path | None) -> Iterator[None]:
    """The solutions folder ``--solutions`` names, for the run's canary and report (see
    ``course_tools._course.solutions_folder``)."""
    if named is None:
        yield
        return
    before = os.environ.get(SOLUTIONS_VARIABLE)
    os.environ[SOLUTIONS_VARIABLE] = str(named.resolve())
    try:
        yield
    finally:
        if before is None:
            del os.environ[SOLUTIONS_VARIABLE]
        else:
            os.environ[SOLUTIONS_VARIABLE] = before


def main(argv: list[str] | None = None) -> int:
    """Run the grader; returns the exit status (see ``--help``)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:  # argparse has printed the usage and the problem
        return int(stop.code or 0) and EXIT_USAGE
    if args.gradescope_run:
        return _gradescope_run()
    # A bundle always carries the solutions: its canary grades them on Gradescope.
    canary = bool(args.gradescope_autograder) or not args.no_canary
    problem = _solutions_problem(args.solutions, canary=canary)
    if problem:
        return _usage(parser, problem)
    if args.gradescope_autograder:
        with _solutions_named(args.solutions):
            return _gradescope_bundle(parser, args)
    if not args.paths:
        return _usage(parser, "give at least one PATH to grade")
    if args.memory_mb < 256:
        return _usage(parser, "--memory-mb must be at least 256")
    bad = [name for name in args.forbid if not name.isidentifier()]
    if bad:
        return _usage(parser, f"--forbid takes a top-level package name like optax, not {bad[0]!r}")
    try:
        roster = read_roster(args.roster) if args.roster else None
        overrides = read_overrides(args.overrides) if args.overrides else []
        intake = find_class(args.paths, roster)
        if args.submission_times:
            apply_times(intake, read_submission_times(args.submission_times))
    except UsageError as error:
        return _usage(parser, str(error))
    # Started now, a local run's fork server imports JAX while this process probes the sandbox.
    local = args.warm_kernels == "on" and args.sandbox == "on" and not args.scheduler
    forks = ForkServer.start() if local and sys.platform.startswith("linux") else None
    try:
        with _solutions_named(args.solutions):
            return _grade(parser, args, intake, overrides, forks)
    finally:
        if forks is not None:
            forks.close()
        intake.close()


def _grade(
    parser: argparse.ArgumentParser,
    args: argparse.Namespace,
    intake: Intake,
    overrides: list[OverrideRow],
    forks: ForkServer | None,
) -> int:
    out = Path(args.out)
    settings = Settings(
        sandbox=SandboxLevel.probe(args.sandbox == "on"),
        seed=args.seed,
        forbid=tuple(dict.fromkeys(args.forbid)),
        cell_timeout=args.timeout,
        notebook_timeout=args.notebook_timeout or 10 * args.timeout,
        memory_mb=args.memory_mb,
    )
    options = RunOptions(
        jobs=args.jobs,
        quiet=args.quiet,
        cache_after=args.compile_cache_after,
        warm_kernels=args.warm_kernels == "on",
    )
    refusal = _sandbox_problem(settings.sandbox, args.require_sandbox)
    if refusal:
        return _error(refusal, EXIT_USAGE)
    recorded = settings.recorded()
    try:
        chosen = _select(intake, args.only)
        record = read_record(out, recorded) if out.is_dir() else Record()
        resolve_overrides(
            overrides,
            {**record_students(record), **intake.students},
            list(all_exercises()),
            str(args.overrides),
        )
        journal = Journal(out, recorded, args.resume) if out.is_dir() else None
    except UsageError as error:
        return _usage(parser, str(error))
    problem = _check_output(out)
    if problem:
        return _error(problem, EXIT_OUTPUT)
    journal = journal or Journal(out, recorded, args.resume)
    if not args.quiet:
        for warning in intake.warnings:
            print(f"course-grade: warning: {warning}", file=sys.stderr)
    run = ClassRun(
        out=out,
        intake=intake,
        chosen=chosen,
        record=record,
        journal=journal,
        overrides=overrides,
        overrides_source=str(args.overrides or ""),
        policy=LatePolicy(args.due, args.late_penalty, args.late_cap),
        formats=args.format,
        assignment=args.assignment,
        forced={s.student for s in chosen} if args.only else set(),
    )
    jax.config.update(
        "jax_platforms", "cpu"
    )  # references are computed here, the same way as in the kernels
    start = time.monotonic()
    try:
        with _batch(args, settings, options, forks) as batch:
            todo = plan_run(run)
            if not args.quiet:
                _announce(run, todo, batch)
            done = finish_run(run, todo, batch, settings, canary=not args.no_canary)
    except (UsageError, SchedulerError, CanaryError) as error:
        return _error(str(error), EXIT_USAGE)
    except OutputError as error:
        return _error(str(error), EXIT_OUTPUT)
    except RunInterruptedError as error:
        print(f"course-grade: {error}", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        journal.close()
    for fault in done.faults:  # even when quiet: the gradebook should not be uploaded unread
        print(f"course-grade: warning: LIKELY GRADER FAULT: {fault}", file=sys.stderr)
    if not args.quiet:
        print(summary_table(done.results))
        print(
            f"\ngraded {len(done.results)} notebook(s) in {time.monotonic() - start:.1f} s; "
            f"{len(done.book.rows)} student(s) in "
            f"{out / 'gradebook.csv'}; also gradebook.json, report.html and feedback/"
        )
    return EXIT_OK


@contextlib.contextmanager
def _batch(
    args: argparse.Namespace, settings: Settings, options: RunOptions, forks: ForkServer | None
) -> Iterator[Batch]:
    """Where the notebooks are graded: the Dask cluster of ``--scheduler``, or here."""
    if args.scheduler:
        with connect(args.scheduler, args.scheduler_timeout, settings, options) as batch:
            yield batch
    else:
        local = LocalBatch(settings, options, forks)
        try:
            yield local
        finally:
            local.close()


def _announce(run: ClassRun, todo: Todo, batch: Batch) -> None:
    again = f"; {len(todo.resumed)} from the journal of the interrupted run" if todo.resumed else ""
    again += f"; {todo.kept} unchanged since {run.out / 'gradebook.json'}" if todo.kept else ""
    print(f"grading {len(todo.snapshots)} notebook(s), {batch.where()}{again}", file=sys.stderr)


def _passed_options(args: argparse.Namespace) -> dict[str, list[str]]:
    """The grading options given, as the bundle keeps them for ``run_autograder``."""
    given = {
        "--timeout": [str(args.timeout)],
        "--notebook-timeout": [str(args.notebook_timeout)] if args.notebook_timeout else [],
        "--memory-mb": [str(args.memory_mb)],
        "--seed": [str(args.seed)],
        "--forbid": list(args.forbid),
    }
    return {option: values for option, values in given.items() if values}


def _gradescope_bundle(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    target = Path(args.gradescope_autograder)
    try:
        chosen = write_bundle(target, args.paths, _passed_options(args))
    except UsageError as error:
        return _usage(parser, str(error))
    except OSError as error:
        return _error(f"cannot write {target}: {error.strerror or error}", EXIT_OUTPUT)
    print(
        f"wrote {target}: a Gradescope autograder for lesson(s) {', '.join(chosen)}; upload it "
        "as a programming assignment's autograder (Ubuntu 24.04 base image)",
        file=sys.stderr,
    )
    return EXIT_OK


def _gradescope_run() -> int:
    """What the bundle's ``run_autograder`` runs: grade ``$AUTOGRADER_ROOT/submission`` as a class
    of one, then write ``results/results.json`` from the gradebook; 0 once it is written."""
    root = Path(os.environ.get("AUTOGRADER_ROOT", "/autograder"))
    config = json.loads((root / "source" / GRADESCOPE_CONFIG).read_text(encoding="utf-8"))
    started = time.monotonic()
    out = Path(tempfile.mkdtemp(prefix="gradescope-")) / "grades"
    argv = [str(root / "submission"), "--out", str(out), "--quiet"]
    argv += [
        part for option, values in config["options"].items() for v in values for part in (option, v)
    ]
    errors = io.StringIO()
    with contextlib.redirect_stderr(errors):
        status = main(argv)
    print(errors.getvalue(), end="", file=sys.stderr)  # Gradescope shows it to the instructor
    book = out / "gradebook.json"
    seconds = time.monotonic() - started
    if status == EXIT_OK and book.is_file():
        document = gradescope_results(json.loads(book.read_text()), config["lessons"], seconds)
    else:
        reason = errors.getvalue().strip() or f"course-grade exited with status {status}"
        document = gradescope_broken(reason, seconds)
    target = root / "results" / "results.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    return EXIT_OK


def _error(message: str, status: int) -> int:
    print(f"course-grade: error: {message}", file=sys.stderr)
    return status
