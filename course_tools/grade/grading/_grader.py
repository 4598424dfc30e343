"""Grading submissions: each in a fresh kernel, its exercises probed there, judged here.

For one submission: read the bytes (never the original file again), check it is a notebook, find
its lesson and exercise cells, copy it to a scratch folder, start a kernel there, run its cells
(check and progress calls left out) under time and memory limits, then for each exercise run the
probe from ``course_lib.checks.RUNNER_MODULE`` in the kernel and judge the outcomes in this process
against reference results computed here once per exercise. A kernel that dies (a crash,
``os._exit``, the memory limit, a loop deaf to interrupts) is replaced, the cells that ran before
are run again, and the cell at fault is skipped.
"""

import asyncio
import functools
import secrets
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from course_lib.checks import (
    RUNNER_MODULE,
    Case,
    Exercise,
    Outcome,
    Verdict,
    WireError,
    exercises,
    judge_outcomes,
    loads,
    reference_results,
)

from ..._course import solution_notebook, solutions_folder
from ..._notebook_files import NotebookError, read_notebook
from ..book import ExerciseResult, SubmissionResult
from ..intake import (
    Plan,
    PlannedCell,
    Snapshot,
    Submission,
    detect_lesson,
    filename_lesson,
    plan_cells,
    read_once,
)
from ..sandbox import (
    CellResult,
    Confinement,
    ForkServer,
    KernelCache,
    KernelStartError,
    Sandbox,
    kernel_env,
)
from ._jaxcache import SharedCache
from ._settings import RunOptions, Settings

MAX_RESTARTS = 3
MAX_NOTES = 20
MAX_REPORT_BYTES = 32 * 2**20
_LOUD_OUTPUT = 2**20


@dataclass
class Context:
    """What every submission of a batch shares: the settings, the scratch folder, the reference
    results, the fork server and the compilation cache."""

    settings: Settings
    options: RunOptions
    scratch: Path
    references: dict[str, tuple[list[Case], list[Any]]] = field(default_factory=dict)
    forks: ForkServer | None = None  # started by warm_up()

    def warm_up(self) -> None:
        """Start the batch's fork server (``sandbox/_forkserver.py``) where kernels are confined and
        ``options.warm_kernels`` is on; ``close()`` ends it."""
        if self.forks is None and self.options.warm_kernels and self.confinement is not None:
            self.forks = ForkServer.start(self.scratch)

    def close(self) -> None:
        """End the fork server, and with it any kernel it still has."""
        if self.forks is not None:
            self.forks.close()
            self.forks = None

    @functools.cached_property
    def confinement(self) -> Confinement | None:
        """How this batch's kernels are confined: from the settings' sandbox level."""
        return self.settings.sandbox.confinement()

    @functools.cached_property
    def compilation_cache(self) -> SharedCache:
        """JAX's compilation cache, shared read-only by the kernels where Landlock confines them."""
        confinement = self.confinement
        return SharedCache(
            self.scratch / "jax-cache",
            bool(confinement and confinement.landlock),
            self.options.cache_after,
        )

    def reference(self, exercise: Exercise) -> tuple[list[Case], list[Any]]:
        """Grading cases and the reference results for them, computed once per exercise."""
        if exercise.id not in self.references:
            cases = exercise.make_cases("grade", self.settings.seed)
            self.references[exercise.id] = (cases, reference_results(exercise, cases))
        return self.references[exercise.id]

    async def fill_cache(self, lesson: str, cache: KernelCache) -> bool:
        """Grade the course's solution notebook of ``lesson`` in a kernel that writes ``cache``;
        True when it scored full marks (see ``_jaxcache``)."""
        result = await grade_solution(lesson, self, cache)
        return result.lesson == lesson and full_marks(result)


def _runner_source(
    exercise: Exercise, seed: int, report: Path, nonce: str, packages: tuple[str, ...] = ()
) -> str:
    # Every name is local, so a notebook that shadowed builtins or modules in its namespace changes
    # nothing.
    fn = f"_course_grader_{nonce}"
    return (
        f"def {fn}():\n"
        "    import importlib, sys\n"
        "    for name in sys.modules.copy():\n"
        "        if name == 'course_lib.checks' or name.startswith('course_lib.checks.'):\n"
        "            del sys.modules[name]\n"
        f"    runner = importlib.import_module({RUNNER_MODULE!r})\n"
        f"    runner.run({exercise.id!r}, {seed!r}, sys._getframe(1).f_globals, {str(report)!r}, "
        f"{nonce!r}, {tuple(packages)!r})\n"
        f"{fn}()\n"
        f"del {fn}\n"
    )


