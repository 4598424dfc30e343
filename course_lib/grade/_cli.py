"""``python -m course_lib.grade`` and the ``course-grade`` console script."""

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

from ._submissions import UsageError, find_submissions

EXIT_OK, EXIT_USAGE, EXIT_OUTPUT = 0, 2, 3


def _positive(kind: type) -> "type":
    def parse(text: str) -> float | int:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{text} must be more than 0")
        return value

    return parse  # type: ignore[return-value]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="course-grade",
        description=(
            "Grade exercise notebooks of the pytree course. PATH is a notebook, a folder of one student's "
            "notebooks, or a class folder with one subfolder per student. Each notebook runs in its own fresh "
            "kernel; its functions are called on inputs generated now and compared with the course's reference."
        ),
        epilog=(
            "Writes DIR/gradebook.csv, DIR/gradebook.json and DIR/feedback/<student>/<notebook>.txt. "
            "Exit status: 0 when grading ran (whatever the scores), 2 for bad arguments, 3 when the output "
            "folder cannot be written, 130 when interrupted."
        ),
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="a notebook, or a folder of notebooks or of student folders")
    parser.add_argument("--out", default="grades", metavar="DIR", help="where to write the gradebook and feedback (default: grades)")
    parser.add_argument("--timeout", type=_positive(float), default=30.0, metavar="S", help="seconds one cell may run (default: 30)")
    parser.add_argument(
        "--notebook-timeout", type=_positive(float), default=None, metavar="S",
        help="seconds a whole notebook may run, its exercises' probes included (default: 10 x --timeout)",
    )
    parser.add_argument("--jobs", type=_positive(int), default=os.cpu_count() or 1, metavar="N", help="notebooks graded at once (default: the number of cores)")
    parser.add_argument("--memory-mb", type=_positive(int), default=2048, metavar="MB", help="memory one notebook's kernel may use (default: 2048)")
    parser.add_argument("--seed", type=int, default=0, metavar="N", help="seed of the grading inputs (default: 0; same seed, same grades)")
    parser.add_argument("--quiet", action="store_true", help="no progress lines, no summary table")
    parser.add_argument(
        "--require-sandbox", action="store_true",
        help="refuse to grade (exit 2) unless every kernel can be confined with Landlock",
    )
    parser.add_argument(
        "--sandbox", choices=("on", "off"), default="on",
        help="off: run kernels unconfined, to measure what the sandbox costs (default: on)",
    )
    return parser


def _check_output(out: Path) -> str | None:
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out, prefix=".write-test-"):
            pass
    except OSError as error:
        return f"cannot write to the output folder {out}: {error.strerror or error}"
    return None


def _sandbox_problem(level: dict, required: bool) -> str | None:
    """Warn (stderr) when kernels will not be confined; the refusal message when that was not allowed."""
    if level["sandbox"] == "landlock":
        return None
    if required:
        return f"--require-sandbox was given but the kernels cannot be confined ({level['reason']}); nothing was graded"
    print(f"course-grade: warning: {level['reason']}; every notebook can read and write whatever this user can", file=sys.stderr)
    return None


def main(argv: list[str] | None = None) -> int:
    """Run the grader; returns the exit status (see ``--help``)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:  # argparse has printed the usage and the problem
        return int(stop.code or 0) and EXIT_USAGE
    if args.memory_mb < 256:
        parser.print_usage(sys.stderr)
        print("course-grade: error: --memory-mb must be at least 256", file=sys.stderr)
        return EXIT_USAGE
    try:
        submissions = find_submissions(args.paths)
    except UsageError as error:
        parser.print_usage(sys.stderr)
        print(f"course-grade: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    out = Path(args.out)
    problem = _check_output(out)
    if problem:
        print(f"course-grade: error: {problem}", file=sys.stderr)
        return EXIT_OUTPUT
    # Imported here: nbclient and nbformat take seconds to import, and a usage error should not wait.
    from ._gradebook import summary_table, write_all
    from ._grader import Options, grade_all

    options = Options(
        cell_timeout=args.timeout,
        notebook_timeout=args.notebook_timeout or 10 * args.timeout,
        memory_mb=args.memory_mb,
        jobs=args.jobs,
        seed=args.seed,
        quiet=args.quiet,
        sandbox=args.sandbox == "on",
    )
    refusal = _sandbox_problem(options.confine(), args.require_sandbox)
    if refusal:
        print(f"course-grade: error: {refusal}", file=sys.stderr)
        return EXIT_USAGE
    import jax

    jax.config.update("jax_platforms", "cpu")  # references are computed here, the same way as in the kernels
    start = time.monotonic()
    if not args.quiet:
        print(f"grading {len(submissions)} notebook(s), {options.jobs} at a time", file=sys.stderr)
    try:
        results = asyncio.run(grade_all(submissions, options))
    except KeyboardInterrupt:
        print("course-grade: interrupted; every kernel was stopped and no gradebook was written", file=sys.stderr)
        return 130
    try:
        write_all(out, results, options.settings())
    except OSError as error:
        print(f"course-grade: error: cannot write the gradebook in {out}: {error.strerror or error}", file=sys.stderr)
        return EXIT_OUTPUT
    if not args.quiet:
        print(summary_table(results))
        print(
            f"\ngraded {len(results)} notebook(s) in {time.monotonic() - start:.1f} s; "
            f"wrote {out / 'gradebook.csv'}, {out / 'gradebook.json'} and {out / 'feedback'}/"
        )
    return EXIT_OK
