"""Where a submission's grading time goes: kernel start, imports, cells, compiles, probes, judging.

    .venv/bin/python bench/bench_grade_breakdown.py     # lesson 02, blank and solved, 3 repeats
    .venv/bin/python bench/bench_grade_breakdown.py --lesson 01 --repeats 5 --sandbox off

Grades the lesson's exercise notebook (blank) and its solution (solved) the way ``course-grade``
does, one fenced kernel each, with the grader's own pieces (``Context``, ``Sandbox``, the probe
source, the judge), and times each phase:

* reference answers: computed by the grader, once per run (the first submission pays them);
* compilation cache fill: the solution notebook run by a trusted kernel that fills the shared
  compilation cache (``_jaxcache.py``), once per run and lesson (``--cache off``: no cache);
* warm process: the fork server importing JAX (``_forkserver.py``), once per run (``--warm-kernels
  off``: none, each kernel starts a fresh Python);
* kernel start: the launcher, the fence and ``ipykernel`` up and answering;
* ``import jax`` and ``import course_lib``: run as two cells before the notebook's own cells;
* cells: the notebook's cells (check calls left out), less the JAX compiles they trigger;
* probes: one probe cell per exercise, less the compiles they trigger;
* compiles: tracing and lowering, and XLA compiling, summed from ``jax.monitoring`` in the kernel;
* judging: comparing the probe's outcomes with the references, in the grader;
* kernel stop: ending the launcher and the kernel;
* per submission: the total less the three phases paid once per run, what each further
  submission of a class costs.

The median over ``--repeats`` of each phase is shown, with the load average. The table is a
measurement of this machine now; the grader's own run (``bench_grade.py``) also overlaps kernels.
"""

import argparse
import asyncio
import os
import secrets
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from course_tools._notebook_files import read_notebook
from course_tools.grade.grading import RunOptions, Settings
from course_tools.grade.grading._grader import (
    Context,
    _read_report,
    _Report,
    _runner_source,
)
from course_tools.grade.intake import detect_lesson, plan_cells
from course_tools.grade.sandbox import Sandbox, SandboxLevel, kernel_env

PHASES = [
    "reference answers",
    "compilation cache fill",
    "warm process",
    "kernel start",
    "import jax",
    "import course_lib",
    "cells (less compiles)",
    "probes (less compiles)",
    "compiles: tracing, lowering",
    "compiles: XLA",
    "judging",
    "kernel stop",
    "total",
    "per submission",
]
# Paid once per run (or per run and lesson), not by each submission of a class.
ONCE_PER_RUN = ("reference answers", "compilation cache fill", "warm process")

# Sums the compile events of the kernel in a variable of its own namespace.
_LISTEN = """
def _bench_listen():
    import jax.monitoring
    totals = globals().setdefault('_bench_compile_seconds', [0.0, 0.0])
    slots = {'/jax/core/compile/jaxpr_trace_duration': 0,
             '/jax/core/compile/jaxpr_to_mlir_module_duration': 0,
             '/jax/core/compile/backend_compile_duration': 1}
    def listen(event, seconds, **kwargs):
        if event in slots:
            totals[slots[event]] += seconds
    jax.monitoring.register_event_duration_secs_listener(listen)
_bench_listen()
del _bench_listen
"""


async def _compile_seconds(sandbox: Sandbox, report: Path) -> tuple[float, float]:
    """Seconds the kernel spent so far tracing and lowering, and compiling with XLA."""
    source = f"open({str(report)!r}, 'w').write(repr(tuple(_bench_compile_seconds)))"
    result = await sandbox.run(source, 30)
    assert result.status == "ok", result
    trace, xla = report.read_text().strip("()").split(",")
    return float(trace), float(xla)