@dataclass
class _Report:
    found: str
    type_name: str
    outcomes: list[Outcome]


def _read_report(path: Path, exercise: Exercise, nonce: str, n_cases: int) -> _Report | str:
    """The runner's report, or a message saying why it cannot be trusted."""
    try:
        if path.stat().st_size > MAX_REPORT_BYTES:
            return "the results were too large to read"
        data = loads(path.read_bytes())
    except FileNotFoundError:
        return "the probe left no results"
    except (OSError, WireError) as error:
        return f"the results could not be read ({error})"
    if not (
        isinstance(data, dict)
        and data.get("nonce") == nonce
        and data.get("exercise") == exercise.id
    ):
        return "the results were not the grader's own"
    found, outcomes = data.get("found"), data.get("outcomes")
    if found not in ("yes", "missing", "not_callable") or not isinstance(outcomes, list):
        return "the results were malformed"
    try:
        parsed = [Outcome.from_plain(o) for o in outcomes]
    except ValueError as error:
        return f"the results were malformed ({error})"
    if found == "yes" and len(parsed) != n_cases:
        return "the results did not cover every grading input"
    return _Report(found, str(data.get("type", "")), parsed)


class _GradingStoppedError(Exception):
    pass


@dataclass
class _Run:
    fates: dict[int, CellResult] = field(default_factory=dict)
    reports: dict[str, "_Report | CellResult | str"] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    fatal: str = ""


async def _execute(
    plan: Plan, workdir: Path, reports_dir: Path, ctx: Context, cache: KernelCache | None = None
) -> _Run:
    """Run the planned cells, then one probe per exercise, restarting the kernel when it dies."""
    run = _Run()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + ctx.settings.notebook_timeout
    cell_limit = ctx.settings.cell_timeout
    completed: list[PlannedCell] = []
    restarts = 0
    sandbox: Sandbox | None = None
    nonce = secrets.token_hex(8)
    confinement = ctx.confinement

    def remaining() -> float:
        return deadline - loop.time()

    async def fresh_kernel(replay: bool) -> Sandbox:
        nonlocal sandbox
        if sandbox is not None:
            await sandbox.stop()
        sandbox = Sandbox(
            str(workdir),
            kernel_env(workdir),
            ctx.settings.limits,
            confinement,
            writable=[str(reports_dir)],
            cache=cache,
            forks=None if plan.touches_environment else ctx.forks,
        )
        await sandbox.start()
        if sandbox.start_retries:
            run.notes.append(
                "a kernel died while starting (over TCP, where another process can take one of "
                "its ports first) and was started again"
            )
        for cell in completed if replay else []:
            if remaining() <= 0:
                raise _GradingStoppedError(
                    f"the notebook's {ctx.settings.notebook_timeout:g} s ran out while re-running "
                    "its cells"
                )
            again = await sandbox.run(cell.source, min(cell_limit, remaining()))
            if not sandbox.usable:
                raise _GradingStoppedError(
                    f"the kernel died again while re-running {cell.label} "
                    f"({again.reason or again.status})"
                )
        return sandbox

    async def recover(what: str) -> Sandbox:
        nonlocal restarts
        restarts += 1
        if restarts > MAX_RESTARTS:
            raise _GradingStoppedError(
                f"the kernel died {restarts} times; grading stopped after {what}"
            )
        try:
            return await fresh_kernel(replay=True)
        except KernelStartError as error:
            raise _GradingStoppedError(
                f"no new kernel could be started after {what}: {error}"
            ) from None

    try:
        try:
            sandbox = await fresh_kernel(replay=False)
        except KernelStartError as error:
            run.fatal = f"the grader could not start a kernel: {error}"
            return run
        for cell in plan.cells:
            if remaining() <= 0:
                if not any(f.reason == "notebook" for f in run.fates.values()):
                    run.notes.append(
                        f"the notebook's {ctx.settings.notebook_timeout:g} s ran out before "
                        f"{cell.label}; later cells were not run"
                    )
                run.fates[cell.index] = CellResult("timeout", reason="notebook")
                continue
            result = await sandbox.run(cell.source, min(cell_limit, remaining()))
            run.fates[cell.index] = result
            _note_cell(run.notes, cell, result, cell_limit)
            if result.status in ("ok", "error"):
                completed.append(cell)
            if not sandbox.usable:
                sandbox = await recover(cell.label)
        for exercise in plan.exercises:
            if remaining() <= 0:
                run.reports[exercise.id] = CellResult("timeout", reason="notebook")
                continue
            report_path = reports_dir / f"{nonce}-{exercise.id}.json"
            n_cases = len(ctx.reference(exercise)[0])
            source = _runner_source(
                exercise, ctx.settings.seed, report_path, nonce, ctx.settings.forbid
            )
            result = await sandbox.run(source, min(cell_limit, remaining()))
            if result.status == "ok":
                run.reports[exercise.id] = _read_report(report_path, exercise, nonce, n_cases)
            else:
                run.reports[exercise.id] = result
            if result.output_bytes > _LOUD_OUTPUT:
                run.notes.append(
                    f"{exercise.name} printed {result.output_bytes / 2**20:.1f} MiB while graded "
                    "(not kept)"
                )
            if not sandbox.usable and exercise is not plan.exercises[-1]:
                sandbox = await recover(f"grading {exercise.id}")
    except _GradingStoppedError as stop:
        run.notes.append(str(stop))
        run.fatal = run.fatal or str(stop)
    finally:
        if sandbox is not None:
            await sandbox.stop()
    return run


def _note_cell(notes: list[str], cell: PlannedCell, result: CellResult, limit: float) -> None:
    where = cell.label
    if result.status == "error":
        note = (
            f"{where} raised {result.ename}: {result.evalue}"
            if result.evalue
            else f"{where} raised {result.ename}"
        )
    elif result.status == "timeout":
        note = f"{where} ran past the {limit:g} s limit and was stopped" + (
            f"; it {result.reason}" if result.reason else ""
        )
    elif result.status == "died":
        note = (
            f"the kernel died in {where} ({result.reason}); a fresh kernel re-ran the cells "
            "before it and skipped it"
        )
    else:
        note = ""
    if note and len(notes) < MAX_NOTES:
        notes.append(note)
    if result.output_bytes > _LOUD_OUTPUT and len(notes) < MAX_NOTES:
        notes.append(f"{where} printed {result.output_bytes / 2**20:.1f} MiB of output (not kept)")


def _cell_fate_verdict(
    exercise: Exercise, cell: PlannedCell | None, fate: CellResult | None, limit: float
) -> tuple[str, str] | None:
    name = exercise.name
    if fate is None or fate.status == "ok":
        return None
    where = f" That is {cell.label}." if cell else ""
    if fate.status == "timeout":
        if fate.reason == "notebook":
            return (
                "timeout",
                f"the notebook ran out of time before the cell defining {name} could run.{where}",
            )
        return (
            "timeout",
            f"the cell defining {name} ran past the {limit:g} s limit and was stopped, so {name} "
            f"was never defined.{where}",
        )
    if fate.status == "died":
        return (
            "error",
            f"the kernel died while running the cell defining {name} ({fate.reason}).{where}",
        )
    detail = f"{fate.ename}: {fate.evalue}" if fate.evalue else fate.ename
    return "error", f"the cell defining {name} raised {detail}" + (
        "" if detail.endswith(".") else "."
    ) + where


def _flag_place(plan: Plan, flag: dict[str, Any]) -> str:
    """Where in the notebook a forbidden call was made: ``code cell 4 (`def f(…`), line 3:
    `text```."""
    cell = plan.cell_of_code(flag["cell"], flag["line"], flag["text"])
    where = (
        f"{cell.label}, line {flag['line']}"
        if cell
        else f"line {flag['line']} of {Path(flag['file']).name}"
    )
    return f"{where}: `{flag['text']}`" if flag["text"] else where


def _flag_record(plan: Plan, flag: dict[str, Any]) -> dict[str, Any]:
    """A flag as the gradebook keeps it: what was reached, from which code cell and line (no kernel
    paths)."""
    cell = plan.cell_of_code(flag["cell"], flag["line"], flag["text"]) if flag["file"] else None
    return {
        "reached": flag["reached"],
        "kind": flag["kind"],
        "cell": cell.label if cell else "",
        "line": flag["line"],
        "text": flag["text"],
    }