async def breakdown(notebook: Path, ctx: Context) -> dict[str, float]:
    """The phases of grading ``notebook`` once, in seconds."""
    times = dict.fromkeys(PHASES, 0.0)
    started = time.perf_counter()
    data = notebook.read_bytes()
    parsed = read_notebook(data, schema=False)
    lesson = detect_lesson(parsed, notebook.name)
    assert lesson is not None, notebook
    plan = plan_cells(parsed, lesson)
    mark = time.perf_counter()
    for exercise in plan.exercises:
        ctx.reference(exercise)
    times["reference answers"] = time.perf_counter() - mark
    mark = time.perf_counter()
    cache = await ctx.compilation_cache.for_lesson(lesson, ctx.fill_cache)
    times["compilation cache fill"] = time.perf_counter() - mark
    workdir = Path(tempfile.mkdtemp(prefix="submission-", dir=ctx.scratch))
    reports = Path(tempfile.mkdtemp(prefix="reports-", dir=ctx.scratch))
    (workdir / notebook.name).write_bytes(data)
    sandbox = Sandbox(
        str(workdir),
        kernel_env(workdir),
        ctx.settings.limits,
        ctx.confinement,
        writable=[str(reports)],
        cache=cache,
        forks=ctx.forks,
    )
    mark = time.perf_counter()
    if ctx.forks is not None:
        await ctx.forks.ready()
    times["warm process"] = time.perf_counter() - mark
    mark = time.perf_counter()
    await sandbox.start()
    times["kernel start"] = time.perf_counter() - mark

    async def timed(source: str) -> float:
        begin = time.perf_counter()
        result = await sandbox.run(source, ctx.settings.cell_timeout)
        assert result.status in ("ok", "error"), (source[:60], result)
        return time.perf_counter() - begin

    times["import jax"] = await timed("import jax")
    times["import course_lib"] = await timed("import course_lib")
    await timed(_LISTEN)
    cells = sum([await timed(cell.source) for cell in plan.cells])
    cell_compiles = await _compile_seconds(sandbox, reports / "compiles-cells")
    nonce = secrets.token_hex(8)
    found: dict[str, _Report | str] = {}
    probes = 0.0
    for exercise in plan.exercises:
        path = reports / f"{nonce}-{exercise.id}.json"
        probes += await timed(_runner_source(exercise, ctx.settings.seed, path, nonce))
        found[exercise.id] = _read_report(path, exercise, nonce, len(ctx.reference(exercise)[0]))
    all_compiles = await _compile_seconds(sandbox, reports / "compiles-all")
    times["cells (less compiles)"] = cells - sum(cell_compiles)
    times["probes (less compiles)"] = probes - (sum(all_compiles) - sum(cell_compiles))
    times["compiles: tracing, lowering"], times["compiles: XLA"] = all_compiles
    mark = time.perf_counter()
    from course_lib.checks._evaluate import judge_outcomes

    for exercise in plan.exercises:
        report = found[exercise.id]
        if isinstance(report, _Report) and report.found == "yes":
            cases, expected = ctx.reference(exercise)
            judge_outcomes(exercise, report.outcomes, expected, cases, str)
    times["judging"] = time.perf_counter() - mark
    mark = time.perf_counter()
    await sandbox.stop()
    times["kernel stop"] = time.perf_counter() - mark
    shutil.rmtree(workdir, ignore_errors=True)
    shutil.rmtree(reports, ignore_errors=True)
    times["total"] = time.perf_counter() - started
    times["per submission"] = times["total"] - sum(times[phase] for phase in ONCE_PER_RUN)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lesson", default="02", help="two-digit lesson number (default: 02)")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each notebook (default: 3)")
    parser.add_argument(
        "--sandbox", choices=["on", "off"], default="on", help="as course-grade's --sandbox"
    )
    parser.add_argument(
        "--cache",
        choices=["on", "off"],
        default="on",
        help="the shared read-only compilation cache, as course-grade uses it (default: on)",
    )
    parser.add_argument(
        "--warm-kernels", choices=["on", "off"], default="on", help="as course-grade's option"
    )
    args = parser.parse_args()
    solved = next((ROOT / "solutions").glob(f"{args.lesson}_*.ipynb"))
    notebooks = {"blank": ROOT / "exercises" / solved.name, "solved": solved}
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in notebooks}
    loads = [os.getloadavg()[0]]
    settings = Settings(sandbox=SandboxLevel.probe(args.sandbox == "on"))
    with tempfile.TemporaryDirectory() as tmp:
        for repeat in range(args.repeats):
            # A fresh context each repeat: every repeat pays the references, as each run does.
            # The cache is filled by the first notebook here (a run fills it at a lesson's 8th).
            options = RunOptions(
                warm_kernels=args.warm_kernels == "on", cache_after=1 if args.cache == "on" else 0
            )
            ctx = Context(settings, options, Path(tmp) / f"run{repeat}")
            ctx.scratch.mkdir()
            ctx.warm_up()
            for name, path in notebooks.items():
                runs[name].append(asyncio.run(breakdown(path, ctx)))
            ctx.close()
            loads.append(os.getloadavg()[0])
    print(
        f"lesson {args.lesson}, sandbox {args.sandbox}, cache {args.cache}, "
        f"warm kernels {args.warm_kernels}, "
        f"median of {args.repeats} run(s); "
        f"load (1 min) {min(loads):.2f}-{max(loads):.2f}\n"
    )
    print("| phase | " + " | ".join(f"{name} (s)" for name in notebooks) + " |")
    print("|---|" + "---|" * len(notebooks))
    for phase in PHASES:
        cells = [statistics.median(r[phase] for r in runs[name]) for name in notebooks]
        print(f"| {phase} | " + " | ".join(f"{c:.2f}" for c in cells) + " |")


if __name__ == "__main__":
    main()