def _result(exercise: Exercise, plan: Plan, run: _Run, ctx: Context) -> ExerciseResult:
    verdict = _verdict(exercise, plan, run, ctx)
    return ExerciseResult(
        exercise.id,
        exercise.name,
        verdict.status,
        verdict.points,
        exercise.points,
        _feedback(verdict),
        parts=[{"name": name, "passed": ok} for name, ok in verdict.parts],
        cases=list(verdict.passed_cases),
        flags=[_flag_record(plan, flag) for flag in verdict.flags],
        points_if_allowed=verdict.points_if_allowed,
    )


def _feedback(verdict: Verdict) -> str:
    """What a student reads about an exercise: what went wrong and, after a submission as after a
    second failed self-check, the idea behind it; never the fix, since many courses let students
    submit again."""
    if verdict.status == "passed":
        return ""
    idea = verdict.idea_text()
    return f"{verdict.message}\nThe idea: {idea}" if idea else verdict.message


def _verdict(exercise: Exercise, plan: Plan, run: _Run, ctx: Context) -> Verdict:
    status, message = _status(exercise, plan, run, ctx)
    if status == "judge":
        cases, expected = ctx.reference(exercise)
        report = run.reports[exercise.id]
        assert isinstance(report, _Report)
        return judge_outcomes(
            exercise, report.outcomes, expected, cases, lambda flag: _flag_place(plan, flag)
        )
    return Verdict(status=status, points=0, max_points=exercise.points, message=message)  # type: ignore[arg-type]  # status is one of Verdict's


def _status(exercise: Exercise, plan: Plan, run: _Run, ctx: Context) -> tuple[str, str]:
    """The status and message of an exercise that could not be judged; ``("judge", "")`` when it can
    be."""
    name, limit = exercise.name, ctx.settings.cell_timeout
    index = plan.exercise_cells.get(exercise.id, -1)
    fate = run.fates.get(index)
    report = run.reports.get(exercise.id)
    if report is None:
        return "error", f"{name} was not graded: {run.fatal or 'grading stopped early'}."
    if isinstance(report, str):
        return "error", f"{name} could not be graded: {report}."
    if isinstance(report, CellResult):
        if report.status == "timeout":
            if report.reason == "notebook":
                return (
                    "timeout",
                    f"the notebook used up its {ctx.settings.notebook_timeout:g} s before {name} "
                    "was graded.",
                )
            return "timeout", f"{name} did not finish within {limit:g} s on the grading inputs."
        if report.status == "died":
            return (
                "error",
                f"the kernel died while {name} ran on the grading inputs ({report.reason}).",
            )
        return (
            "error",
            f"grading {name} failed: {report.ename}: {report.evalue} (does the notebook change "
            "Python or course_lib itself?)",
        )
    if report.found == "missing":
        from_cell = _cell_fate_verdict(exercise, plan.cell(index), fate, limit)
        if from_cell:
            return from_cell
        if exercise.id in plan.exercise_cells:
            return (
                "missing",
                f"the exercise cell is there but defines no {name}; the function must be called "
                f"{name}.",
            )
        return (
            "missing",
            f"no cell defines {name}: the exercise cell was deleted or the function renamed.",
        )
    if report.found == "not_callable":
        return "error", f"{name} is a {report.type_name}, not a function."
    return "judge", ""


def error_result(
    sub: Submission, lesson: str | None, message: str, status: str = "error"
) -> SubmissionResult:
    """The result of a notebook that could not be graded: every exercise of its lesson (if known)
    at 0, with ``message``."""
    listed = exercises(lesson) if lesson else ()
    rows = [ExerciseResult(e.id, e.name, status, 0, e.points, message) for e in listed]
    return SubmissionResult(
        sub.student, sub.notebook, str(sub.path), lesson, "error", message, rows
    )


async def grade_submission(snapshot: Snapshot, ctx: Context) -> SubmissionResult:
    """Grade one submission from its bytes; every problem becomes a status and a message, never an
    exception."""
    read = _read_submission(snapshot)
    if isinstance(read, SubmissionResult):
        return read
    lesson, plan = read
    cache = await ctx.compilation_cache.for_lesson(lesson, ctx.fill_cache)
    return await _grade_plan(snapshot, lesson, plan, ctx, cache)


def _read_submission(snapshot: Snapshot) -> tuple[str, Plan] | SubmissionResult:
    """The lesson and plan of a submission's cells, or the result saying why there are none."""
    sub = snapshot.submission
    if snapshot.unreadable:
        return error_result(sub, None, f"the file could not be read ({snapshot.unreadable})")
    try:
        notebook = read_notebook(snapshot.data, schema=False)
    except NotebookError as problem:
        return error_result(sub, filename_lesson(sub.notebook), str(problem))
    lesson = detect_lesson(notebook, sub.notebook)
    if lesson is None:
        return error_result(
            sub,
            None,
            "the notebook belongs to no lesson with exercises (no exercise ids, lesson number or "
            "exercise functions found)",
        )
    return lesson, plan_cells(notebook, lesson)


async def _grade_plan(
    snapshot: Snapshot, lesson: str, plan: Plan, ctx: Context, cache: KernelCache | None
) -> SubmissionResult:
    """Run the plan in a fresh kernel (with ``cache``, if any) and judge every exercise."""
    sub = snapshot.submission
    for exercise in plan.exercises:
        ctx.reference(exercise)
    workdir = Path(tempfile.mkdtemp(prefix="submission-", dir=ctx.scratch))
    reports_dir = Path(tempfile.mkdtemp(prefix="reports-", dir=ctx.scratch))
    try:
        (workdir / Path(sub.notebook).name).write_bytes(
            snapshot.data
        )  # the kernel sees a copy, never the original
        run = await _execute(plan, workdir, reports_dir, ctx, cache)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        shutil.rmtree(reports_dir, ignore_errors=True)
    rows = [_result(exercise, plan, run, ctx) for exercise in plan.exercises]
    status = "error" if run.fatal and not run.reports else "graded"
    return SubmissionResult(
        sub.student, sub.notebook, str(sub.path), lesson, status, run.fatal, rows, run.notes
    )


CANARY_STUDENT = "(canary)"
"""The student key of a canary's result: no student can have it (keys come from file names)."""


def full_marks(result: SubmissionResult) -> bool:
    """Whether a notebook was graded and scored every point."""
    return (
        result.status == "graded" and bool(result.exercises) and result.points == result.max_points
    )


def canary_snapshot(lesson: str) -> Snapshot | SubmissionResult:
    """The course's solution notebook of ``lesson``, read once, as the canary's submission; the
    result that says so when there is none (see ``_course.solutions_folder``)."""
    folder = solutions_folder()
    path = solution_notebook(lesson, folder)
    if path is None:
        sub = Submission(folder / f"{lesson}_*.ipynb", CANARY_STUDENT, f"{lesson}_*.ipynb")
        return error_result(
            sub, lesson, f"there is no solution notebook of lesson {lesson} in {folder}"
        )
    return read_once(Submission(path, CANARY_STUDENT, path.name))


async def grade_solution(
    lesson: str, ctx: Context, cache: KernelCache | None = None
) -> SubmissionResult:
    """Grade the course's own solution notebook of ``lesson`` as a submission (with ``cache``,
    writable or not); a missing or unreadable solution is an ``error`` result."""
    snapshot = canary_snapshot(lesson)
    if isinstance(snapshot, SubmissionResult):
        return snapshot
    read = _read_submission(snapshot)
    if isinstance(read, SubmissionResult):
        return read
    found, plan = read
    return await _grade_plan(snapshot, found, plan, ctx, cache)


async def grade_canary(lesson: str, ctx: Context) -> SubmissionResult:
    """The canary: the solution of ``lesson`` graded in the same sandbox and limits as the
    submissions; its kernel fills the lesson's compilation cache on the way, so that the
    submissions after it start with a filled cache."""
    graded: list[SubmissionResult] = []

    async def fill(lesson: str, cache: KernelCache) -> bool:
        graded.append(await grade_solution(lesson, ctx, cache))
        return graded[0].lesson == lesson and full_marks(graded[0])

    await ctx.compilation_cache.fill_now(lesson, fill)
    return graded[0] if graded else await grade_solution(lesson, ctx)  # no cache in this run
